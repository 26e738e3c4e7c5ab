"""A real OpenAI-compatible chat-completions server on 127.0.0.1, replying from a script.

Tests drive ``envkit.llm`` over real HTTP with it: ``ChatServer(script)`` listens on a free port in
a background thread (stdlib ``ThreadingHTTPServer``) and answers every POST to
``.../chat/completions`` with the script's next reply. ``script`` is a list of replies (used in
order) or a callable ``request_json -> reply``. A reply is:

- a ``str``: a plain text answer (``choices[0].message.content``);
- ``ToolCall(arguments)``: a tool call; ``arguments`` a dict (sent as a JSON string) or a string
  sent as it is (malformed JSON, quoted numbers);
- ``WithUsage(reply, prompt_tokens, completion_tokens)``: ``reply`` with a ``usage`` field (the
  others have none, as some servers send);
- ``Slow(seconds, reply)``: ``reply`` after a delay (to outlast the client's timeout);
- ``HttpError(status, body, headers)``: an HTTP error, e.g. ``HttpError(429, headers={"Retry-After":
  "2"})``;
- ``Disconnect()``: the connection closed with no response (a server restarting).

Every request is recorded in ``server.requests`` (path, lower-cased headers, JSON body), so tests
can check the messages sent, that errors were fed back and that the API key went only into the
headers.

pytest runs with ``--import-mode=importlib``, so ``tests/support`` is not importable by default;
a test module puts it on ``sys.path`` first:

    sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
    from chat_server import ChatServer, ToolCall

Example:
    >>> import httpx
    >>> with ChatServer(["e2e4"]) as server:
    ...     reply = httpx.post(server.base_url + "/chat/completions", json={"messages": []})
    >>> reply.json()["choices"][0]["message"]["content"], len(server.requests)
    ('e2e4', 1)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "ChatServer",
    "Disconnect",
    "HttpError",
    "RecordedRequest",
    "Slow",
    "ToolCall",
    "WithUsage",
]


@dataclass(frozen=True)
class ToolCall:
    """A reply calling ``name`` with ``arguments`` (a dict, or a raw string sent as it is)."""

    arguments: dict[str, Any] | str
    name: str = "act"


@dataclass(frozen=True)
class Slow:
    """``reply`` after ``seconds`` (cut short when the server stops)."""

    seconds: float
    reply: Any


@dataclass(frozen=True)
class WithUsage:
    """``reply`` (text or a ``ToolCall``) with the tokens its ``usage`` field reports."""

    reply: str | ToolCall
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class HttpError:
    """An HTTP error status with a body and extra headers (``Retry-After``)."""

    status: int
    body: str = "internal error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Disconnect:
    """No response: the server closes the connection once it has read the request."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it (header names lower-cased)."""

    path: str
    headers: dict[str, str]
    json: dict[str, Any]


Script = Sequence[Any] | Callable[[dict[str, Any]], Any]


class ChatServer:
    """The server; a context manager that starts and stops it (``start()``/``stop()`` also work).

    ``base_url`` is ``http://127.0.0.1:PORT/v1``, what ``LLMSettings.base_url`` expects. A list
    script that runs out answers HTTP 500 ("script exhausted").
    """

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[RecordedRequest] = []
        self._used = 0  # replies taken from a list script
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )  # the default 0.5 s poll is how long every stop() would wait
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def messages(self, index: int = -1) -> list[dict[str, Any]]:
        """The messages of one recorded request (default: the last)."""
        return self.requests[index].json["messages"]

    def _next_reply(self, request: dict[str, Any]) -> Any:
        with self._lock:
            if callable(self.script):
                return self.script(request)
            if self._used >= len(self.script):
                return HttpError(500, "script exhausted")
            self._used += 1
            return self.script[self._used - 1]

    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(RecordedRequest(path, headers, body))


def _handler_for(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            headers = {name.lower(): value for name, value in self.headers.items()}
            server._record(self.path, headers, body)
            if not self.path.endswith("/chat/completions"):
                return self._send(404, {"error": f"no route {self.path}"})
            reply = server._next_reply(body)
            if isinstance(reply, Slow):
                server._stopping.wait(reply.seconds)
                reply = reply.reply
            if isinstance(reply, Disconnect):
                self.close_connection = True
                return None
            if isinstance(reply, HttpError):
                error = {"error": {"message": reply.body}}
                return self._send(reply.status, error, reply.headers)
            return self._send(200, _completion(body.get("model", "test"), reply))

        def _send(
            self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: pytest output stays readable."""

    return Handler


def _completion(model: str, reply: str | ToolCall | WithUsage) -> dict[str, Any]:
    usage = None
    if isinstance(reply, WithUsage):
        usage = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }
        reply = reply.reply
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(reply, ToolCall):
        arguments = reply.arguments
        message["tool_calls"] = [
            {
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": reply.name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
        ]
        finish = "tool_calls"
    else:
        message["content"] = reply
        finish = "stop"
    completion = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    return completion if usage is None else {**completion, "usage": usage}
