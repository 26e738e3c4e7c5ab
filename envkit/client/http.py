"""``EnvClient``: one server session over HTTP."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Generator
from dataclasses import dataclass
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
from envkit.client.session import (
    RATE_LIMIT_WAIT_S,
    Sleep,
    check_rate_limit_wait,
    run_steps,
    waiting_out_rate_limits,
)


@dataclass(frozen=True)
class Request:
    """Send one HTTP request (naming the session, if any); the result is httpx's response."""

    method: str
    path: str
    body: Any


class EnvClient(Generic[ObservationT]):
    """A sync client of one server session, over HTTP.

    ``reset`` opens a session, and resets it again later rather than opening more (a session that
    expired while idle is replaced). ``step`` and ``state`` name it in the ``X-Session-Id`` header;
    before any reset they act on a fresh env each call, as OpenEnv's stateless HTTP does.

    A request refused over the server's rate limit (429) is sent again after the wait its
    ``Retry-After`` asks for, for up to ``rate_limit_wait`` seconds in all per request; past that
    the refusal is raised as ``ServerError`` naming the wait.

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8000``.
        token: sent as ``Authorization: Bearer <token>``.
        timeout: seconds to wait for each reply.
        observation_model: a pydantic model each observation is parsed into.
        rate_limit_wait: the most seconds one request waits out the server's rate limit, in
            all, before ``ServerError`` ``RATE_LIMITED`` (default 60, a per-minute limit's
            window; 0: raise at the first 429).
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 10.0,
        observation_model: type[ObservationT] | None = None,
        rate_limit_wait: float = RATE_LIMIT_WAIT_S,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.session_id: str | None = None
        self.timeout = timeout
        self.rate_limit_wait = check_rate_limit_wait(rate_limit_wait)
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
        """The reply's JSON object, after waiting out the rate limit as the server asks."""
        steps = waiting_out_rate_limits(
            lambda: self._attempt(method, path, body),
            self.rate_limit_wait,
            f"{method} {self.base_url}{path}",
        )
        return run_steps(steps, self._perform)

    @staticmethod
    def _attempt(method: str, path: str, body: Any) -> Generator[Request, Any, dict[str, Any]]:
        response = yield Request(method, path, body)
        if response.is_error:
            retry_after = response.headers.get("Retry-After")
            raise http_error(response.status_code, response.text, retry_after)
        if not response.content:
            return {}
        return json_object(response.text, f"{method} {path}")

    def _perform(self, io: Request | Sleep) -> Any:
        match io:
            case Request(method, path, body):
                headers = {"X-Session-Id": self.session_id} if self.session_id else {}
                try:
                    return self._http.request(method, path, json=body, headers=headers)
                except httpx.TimeoutException as error:
                    raise TimeoutError(
                        f"no reply from {self.base_url}{path} within {self.timeout:g} s"
                    ) from error
                except httpx.TransportError as error:
                    message = f"{method} {self.base_url}{path} failed: {error}"
                    raise ConnectionError(message) from error
            case Sleep(seconds):
                time.sleep(seconds)
        return None
