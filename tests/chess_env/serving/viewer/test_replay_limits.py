"""What a replayed file may cost the server: deep nesting is a 422, never a 500; variations are
skipped unread (the viewer shows the main line); a game longer than ``MAX_REPLAY_PLIES`` is
refused as soon as its reading passes the cap; one reply replays about
``MAX_REPLAY_WINDOW_PLIES`` plies, and a file holds at most ``MAX_REPLAY_FILE_GAMES`` games.
JSON lines are cut one at a time, at the line ends JSON Lines knows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import chess
import pytest
from fastapi.testclient import TestClient

from chess_env.arena.results import ArenaGame, MoveRecord
from chess_env.serving.app import create_chess_app
from chess_env.serving.viewer.replay import (
    MAX_REPLAY_FILE_GAMES,
    MAX_REPLAY_PLIES,
    MAX_REPLAY_WINDOW_PLIES,
    replay_file,
)

REPLAY = "/viewer/api/replay"
SHUFFLE = ("Nf3", "Nf6", "Ng1", "Ng8")  # legal forever: the knights go out and back


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    app = create_chess_app(service=True, archive_dir=tmp_path_factory.mktemp("archive"))
    with TestClient(app) as client:
        yield client


def knights(plies: int) -> str:
    """``plies`` legal moves in SAN, without move numbers."""
    return " ".join(SHUFFLE[ply % 4] for ply in range(plies))


def post(client: TestClient, text: str, format: str = "pgn", **window: int) -> Any:
    return client.post(REPLAY, json={"text": text, "format": format, **window})


def refused(client: TestClient, text: str, format: str, reason: str, **window: int) -> str:
    """The 422's message, after checking its code, reason and place."""
    reply = post(client, text, format, **window)
    assert reply.status_code == 422, reply.text
    body = reply.json()
    assert (body["code"], body["reason"]) == ("VALIDATION_ERROR", reason), body
    assert body["errors"][0]["loc"] == ["body", "text"]
    return str(body["detail"])


@pytest.mark.parametrize("depth", [2_000, 100_000])
@pytest.mark.parametrize(
    "nested",
    [
        lambda depth: "[" * depth + "]" * depth,
        lambda depth: '{"move_history": ' + "[" * depth + "]" * depth + "}",
        lambda depth: (
            '{"opening_moves": [], "moves": ' + '{"a": ' * depth + "1" + "}" * depth + "}"
        ),
    ],
    ids=["arrays", "in-a-game", "objects"],
)
def test_json_nested_too_deeply_is_refused_naming_the_line(
    client: TestClient, depth: int, nested: Any
) -> None:
    message = refused(client, "\n" + nested(depth), "jsonl", "not_json")
    assert message == "game 1 (line 2): not JSON: its arrays and objects nest too deeply"


@pytest.mark.parametrize("depth", [2_000, 100_000])
@pytest.mark.parametrize(
    "variations",
    [
        lambda depth: "(" * depth + ")" * depth,
        lambda depth: "(1. d4 " * depth + "Ke5 " + ")" * depth,  # an illegal move, deep inside
    ],
    ids=["empty", "moves"],
)
def test_nested_variations_are_skipped_unread(
    client: TestClient, depth: int, variations: Any
) -> None:
    text = f'[White "A"]\n\n1. e4 {variations(depth)} e5 2. Nf3 *\n'
    reply = post(client, text)
    assert reply.status_code == 200, reply.text
    (game,) = reply.json()["games"]
    assert [ply["san"] for ply in game["plies"]] == ["e4", "e5", "Nf3"]  # the main line only


def test_comments_around_skipped_variations_stay_on_the_main_line(client: TestClient) -> None:
    text = "1. e4 {sharp} (1. d4 {solid}) {and best} e5 (1... c5 {Sicilian}) {fine} 2. Nf3 *"
    (game,) = post(client, text).json()["games"]
    assert [(ply["san"], ply["comment"]) for ply in game["plies"]] == [
        ("e4", "sharp and best"),
        ("e5", "fine"),
        ("Nf3", ""),
    ]


def test_a_stray_parenthesis_after_an_illegal_move_is_that_moves_422(client: TestClient) -> None:
    message = refused(client, "1. e4 Ke5 ) e5 *", "pgn", "illegal_move")
    assert message.startswith("game 1 (line 1), ply 2: illegal san: 'Ke5'")


def test_a_game_of_the_cap_replays_and_one_ply_more_is_refused_naming_it_and_the_cap(
    client: TestClient,
) -> None:
    at_cap = f'[White "A"]\n\n{knights(MAX_REPLAY_PLIES)} *\n'
    (game,) = post(client, at_cap).json()["games"]
    assert len(game["plies"]) == MAX_REPLAY_PLIES
    over = f'[White "A"]\n\n1. e4 *\n\n[White "B"]\n\n{knights(MAX_REPLAY_PLIES + 1)} *\n'
    message = refused(client, over, "pgn", "too_many_plies")
    assert message == (
        f"game 2 (line 5): more than {MAX_REPLAY_PLIES} plies; the viewer replays games of at "
        f"most {MAX_REPLAY_PLIES} plies"
    )


def test_a_long_game_is_refused_at_the_cap_without_reading_on(client: TestClient) -> None:
    # An illegal move far past the cap: a reader that stopped at the cap never meets it.
    text = f"{knights(MAX_REPLAY_PLIES + 1)} {knights(40_000)} Ke5 *\n"
    assert "more than 1000 plies" in refused(client, text, "pgn", "too_many_plies")


@pytest.mark.parametrize(
    "record",
    [
        {"move_history": [{}] * (MAX_REPLAY_PLIES + 1)},
        {"opening_moves": ["e2e4"] * 2, "moves": [{}] * (MAX_REPLAY_PLIES - 1)},
    ],
    ids=["archived-game", "arena-game"],
)
def test_a_json_game_over_the_cap_is_refused_before_it_is_validated(
    client: TestClient, record: dict[str, Any]
) -> None:
    # The moves are not even valid records: the count is checked first, and is all it costs.
    message = refused(client, json.dumps(record), "jsonl", "too_many_plies")
    assert message.startswith(f"game 1 (line 1): more than {MAX_REPLAY_PLIES} plies")


def test_a_reply_ends_after_the_game_that_reaches_the_window_budget(client: TestClient) -> None:
    games = MAX_REPLAY_WINDOW_PLIES // MAX_REPLAY_PLIES + 2
    text = "".join(f'[Round "{n}"]\n\n{knights(MAX_REPLAY_PLIES)} *\n\n' for n in range(games))
    reply = post(client, text).json()
    first = MAX_REPLAY_WINDOW_PLIES // MAX_REPLAY_PLIES
    assert (reply["total"], reply["start"], len(reply["games"])) == (games, 0, first)
    rest = post(client, text, start=first).json()  # the next window starts where this one ended
    assert [game["index"] for game in rest["games"]] == list(range(first, games))


def test_the_window_budget_counts_plies_and_always_holds_one_game() -> None:
    text = "".join(f"{knights(10)} *\n\n" for _ in range(5))
    window = replay_file(text, "pgn", max_window_plies=25)
    assert (window.total, len(window.games)) == (5, 3)  # 10 + 10 + 10: the third reaches 25
    assert len(replay_file(text, "pgn", start=4, max_window_plies=1).games) == 1


@pytest.mark.parametrize("format", ["pgn", "jsonl"])
def test_a_file_of_more_games_than_the_cap_is_refused(client: TestClient, format: str) -> None:
    game = "*\n\n" if format == "pgn" else "{}\n"  # no game, but counted as one, unread:
    text, past = game * (MAX_REPLAY_FILE_GAMES + 1), MAX_REPLAY_FILE_GAMES  # a window past them
    message = refused(client, text, format, "too_many_games", start=past)
    assert message == (
        f"the file holds more than {MAX_REPLAY_FILE_GAMES} games; the viewer replays files of "
        f"at most {MAX_REPLAY_FILE_GAMES} games: split it"
    )


def test_replay_limits_are_stated_in_the_route_docs(client: TestClient) -> None:
    paths = client.get("/viewer/api/openapi.json").json()["paths"]
    description = paths["/api/replay"]["post"]["description"]
    limits = (MAX_REPLAY_PLIES, MAX_REPLAY_WINDOW_PLIES, MAX_REPLAY_FILE_GAMES)
    for stated in ("too_many_plies", "too_many_games", *(f"{limit:,}" for limit in limits)):
        assert stated in description


def test_a_json_line_is_cut_only_at_line_ends_not_inside_its_strings(client: TestClient) -> None:
    # pydantic writes U+2028 as it is (JSON allows it in a string); str.splitlines cut there.
    said = MoveRecord(uci="e7e5", san="e5", seconds=1.5, comment="first\u2028second")
    record = ArenaGame(
        game_id="g0", index=0, white="greedy", black="random", opening_id="e4",
        opening_name="King's pawn", root_fen=chess.STARTING_FEN, opening_moves=["e2e4"],
        seed=0, moves=[said], result="1/2-1/2", ending="max_plies", wall_seconds=2.0,
    )  # fmt: skip
    text = f"{record.model_dump_json()}\r\n\r\n{record.model_dump_json()}\n"
    reply = post(client, text, "jsonl")
    assert reply.status_code == 200, reply.text
    games = reply.json()["games"]
    assert [game["line"] for game in games] == [1, 3]
    assert games[0]["plies"][1]["comment"] == "first\u2028second"
