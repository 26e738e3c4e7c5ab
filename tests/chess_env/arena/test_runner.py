"""Tournaments end to end: the command line, resuming after a kill, refusing a changed
configuration, worker processes, and what result.json, games.jsonl and games.pgn hold."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import chess
import chess.pgn
import pytest

from chess_env.arena.results import ArenaGame, ArenaResult
from chess_env.arena.runner import parse_anchor, prepare, run
from chess_env.arena.store import GAMES_FILE, ArenaConfigChangedError

SMALL = ["--players", "greedy", "random", "--anchors", "alphabeta:1@1000", "--openings",
         "default", "--games-per-pair", "4", "--quiet"]  # fmt: skip


def _arena(*args: str, out: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "chess_env", "arena", *args, "--out", str(out)]
    return subprocess.run(command, capture_output=True, text=True, check=check, timeout=120)


def _games(out: Path) -> list[ArenaGame]:
    lines = (out / GAMES_FILE).read_text().splitlines()
    return [ArenaGame.model_validate_json(line) for line in lines]


def test_a_small_round_robin_from_the_command_line(tmp_path: Path) -> None:
    done = _arena(*SMALL, out=tmp_path)
    assert "| greedy |" in done.stdout and "alphabeta:1" in done.stdout
    result = ArenaResult.model_validate_json((tmp_path / "result.json").read_text())
    assert result.games == 12 and result.endpoint_failures == 0
    cards = {card.name: card for card in result.players}
    assert cards["alphabeta:1"].anchor == 1000 and cards["alphabeta:1"].rating == 1000
    for card in result.players:
        assert card.games == 8
        assert card.rating_low <= card.rating <= card.rating_high
        assert card.score_low <= card.score <= card.score_high
        wins = card.white.wins + card.black.wins
        draws = card.white.draws + card.black.draws
        assert card.points == wins + draws / 2 and sum(card.endings.values()) == 8
    assert sum(cell.games for cell in result.head_to_head) == 2 * 12

    games = _games(tmp_path)
    assert len(games) == 12 and len({game.game_id for game in games}) == 12
    with open(tmp_path / "games.pgn", encoding="utf-8") as handle:
        read = [chess.pgn.read_game(handle) for _ in range(12)]
    by_round = {int(game.headers["Round"]) - 1: game for game in read}
    for game in games:
        pgn = by_round[game.index]
        assert not pgn.errors
        assert (pgn.headers["White"], pgn.headers["Black"]) == (game.white, game.black)
        assert pgn.headers["Result"] == game.result
        uci = [move.uci() for move in pgn.mainline_moves()]
        assert uci == [*game.opening_moves, *(move.uci for move in game.moves)]
        played = list(pgn.mainline())[len(game.opening_moves) :]
        for node, move in zip(played, game.moves, strict=True):
            assert node.emt() == pytest.approx(move.seconds, abs=0.1)
    html = (tmp_path / "leaderboard.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "greedy" in html
    assert "| greedy |" in (tmp_path / "leaderboard.md").read_text()


def test_the_result_round_trips_through_json(tmp_path: Path) -> None:
    result = run(["greedy", "random"], anchors=[], openings="startpos", games_per_pair=2,
                 out=tmp_path, progress=False, bootstrap=50)  # fmt: skip
    again = ArenaResult.model_validate_json(result.model_dump_json())
    assert again == result
    assert ArenaResult.model_validate(json.loads((tmp_path / "result.json").read_text())) == (
        result
    )


def test_a_killed_run_resumes_with_no_game_lost_or_played_twice(tmp_path: Path) -> None:
    args = [*SMALL[:-2], "20", "--quiet"]  # 60 games
    command = [sys.executable, "-m", "chess_env", "arena", *args, "--out", str(tmp_path)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = tmp_path / GAMES_FILE
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count("\n") >= 5:
            break
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = _games(tmp_path)
    assert 5 <= len(before) < 60, "the run was not killed half way"
    with open(log, "a", encoding="utf-8") as handle:  # as if killed in the middle of a write
        handle.write(before[0].model_dump_json()[:40])

    _arena(*args, out=tmp_path)
    after = _games(tmp_path)
    assert after[: len(before)] == before
    assert len(after) == 60 and len({game.game_id for game in after}) == 60
    result = ArenaResult.model_validate_json((tmp_path / "result.json").read_text())
    assert result.games == 60

    rerun = _arena(*args, out=tmp_path)  # nothing left to play
    assert _games(tmp_path) == after and "| greedy |" in rerun.stdout


def test_a_changed_configuration_is_refused_unless_fresh(tmp_path: Path) -> None:
    _arena(*SMALL, out=tmp_path)
    changed = [*SMALL[:-2], "6", "--quiet"]
    refused = _arena(*changed, out=tmp_path, check=False)
    assert refused.returncode == 2
    assert "changed: games_per_pair, opening_ids" in refused.stderr
    assert "--fresh" in refused.stderr
    assert len(_games(tmp_path)) == 12  # nothing lost by the refusal

    _arena(*changed, "--fresh", out=tmp_path)
    assert len(_games(tmp_path)) == 18
    with pytest.raises(ArenaConfigChangedError, match="seed"):
        prepare(["greedy", "random"], anchors=["alphabeta:1@1000"], games_per_pair=6, seed=1,
                out=tmp_path, progress=False)  # fmt: skip


def test_worker_processes_play_the_same_games_as_one_process(tmp_path: Path) -> None:
    options = dict(anchors=["alphabeta:1"], games_per_pair=4, bootstrap=0, progress=False)
    run(["greedy", "random"], workers=1, out=tmp_path / "one", **options)
    run(["greedy", "random"], workers=2, out=tmp_path / "two", **options)

    def played(out: Path) -> dict[str, tuple]:
        return {
            game.game_id: (game.result, game.ending, [move.uci for move in game.moves])
            for game in _games(out)
        }

    assert played(tmp_path / "one") == played(tmp_path / "two")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--players", "stokfish"], "did you mean 'stockfish'"),
        (["--players", "random", "--anchors", "greedy", "--games-per-pair", "3"], "even number"),
        (["--players", "random", "--anchors", "none"], "at least two"),
        (["--players", "random", "--anchors", "none", "--format", "gauntlet"], "needs a ladder"),
        (["--players", "random", "greedy", "--anchors", "none", "--openings", "nope.epd"],
         "nope.epd"),
        (["--players", "human", "random", "--anchors", "none"], "cannot play an arena"),
        (["--players", "random", "greedy", "--anchors", "none", "--workers", "0"], "workers"),
        (["--players", "random", "greedy", "--anchors", "none", "--price", "gpt=1"],
         "MODEL=IN/OUT"),
        (["--players", "random", "--anchors", "stockfish?elo=100"], "elo"),
    ],
)  # fmt: skip
def test_bad_usage_exits_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    if "stockfish?elo=100" in args:
        from chess_env.core.players import stockfish_installed

        if not stockfish_installed():
            pytest.skip("the Elo range check needs the Stockfish binary")
    refused = _arena(*args, "--quiet", out=tmp_path / "out", check=False)
    assert refused.returncode == 2, refused.stderr
    assert message in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out" / GAMES_FILE).exists()


def test_anchors_are_pinned_by_elo_or_by_rating() -> None:
    assert parse_anchor("stockfish?elo=1500&movetime=0.1") == ("stockfish?elo=1500&movetime=0.1",
                                                                1500.0)  # fmt: skip
    assert parse_anchor("alphabeta:2@1234.5") == ("alphabeta:2", 1234.5)
    assert parse_anchor("stockfish:3") == ("stockfish:3", None)


def test_default_anchors_need_stockfish(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chess_env.errors import StockfishNotFoundError

    monkeypatch.setattr("chess_env.arena.runner.stockfish_installed", lambda: False)
    with pytest.raises(StockfishNotFoundError, match="--anchors"):
        prepare(["random"], out=tmp_path, progress=False)


@pytest.mark.skipif(os.name != "posix", reason="spawned workers and SIGKILL are POSIX here")
def test_engine_games_run_in_workers_and_record_each_move(tmp_path: Path) -> None:
    from chess_env.core.players import stockfish_installed

    if not stockfish_installed():
        pytest.skip("needs the Stockfish binary")
    anchors = ["stockfish?elo=1350&movetime=0.01"]
    result = run(["greedy"], anchors=anchors, games_per_pair=2, openings="startpos", workers=2,
                 out=tmp_path, progress=False, bootstrap=0)  # fmt: skip
    assert result.games == 2
    for game in _games(tmp_path):
        board = chess.Board()
        for move in game.moves:
            assert board.san(chess.Move.from_uci(move.uci)) == move.san
            board.push_uci(move.uci)


@pytest.mark.stockfish
def test_move_quality_is_analysed_once_and_read_from_the_cache(tmp_path: Path) -> None:
    from chess_env.core.players import stockfish_installed

    if not stockfish_installed():
        pytest.skip("the analysis needs the Stockfish binary")
    options = dict(anchors=[], openings="startpos", games_per_pair=2, max_plies=30,
                   analyse_depth=4, out=tmp_path, progress=False, bootstrap=0)  # fmt: skip
    first = run(["greedy", "random"], **options)
    cached = (tmp_path / "evals.jsonl").read_text()
    moves = {name: 0 for name in ("greedy", "random")}
    for game in _games(tmp_path):
        for number, _ in enumerate(game.moves):
            moves[game.white if number % 2 == 0 else game.black] += 1
    for card in first.players:
        quality = card.quality
        assert quality is not None and quality.depth == 4 and quality.moves == moves[card.name]
        assert quality.blunders + quality.mistakes + quality.inaccuracies <= quality.moves
        assert quality.acpl >= 0 and 0 <= quality.accuracy <= 100
    with open(tmp_path / "games.pgn", encoding="utf-8") as handle:
        pgn = chess.pgn.read_game(handle)
    assert all(node.eval() is not None for node in pgn.mainline())

    second = run(["greedy", "random"], **options)  # nothing to play, every position cached
    assert (tmp_path / "evals.jsonl").read_text() == cached
    assert [card.quality for card in second.players] == [card.quality for card in first.players]


def test_a_registered_player_plays_in_this_process(tmp_path: Path) -> None:
    from chess_env.core.opponents import Opponent
    from chess_env.core.players import register_player, unregister_player

    class FirstMove(Opponent):
        name = "first"

        def choose_move(self, board: chess.Board, legal_moves: list[chess.Move]) -> chess.Move:
            return min(legal_moves, key=lambda move: move.uci())

    register_player("first", lambda spec: FirstMove())
    try:
        result = run(["first", "random"], anchors=[], openings="startpos", games_per_pair=2,
                     workers=2, out=tmp_path, progress=False, bootstrap=0)  # fmt: skip
    finally:
        unregister_player("first")
    assert result.games == 2
    for game in _games(tmp_path):
        board = chess.Board()
        for number, move in enumerate(game.moves):
            if (number % 2 == 0) == (game.white == "first"):
                assert move.uci == min(m.uci() for m in board.legal_moves)
            board.push_uci(move.uci)
