"""Published JSON Schemas carry a model's summary, not its doctest examples.

Pydantic makes a model's class docstring its schema ``description``; the package's docstrings end
in ``Example:`` sections of ``>>>`` lines (run by the tests), which read as noise, or a traceback,
in ``GET /schema`` and the OpenAPI document. ``without_examples`` cuts them from every
description of a schema; ``publish_openapi_without_examples`` does it once for an app's OpenAPI.

Example:
    >>> doc = "A move.\\n\\nExample:\\n    >>> Move()"
    >>> without_examples({"description": doc, "type": "object"})
    {'description': 'A move.', 'type': 'object'}
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI

__all__ = ["publish_openapi_without_examples", "without_examples"]

_EXAMPLES = re.compile(r"\n\s*\n\s*Examples?:\n.*", re.DOTALL)


def without_examples(schema: Any) -> Any:
    """``schema`` with every ``description`` string cut before an ``Example:`` section."""
    if isinstance(schema, dict):
        return {
            key: _EXAMPLES.sub("", value) if key == "description" and isinstance(value, str)
            else without_examples(value)
            for key, value in schema.items()
        }  # fmt: skip
    if isinstance(schema, list):
        return [without_examples(item) for item in schema]
    return schema


def publish_openapi_without_examples(app: FastAPI) -> None:
    """Make ``app.openapi()`` (what ``/openapi.json`` and ``/docs`` serve) drop the examples."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = without_examples(generate())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to extend it
