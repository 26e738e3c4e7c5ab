"""``ReplayCache``: every chat request and its answer on disk, so a rerun needs no endpoint.

- ``ReplayCache(directory, *, mode="readwrite")``: one JSON file per answered request. In
  ``"readwrite"`` mode a request found there is answered from it, and any other is sent and its
  answer stored; in ``"replay-only"`` mode a request not found raises ``ReplayMiss``, so an
  offline re-scoring of a run never reaches an endpoint.
- ``ReplayMiss``: a ``ChatError`` (reason ``"replay_miss"``) naming the scope and the key.
- ``ReplayCacheError``: an entry that cannot be read (torn, edited, misplaced); it names the file.
  It is not a ``ChatError``: a damaged cache stops the run instead of passing for a seat's failure.
- ``CachedAnswer``: what an entry gives back: the assistant message and its ``TokenUsage``.
- ``request_digest`` and ``entry_key``: how a request is named.

A key is ``sha256`` of the canonical JSON (``sort_keys=True, separators=(",", ":")``) of
``{"payload": ..., "scope": ..., "url": ...}``, then ``-`` and the occurrence: how many identical
requests the same client asked in the same scope before this one. Identical requests (a model asked
twice the same thing at temperature 0.7) so replay in the order they were first answered. The
scope is the caller's (``ChatClient.cache_scope``; an evaluation uses one per episode and seat,
``"ep-3/Forager_1"``), so two seats asking the same thing keep their own answers. The URL is part
of the key: the same request to another endpoint (or the same server on another port) is another
request, so a replay names the endpoint the run named. The API key is in the request headers,
never in the payload, so it is never in the cache.

A request that failed (``ChatError``) is not stored: a rerun sends it again. Its occurrence is
still counted, so the requests after it keep their keys. An entry is written to a temporary file,
flushed to disk and renamed over its name (``os.replace``), so a crash or a concurrent writer
never leaves a half-written entry under an entry's name; the files live under
``directory/<first two hex digits>/<key>.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal, NamedTuple

from envkit.llm.client import ChatError, TokenUsage

__all__ = [
    "REPLAY_MODES",
    "CachedAnswer",
    "ReplayCache",
    "ReplayCacheError",
    "ReplayMiss",
    "ReplayMode",
    "entry_key",
    "request_digest",
]

ReplayMode = Literal["readwrite", "replay-only"]
REPLAY_MODES: tuple[ReplayMode, ...] = ("readwrite", "replay-only")


class ReplayMiss(ChatError):  # noqa: N818 (a miss, not an error of the cache)
    """``"replay-only"`` mode met a request the cache has no answer for."""

    def __init__(self, message: str, *, key: str, scope: str) -> None:
        super().__init__(message, reason="replay_miss")
        self.key, self.scope = key, scope

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt_miss, (str(self), self.key, self.scope)


def _rebuilt_miss(message: str, key: str, scope: str) -> ReplayMiss:
    return ReplayMiss(message, key=key, scope=scope)


class ReplayCacheError(ValueError):
    """A cache entry that cannot be read; ``path`` is its file."""

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        self.path = path


class CachedAnswer(NamedTuple):
    """A stored answer: the assistant message and the usage the endpoint reported (or None)."""

    message: dict[str, Any]
    usage: TokenUsage | None


def request_digest(scope: str, url: str, payload: dict[str, Any]) -> str:
    """The sha256 hex digest naming one request of one scope.

    Example:
        >>> request_digest("ep-0/Alpha", "http://x/v1/chat/completions", {"model": "m"})[:12]
        '035ea77239b7'
        >>> request_digest("ep-1/Alpha", "http://x/v1/chat/completions", {"model": "m"})[:12]
        '1c7c87b07bbd'
    """
    canonical = json.dumps(
        {"payload": payload, "scope": scope, "url": url}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def entry_key(digest: str, occurrence: int) -> str:
    """The key of the ``occurrence``-th (from 0) identical request: ``<digest>-<occurrence>``.

    Example:
        >>> entry_key("ab12", 0), entry_key("ab12", 3)
        ('ab12-0', 'ab12-3')
    """
    return f"{digest}-{occurrence}"


class ReplayCache:
    """Chat answers stored by request, shared safely by the threads of one process.

    Args:
        directory: where the entries live (created when missing).
        mode: ``"readwrite"`` (default): answer from the cache, else send and store;
            ``"replay-only"``: answer from the cache, else raise ``ReplayMiss``.

    ``ChatClient(settings, cache=cache)`` uses it; its ``last_from_cache`` says whether the
    last answer came from here.

    Example:
        >>> import tempfile
        >>> cache = ReplayCache(tempfile.mkdtemp())
        >>> key = entry_key(request_digest("", "http://x/v1/chat/completions", {}), 0)
        >>> cache.lookup(key, scope="") is None
        True
        >>> _ = cache.store(key, scope="", url="http://x/v1/chat/completions", payload={},
        ...                 message={"role": "assistant", "content": "hi"}, usage=TokenUsage(5, 1))
        >>> cache.lookup(key, scope="")
        CachedAnswer(message={'role': 'assistant', 'content': 'hi'}, usage=TokenUsage(prompt_tokens=5, completion_tokens=1))
    """  # noqa: E501 (a doctest's output line)

    def __init__(
        self, directory: str | os.PathLike[str], *, mode: ReplayMode = "readwrite"
    ) -> None:
        if mode not in REPLAY_MODES:
            raise ValueError(f"mode: must be one of {', '.join(REPLAY_MODES)}, got {mode!r}")
        self.directory = Path(directory)
        self.mode: ReplayMode = mode
        self.directory.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        """The file of ``key``'s entry."""
        return self.directory / key[:2] / f"{key}.json"

    def lookup(self, key: str, *, scope: str) -> CachedAnswer | None:
        """The stored answer for ``key``; None on a miss (``ReplayMiss`` in replay-only mode)."""
        path = self.path(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            if self.mode == "replay-only":
                raise ReplayMiss(
                    f"the replay cache {self.directory} has no answer for request {key} of "
                    f"scope {scope!r} (replay-only mode sends no request)",
                    key=key,
                    scope=scope,
                ) from None
            return None
        return _read_entry(text, key, path)

    def store(
        self,
        key: str,
        *,
        scope: str,
        url: str,
        payload: dict[str, Any],
        message: dict[str, Any],
        usage: TokenUsage | None,
    ) -> Path:
        """Write ``key``'s entry atomically (a temporary file renamed over it); its path."""
        entry = {
            "key": key,
            "scope": scope,
            "url": url,
            "request": payload,
            "message": message,
            "usage": None if usage is None else usage._asdict(),
        }
        data = json.dumps(entry, ensure_ascii=False).encode("utf-8")
        path = self.path(key)
        path.parent.mkdir(exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return path


def _read_entry(text: str, key: str, path: Path) -> CachedAnswer:
    """The answer in an entry's text, or ``ReplayCacheError`` naming the file and the fault."""

    def fault(what: str) -> ReplayCacheError:
        return ReplayCacheError(
            f"replay cache entry {path}: {what}; delete the file to send its request again",
            path=path,
        )

    try:
        entry = json.loads(text)
    except json.JSONDecodeError as error:
        raise fault(f"not JSON ({error})") from None
    if not isinstance(entry, dict):
        raise fault("not a JSON object")
    if entry.get("key") != key:
        raise fault(f"key: holds {entry.get('key')!r}, not {key!r}")
    message = entry.get("message")
    if not isinstance(message, dict):
        raise fault("message: not an object")
    usage = entry.get("usage")
    if usage is None:
        return CachedAnswer(message, None)
    if not isinstance(usage, dict) or set(usage) != set(TokenUsage._fields):
        raise fault("usage: not null or {prompt_tokens, completion_tokens}")
    counts = [usage[name] for name in TokenUsage._fields]
    if not all(isinstance(count, int) and not isinstance(count, bool) for count in counts):
        raise fault("usage: token counts must be integers")
    return CachedAnswer(message, TokenUsage(*counts))
