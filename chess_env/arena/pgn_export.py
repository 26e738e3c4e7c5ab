"""The arena's games as PGN: ``OUT/games.pgn``, one game after another, with comments.

- ``game_to_pgn(game, evals)``: one ``ArenaGame`` as a ``chess.pgn.Game``.
- ``write_pgn(games, path, evals_by_game)``: every game into one file.
- ``comment_text(text)``: free text (an LLM's answer, an opening's name) made safe in a comment.

A game's tags: Event, Site, Round (its index in the schedule, from 1), White, Black, Result
(``*`` for an endpoint outage, which has no chess result), Opening, Termination (the ending and
the failure in words), FEN and SetUp when the opening starts elsewhere than the start position,
and ``WhiteCondition``/``BlackCondition`` for text players shown a prompt condition. Every value
goes through ``chess_env.core.pgn.set_tags``.

The moves: the opening's (the game comment names it, the last book move says "book ends"), then
the moves played, each commented with the LLM's answer, the refused answers before it, the time
taken as ``[%emt]`` and, with evaluations, ``[%eval]`` from White's side and the loss of a
mistake or a blunder (also as the NAG ``?!``, ``?`` or ``??``). When the failing side's last
attempt was never played (a forfeit, an outage), the last move's comment adds its answer and
refusals.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import chess
import chess.engine
import chess.pgn

from chess_env.arena.results import ArenaGame, MoveRecord
from chess_env.core.pgn import set_tags, tag_value

if TYPE_CHECKING:
    from chess_env.arena.analysis import MoveEval

__all__ = ["comment_text", "game_to_pgn", "write_pgn"]

# A brace would end the comment: python-chess drops "}" on writing, other writers do not.
_BRACES = str.maketrans("{}", "()")
_NAGS = {
    "inaccuracy": chess.pgn.NAG_DUBIOUS_MOVE,
    "mistake": chess.pgn.NAG_MISTAKE,
    "blunder": chess.pgn.NAG_BLUNDER,
}
_LOSS_SHOWN = ("mistake", "blunder")


def comment_text(text: str) -> str:
    """``text`` as one line that reads back unchanged from a PGN comment.

    The tag sanitiser first (``chess_env.core.pgn.tag_value``: line breaks and control characters
    become spaces, so no line of the comment starts with ``%``, an escape line to PGN readers),
    then braces become parentheses, ``[%`` becomes ``[ %`` (a reader would take what follows for
    the move's clock or evaluation) and runs of spaces become one.

    Example:
        >>> comment_text("I play {e4}.\\n[%eval 9]  wins")
        'I play (e4). [ %eval 9] wins'
    """
    return " ".join(tag_value(text).translate(_BRACES).split()).replace("[%", "[ %")


def game_to_pgn(
    game: ArenaGame, evals: Sequence[MoveEval] | None = None, *, event: str = "polyarena arena"
) -> chess.pgn.Game:
    """``game`` as a PGN game (see the module docstring for its tags and comments).

    ``evals`` holds one evaluation per move played (not the opening's), in order; a list of
    another length, or one whose moves differ, raises ``ValueError`` rather than put an
    evaluation on the wrong move. A move that is not legal where it stands raises
    ``chess.IllegalMoveError``.

    Example:
        >>> from chess_env.arena.results import MoveRecord
        >>> record = ArenaGame(
        ...     game_id="g0", index=0, white="random", black="greedy", opening_id="e4",
        ...     opening_name="King's pawn", root_fen=chess.STARTING_FEN, opening_moves=["e2e4"],
        ...     seed=0, moves=[MoveRecord(uci="e7e5", san="e5", seconds=1.5)], result="1/2-1/2",
        ...     ending="max_plies", wall_seconds=2.0,
        ... )
        >>> pgn = game_to_pgn(record)
        >>> print(pgn.mainline_moves())
        1. e4 { book ends } 1... e5 { [%emt 0:00:01.5] }
        >>> pgn.comment, pgn.headers["Termination"], pgn.headers["Result"]
        ("opening e4: King's pawn", 'max_plies', '1/2-1/2')
    """
    if evals is not None and len(evals) != len(game.moves):
        raise ValueError(
            f"game {game.game_id}: {len(evals)} evaluations for {len(game.moves)} moves played"
        )
    pgn = chess.pgn.Game()
    board = chess.Board(game.root_fen)
    _set_headers(pgn, game, board, event)
    pgn.comment = comment_text(f"opening {game.opening_id}: {game.opening_name}")
    node: chess.pgn.GameNode = pgn
    for uci in game.opening_moves:
        node = _push(node, board, uci)
    if game.opening_moves:
        node.comment = "book ends"
    move_evals = [None] * len(game.moves) if evals is None else evals
    for record, move_eval in zip(game.moves, move_evals, strict=True):
        node = _push(node, board, record.uci)
        _annotate(node, record, move_eval, game.game_id)
    if game.unplayed is not None:
        note = _comment(f"{game.failed_side} did not move", *_move_notes(game.unplayed))
        node.comment = "; ".join(text for text in (node.comment, note) if text)
    return pgn


def _set_headers(pgn: chess.pgn.Game, game: ArenaGame, board: chess.Board, event: str) -> None:
    termination = f"{game.ending}: {game.failure}" if game.failure else game.ending
    set_tags(
        pgn,
        Event=event,
        Site="polyarena",
        Round=str(game.index + 1),
        White=game.white,
        Black=game.black,
        Result=game.result or "*",
        Opening=game.opening_name,
        Termination=termination,
    )
    if board.fen() != chess.STARTING_FEN:
        set_tags(pgn, FEN=board.fen(), SetUp="1")
    for color in ("white", "black"):
        if color in game.conditions:
            set_tags(pgn, **{f"{color.capitalize()}Condition": game.conditions[color]})


def _push(node: chess.pgn.GameNode, board: chess.Board, uci: str) -> chess.pgn.ChildNode:
    """Play ``uci`` on ``board`` (kept alongside, so no node replays the game from its root)."""
    move = board.parse_uci(uci)
    board.push(move)
    return node.add_variation(move)


def _annotate(
    node: chess.pgn.ChildNode, record: MoveRecord, move_eval: MoveEval | None, game_id: str
) -> None:
    notes = _move_notes(record)
    if move_eval is not None:
        if move_eval.uci != record.uci:
            raise ValueError(
                f"game {game_id}: evaluation of {move_eval.uci} given for {record.uci}"
            )
        if move_eval.kind in _LOSS_SHOWN:
            notes.append(f"{move_eval.kind} (-{move_eval.cp_loss} cp)")
        if move_eval.kind in _NAGS:
            node.nags.add(_NAGS[move_eval.kind])
    node.comment = _comment(*notes)
    if move_eval is not None:
        cp_white = move_eval.cp_after if move_eval.color == chess.WHITE else -move_eval.cp_after
        node.set_eval(chess.engine.PovScore(chess.engine.Cp(cp_white), chess.WHITE))
    node.set_emt(record.seconds)


def _move_notes(record: MoveRecord) -> list[str]:
    """What the player said about a move: its answer and the answers refused before it."""
    notes = [record.comment]
    if record.rejected:
        notes.append(f"refused: {', '.join(record.rejected)}")
    return notes


def _comment(*notes: str) -> str:
    return "; ".join(text for text in map(comment_text, notes) if text)


def write_pgn(
    games: Iterable[ArenaGame],
    path: str | os.PathLike[str],
    evals_by_game: Mapping[str, Sequence[MoveEval]] | None = None,
) -> int:
    """Write ``games`` into ``path`` (UTF-8, replacing it) and return how many were written.

    ``evals_by_game`` maps a game's ``game_id`` to its evaluations; a game without an entry is
    written without them.
    """
    evals_by_game = evals_by_game or {}
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        exporter = chess.pgn.FileExporter(handle)
        for game in games:
            game_to_pgn(game, evals_by_game.get(game.game_id)).accept(exporter)
            count += 1
    return count
