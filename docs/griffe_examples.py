"""A griffe extension for the API reference: ``Example:`` sections read as ``Examples:``.

The package's docstrings (Gymnasium's habit) open their doctests with ``Example:``, which the
Google style of griffe reads as an admonition of Markdown text; ``Examples:`` is its section for
doctests, rendered as Python console blocks (so ``obs["others"]`` is code, not a Markdown link).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename each docstring's ``Example:`` header to ``Examples:`` before it is parsed."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
