"""One router per resource: ``info`` (health, metadata, schema), ``env`` (reset, step, state),
``sessions``, ``ws`` (OpenEnv's WebSocket) and ``mcp`` (JSON-RPC tools)."""
