"""``StubEndpoint``: a local OpenAI-compatible chat endpoint that answers without a model.

For offline demos, smoke tests of an evaluation and benchmarks of the harness's own cost: every
POST to ``.../chat/completions`` is answered with ``reply`` (a fixed text, or a function of the
request's JSON returning the text), after ``delay_seconds`` (a model's thinking time). The reply
reports no ``usage``, as some servers do, so token counts stay "unknown", never invented.

From the command line (Ctrl-C stops it)::

    python -m envkit.llm.stub --reply '{"move": "stay"}' [--port 8011] [--delay 0.2]

then point ``LLMSettings.base_url`` (``openai:MODEL?base_url=...``) at the address it prints.

It is the standard library's ``ThreadingHTTPServer``: one thread per connection, HTTP/1.1
keep-alive, no dependencies; not meant to face a network.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["StubEndpoint", "main"]

Reply = str | Callable[[dict[str, Any]], str]


class StubEndpoint:
    """The endpoint on ``host:port`` (0: a free port), served from a background thread.

    Args:
        reply: the assistant's text, or a function of the request's JSON that returns it.
        delay_seconds: how long each answer waits (default 0: at once).
        host: the address to listen on (default 127.0.0.1, this machine only).
        port: the port (default 0: any free one; ``base_url`` names it).

    A request that is not JSON, or a reply function that raises, is answered HTTP 400 or 500
    with an OpenAI-style ``{"error": {"message": ...}}``; ``requests`` counts every POST.

    Example:
        >>> from envkit.llm import ChatClient, LLMSettings
        >>> with StubEndpoint('{"move": "stay"}') as stub:
        ...     settings = LLMSettings(name="Demo", model_name="stub", base_url=stub.base_url)
        ...     client = ChatClient(settings)
        ...     answer = client.complete([{"role": "user", "content": "Your move?"}])
        ...     client.close()
        >>> answer["content"], stub.requests
        ('{"move": "stay"}', 1)
    """

    def __init__(
        self,
        reply: Reply,
        *,
        delay_seconds: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if delay_seconds < 0:
            raise ValueError(f"delay_seconds: must be at least 0, got {delay_seconds!r}")
        self.reply = reply
        self.delay_seconds = delay_seconds
        self.requests = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        bound_host, bound_port = self._httpd.server_address[:2]
        self.base_url = f"http://{_url_host(str(bound_host))}:{bound_port}/v1"

    def start(self) -> StubEndpoint:
        """Serve from a background thread; returns ``self``."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def serve_forever(self) -> None:
        """Serve from this thread until interrupted (the command line's way)."""
        try:
            self._httpd.serve_forever()
        finally:
            self._httpd.server_close()

    def __enter__(self) -> StubEndpoint:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def answer(self, request: dict[str, Any]) -> str:
        """The reply text for one request (counted)."""
        with self._lock:
            self.requests += 1
        return self.reply(request) if callable(self.reply) else self.reply


def _handler_for(stub: StubEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real endpoint and httpx use it
        disable_nagle_algorithm = True  # headers and body go out as separate writes

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._send(404, _error(f"no route {self.path}; POST .../chat/completions"))
            try:
                request = json.loads(raw or b"{}")
            except json.JSONDecodeError as error:
                return self._send(400, _error(f"the request body is not JSON: {error}"))
            if not isinstance(request, dict):
                return self._send(400, _error("the request body is not a JSON object"))
            try:
                text = stub.answer(request)
            except Exception as error:  # the user's reply function: report it, keep serving
                return self._send(500, _error(f"the reply function failed: {error!r}"))
            if stub.delay_seconds:
                time.sleep(stub.delay_seconds)
            return self._send(200, _completion(str(request.get("model", "stub")), text))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: one line per request would drown a demo's own output."""

    return Handler


def _completion(model: str, text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return {"id": "chatcmpl-stub", "object": "chat.completion", "model": model, "choices": [choice]}


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def main(argv: list[str] | None = None) -> None:
    """``python -m envkit.llm.stub``: serve a fixed reply until interrupted."""
    parser = argparse.ArgumentParser(
        description="A local OpenAI-compatible chat endpoint that answers without a model."
    )
    parser.add_argument("--reply", required=True, help="the assistant's text for every request")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8011, help="port (8011; 0: any free one)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args(argv)
    if args.delay < 0:
        parser.error(f"--delay: must be at least 0, got {args.delay:g}")
    stub = StubEndpoint(args.reply, delay_seconds=args.delay, host=args.host, port=args.port)
    print(f"serving {args.reply!r} at {stub.base_url} (Ctrl-C stops)", flush=True)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how it is meant to stop
        stub.serve_forever()


if __name__ == "__main__":
    main()
