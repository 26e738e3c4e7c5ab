"""Games as the viewer replays them: every ply with the position after it, read by python-chess.

- ``replay_file(text, format, start, count)``: a PGN file's games, or a ``games.jsonl``'s lines
  (the arena's ``ArenaGame`` or the service archive's ``Game``), as a ``Replay``
- ``replay_pgn_game(game, index, line)``, ``replay_arena_game(game, ...)``,
  ``replay_record(game, ...)``: one game of each kind as a ``ReplayGame``
- ``split_comment(text)``: a PGN comment without its commands, and the refused answers it names
- ``ReplayInputError``: a file that cannot be replayed; its message names the game, the line of
  the file where that game starts and the ply, and ``reason`` says what kind of fault it is:
  "not_pgn", "invalid_pgn" (e.g. a bad FEN tag), "illegal_move", "not_json" (also JSON nested
  too deeply to read), "unknown_record", "invalid_record", "too_many_plies" (a game longer than
  ``MAX_REPLAY_PLIES``) or "too_many_games" (a file of more than ``MAX_REPLAY_FILE_GAMES``)

Every position comes from python-chess (moves pushed on a ``chess.Board``, ``Board.fen()``), so
the page that shows them needs no rules of its own. What a reply costs is linear in what it
replays, and bounded:

- Games outside the window asked for are counted, not read (``chess.pgn.skip_game``, or a line
  count), so a large file costs little more than its window; counting still costs per game, so a
  file holds at most ``MAX_REPLAY_FILE_GAMES`` (100,000).
- A game is read up to ``MAX_REPLAY_PLIES`` (1,000) plies: reading stops at the next one and
  the file is refused, naming the game. JSON lines have their moves counted before they are
  validated.
- A reply replays games until they hold ``MAX_REPLAY_WINDOW_PLIES`` (5,000) plies, so it may
  hold fewer games than asked for; the next window starts at ``start + len(games)``.
- PGN variations are skipped unread: the viewer shows the main line, and python-chess copies
  the board with its whole move stack for each variation it reads, so nested variations would
  cost the square of their depth.

Example:
    >>> replay = replay_file('[White "Ann"]\\n\\n1. e4 { [%eval 0.3] [%emt 0:00:02] sure } e5 *',
    ...                      "pgn")
    >>> first = replay.games[0].plies[0]
    >>> first.san, first.fen_after, first.eval_cp, first.seconds, first.comment
    ('e4', 'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1', 30, 2.0, 'sure')
"""

from __future__ import annotations

import functools
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import chess
import chess.engine
import chess.pgn
from pydantic import ValidationError

from chess_env.arena.results import ArenaGame, MoveRecord
from chess_env.core.game import Game, GameResult
from chess_env.serving.game_store import DEFAULT_MAX_PLIES
from chess_env.serving.viewer.bodies import (
    MAX_REPLAY_GAMES,
    PgnResult,
    Replay,
    ReplayFormat,
    ReplayGame,
    ReplayPly,
)
from envkit.server.errors import describe_errors

__all__ = [
    "MATE_CP",
    "MAX_REPLAY_FILE_GAMES",
    "MAX_REPLAY_PLIES",
    "MAX_REPLAY_WINDOW_PLIES",
    "ReplayInputError",
    "replay_arena_game",
    "replay_file",
    "replay_pgn_game",
    "replay_record",
    "split_comment",
]

MATE_CP = 10_000  # a forced mate's evaluation, from White's side
MAX_REPLAY_PLIES = DEFAULT_MAX_PLIES  # plies of one game: as long as the service lets one be
MAX_REPLAY_WINDOW_PLIES = 5_000  # plies replayed in one reply: it ends with the game reaching it
MAX_REPLAY_FILE_GAMES = 100_000  # games in a file: counting those outside the window costs too
_COMMAND = re.compile(r"\[%\w+[^\]]*\]")  # [%eval ...], [%emt ...], [%clk ...], [%cal ...]
_REFUSED = re.compile(r"^refused: ([a-z_]+(?:, [a-z_]+)*)$")  # as chess_env.arena writes it
_NOT_SPACE = re.compile(r"\S")
_PGN_RESULTS = {"1-0", "0-1", "1/2-1/2", "*"}
_GAME_RESULT: dict[GameResult | None, PgnResult] = {
    "white_wins": "1-0",
    "black_wins": "0-1",
    "draw": "1/2-1/2",
    None: "*",
}
_UNSET_TAGS = {"?", "????.??.??", "*", ""}
_Read = Callable[[], ReplayGame]  # a game's replay, made only if the window holds it
_MOVE_ERRORS = (chess.IllegalMoveError, chess.InvalidMoveError, chess.AmbiguousMoveError)


class _PlyCapError(Exception):
    """A game's reading passed its ply cap (raised out of ``chess.pgn.read_game`` to stop it)."""


class _MainLineBuilder(chess.pgn.GameBuilder):
    """python-chess's game builder as the viewer needs it: the main line only (variations are
    skipped unread), no more than ``max_plies`` plies (``_PlyCapError`` at the next one), up to
    its first error, and no log line per error (a user's bad file is their 422, not the
    server's log)."""

    def __init__(self, max_plies: int) -> None:
        super().__init__()
        self.max_plies = max_plies
        self.plies = 0

    def begin_game(self) -> None:
        super().begin_game()
        self.plies = 0

    # GameBuilder narrowed BaseVisitor's return (SKIP or None) to None: it reads every variation.
    def begin_variation(self) -> chess.pgn.SkipType:  # type: ignore[override]
        """Skip it; a comment after it stays the previous move's, as when it was read."""
        return chess.pgn.SKIP

    def end_variation(self) -> None:
        """Nothing to leave: no variation is entered. (python-chess also calls this for a ")"
        after an illegal move, where GameBuilder would pop the main line itself.)"""

    def begin_parse_san(self, board: chess.Board, san: str) -> chess.pgn.SkipType | None:
        """After an error, which refuses the game, its moves are left unparsed (python-chess
        would go on with the main line after the next ")")."""
        return chess.pgn.SKIP if self.game.errors else None

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        if self.plies == self.max_plies:
            raise _PlyCapError
        self.plies += 1
        super().visit_move(board, move)

    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(error)


@dataclass
class _Window:
    """Which games a reply replays: from ``start`` to before ``stop``, while the games replayed
    hold fewer than ``budget`` plies (``plies``, which the caller adds up)."""

    start: int
    stop: int
    budget: int
    plies: int = 0

    def wants(self, index: int) -> bool:
        return self.start <= index < self.stop and self.plies < self.budget


class ReplayInputError(ValueError):
    """A file the viewer cannot replay: which game, where, and why.

    Example:
        >>> replay_file('[White "A"]\\n\\n1. e4 e5 2. Ke3 *', "pgn")
        Traceback (most recent call last):
        ...
        chess_env.serving.viewer.replay.ReplayInputError: game 1 (line 1), ply 3: illegal san: ...
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def replay_file(
    text: str,
    format: ReplayFormat,
    start: int = 0,
    count: int = MAX_REPLAY_GAMES,
    *,
    max_plies: int = MAX_REPLAY_PLIES,
    max_window_plies: int = MAX_REPLAY_WINDOW_PLIES,
    max_games: int = MAX_REPLAY_FILE_GAMES,
) -> Replay:
    """The games ``start`` to ``start + count`` of ``text`` (a PGN file or JSON lines), and how
    many it holds; ``ReplayInputError`` for the first of those games that cannot be read, or
    is longer than ``max_plies``, or for a file of more than ``max_games`` games. The games
    end early after the one that brings the plies replayed to ``max_window_plies``."""
    reader = _pgn_games if format == "pgn" else _jsonl_games
    window = _Window(start, start + count, max_window_plies)
    games, total = [], 0
    for index, read in reader(text, window.wants, max_plies):
        if index == max_games:
            raise ReplayInputError(
                "too_many_games",
                f"the file holds more than {max_games} games; the viewer replays files of at "
                f"most {max_games} games: split it",
            )
        total = index + 1
        if read is not None:
            games.append(read())
            window.plies += len(games[-1].plies)
    return Replay(format=format, total=total, start=start, games=games)


def _too_many_plies(where: str, max_plies: int) -> ReplayInputError:
    return ReplayInputError(
        "too_many_plies",
        f"{where}: more than {max_plies} plies; the viewer replays games of at most "
        f"{max_plies} plies",
    )


def _pgn_games(
    text: str, wanted: Callable[[int], bool], max_plies: int
) -> Iterator[tuple[int, _Read | None]]:
    """Each game of a PGN text by index: a deferred replay for those ``wanted`` (asked just
    before the game is read), None for the others (skipped without reading their moves)."""
    handle = io.StringIO(text)
    builder = functools.partial(_MainLineBuilder, max_plies)
    line, position, index = 1, 0, 0
    while (begin := _NOT_SPACE.search(text, position)) is not None:
        line += text.count("\n", position, begin.start())
        handle.seek(begin.start())
        if wanted(index):
            try:
                game = chess.pgn.read_game(handle, Visitor=builder)
            except _PlyCapError:
                raise _too_many_plies(f"game {index + 1} (line {line})", max_plies) from None
            if game is None:
                return
            yield index, functools.partial(replay_pgn_game, game, index, line)
        elif chess.pgn.skip_game(handle):
            yield index, None
        else:
            return
        line += text.count("\n", begin.start(), handle.tell())
        position, index = handle.tell(), index + 1


def _jsonl_games(
    text: str, wanted: Callable[[int], bool], max_plies: int
) -> Iterator[tuple[int, _Read | None]]:
    """Each non-blank line of a JSON-lines text by index, as ``_pgn_games`` yields games. Lines
    end at "\n", "\r\n" or "\r", as JSON Lines says, and are cut one at a time: a list of every
    line of a file of short ones would take many times its size."""
    index = 0
    for number, content in enumerate(io.StringIO(text, newline=None), 1):
        if content.strip():
            read = functools.partial(_replay_line, content, index, number, max_plies)
            yield index, read if wanted(index) else None
            index += 1


def replay_pgn_game(game: chess.pgn.Game, index: int = 0, line: int = 1) -> ReplayGame:
    """A game python-chess read from PGN, ply by ply (its evaluations, times and comments)."""
    where = f"game {index + 1} (line {line})"
    if game.errors:
        error = game.errors[0]
        if not isinstance(error, _MOVE_ERRORS):
            raise ReplayInputError("invalid_pgn", f"{where}: {error}")
        ply = sum(1 for _ in game.mainline_moves()) + 1
        raise ReplayInputError("illegal_move", f"{where}, ply {ply}: {error}")
    headers = game.headers
    if game.next() is None and all(value in _UNSET_TAGS for value in headers.values()):
        raise ReplayInputError("not_pgn", f"{where}: neither tags nor moves: is this PGN?")
    board = game.board()
    start_fen, plies = board.fen(), list[ReplayPly]()
    for node in game.mainline():
        comment, refused = split_comment(node.comment)
        cp, mate = _white_eval(node.eval())
        notes = {"seconds": node.emt(), "comment": comment, "refused": refused}
        plies.append(_ply(board, node.move, len(plies) + 1, eval_cp=cp, mate=mate, **notes))
    result = headers.get("Result", "*")
    return ReplayGame(
        index=index,
        line=line,
        game_id=_tag(headers, "GameId"),
        white=headers.get("White", "?"),
        black=headers.get("Black", "?"),
        result=result if result in _PGN_RESULTS else "*",
        termination=_tag(headers, "Termination"),
        opening=_tag(headers, "Opening") or _tag(headers, "ECO"),
        event=_tag(headers, "Event"),
        comment=split_comment(game.comment)[0],
        start_fen=start_fen,
        plies=plies,
    )


def _tag(headers: chess.pgn.Headers, name: str) -> str | None:
    value = headers.get(name)
    return None if value is None or value in _UNSET_TAGS else value


def _ply(board: chess.Board, move: chess.Move, number: int, **notes: Any) -> ReplayPly:
    """The ply ``move`` on ``board`` (pushed there; it must be legal), with ``notes`` (time,
    comment, evaluation, refused answers)."""
    san, move_number = board.san(move), board.fullmove_number
    color = "white" if board.turn == chess.WHITE else "black"
    board.push(move)
    return ReplayPly(
        ply=number,
        move_number=move_number,
        color=color,
        san=san,
        uci=move.uci(),
        fen_after=board.fen(),
        **notes,
    )


def _white_eval(score: chess.engine.PovScore | None) -> tuple[int | None, int | None]:
    """(centipawns, moves to mate) from White's side; a mate is +-``MATE_CP`` centipawns."""
    if score is None:
        return None, None
    white = score.white()
    mate = white.mate()
    if mate is None:
        return white.score(), None
    return (MATE_CP if white.score(mate_score=MATE_CP) > 0 else -MATE_CP), mate


def split_comment(text: str) -> tuple[str, list[str]]:
    """``text`` without PGN commands (``[%eval ...]``, ``[%emt ...]``, ...), and the reason codes
    of the refused answers that ``chess_env.arena`` writes into it ("refused: a, b").

    Example:
        >>> split_comment("I take. [%eval 0.5]; refused: cannot_move_there [%emt 0:00:03]")
        ('I take.', ['cannot_move_there'])
        >>> split_comment("[%clk 0:05:00] { [ %eval 9] is my text }")
        ('{ [ %eval 9] is my text }', [])
    """
    kept: list[str] = []
    refused: list[str] = []
    for part in _COMMAND.sub(" ", text).split(";"):
        part = " ".join(part.split())
        found = _REFUSED.match(part)
        if found:
            refused += found.group(1).split(", ")
        elif part:
            kept.append(part)
    return "; ".join(kept), refused


def _replay_line(content: str, index: int, line: int, max_plies: int) -> ReplayGame:
    """One JSON line: an arena game (``ArenaGame``) or an archived service game (``Game``), its
    moves counted before it is validated (a record of too many costs no more than its parse)."""
    where = f"game {index + 1} (line {line})"
    try:
        record = json.loads(content)
    except RecursionError:  # json's parser recurses once per level of nesting
        message = f"{where}: not JSON: its arrays and objects nest too deeply"
        raise ReplayInputError("not_json", message) from None
    except ValueError as error:
        raise ReplayInputError("not_json", f"{where}: not JSON: {error}") from None
    if isinstance(record, dict) and "move_history" in record:
        kind: type[Game] | type[ArenaGame] = Game
        moves: tuple[str, ...] = ("move_history",)
    elif isinstance(record, dict) and "opening_moves" in record:
        kind, moves = ArenaGame, ("opening_moves", "moves")
    else:
        raise ReplayInputError(
            "unknown_record",
            f"{where}: neither an arena game (ArenaGame: opening_moves, moves) nor an archived "
            "game (Game: move_history)",
        )
    if sum(len(listed) for key in moves if isinstance(listed := record.get(key), list)) > max_plies:
        raise _too_many_plies(where, max_plies)
    try:
        parsed = kind.model_validate(record)
    except ValidationError as error:
        message = describe_errors(error.errors())
        raise ReplayInputError(
            "invalid_record", f"{where}: not a valid {kind.__name__}: {message}"
        ) from None
    if isinstance(parsed, Game):
        return replay_record(parsed, index=index, line=line)
    return replay_arena_game(parsed, index=index, line=line)


def replay_arena_game(game: ArenaGame, *, index: int = 0, line: int = 1) -> ReplayGame:
    """An arena game (one line of an arena run's ``games.jsonl``): the opening's moves (book),
    then each move with its time, the player's answer and the answers refused before it.

    Example:
        >>> record = ArenaGame(
        ...     game_id="g0", index=0, white="greedy", black="random", opening_id="e4",
        ...     opening_name="King's pawn", root_fen=chess.STARTING_FEN, opening_moves=["e2e4"],
        ...     seed=0, moves=[MoveRecord(uci="e7e5", san="e5", seconds=1.5, rejected=["x"])],
        ...     result="1/2-1/2", ending="max_plies", wall_seconds=2.0)
        >>> [(p.san, p.book, p.seconds, p.refused) for p in replay_arena_game(record).plies]
        [('e4', True, None, []), ('e5', False, 1.5, ['x'])]
    """
    where = f"game {index + 1} (line {line}, {game.game_id})"
    try:
        board = chess.Board(game.root_fen)
    except ValueError as error:
        raise ReplayInputError("invalid_record", f"{where}: root_fen: {error}") from None
    plies: list[ReplayPly] = []
    for uci in game.opening_moves:
        plies.append(_checked_ply(board, uci, len(plies) + 1, where, book=True))
    for record in game.moves:
        plies.append(_checked_ply(board, record.uci, len(plies) + 1, where, **_notes(record)))
    termination = f"{game.ending}: {game.failure}" if game.failure else game.ending
    comment = f"opening {game.opening_id}: {game.opening_name}"
    if game.unplayed is not None:
        refused = ", ".join(game.unplayed.rejected)
        notes = [game.unplayed.comment, f"refused: {refused}" if refused else ""]
        comment += f"; {game.failed_side} did not move" + "".join(f"; {n}" for n in notes if n)
    return ReplayGame(
        index=index,
        line=line,
        game_id=game.game_id,
        white=game.white,
        black=game.black,
        white_player=game.white,
        black_player=game.black,
        result=game.result or "*",
        termination=termination,
        opening=game.opening_name,
        comment=comment,
        start_fen=chess.Board(game.root_fen).fen(),
        plies=plies,
    )


def _notes(record: MoveRecord) -> dict[str, Any]:
    return {"seconds": record.seconds, "comment": record.comment, "refused": list(record.rejected)}


def _checked_ply(board: chess.Board, uci: str, number: int, where: str, **notes: Any) -> ReplayPly:
    """``_ply`` of ``uci``, or ``ReplayInputError`` naming the ply if it is illegal there."""
    try:
        move = board.parse_uci(uci)
    except ValueError as error:
        raise ReplayInputError("illegal_move", f"{where}, ply {number}: {error}") from None
    return _ply(board, move, number, **notes)


def replay_record(game: Game, *, index: int = 0, line: int = 1, status: bool = False) -> ReplayGame:
    """A service game (a ``Game``: live, or a line of the archive) with each move's thinking
    time; ``status`` adds the game's status (playing, or how it ended).

    Example:
        >>> from chess_env.core.game import AgentConfig
        >>> agent = dict(personality="p", model_name="greedy", system_prompt="")
        >>> game = Game.new(AgentConfig(agent_id="white", name="W", **agent),
        ...                 AgentConfig(agent_id="black", name="B", **agent))
        >>> game = game.with_move("e4", thinking_time=0.5).with_move("c5")
        >>> replay = replay_record(game, status=True)
        >>> [(p.san, p.seconds) for p in replay.plies], replay.white_player, replay.status
        ([('e4', 0.5), ('c5', 0.0)], 'greedy', 'in_progress')
    """
    where = f"game {index + 1} (line {line}, {game.game_id})"
    board = chess.Board(game.start_fen)
    plies: list[ReplayPly] = []
    for move in game.move_history:
        seconds = move.thinking_time
        plies.append(_checked_ply(board, move.uci_notation, len(plies) + 1, where, seconds=seconds))
    return ReplayGame(
        index=index,
        line=line,
        game_id=game.game_id,
        white=game.white.name,
        black=game.black.name,
        white_player=game.white.model_name,
        black_player=game.black.model_name,
        result=_GAME_RESULT[game.result],
        termination=game.termination,
        status=game.status if status else None,
        start_fen=chess.Board(game.start_fen).fen(),
        plies=plies,
    )
