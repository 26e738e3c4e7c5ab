"""Schemathesis fuzzes every route from the OpenAPI document: no 5xx, and replies match it."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from chess_env.serving.app import create_chess_app

schema = schemathesis.openapi.from_asgi("/openapi.json", create_chess_app(max_sessions=100_000))


@schema.parametrize()
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_no_route_fails_or_breaks_its_schema(case: schemathesis.Case) -> None:
    # Schema-valid data may still be refused: a header and a body naming two different sessions.
    case.call_and_validate(excluded_checks=[positive_data_acceptance])
