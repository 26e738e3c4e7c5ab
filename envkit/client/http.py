"""``EnvClient``: one server session over HTTP."""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import Any, Generic

import httpx
from typing_extensions import Self

from envkit.client.contract import (
    ObservationT,
    ServerError,
    StepResult,
    auth_headers,
    http_error,
    json_object,
    result,
    result_type,
)


class EnvClient(Generic[ObservationT]):
    """A sync client of one server session, over HTTP.

    ``reset`` opens a session, and resets it again later rather than opening more (a session that
    expired while idle is replaced). ``step`` and ``state`` name it in the ``X-Session-Id`` header;
    before any reset they act on a fresh env each call, as OpenEnv's stateless HTTP does.

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8000``.
        token: sent as ``Authorization: Bearer <token>``.
        timeout: seconds to wait for each reply.
        observation_model: a pydantic model each observation is parsed into.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 10.0,
        observation_model: type[ObservationT] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.session_id: str | None = None
        self.timeout = timeout
        self._result_type = result_type(observation_model)
        self._http = httpx.Client(
            base_url=self.base_url, headers=auth_headers(token), timeout=timeout
        )

    def reset(self, **options: Any) -> StepResult[ObservationT]:
        """Start an episode; ``options`` are the reset request's (seed, episode_id, the env's)."""
        try:
            payload = self._request("POST", "/reset", options)
        except ServerError as error:
            if error.code != "SESSION_ERROR" or self.session_id is None:
                raise
            self.session_id = None  # it expired while idle: open a new one
            payload = self._request("POST", "/reset", options)
        self.session_id = payload.get("session_id")
        return result(self._result_type, payload)

    def step(self, action: dict[str, Any]) -> StepResult[ObservationT]:
        """Play ``action``, shaped as the env's action schema says (``schema()["action"]``)."""
        return result(self._result_type, self._request("POST", "/step", {"action": action}))

    def state(self) -> dict[str, Any]:
        """The episode's state: ``episode_id``, ``step_count`` and the env's own fields."""
        return self._request("GET", "/state")

    def health(self) -> dict[str, Any]:
        return self._request("GET", "/health")

    def metadata(self) -> dict[str, Any]:
        return self._request("GET", "/metadata")

    def schema(self) -> dict[str, Any]:
        """JSON Schemas of the env's ``action``, ``observation`` and ``state``."""
        return self._request("GET", "/schema")

    def close(self) -> None:
        """Free the session's slot now rather than when it expires (best effort), and the pool."""
        if self.session_id is not None:
            with contextlib.suppress(ServerError, ConnectionError):
                self._request("DELETE", f"/sessions/{self.session_id}")
            self.session_id = None
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        headers = {"X-Session-Id": self.session_id} if self.session_id else {}
        try:
            response = self._http.request(method, path, json=body, headers=headers)
        except httpx.TimeoutException as error:
            raise TimeoutError(
                f"no reply from {self.base_url}{path} within {self.timeout:g} s"
            ) from error
        except httpx.TransportError as error:
            raise ConnectionError(f"{method} {self.base_url}{path} failed: {error}") from error
        if response.is_error:
            raise http_error(response.status_code, response.text)
        if not response.content:
            return {}
        return json_object(response.text, f"{method} {path}")
