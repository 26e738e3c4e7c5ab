"""games.pgn: every arena game reads back with its tags, its moves, its times, evaluations and the
LLM's words, whatever the names and answers hold."""

from __future__ import annotations

import io
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import pytest

from chess_env.arena.analysis import MoveEval
from chess_env.arena.pgn_export import comment_text, game_to_pgn, write_pgn
from chess_env.arena.results import ArenaGame, MoveRecord
from chess_env.core.pgn import tag_value

LLM = 'openai:gpt?x=<script>"]\n[Result "1-0"]'
ENGINE = "alphabeta:2"
ENDGAME_FEN = "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"
ANSWER = 'I play Nf3 {developing}\nthen "Bc4". [%eval 9] [%emt 1:00:00]'


def move(uci: str, san: str, seconds: float, **llm: object) -> MoveRecord:
    return MoveRecord(uci=uci, san=san, seconds=seconds, **llm)  # type: ignore[arg-type]


def arena_game(index: int, **fields: object) -> ArenaGame:
    defaults: dict[str, object] = {
        "game_id": f"g{index}",
        "index": index,
        "white": ENGINE,
        "black": "random",
        "opening_id": "startpos",
        "opening_name": "Start position",
        "root_fen": chess.STARTING_FEN,
        "opening_moves": [],
        "seed": index,
        "wall_seconds": 10.0,
    }
    return ArenaGame(**{**defaults, **fields})  # type: ignore[arg-type]


def endgame() -> ArenaGame:
    """From a FEN that is not the start position, no book moves."""
    return arena_game(
        0,
        opening_id="kpk",
        opening_name="King and pawn",
        root_fen=ENDGAME_FEN,
        moves=[move("e2e4", "e4", 0.04), move("e8e7", "Ke7", 3723.4), move("e1e2", "Ke2", 1.25)],
        result="1/2-1/2",
        ending="max_plies",
    )


def llm_game() -> ArenaGame:
    """The LLM (white, shown a condition) talks in braces and newlines; one answer refused."""
    return arena_game(
        1,
        white=LLM,
        black=ENGINE,
        opening_id="open-game",
        opening_name="Open {game}",
        opening_moves=["e2e4", "e7e5"],
        moves=[
            move(
                "g1f3", "Nf3", 2.5, comment=ANSWER, rejected=["illegal", "unreadable"], requests=3
            ),
            move("b8c6", "Nc6", 0.3),
            move("f1c4", "Bc4", 1.75, comment="Italian.", requests=1),
            move("g8f6", "Nf6", 0.2),
        ],
        result="0-1",
        ending="checkmate",
        conditions={"white": "fen+legal", "black": 'plain"]'},
    )


def llm_game_evals() -> list[MoveEval]:
    return [
        MoveEval(0, "g1f3", chess.WHITE, 30, 25, 5, 98.0, "ok"),
        MoveEval(1, "b8c6", chess.BLACK, -25, -30, 5, 97.0, "ok"),
        MoveEval(2, "f1c4", chess.WHITE, 30, -282, 312, 20.0, "blunder"),
        MoveEval(3, "g8f6", chess.BLACK, 282, 150, 132, 60.0, "mistake"),
    ]


def outage_game() -> ArenaGame:
    """The endpoint failed on the LLM's move: no chess result."""
    return arena_game(
        2,
        white=LLM,
        black=ENGINE,
        opening_moves=["d2d4"],
        opening_id="d4",
        opening_name="Queen's pawn",
        moves=[],
        unplayed=move("", "", 30.0, requests=1),
        result=None,
        ending="endpoint_failure",
        failed_side="white",
        failure="HTTP 503 after 5 retries",
    )


def forfeit_game() -> ArenaGame:
    """The LLM (black) ran out of retries: three illegal answers."""
    return arena_game(
        3,
        white=ENGINE,
        black=LLM,
        opening_moves=["e2e4"],
        opening_id="e4",
        opening_name="King's pawn",
        moves=[move("c7c5", "c5", 4.0, comment="Sicilian!", requests=1), move("g1f3", "Nf3", 0.1)],
        unplayed=move("", "", 6.0, comment="Qxf2 mate", rejected=["illegal"] * 3, requests=3),
        result="1-0",
        ending="illegal_move",
        failed_side="black",
        failure='3 answers refused\n[Result "0-1"]',
    )


GAMES = [endgame(), llm_game(), outage_game(), forfeit_game()]


def read_all(path: Path) -> list[chess.pgn.Game]:
    games = []
    with path.open(encoding="utf-8") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            assert not game.errors, game.errors
            games.append(game)
    return games


@pytest.fixture
def read_back(tmp_path: Path) -> list[chess.pgn.Game]:
    path = tmp_path / "games.pgn"
    assert write_pgn(iter(GAMES), path, {"g1": llm_game_evals()}) == len(GAMES)
    return read_all(path)


def test_every_game_reads_back_with_its_tags(read_back: list[chess.pgn.Game]) -> None:
    assert len(read_back) == len(GAMES)
    for record, game in zip(GAMES, read_back, strict=True):
        headers = game.headers
        assert headers["Event"] == "polyarena arena" and headers["Site"] == "polyarena"
        assert headers["Round"] == str(record.index + 1)
        assert (headers["White"], headers["Black"]) == (
            tag_value(record.white),
            tag_value(record.black),
        )
        assert headers["Result"] == (record.result or "*")
        assert headers["Opening"] == tag_value(record.opening_name)
        assert headers["Termination"].startswith(record.ending)
    assert tag_value(LLM) == "openai:gpt?x=<script>'] [Result '1-0']"


def test_fen_and_setup_only_for_a_game_that_starts_elsewhere(
    read_back: list[chess.pgn.Game],
) -> None:
    assert read_back[0].headers["FEN"] == ENDGAME_FEN and read_back[0].headers["SetUp"] == "1"
    assert read_back[0].board().fen() == ENDGAME_FEN
    assert all("FEN" not in game.headers for game in read_back[1:])


def test_mainline_is_the_opening_then_the_moves_played(read_back: list[chess.pgn.Game]) -> None:
    for record, game in zip(GAMES, read_back, strict=True):
        played = [move.uci() for move in game.mainline_moves()]
        assert played == record.opening_moves + [move.uci for move in record.moves]


def test_the_game_comment_names_the_opening_and_the_last_book_move_says_so(
    read_back: list[chess.pgn.Game],
) -> None:
    llm = read_back[1]
    assert llm.comment == "opening open-game: Open (game)"
    nodes = list(llm.mainline())
    assert nodes[0].comment == "" and nodes[1].comment == "book ends"
    assert read_back[0].comment == "opening kpk: King and pawn"


def test_each_played_move_carries_its_time(read_back: list[chess.pgn.Game]) -> None:
    for record, game in zip(GAMES, read_back, strict=True):
        played = list(game.mainline())[len(record.opening_moves) :]
        assert [node.emt() for node in played] == pytest.approx(
            [move.seconds for move in record.moves], abs=0.1
        )
    assert "[%emt 1:02:03.4]" in list(read_back[0].mainline())[1].comment


def test_evaluations_are_from_whites_side_with_the_loss_of_mistakes_and_blunders(
    read_back: list[chess.pgn.Game],
) -> None:
    played = list(read_back[1].mainline())[2:]
    white_cp = [25, 30, -282, -150]  # the mover's cp_after, from White's side
    assert [node.eval().white() for node in played] == [chess.engine.Cp(cp) for cp in white_cp]
    assert "blunder (-312 cp)" in played[2].comment and played[2].nags == {chess.pgn.NAG_BLUNDER}
    assert "mistake (-132 cp)" in played[3].comment and played[3].nags == {chess.pgn.NAG_MISTAKE}
    assert "cp)" not in played[0].comment and not played[0].nags
    assert all(node.eval() is None for game in read_back[2:] for node in game.mainline())


def test_the_llm_answer_and_its_refusals_read_back_sanitised(
    read_back: list[chess.pgn.Game],
) -> None:
    first = list(read_back[1].mainline())[2]
    assert comment_text(ANSWER) in first.comment
    assert "I play Nf3 (developing) then 'Bc4'. [ %eval 9] [ %emt 1:00:00]" in first.comment
    assert "refused: illegal, unreadable" in first.comment
    assert first.emt() == pytest.approx(2.5) and first.eval() is not None  # not the answer's
    assert "Italian." in list(read_back[1].mainline())[4].comment


def test_conditions_are_tags(read_back: list[chess.pgn.Game]) -> None:
    assert read_back[1].headers["WhiteCondition"] == "fen+legal"
    assert read_back[1].headers["BlackCondition"] == "plain']"
    assert "WhiteCondition" not in read_back[0].headers


def test_an_endpoint_outage_has_no_result_and_says_why(read_back: list[chess.pgn.Game]) -> None:
    outage = read_back[2]
    assert outage.headers["Result"] == "*"
    assert outage.headers["Termination"] == "endpoint_failure: HTTP 503 after 5 retries"
    assert outage.end().comment == "book ends; white did not move"


def test_a_forfeit_shows_the_refused_answers_of_the_move_never_played(
    read_back: list[chess.pgn.Game],
) -> None:
    forfeit = read_back[3]
    assert forfeit.headers["Result"] == "1-0"
    assert forfeit.headers["Termination"] == "illegal_move: 3 answers refused [Result '0-1']"
    last = forfeit.end().comment
    assert last.endswith("black did not move; Qxf2 mate; refused: illegal, illegal, illegal")
    assert forfeit.end().emt() == pytest.approx(0.1)


def test_game_to_pgn_takes_the_event_and_prints_as_one_game() -> None:
    text = str(game_to_pgn(llm_game(), llm_game_evals(), event='Cup "A"'))
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None and game.headers["Event"] == "Cup 'A'"
    assert chess.pgn.read_game(io.StringIO(text[text.index("1. e4") :])) is not None
    assert [line for line in text.splitlines() if line.startswith("[Result ")] == ['[Result "0-1"]']


def test_evaluations_that_do_not_match_the_moves_are_refused() -> None:
    with pytest.raises(ValueError, match="3 evaluations for 4 moves"):
        game_to_pgn(llm_game(), llm_game_evals()[:3])
    evals = llm_game_evals()
    evals[1] = MoveEval(1, "g8f6", chess.BLACK, 0, 0, 0, 100.0, "ok")
    with pytest.raises(ValueError, match="evaluation of g8f6 given for b8c6"):
        game_to_pgn(llm_game(), evals)


def test_an_illegal_move_in_a_record_is_refused() -> None:
    broken = endgame().model_copy(update={"moves": [move("e2e5", "e5", 1.0)]})
    with pytest.raises(chess.IllegalMoveError):
        game_to_pgn(broken)
