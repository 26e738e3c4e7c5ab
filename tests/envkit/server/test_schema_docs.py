"""Published schemas carry each model's summary, never the doctest examples of its docstring."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from chess_env.serving.app import create_chess_app
from chess_env.serving.service.app import create_chess_service_app
from envkit.server.schema_docs import without_examples
from multiagent.server import create_world_app


def published(app: FastAPI) -> str:
    """The OpenAPI document, and ``GET /schema`` when the app serves one, as JSON text."""
    with TestClient(app) as client:
        documents = [client.get("/openapi.json").json()]
        schema = client.get("/schema")
        if schema.status_code == 200:
            documents.append(schema.json())
    return json.dumps(documents)


@pytest.mark.parametrize(
    "make_app",
    [create_chess_app, lambda: create_world_app("trade"), create_chess_service_app],
    ids=["chess", "trade", "service"],
)
def test_no_published_schema_shows_a_docstring_example(make_app: Callable[[], FastAPI]) -> None:
    text = published(make_app())
    assert ">>>" not in text and "Example:" not in text


def test_the_summaries_are_still_published() -> None:
    text = published(create_chess_app())
    assert "One move: ``move`` (UCI or SAN text) or ``action`` (AlphaZero index)" in text


def test_the_summary_stays_and_examples_go_at_any_depth() -> None:
    doc = "Summary line.\n\nMore detail.\n\nExample:\n    >>> f()\n    1\n"
    schema = {
        "description": doc,
        "$defs": {"M": {"description": doc, "items": [{"description": doc}]}},
    }
    assert without_examples(schema) == {
        "description": "Summary line.\n\nMore detail.",
        "$defs": {
            "M": {
                "description": "Summary line.\n\nMore detail.",
                "items": [{"description": "Summary line.\n\nMore detail."}],
            }
        },
    }
    assert without_examples({"description": "Examples of use are in the README"}) == {
        "description": "Examples of use are in the README"
    }
