"""``POST /mcp``: MCP's JSON-RPC 2.0 over HTTP (see ``envkit.server.mcp``).

Every reply is a JSON-RPC object. Any JSON object gets status 200, a JSON-RPC error included (an
invalid request such as ``{}``), as OpenEnv's own server answers: ``openenv validate --url``
posts ``{}`` and fails a server that says anything else. A body that is no JSON object at all
(not JSON, a batch, a scalar) is a bad HTTP request: 400, with the JSON-RPC error. A notification
gets 202 and no body.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request, Response
from starlette.concurrency import run_in_threadpool

from envkit.server.jsontext import loads
from envkit.server.mcp import JsonRpcRequest, JsonRpcResponse, handle, handle_text
from envkit.server.service import Service

__all__ = ["MCP_PATH", "router"]

MCP_PATH = "/mcp"

router = APIRouter(tags=["MCP"])

# Any object: an invalid JSON-RPC request is answered in the reply (200), not refused.
_REQUEST_SCHEMA = {
    "type": "object",
    "description": f"A JSON-RPC 2.0 request: {', '.join(JsonRpcRequest.model_fields)}",
    "examples": [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}],
}


@router.post(
    MCP_PATH,
    response_model=JsonRpcResponse,
    responses={
        202: {"description": "A notification (no id): no reply"},
        400: {"model": JsonRpcResponse, "description": "Not a JSON object (not JSON, a batch)"},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": _REQUEST_SCHEMA}},
        }
    },
    summary="MCP JSON-RPC: tools/list, tools/call, sessions",
)
async def mcp_endpoint(
    request: Request,
    service: Service,
    x_session_id: Annotated[
        str | None, Header(description="The session of tools/call (or params.session_id)")
    ] = None,
) -> Response:
    # The body is read raw: malformed JSON must get a JSON-RPC parse error, not FastAPI's 422.
    body = await request.body()
    reply: dict[str, Any] | None
    try:
        data = loads(body)
    except ValueError:
        reply, status = handle_text(service, body), 400  # the parse error
    else:
        reply = await run_in_threadpool(handle, service, data, session_id=x_session_id)
        status = 200 if isinstance(data, dict) else 400
    if reply is None:
        return Response(status_code=202)
    # ASCII JSON: an id or session id may hold a lone surrogate, which UTF-8 cannot encode.
    return Response(json.dumps(reply), status_code=status, media_type="application/json")
