"""``EnvService``: the OpenEnv operations on sessions, shared by the HTTP, WebSocket and MCP routes.

Calls run in a worker thread (env steps may block: Stockfish thinks), but for the steps of an
env whose adapter says ``blocking = False``, which the WebSocket and HTTP step routes play on
the event loop; every call returns plain JSON data. Without a session id a call gets a fresh
env, reset with default options and closed after it: OpenEnv's stateless HTTP, which can still
answer "what does one move from the start give?".
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends
from pydantic import BaseModel
from starlette.requests import HTTPConnection

from envkit.schema import Schema, parse, render, tool_definition
from envkit.server.adapter import AdapterResult, EnvAdapter, EpisodeState, ToolSpec
from envkit.server.bodies import ResetRequest
from envkit.server.sessions import Session, SessionBusyError, SessionStore

__all__ = ["EnvInfo", "EnvService", "Service", "Tool", "get_service"]


@dataclass(frozen=True)
class Tool:
    """A ``ToolSpec`` with its signature parsed (once, when the server starts).

    Example:
        >>> listing = Tool("move", "Play one move.", parse("(move :string) -> :any")).listing()
        >>> listing["description"], listing["inputSchema"]["required"]
        ('Play one move.\\nSignature: move(move :string) -> :any', ['move'])
    """

    name: str
    description: str
    schema: Schema

    def listing(self) -> dict[str, Any]:
        """The tool as MCP's ``tools/list`` shows it; the description ends with the signature."""
        description = f"{self.description}\nSignature: {render(self.schema, name=self.name)}"
        definition = tool_definition(self.schema, self.name, description, flavor="anthropic")
        return {
            "name": self.name,
            "description": description,
            "inputSchema": definition["input_schema"],
        }


@dataclass(frozen=True)
class EnvInfo:
    """What every instance of the env shares, read from one probe instance at start-up.

    Example:
        >>> from chess_env.serving.app import ChessAdapter
        >>> info = EnvInfo.probe(ChessAdapter)
        >>> info.name, info.action_model.__name__, list(info.tools)
        ('chess', 'ChessAction', ['move'])
    """

    name: str
    description: str
    version: str
    action_model: type[BaseModel]
    observation_model: type[BaseModel]
    state_model: type[EpisodeState]
    tools: dict[str, Tool]

    @classmethod
    def probe(cls, factory: Callable[[], EnvAdapter]) -> EnvInfo:
        adapter = factory()
        try:
            tools = [cls._tool(spec) for spec in adapter.tools()]
            return cls(
                name=adapter.name,
                description=adapter.description,
                version=adapter.version,
                action_model=adapter.action_model,
                observation_model=adapter.observation_model,
                state_model=adapter.state_model,
                tools={tool.name: tool for tool in tools},
            )
        finally:
            adapter.close()

    @staticmethod
    def _tool(spec: ToolSpec) -> Tool:
        return Tool(spec.name, spec.description, parse(spec.signature))


class EnvService:
    """Reset, step, state and tool calls on the sessions of ``store``.

    Example:
        >>> from chess_env.serving.app import ChessAdapter
        >>> service = EnvService(SessionStore(ChessAdapter))
        >>> opened, first = service.open(ResetRequest(seed=0, opponent="greedy"))
        >>> with service.session(opened.id) as session:
        ...     reply = service.step(session, {"move": "e4"})
        ...     reply["observation"]["opponent_move"], service.state(session)["step_count"]
        ('d7d5', 1)
        >>> service.store.close_all()
    """

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.info = EnvInfo.probe(store.factory)

    @contextmanager
    def session(self, session_id: str | None) -> Iterator[Session]:
        """The stored session, locked; or, without an id, a fresh env reset with defaults."""
        if session_id is not None:
            with self.store.use(session_id) as session:
                yield session
            return
        session = Session(self.store.factory())
        try:
            self.reset(session, ResetRequest())
            yield session
        finally:
            session.adapter.close()

    def open(self, request: ResetRequest) -> tuple[Session, dict[str, Any]]:
        """A new session, reset as ``request`` asks, and its first observation."""
        session = self.store.create()
        try:
            with self.store.use(session.id, token=session.token):
                return session, self.reset(session, request)
        except Exception:  # a session whose reset failed must not hold a slot
            self.store.close(session.id, token=session.token)
            raise

    def reset(self, session: Session, request: ResetRequest) -> dict[str, Any]:
        options = request.model_dump(exclude_unset=True, exclude={"episode_id", "session_id"})
        result = session.adapter.reset(**options)
        session.episode_id = request.episode_id or str(uuid.uuid4())
        session.step_count = 0
        return result.to_wire()

    def step(self, session: Session, action: Any) -> dict[str, Any]:
        """Validate ``action`` (raw JSON data) with the env's action model, then play it."""
        return self.play(session, action).to_wire()

    def play(self, session: Session, action: Any) -> AdapterResult:
        """``step``'s result before it is made a payload (the WebSocket writes it as JSON)."""
        parsed = self.info.action_model.model_validate(action)
        return self._counted(session, session.adapter.step(parsed))

    def play_if_free(self, session_id: str, action: Any) -> AdapterResult | None:
        """``play`` on the caller's thread (the event loop) if the session is free and its env
        never blocks (``adapter.blocking`` False); None: the caller plays it on a worker thread.

        Why: the hop to a thread and back is a large part of a quick step's cost, and a loop
        that waited on a session's lock would stall every connection.
        """
        try:
            with self.store.use(session_id, wait=False) as session:
                if getattr(session.adapter, "blocking", True):
                    return None
                return self.play(session, action)
        except SessionBusyError:
            return None

    def call_tool(self, session: Session, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run a tool whose arguments were validated against its signature."""
        return self._counted(session, session.adapter.call_tool(name, arguments)).to_wire()

    def state(self, session: Session) -> dict[str, Any]:
        base = {"episode_id": session.episode_id, "step_count": session.step_count}
        return {**base, **session.adapter.state()}

    @staticmethod
    def _counted(session: Session, result: AdapterResult) -> AdapterResult:
        session.step_count += 1
        return result


def get_service(connection: HTTPConnection) -> EnvService:
    """The app's service (the dependency every router uses)."""
    service: EnvService = connection.app.state.env_service
    return service


Service = Annotated[EnvService, Depends(get_service)]
