"""Keep query strings out of uvicorn's logs: a session id in ``/ws?session_id=...`` or
``GET /state?session_id=...`` is a capability (OpenEnv's design), and whoever reads the log
could step or close that session with it.

- ``WithoutQuery``: a ``logging.Filter`` that cuts the query string off the paths in a record's
  arguments: uvicorn's access log (``"GET /state HTTP/1.1" 200``) and its WebSocket lines
  (``"WebSocket /ws" [accepted]``, logged on ``uvicorn.error``) print the path alone.
- ``hide_queries()``: put it on the ``uvicorn.access`` and ``uvicorn.error`` loggers (once;
  ``make_server`` does), where it applies whatever handlers and formats the log has.

A path in those records is ``urllib.parse.quote``-d, so a ``?`` in one starts its query.
Ids in paths (``DELETE /sessions/{id}``) stay: they close a session, which is then gone.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["UVICORN_LOGGERS", "WithoutQuery", "hide_queries"]

UVICORN_LOGGERS = ("uvicorn.access", "uvicorn.error")


class WithoutQuery(logging.Filter):
    """Cut ``?query`` off each argument of a record that is a path (a str starting with ``/``).

    Example:
        >>> record = logging.LogRecord(
        ...     "uvicorn.access", logging.INFO, "", 0, '%s - "%s %s HTTP/%s" %d',
        ...     ("127.0.0.1:5000", "GET", "/state?session_id=s3cret", "1.1", 200), None)
        >>> WithoutQuery().filter(record), record.getMessage()
        (True, '127.0.0.1:5000 - "GET /state HTTP/1.1" 200')
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_without_query(arg) for arg in record.args)
        return True


def hide_queries() -> None:
    """Filter uvicorn's access and error loggers with ``WithoutQuery`` (once, however often
    called: a logger adds a filter it has only once)."""
    for name in UVICORN_LOGGERS:
        logging.getLogger(name).addFilter(_FILTER)


def _without_query(arg: Any) -> Any:
    if isinstance(arg, str) and arg.startswith("/"):
        return arg.split("?", 1)[0]
    return arg


_FILTER = WithoutQuery()
