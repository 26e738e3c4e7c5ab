"""Bad HTTP input gets a 4xx with a reason, never a 500, and the session stays playable."""

from __future__ import annotations

import asyncio
import json

import chess
import pytest
from fastapi.testclient import TestClient

from chess_env.serving.app import create_chess_app
from envkit.server import MAX_BODY_BYTES
from envkit.server.limits import BodySizeLimit

JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_chess_app(), raise_server_exceptions=False)


@pytest.fixture
def session(client: TestClient) -> str:
    return client.post("/reset", json={"seed": 5}).json()["session_id"]


def still_playable(client: TestClient, session: str) -> None:
    reply = client.post("/step", json={"action": {"move": "e4"}, "session_id": session})
    assert reply.status_code == 200, reply.text
    assert client.get("/state", params={"session_id": session}).json()["step_count"] == 1


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        (b'{"action": {"move": "e4"', 400, "JSON decode error (Expecting ',' delimiter)"),
        (b"[1, 2]", 422, "valid dictionary"),
        (b"", 422, "body: Field required"),
        (b'{"action": {"move": "e4"}, "sesion_id": "x"}', 422, "sesion_id: Extra inputs"),
        (b'{"action": "e4"}', 422, "body.action: Input should be a valid dictionary"),
        (b'{"action": {"action": NaN}}', 400, "body.action.action: NaN is not valid JSON"),
        (b'{"action": {"action": Infinity}}', 400, "action.action: Infinity is not valid JSON"),
        (b'{"action": {"move": "e4"}, "timeout_s": NaN}', 400, "timeout_s: NaN is not valid"),
        (b'{"action": {"action": 1e400}}', 400, "action: 1e400 is too large for a number"),
        (b'{"action": {"action": 123456789012345678901234567890}}', 422, "less than 4672"),
        (b'{"action": {"action": -1}}', 422, "greater than or equal to 0"),
        (b'{"action": {"action": "12"}}', 422, "valid integer"),
        (b'{"action": {"action": true}}', 422, "valid integer"),
        (b'{"action": {"action": 12.0}}', 422, "valid integer"),
        (b'{"action": {"move": 42}}', 422, "move: Input should be a valid string"),
        (b'{"action": {"move": ["e4"]}}', 422, "move: Input should be a valid string"),
        (b'{"action": {"move": ""}}', 422, "at least 1 character"),
        (b'{"action": {"move": "e4", "action": 2421}}', 422, "exactly one of"),
        (b'{"action": {}}', 422, "exactly one of"),
        (b'{"action": {"mvoe": "e4"}}', 422, "mvoe: Extra inputs are not permitted"),
        (b'{"action": {"move": "e4"}} trailing', 400, "JSON decode error (Extra data)"),
        (b"\xc3(", 400, "not valid JSON: 'utf-8' codec can't decode byte 0xc3"),
        (b'{"action": {"action": ' + b"9" * 5000 + b"}}", 400, "4300 digits"),
        (b"[" * 20_000 + b"]" * 20_000, 400, "recursion"),
    ],
)
def test_malformed_steps_are_refused_with_a_reason(
    client: TestClient, session: str, body: bytes, status: int, said: str
) -> None:
    reply = client.post("/step", content=body, headers={**JSON, "X-Session-Id": session})
    assert reply.status_code == status, reply.text
    assert said in reply.json()["detail"]
    assert reply.json()["code"] == ("VALIDATION_ERROR" if status == 422 else "INVALID_JSON")
    still_playable(client, session)


@pytest.mark.parametrize(
    ("move", "reason"),
    [
        ("\ud800", None),  # a lone surrogate: not a string pydantic can read
        ("\x00\x01\x7f", "unreadable"),
        ("\uff45\uff12\uff45\uff14", "unreadable"),  # fullwidth "e2e4" is no move
        ("🤖" * 300, "unreadable"),
        ("e" * 1025, None),  # over the length limit
        ("Qh5", "cannot_move_there"),
        ("e2e5", "cannot_move_there"),
        ("e7e5", "not_your_piece"),
        ("O-O", "cannot_move_there"),
        ("Ke2 then e4", "cannot_move_there"),
        ("a1a1", "cannot_move_there"),  # onto its own square: once a 500
        ("e4-e4", "no_piece"),
    ],
)
def test_unplayable_move_text_is_refused_with_a_reason(
    client: TestClient, session: str, move: str, reason: str | None
) -> None:
    body = json.dumps({"action": {"move": move}}).encode()  # ASCII JSON: surrogates as \ud800
    reply = client.post("/step", content=body, headers={**JSON, "X-Session-Id": session})
    assert reply.status_code == 422, reply.text
    payload = reply.json()
    assert payload["code"] == "VALIDATION_ERROR" and payload["detail"]
    assert payload.get("reason") == reason
    still_playable(client, session)


@pytest.mark.parametrize(
    ("move", "played"),
    [
        ("«e4» — mein Zug ✓", "e2e4"),
        ("e2e4\x00", "e2e4"),
        ("\u202ee2e4", "e2e4"),  # a right-to-left override before the move
        ("♘f3", "f2f3"),  # the knight symbol is no letter: f3 is the pawn move
    ],
)
def test_unicode_around_a_move_is_ignored(
    client: TestClient, session: str, move: str, played: str
) -> None:
    body = json.dumps({"action": {"move": move}}).encode()
    reply = client.post("/step", content=body, headers={**JSON, "X-Session-Id": session})
    assert reply.status_code == 200, reply.text
    fen = reply.json()["observation"]["fen"]
    assert chess.Board(fen).piece_at(chess.parse_square(played[2:])) is not None


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b'{"seed": -1}', "greater than or equal to 0"),
        (b'{"seed": 18446744073709551616}', "less than 18446744073709551616"),
        (b'{"seed": "7"}', "valid integer"),
        (b'{"episode_id": 5}', "valid string"),
        (b'{"opponent": "magnus"}', "opponent: Value error, unknown player 'magnus'"),
        (b'{"agent_color": "purple"}', "'white', 'black' or 'random'"),
        (b'{"include_tensor": "yes"}', "valid boolean"),
        (b'{"include_tensor": 1}', "valid boolean"),
        (b'{"moves": "e2e4"}', "valid list"),
        (b'{"moves": ["e2e5"]}', "illegal"),
        (b'{"fen": "not a fen"}', "does not parse"),
        (b'{"fen": "' + b"8/" * 60 + b'"}', "at most 100 characters"),
        (b'{"colour": "white"}', "colour: Extra inputs are not permitted"),
    ],
)
def test_bad_reset_options_are_refused_and_open_no_session(body: bytes, said: str) -> None:
    client = TestClient(create_chess_app(), raise_server_exceptions=False)
    reply = client.post("/reset", content=body, headers=JSON)
    assert reply.status_code == 422, reply.text
    assert said in reply.json()["detail"] and reply.json()["code"] == "VALIDATION_ERROR"
    assert len(client.app.state.env_service.store) == 0


def test_a_body_over_64_kb_is_refused(client: TestClient, session: str) -> None:
    padding = "x" * MAX_BODY_BYTES
    declared = client.post("/step", json={"action": {"move": padding}, "session_id": session})
    assert declared.status_code == 413 and "65536 bytes" in declared.json()["detail"]
    assert client.post("/mcp", content=b" " * (MAX_BODY_BYTES + 1), headers=JSON).status_code == 413
    just_under = b'{"action": {"move": "e4"}}'.ljust(MAX_BODY_BYTES)
    under = client.post("/step", content=just_under, headers={**JSON, "X-Session-Id": session})
    assert under.status_code == 200


def test_the_limit_reads_no_further_than_it_must() -> None:
    async def run(headers: list[tuple[bytes, bytes]]) -> tuple[int, int, bool]:
        reads, sent, reached = 0, [], False

        async def receive() -> dict:  # an endless chunked body
            nonlocal reads
            reads += 1
            return {"type": "http.request", "body": b" " * 1024, "more_body": True}

        async def send(message: dict) -> None:
            sent.append(message)

        async def app(scope: dict, receive: object, send: object) -> None:
            nonlocal reached
            reached = True

        limit = BodySizeLimit(app, max_bytes=4096)
        await limit({"type": "http", "headers": headers}, receive, send)
        return sent[0]["status"], reads, reached

    assert asyncio.run(run([])) == (413, 5, False)
    assert asyncio.run(run([(b"content-length", b"5000")])) == (413, 0, False)
    assert asyncio.run(run([(b"content-length", b"-1")])) == (413, 0, False)
