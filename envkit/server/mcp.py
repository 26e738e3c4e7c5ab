"""MCP over JSON-RPC 2.0: the env's tools for LLM agents (``POST /mcp`` and WebSocket "mcp").

Methods: ``initialize``, ``ping``, ``tools/list`` (each tool's Malli-lite signature as a JSON
Schema ``inputSchema``, and rendered at the end of its description), ``tools/call`` (arguments
validated against the signature first) and OpenEnv's ``openenv/session/create`` and
``openenv/session/close``. A call names its session with ``params.session_id`` (or the
X-Session-Id header, or the WebSocket's own); without one it runs in a fresh env. With the
server's owner check on, ``openenv/session/create`` also returns the ``session_token`` that a
call naming that session presents, in ``params.session_token`` or the X-Session-Token header.

Errors: protocol faults are JSON-RPC errors (-32700 parse, -32600 invalid request, -32601
unknown method, -32602 invalid params: unknown tool or session, bad arguments, ``arguments`` that
are not an object of the tool's parameters by name (``null`` counts as absent: ``{}``); -32000 no
session slot; -32603 a bug). The env's errors, and arguments the signature refuses, carry as
``data`` the body HTTP would send: ``code``, ``message``, ``reason``, and ``errors`` (the failing
paths). A move the env refuses is a tool result with ``isError: true``, as MCP asks, so that the
agent reads why and tries again. Requests without an id (notifications) get no reply.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import Enum
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from envkit.schema import validate
from envkit.server.bodies import ResetRequest
from envkit.server.errors import (
    CapacityError,
    EpisodeStateError,
    InvalidInputError,
    ServiceError,
    describe_errors,
    describe_issues,
    error_payload,
    issue_details,
)
from envkit.server.jsontext import loads
from envkit.server.service import EnvService
from envkit.server.sessions import current_token

__all__ = [
    "PROTOCOL_VERSIONS",
    "JsonRpcCode",
    "JsonRpcRequest",
    "JsonRpcResponse",
    "handle",
    "handle_text",
]

PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")  # newest first


class JsonRpcCode(int, Enum):
    """JSON-RPC 2.0's error codes.

    Example:
        >>> from chess_env.serving.app import ChessAdapter
        >>> from envkit.server import SessionStore
        >>> service = EnvService(SessionStore(ChessAdapter))
        >>> reply = handle_text(service, '{"jsonrpc": "2.0", "id": 1, "method": "tools/run"}')
        >>> JsonRpcCode(reply["error"]["code"])
        <JsonRpcCode.METHOD_NOT_FOUND: -32601>
    """

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_ERROR = -32000


class JsonRpcRequest(BaseModel):
    """One JSON-RPC 2.0 request (batches are refused).

    Example:
        >>> JsonRpcRequest.model_validate({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
        JsonRpcRequest(jsonrpc='2.0', method='tools/list', params={}, id=7)
        >>> JsonRpcRequest.model_validate({"jsonrpc": "1.0", "id": 8, "method": "ping"})
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for JsonRpcRequest
        jsonrpc
          Input should be '2.0' ...
    """

    model_config = ConfigDict(extra="forbid")

    jsonrpc: Literal["2.0"] = Field(description="Always '2.0'")
    method: str = Field(max_length=255, description="e.g. tools/list, tools/call")
    params: dict[str, Any] = Field(default_factory=dict, description="The method's parameters")
    id: StrictStr | StrictInt | None = Field(default=None, description="Echoed in the reply")


class JsonRpcError(BaseModel):
    """What went wrong, in a JSON-RPC reply."""

    code: int = Field(description="A JsonRpcCode")
    message: str = Field(description="What went wrong")
    data: Any = Field(
        default=None, description="More detail (e.g. the env's error code and reason)"
    )


class JsonRpcResponse(BaseModel):
    """A JSON-RPC 2.0 reply: ``result`` or ``error``, never both.

    Example:
        >>> from chess_env.serving.app import ChessAdapter
        >>> from envkit.server import SessionStore
        >>> service = EnvService(SessionStore(ChessAdapter))
        >>> reply = handle(service, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        >>> response = JsonRpcResponse.model_validate(reply)
        >>> response.error, [tool["name"] for tool in response.result["tools"]]
        (None, ['move'])
    """

    jsonrpc: Literal["2.0"] = Field(default="2.0", description="Always '2.0'")
    id: str | int | None = Field(description="The request's id")
    result: Any = Field(default=None, description="The method's result")
    error: JsonRpcError | None = Field(default=None, description="Why there is no result")


class _RpcError(Exception):
    def __init__(self, code: JsonRpcCode, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def handle_text(
    service: EnvService, text: str | bytes, *, session_id: str | None = None
) -> dict[str, Any] | None:
    """The reply to one JSON-RPC message as sent (None for a notification); never raises."""
    try:
        data = loads(text)
    except ValueError as error:
        return _error(None, _RpcError(JsonRpcCode.PARSE_ERROR, f"parse error: {error}"))
    return handle(service, data, session_id=session_id)


def handle(
    service: EnvService, data: Any, *, session_id: str | None = None
) -> dict[str, Any] | None:
    """The reply to one parsed JSON-RPC message (None for a notification); never raises."""
    if isinstance(data, list):
        batch = _RpcError(JsonRpcCode.INVALID_REQUEST, "batch requests are not supported")
        return _error(None, batch)
    try:
        request = JsonRpcRequest.model_validate(data)
    except pydantic.ValidationError as error:
        message = f"invalid request: {describe_errors(error.errors())}"
        return _error(_request_id(data), _RpcError(JsonRpcCode.INVALID_REQUEST, message))
    if "id" not in request.model_fields_set:
        return None
    try:
        result = _call(service, request, session_id)
    except Exception as error:
        return _error(request.id, _as_rpc_error(error))
    return {"jsonrpc": "2.0", "id": request.id, "result": result}


def _call(service: EnvService, request: JsonRpcRequest, session_id: str | None) -> dict[str, Any]:
    """The result of ``request``'s method, run with the session token its params present."""
    method = _METHODS.get(request.method)
    if method is None:
        known = ", ".join(_METHODS)
        raise _RpcError(
            JsonRpcCode.METHOD_NOT_FOUND, f"unknown method {request.method!r}; known: {known}"
        )
    params = dict(request.params)
    token = params.pop("session_token", None)
    if token is None:
        return method(service, params, params.get("session_id", session_id))
    if not isinstance(token, str):
        raise _RpcError(JsonRpcCode.INVALID_PARAMS, "session_token must be a string")
    presented = current_token.set(token)
    try:
        return method(service, params, params.get("session_id", session_id))
    finally:
        current_token.reset(presented)


# -- methods ------------------------------------------------------------------------------------

Method = Callable[[EnvService, dict[str, Any], Any], dict[str, Any]]


def _initialize(service: EnvService, params: dict[str, Any], session_id: Any) -> dict[str, Any]:
    asked = params.get("protocolVersion")
    return {
        "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0],
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": service.info.name, "version": service.info.version},
    }


def _ping(service: EnvService, params: dict[str, Any], session_id: Any) -> dict[str, Any]:
    return {}


def _list_tools(service: EnvService, params: dict[str, Any], session_id: Any) -> dict[str, Any]:
    return {"tools": [tool.listing() for tool in service.info.tools.values()]}


def _call_tool(service: EnvService, params: dict[str, Any], session_id: Any) -> dict[str, Any]:
    tools = service.info.tools
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str) or name not in tools:
        shown = repr(name[:100]) if isinstance(name, str) else _json_kind(name)
        raise _RpcError(
            JsonRpcCode.INVALID_PARAMS, f"unknown tool {shown}; the tools are {', '.join(tools)}"
        )
    arguments = {} if arguments is None else arguments
    if not isinstance(arguments, dict):
        raise _RpcError(
            JsonRpcCode.INVALID_PARAMS,
            f"arguments must be a JSON object of {name}'s parameters by name, not "
            f"{_json_kind(arguments)}",
        )
    checked = validate(tools[name].schema, arguments, mode="strict", direction="input")
    if not checked.ok:
        raise InvalidInputError(
            f"invalid arguments for {name}: {describe_issues(checked.errors)}",
            reason="invalid_arguments",
            errors=issue_details(checked.errors),
        )
    try:
        with service.session(_session_id(session_id)) as session:
            payload = service.call_tool(session, name, checked.value)
    except (InvalidInputError, EpisodeStateError) as error:
        _, body = error_payload(error)
        return _tool_result(body["message"], body, is_error=True)
    return _tool_result(json.dumps(payload), payload, is_error=False)


def _create_session(service: EnvService, params: dict[str, Any], session_id: Any) -> dict[str, Any]:
    created, payload = service.open(ResetRequest.model_validate(params))
    token = {} if created.token is None else {"session_token": created.token}
    return {"session_id": created.id, **token, **payload}


def _close_session(service: EnvService, params: dict[str, Any], session_id: Any) -> dict[str, Any]:
    target = _session_id(params.get("session_id"))
    if target is None or not service.store.close(target):
        raise _RpcError(JsonRpcCode.INVALID_PARAMS, f"no session {target} to close")
    return {"session_id": target, "closed": True}


_METHODS: dict[str, Method] = {
    "initialize": _initialize,
    "ping": _ping,
    "tools/list": _list_tools,
    "tools/call": _call_tool,
    "openenv/session/create": _create_session,
    "openenv/session/close": _close_session,
}


# -- helpers ------------------------------------------------------------------------------------


def _session_id(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _RpcError(JsonRpcCode.INVALID_PARAMS, "session_id must be a string")


def _json_kind(value: Any) -> str:
    """What ``value`` is, in JSON's words: "an array", "a string", ..."""
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "an object" if isinstance(value, dict) else "null"


def _tool_result(text: str, structured: dict[str, Any], *, is_error: bool) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": is_error,
    }


def _as_rpc_error(error: Exception) -> _RpcError:
    if isinstance(error, _RpcError):
        return error
    _, body = error_payload(error)
    if isinstance(error, CapacityError):
        return _RpcError(JsonRpcCode.SERVER_ERROR, body["message"], body)
    if isinstance(error, (ServiceError, pydantic.ValidationError)):
        return _RpcError(JsonRpcCode.INVALID_PARAMS, body["message"], body)
    return _RpcError(JsonRpcCode.INTERNAL_ERROR, body["message"], body)


def _request_id(data: Any) -> str | int | None:
    """The id of a request too malformed to parse, when it has a usable one."""
    found = data.get("id") if isinstance(data, dict) else None
    return found if isinstance(found, (str, int)) and not isinstance(found, bool) else None


def _error(request_id: str | int | None, error: _RpcError) -> dict[str, Any]:
    body: dict[str, Any] = {"code": error.code.value, "message": error.message}
    if error.data is not None:
        body["data"] = error.data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}
