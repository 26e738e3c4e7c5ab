"""Opening suites: the start positions a tournament plays each pairing from.

- ``Opening``: a position given as a root FEN and the UCI moves played from it.
- ``OpeningSuite``: named openings with a ``digest``, so a tournament can tell whether the suite
  it resumes is the one it started with.
- ``load_openings(source)``: ``"default"`` (balanced lines from lichess-org/chess-openings, CC0;
  see ``data/OPENINGS.md``), ``"startpos"``, or a ``.fen``/``.epd``, ``.pgn`` or ``.tsv`` file.
- ``pick_openings(suite, count, seed)``: a seeded sample, in suite order.

Why moves and not only FENs: a game started from ``Opening.board()`` carries the opening in its
move stack, so its PGN records the opening moves and repetitions count from the first move.

Every file is checked whole when loaded: a FEN that does not parse or is not a legal position,
an illegal move, a position that is already over (no game to play), a duplicate id or an empty
suite raises ``InvalidPositionError`` (a ``ValueError``) naming the file and its line or game;
a missing file or an unknown extension raises ``ValueError``.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import chess
import chess.pgn
import numpy as np

from chess_env.core.positions import board_from_fen
from chess_env.errors import InvalidPositionError

__all__ = ["DEFAULT_SOURCE", "Opening", "OpeningSuite", "load_openings", "pick_openings"]

DEFAULT_SOURCE = (
    "lichess-org/chess-openings (CC0-1.0) at commit 51b886249b9e: lines of 4-8 plies "
    "within 40 cp by Stockfish 15.1 at depth 18"
)
_DEFAULT_FILE = "data/openings.tsv"
_DEFAULT_LABEL = f"chess_env/arena/{_DEFAULT_FILE}"
_TSV_REQUIRED = ("id", "name", "moves_uci")


@dataclass(frozen=True)
class Opening:
    """A start position: ``moves`` (UCI) played from ``root_fen``.

    Example:
        >>> opening = Opening("C60", "Ruy Lopez", ("e2e4", "e7e5", "g1f3", "b8c6", "f1b5"))
        >>> opening.fen
        'r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3'
        >>> len(opening.board().move_stack)
        5
    """

    id: str
    name: str
    moves: tuple[str, ...] = ()
    root_fen: str = chess.STARTING_FEN

    def board(self) -> chess.Board:
        """The root board with the moves pushed (a new board each call)."""
        board = chess.Board(self.root_fen)
        for uci in self.moves:
            board.push_uci(uci)
        return board

    @property
    def fen(self) -> str:
        """The FEN of the position after the moves."""
        return self.board().fen()


@dataclass(frozen=True)
class OpeningSuite:
    """Openings with unique ids, named ``"default"``, ``"startpos"`` or by the file path given.

    ``source`` says in one line where the openings come from (and, for the default suite, their
    licence); ``digest`` is the sha256 of their ids, root FENs and moves.

    Example:
        >>> suite = OpeningSuite("mine", (Opening("a", "Open", ("e2e4",)),), source="by hand")
        >>> len(suite), suite.digest[:12]
        (1, '9771a4279f5e')
    """

    name: str
    openings: tuple[Opening, ...]
    source: str = ""

    def __len__(self) -> int:
        return len(self.openings)

    def __iter__(self) -> Iterator[Opening]:
        return iter(self.openings)

    @property
    def digest(self) -> str:
        """sha256 hex of one line per opening: id, root FEN and moves, tab-separated."""
        text = "".join(
            f"{opening.id}\t{opening.root_fen}\t{' '.join(opening.moves)}\n"
            for opening in self.openings
        )
        return hashlib.sha256(text.encode()).hexdigest()


def load_openings(source: str | os.PathLike[str]) -> OpeningSuite:
    """The suite named by ``source``: ``"default"``, ``"startpos"`` or a file's path.

    Files by extension: ``.fen``/``.epd`` one position per line (blank lines and ``#`` comments
    skipped; a FEN with or without its move counters, an EPD's ``id`` opcode as the id, else
    ``line N``); ``.pgn`` every game's mainline from its ``FEN`` header or the start (named by its
    ``Opening`` or ``Event`` header, id ``game N``); ``.tsv`` this package's format (columns
    ``id``, ``name``, ``moves_uci``, optionally ``root_fen``, and ``fen`` which must match).

    Example:
        >>> suite = load_openings("default")
        >>> len(suite) >= 50, suite.openings[0].id, suite.openings[0].name
        (True, 'A01', 'Nimzo-Larsen Attack: Modern Variation')
        >>> [opening.id for opening in load_openings("startpos")]
        ['startpos']
    """
    if source == "default":
        return _default_suite()
    if source == "startpos":
        start = Opening("startpos", "Start position")
        return OpeningSuite("startpos", (start,), source="the standard start position")
    path = Path(source)
    readers = {".fen": _read_positions, ".epd": _read_positions, ".pgn": _read_pgn}
    suffix = path.suffix.lower()
    if suffix not in (*readers, ".tsv"):
        raise ValueError(
            f"opening suite {os.fspath(source)!r}: give 'default', 'startpos' or a .fen, .epd, "
            f".pgn or .tsv file (unknown extension {path.suffix!r})"
        )
    if not path.is_file():
        raise ValueError(f"opening suite {os.fspath(source)!r}: no such file")
    text = path.read_text(encoding="utf-8")
    entries = _read_tsv(text) if suffix == ".tsv" else readers[suffix](text)
    return _suite(os.fspath(source), entries, source=f"file {path.resolve()}")


def pick_openings(suite: OpeningSuite, count: int | None, seed: int) -> tuple[Opening, ...]:
    """``count`` openings drawn without replacement by ``seed``, in suite order (all if None).

    numpy's seeded Generator, so the same seed picks the same openings in every process.

    Example:
        >>> suite = load_openings("default")
        >>> picked = pick_openings(suite, 3, seed=7)
        >>> picked == pick_openings(suite, 3, seed=7), len(picked)
        (True, 3)
        >>> pick_openings(suite, None, seed=7) == suite.openings
        True
    """
    if count is not None and count < 1:
        raise ValueError(f"count must be a positive integer or None, got {count}")
    if count is None or count >= len(suite):
        return suite.openings
    chosen = np.random.default_rng(seed).choice(len(suite), size=count, replace=False)
    return tuple(suite.openings[index] for index in sorted(chosen))


# -- readers: each yields (where in the file, opening) --------------------------------------


@functools.lru_cache(maxsize=1)
def _default_suite() -> OpeningSuite:
    text = resources.files("chess_env.arena").joinpath(_DEFAULT_FILE).read_text(encoding="utf-8")
    return _suite("default", _read_tsv(text), source=DEFAULT_SOURCE, label=_DEFAULT_LABEL)


def _content_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of every line that is not blank or a ``#`` comment."""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yield number, line


def _read_positions(text: str) -> Iterator[tuple[str, Opening]]:
    for number, line in _content_lines(text):
        where = f"line {number}"
        line = line.strip()
        fields = line.split()
        # A FEN's six fields end in two counters; an EPD record has four and then opcodes.
        is_fen = len(fields) == 6 and fields[4].isdigit() and fields[5].isdigit()
        try:
            board, operations = (chess.Board(line), {}) if is_fen else chess.Board.from_epd(line)
        except ValueError as error:
            raise InvalidPositionError(f"{where}: {line!r} does not parse: {error}") from None
        label = operations.get("id")
        name = where if label is None else str(label)
        yield where, Opening(name, name, root_fen=board.fen())


class _QuietGameBuilder(chess.pgn.GameBuilder):
    """Collects errors in ``game.errors`` without logging them: we raise on the first."""

    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(error)


def _read_pgn(text: str) -> Iterator[tuple[str, Opening]]:
    handle = io.StringIO(text)
    index = 0
    while (game := chess.pgn.read_game(handle, Visitor=_QuietGameBuilder)) is not None:
        index += 1
        where = f"game {index}"
        if game.errors:
            raise InvalidPositionError(f"{where}: {game.errors[0]}")
        root = game.board()
        if root.chess960 or type(root) is not chess.Board:
            raise InvalidPositionError(f"{where}: only standard chess (Variant header)")
        headers = game.headers
        names = (headers.get(tag, "?") for tag in ("Opening", "Event"))
        name = next((value for value in names if value not in ("", "?")), where)
        moves = tuple(move.uci() for move in game.mainline_moves())
        yield where, Opening(where, name, moves, root.fen())


def _read_tsv(text: str) -> Iterator[tuple[str, Opening]]:
    lines = _content_lines(text)
    header_number, header_line = next(lines, (1, ""))
    header = header_line.split("\t")
    missing = [column for column in _TSV_REQUIRED if column not in header]
    if missing:
        raise InvalidPositionError(f"line {header_number}: the header lacks {missing}")
    for number, line in lines:
        where = f"line {number}"
        cells = line.split("\t")
        if len(cells) != len(header):
            raise InvalidPositionError(f"{where}: {len(cells)} cells, the header has {len(header)}")
        row = dict(zip(header, cells, strict=True))
        opening = Opening(
            row["id"],
            row["name"],
            tuple(row["moves_uci"].split()),
            row.get("root_fen") or chess.STARTING_FEN,
        )
        expected = row.get("fen")
        if expected and _board(opening, where).fen() != expected:
            raise InvalidPositionError(
                f"{where}: the moves lead to {opening.fen!r}, not to the fen column's {expected!r}"
            )
        yield where, opening


# -- checks shared by every source ----------------------------------------------------------


def _board(opening: Opening, where: str) -> chess.Board:
    """The opening's final board, or ``InvalidPositionError`` saying which FEN or move is wrong."""
    try:
        board = board_from_fen(opening.root_fen)
    except InvalidPositionError as error:
        raise InvalidPositionError(f"{where}: {error}") from None
    for ply, uci in enumerate(opening.moves, start=1):
        try:
            board.push_uci(uci)
        except ValueError:
            raise InvalidPositionError(
                f"{where}: move {ply} {uci!r} is not legal in {board.fen()!r}"
            ) from None
    return board


def _suite(
    name: str,
    entries: Iterable[tuple[str, Opening]],
    *,
    source: str,
    label: str | None = None,
) -> OpeningSuite:
    """The suite of ``entries``, each checked; an error names ``label`` (or ``name``) and where."""
    label = name if label is None else label
    openings: list[Opening] = []
    seen: dict[str, str] = {}
    try:
        for where, opening in entries:
            outcome = _board(opening, where).outcome()
            if outcome is not None:
                raise InvalidPositionError(
                    f"{where}: the position is already over "
                    f"({outcome.termination.name.lower()}), {opening.fen!r}: no game to play"
                )
            if opening.id in seen:
                raise InvalidPositionError(
                    f"{where}: id {opening.id!r} is already used at {seen[opening.id]}"
                )
            seen[opening.id] = where
            openings.append(opening)
    except InvalidPositionError as error:
        raise InvalidPositionError(f"{label}, {error}") from None
    if not openings:
        raise InvalidPositionError(f"{label}: no openings in it")
    return OpeningSuite(name, tuple(openings), source=source)
