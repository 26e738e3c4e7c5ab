"""``POST /mcp``: MCP's JSON-RPC 2.0 over HTTP (see ``envkit.server.mcp``).

Every reply is a JSON-RPC object: with status 200 (errors of a well-formed request included), or
400 when the body is no JSON-RPC request at all (parse error, invalid request), as MCP's
streamable HTTP transport does. A notification gets 202 and no body.
"""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Header, Request, Response
from starlette.concurrency import run_in_threadpool

from envkit.server.mcp import MALFORMED, JsonRpcRequest, JsonRpcResponse, handle_text
from envkit.server.service import Service

__all__ = ["router"]

router = APIRouter(tags=["MCP"])


@router.post(
    "/mcp",
    response_model=JsonRpcResponse,
    responses={
        202: {"description": "A notification (no id): no reply"},
        400: {"model": JsonRpcResponse, "description": "Not JSON, or not a JSON-RPC request"},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": JsonRpcRequest.model_json_schema()}},
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
    reply = await run_in_threadpool(
        handle_text, service, await request.body(), session_id=x_session_id
    )
    if reply is None:
        return Response(status_code=202)
    status = 400 if reply.get("error", {}).get("code") in MALFORMED else 200
    # ASCII JSON: an id or session id may hold a lone surrogate, which UTF-8 cannot encode.
    return Response(json.dumps(reply), status_code=status, media_type="application/json")
