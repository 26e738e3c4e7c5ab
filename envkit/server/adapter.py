"""``EnvAdapter``: the small protocol an environment implements to be served.

The server knows nothing of any one env: it validates actions with the adapter's pydantic
``action_model``, forwards them, and sends back the ``AdapterResult``. One adapter instance is one
session, so an adapter may keep all the state it likes.

- ``AdapterResult``: observation, reward, done and metadata; ``to_wire()`` is OpenEnv's payload
  (``to_wire_json()`` the same as JSON text).
- ``ToolSpec``: a tool for LLM agents (MCP), its arguments as a Malli-lite signature.
- ``EpisodeState``: the base of every ``state_model`` (OpenEnv's ``episode_id`` and
  ``step_count``, which the server keeps).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from envkit.schema import Signature
from envkit.server.jsontext import dumps

__all__ = ["AdapterResult", "EnvAdapter", "EpisodeState", "ToolSpec"]


@dataclass(frozen=True)
class AdapterResult:
    """What ``reset`` and ``step`` return.

    Fields of ``observation`` left unset are left out of the payload, so optional parts (a board
    tensor asked for at reset) are absent rather than null.

    Example:
        >>> class Counter(BaseModel):
        ...     count: int
        ...     note: str | None = None
        >>> AdapterResult(Counter(count=1), reward=1.0).to_wire()
        {'observation': {'count': 1}, 'reward': 1.0, 'done': False}
    """

    observation: BaseModel
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        """OpenEnv's ``{"observation", "reward", "done"}``, with ``metadata`` when there is any."""
        payload = {
            "observation": self.observation.model_dump(mode="json", exclude_unset=True),
            "reward": self.reward,
            "done": self.done,
        }
        return {**payload, "metadata": self.metadata} if self.metadata else payload

    def to_wire_json(self) -> str:
        """``to_wire()`` as compact JSON text, the observation serialized by pydantic straight
        from the model: about half of what ``dumps(to_wire())`` takes for a chess step.

        Example:
            >>> class Counter(BaseModel):
            ...     count: int
            >>> result = AdapterResult(Counter(count=1), metadata={"truncated": True})
            >>> result.to_wire_json()
            '{"observation":{"count":1},"reward":null,"done":false,"metadata":{"truncated":true}}'
        """
        observation = self.observation
        try:
            text = type(observation).__pydantic_serializer__.to_json(
                observation, exclude_unset=True
            )
        except ValueError:  # a lone surrogate, which UTF-8 cannot hold: dumps escapes it
            return dumps(self.to_wire())
        tail = f',"metadata":{dumps(self.metadata)}' if self.metadata else ""
        done = "true" if self.done else "false"
        return (
            f'{{"observation":{text.decode()},"reward":{dumps(self.reward)},"done":{done}{tail}}}'
        )


@dataclass(frozen=True)
class ToolSpec:
    """A tool an LLM agent may call; ``signature`` is Malli-lite: ``(move :string) -> :any``.

    Example:
        >>> from envkit.schema import parse, render
        >>> spec = ToolSpec("move", "Play one chess move.", "(move :string) -> :any")
        >>> render(parse(spec.signature), name=spec.name)
        'move(move :string) -> :any'
    """

    name: str
    description: str
    signature: Signature


class EpisodeState(BaseModel):
    """The state every env reports; an adapter's ``state_model`` adds its own fields.

    Example:
        >>> EpisodeState(episode_id="game-1", step_count=3, ply=3).model_dump()
        {'episode_id': 'game-1', 'step_count': 3, 'ply': 3}
    """

    model_config = ConfigDict(extra="allow")

    episode_id: str | None = Field(
        default=None, description="The current episode's id (None before reset)"
    )
    step_count: int = Field(default=0, ge=0, description="Steps taken in the current episode")


class EnvAdapter(Protocol):
    """One env instance behind the server.

    ``reset`` and ``step`` raise ``envkit.server.InvalidInputError`` for input the env refuses
    (reported as VALIDATION_ERROR, with a reason), ``EpisodeStateError`` for a call it cannot take
    now (EXECUTION_ERROR) and pydantic's ``ValidationError`` for options of the wrong shape. A
    failed call must leave the env as it was.

    An adapter may also have ``blocking: bool`` (default True when absent): False says a step
    never waits on anything (no engine, no network, well under a millisecond), so the WebSocket
    route runs it on the event loop instead of paying a thread-pool hop per message.

    Example:
        >>> from chess_env.serving.app import ChessAdapter
        >>> adapter = ChessAdapter()
        >>> adapter.name, adapter.action_model.__name__, [tool.name for tool in adapter.tools()]
        ('chess', 'ChessAction', ['move'])
        >>> adapter.step(adapter.action_model(move="e4"))
        Traceback (most recent call last):
        ...
        envkit.server.errors.EpisodeStateError: no episode yet: reset first
    """

    name: str
    description: str
    version: str

    # Read-only, so an adapter may name its own models (``action_model = ChessAction``): the
    # server only reads them, and a settable member would have to be exactly type[BaseModel].
    @property
    def action_model(self) -> type[BaseModel]: ...

    @property
    def observation_model(self) -> type[BaseModel]: ...

    @property
    def state_model(self) -> type[EpisodeState]: ...

    def reset(self, *, seed: int | None = None, **options: Any) -> AdapterResult:
        """Start an episode; ``options`` are the extra fields of the reset request."""
        ...

    def step(self, action: Any) -> AdapterResult:
        """Play ``action``, an instance of ``action_model``."""
        ...

    def state(self) -> dict[str, Any]:
        """The env's fields of ``state_model`` (``{}`` before the first reset)."""
        ...

    def tools(self) -> list[ToolSpec]:
        """The tools ``call_tool`` takes (the same for every instance)."""
        ...

    def call_tool(self, name: str, arguments: dict[str, Any]) -> AdapterResult:
        """Run tool ``name`` with ``arguments`` already validated against its signature."""
        ...

    def close(self) -> None:
        """Release what the env holds (an engine process)."""
        ...
