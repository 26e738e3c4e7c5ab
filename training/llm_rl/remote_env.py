"""``RemoteToolEnv``: a TRL environment played against a running server, over WebSocket.

This is how OpenEnv environments are trained: the env runs as a server (``python -m chess_env
serve``, ``python -m multiagent serve``, or any OpenEnv-compatible one) and each rollout holds one
WebSocket session (``envkit.client.WSEnvClient``). The tool is generated from the server's
``/schema``: one parameter per property of its action schema (``fields`` picks some, e.g. only
``move`` of the chess server's ``move``/``action``), typed from the JSON Schema (enums as
``Literal``; properties the schema does not require are optional), described from its
``description`` or bounds. A refusal by the server raises ``ValueError`` with its message, which
TRL hands back to the model as the tool's error; the episode is left as it was.

- ``reset(seed=None, **row)``: a new episode on the server (``seed`` is sent unless
  ``send_seed=False``, for servers that keep seeds secret) with ``reset_options`` (e.g. the world
  server's ``{"agent": "Fisher_1", "include_text": True}``); the prompt is the observation's
  ``text`` when it has one, else its fields, one per line.
- ``get_reward()``: the rewards of the episode's steps, summed.

The server must accept as many sessions at once as the trainer runs rollouts
(``per_device_train_batch_size`` x ``num_generations`` with TRL): ``--max-sessions N`` (and
``--max-sessions-per-client N``) on our servers.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import httpx

from envkit.client import ServerError, WSEnvClient
from training.llm_rl.tools import ToolParameter, tool_env_class, tool_method

__all__ = ["RemoteToolEnv", "remote_tool_env"]

SKIPPED = ("metadata",)  # OpenEnv's free-form field of every action


class RemoteToolEnv:
    """One session of a remote env per instance (see the module docstring)."""

    def __init__(
        self, base_url: str, token: str | None, options: Mapping[str, Any], send_seed: bool
    ) -> None:
        self._base_url, self._token = base_url, token
        self._options, self._send_seed = dict(options), send_seed
        self._client: WSEnvClient[dict[str, Any]] | None = None
        self._return, self._done = 0.0, True

    def reset(self, seed: int | None = None, **row: Any) -> str:
        """A new episode on the server; its first observation, as the prompt."""
        del row  # a dataset row's other columns are not the server's
        if self._client is None:
            self._client = WSEnvClient(self._base_url, token=self._token)
        options = dict(self._options)
        if seed is not None and self._send_seed:
            options["seed"] = seed
        result = self._client.reset(**options)
        self._return, self._done = 0.0, result.done
        return _observation_text(result.observation)

    def get_reward(self) -> float:
        """The episode's rewards so far, summed."""
        return self._return

    def _step(self, action: dict[str, Any]) -> str:
        if self._client is None or self._done:
            raise ValueError("the episode is over: no more actions")
        try:
            result = self._client.step(action)
        except ServerError as error:
            raise ValueError(str(error)) from None
        self._return += result.reward or 0.0
        self._done = result.done
        text = _observation_text(result.observation)
        ending = "\nThe episode is over." if result.done else ""
        return f"Reward: {result.reward or 0.0:g}\n{text}{ending}"

    def __del__(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):  # the server or the loop may be gone already
                client.close()


def remote_tool_env(
    base_url: str,
    *,
    token: str | None = None,
    tool_name: str = "act",
    fields: Sequence[str] | None = None,
    reset_options: Mapping[str, Any] | None = None,
    send_seed: bool = True,
) -> Callable[[], RemoteToolEnv]:
    """A picklable factory of ``RemoteToolEnv`` for the server at ``base_url``; its ``/schema``
    is read here, so a server that is down or a field it lacks fails before any rollout.

    Args:
        base_url: the server's root, ``http://127.0.0.1:8000``.
        token: the server's bearer token, if it has one.
        tool_name: the tool's name (e.g. ``move`` for chess).
        fields: the action's properties the tool takes (default: all but ``metadata``).
        reset_options: sent with every reset (the seat, ``include_text``, an opponent...).
        send_seed: send ``reset``'s seed to the server.
    """
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    schema = httpx.get(f"{base_url.rstrip('/')}/schema", headers=headers, timeout=10).json()
    action = schema["action"]
    properties = {k: v for k, v in action.get("properties", {}).items() if k not in SKIPPED}
    chosen = list(properties) if fields is None else list(fields)
    missing = [field for field in chosen if field not in properties]
    if missing:
        raise ValueError(f"fields {missing}: the server's action has {sorted(properties)}")
    spec = {
        "tool_name": tool_name,
        "properties": {field: properties[field] for field in chosen},
        "required": [f for f in action.get("required", []) if f in chosen] or chosen[:1],
        "title": action.get("title", "action"),
    }
    return functools.partial(_make, json.dumps(spec, sort_keys=True), base_url, token,
                             dict(reset_options or {}), send_seed)  # fmt: skip


def _make(
    spec_json: str, base_url: str, token: str | None, options: dict[str, Any], send_seed: bool
) -> RemoteToolEnv:
    """A ``RemoteToolEnv`` whose class (one per tool spec) has the server's tool."""
    spec = json.loads(spec_json)
    cls = tool_env_class(RemoteToolEnv, spec_json, "RemoteToolEnvWithTool", lambda: _tool(spec))
    env: RemoteToolEnv = cls(base_url, token, options, send_seed)
    return env


def _tool(spec: Mapping[str, Any]) -> Callable[..., str]:
    """The tool method, typed and documented from the action's JSON Schema."""
    parameters = [
        ToolParameter(name, _python_type(schema), _describe(schema),
                      optional=name not in spec["required"])
        for name, schema in spec["properties"].items()
    ]  # fmt: skip
    return tool_method(spec["tool_name"], f"Take your action ({spec['title']}).", parameters,
                       "The reward and what you observe next.",
                       lambda env, given: env._step(given))  # fmt: skip


def _python_type(schema: Mapping[str, Any]) -> Any:
    """A type hint for a JSON Schema (a nullable ``anyOf`` reads as its other branch)."""
    branches = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    first = branches[0] if branches else {}
    if "enum" in first:
        return Literal[tuple(first["enum"])]
    kinds = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
             "object": dict}  # fmt: skip
    return kinds.get(first.get("type", "string"), str)


def _describe(schema: Mapping[str, Any]) -> str:
    if schema.get("description"):
        return str(schema["description"])
    branches = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    first = branches[0] if branches else {}
    if "enum" in first:
        return "one of " + ", ".join(map(str, first["enum"]))
    low, high = first.get("minimum"), first.get("maximum")
    if low is not None and high is not None:
        return f"a number from {low:g} to {high:g}"
    return f"a {first.get('type', 'value')}"


def _observation_text(observation: Any) -> str:
    if isinstance(observation, Mapping):
        text = observation.get("text")
        if isinstance(text, str) and text:
            return text
        return "\n".join(f"{key}: {value}" for key, value in observation.items()
                         if value is not None and key != "text")  # fmt: skip
    return str(observation)
