"""Opening suites: the default data, every file format, every refusal, seeded picks, the digest."""

from __future__ import annotations

import dataclasses
from importlib import resources
from pathlib import Path

import chess
import chess.engine
import pytest

from chess_env.arena.openings import Opening, OpeningSuite, load_openings, pick_openings
from chess_env.core.opponents import find_stockfish
from chess_env.core.players import stockfish_installed
from chess_env.errors import InvalidPositionError

DEFAULT = load_openings("default")
ITALIAN = ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4")
# An EPD with black to move and stalemated; white mated after 1. f3 e5 2. g4 Qh4#.
STALEMATE_EPD = "k7/8/1Q6/8/8/8/8/7K b - -"
MATED_FEN = "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- the default suite ----------------------------------------------------------------------


def test_default_suite_has_at_least_50_openings_with_unique_ids_and_positions() -> None:
    assert DEFAULT.name == "default" and len(DEFAULT) >= 50
    assert len({opening.id for opening in DEFAULT}) == len(DEFAULT)
    positions = {opening.board().epd() for opening in DEFAULT}
    assert len(positions) == len(DEFAULT)
    assert "CC0-1.0" in DEFAULT.source and "lichess-org/chess-openings" in DEFAULT.source


def test_default_moves_are_legal_4_to_8_plies_and_lead_to_the_stored_fen() -> None:
    rows = _default_rows()
    assert [row["id"] for row in rows] == [opening.id for opening in DEFAULT]
    for opening, row in zip(DEFAULT, rows, strict=True):
        assert opening.root_fen == chess.STARTING_FEN
        assert 4 <= len(opening.moves) <= 8, opening.id
        board = chess.Board()
        for uci in opening.moves:
            move = chess.Move.from_uci(uci)
            assert move in board.legal_moves, (opening.id, uci)
            board.push(move)
        assert board.fen() == row["fen"] == opening.fen
        assert board.outcome() is None
        assert abs(int(row["stockfish_cp"])) <= 40


def test_default_spreads_over_eco_families_a_to_e() -> None:
    families = [opening.id[0] for opening in DEFAULT]
    assert set(families) == set("ABCDE")
    assert min(families.count(family) for family in "ABCDE") >= 5


def test_no_default_opening_is_a_prefix_of_another() -> None:
    lines = {opening.moves for opening in DEFAULT}
    for moves in lines:
        assert not any(moves[:plies] in lines for plies in range(len(moves))), moves


def test_board_records_the_opening_moves_in_the_stack() -> None:
    opening = DEFAULT.openings[0]
    board = opening.board()
    assert [move.uci() for move in board.move_stack] == list(opening.moves)
    assert board.root().fen() == chess.STARTING_FEN


def test_startpos_is_one_opening_without_moves() -> None:
    suite = load_openings("startpos")
    assert [(o.id, o.moves, o.fen) for o in suite] == [("startpos", (), chess.STARTING_FEN)]


# -- file formats -----------------------------------------------------------------------------


def test_fen_file_with_and_without_counters_comments_and_blank_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "positions.fen",
        "# two positions\n\n"
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1\n"
        "   \n"
        "4k3/8/8/8/8/8/4P3/4K3 w - -\n",
    )
    suite = load_openings(path)
    assert suite.name == str(path)
    assert [(o.id, o.name, o.moves) for o in suite] == [
        ("line 3", "line 3", ()),
        ("line 5", "line 5", ()),
    ]
    assert suite.openings[1].root_fen == "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"


def test_epd_file_takes_the_id_opcode_and_else_the_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "suite.epd",
        'rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq - id "queen pawn";\n'
        "rnbqkbnr/pppppppp/8/8/2P5/8/PP1PPPPP/RNBQKBNR b KQkq - hmvc 0; fmvn 1;\n",
    )
    suite = load_openings(str(path))
    assert [o.id for o in suite] == ["queen pawn", "line 2"]
    assert suite.openings[0].fen == "rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq - 0 1"


def test_pgn_games_from_the_start_and_from_a_fen_header(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "games.pgn",
        '[Event "Club"]\n[Opening "Italian Game"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 *\n\n'
        '[Event "Endgame"]\n[SetUp "1"]\n[FEN "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"]\n\n1. e4 Kd7 *\n\n'
        "1. d4 *\n",
    )
    first, second, third = load_openings(path)
    assert (first.id, first.name, first.moves) == ("game 1", "Italian Game", ITALIAN)
    assert first.root_fen == chess.STARTING_FEN
    assert (second.id, second.name, second.moves) == ("game 2", "Endgame", ("e2e4", "e8d7"))
    assert second.root_fen == "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"
    assert (third.id, third.name, third.moves) == ("game 3", "game 3", ("d2d4",))


def test_tsv_in_the_package_format_round_trips(tmp_path: Path) -> None:
    board = chess.Board()
    for uci in ITALIAN:
        board.push_uci(uci)
    path = write(
        tmp_path,
        "mine.tsv",
        "id\tname\tmoves_uci\tfen\n"
        f"it\tItalian Game\t{' '.join(ITALIAN)}\t{board.fen()}\n"
        f"k\tKing pawn\te2e4\t\n",
    )
    suite = load_openings(path)
    assert [(o.id, o.name, o.moves) for o in suite] == [
        ("it", "Italian Game", ITALIAN),
        ("k", "King pawn", ("e2e4",)),
    ]


def test_tsv_root_fen_column(tmp_path: Path) -> None:
    root = "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"
    path = write(tmp_path, "end.tsv", f"id\tname\tmoves_uci\troot_fen\nk\tKP\te2e4 e8d7\t{root}\n")
    (opening,) = load_openings(path)
    assert opening.root_fen == root and opening.fen == "8/3k4/8/8/4P3/8/8/4K3 w - - 1 2"


# -- refusals -------------------------------------------------------------------------------


def test_missing_file_and_unknown_extension(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"nowhere\.pgn.*no such file"):
        load_openings(tmp_path / "nowhere.pgn")
    path = write(tmp_path, "suite.txt", "e4\n")
    with pytest.raises(ValueError, match=r"suite\.txt.*unknown extension '\.txt'"):
        load_openings(path)


@pytest.mark.parametrize(
    ("name", "text", "match"),
    [
        ("bad.fen", "# c\nnot a fen at all\n", r"bad\.fen, line 2: 'not a fen at all' does not"),
        ("kingless.fen", "8/8/8/8/8/8/8/K7 w - - 0 1\n", r"kingless\.fen, line 1: .*no king"),
        ("bad.epd", "\n4k3/8/8/8/8/8/8/4K3 w - - 7;\n", r"bad\.epd, line 2:"),
        ("mated.fen", f"{MATED_FEN}\n", r"mated\.fen, line 1: .*already over \(checkmate\)"),
        (
            "stalemate.epd",
            'k7/8/8/8/8/8/P7/7K w - - id "ok";\n' + STALEMATE_EPD + "\n",
            r"stalemate\.epd, line 2: .*already over \(stalemate\)",
        ),
        (
            "illegal.pgn",
            '[Event "a"]\n\n1. e4 *\n\n[Event "b"]\n\n1. e4 e5 2. Ke3 *\n',
            r"illegal\.pgn, game 2: illegal san: 'Ke3'",
        ),
        (
            "badfen.pgn",
            '[SetUp "1"]\n[FEN "8/8/8 w - - 0 1"]\n\n*\n',
            r"badfen\.pgn, game 1: .*8/8/8",
        ),
        ("mate.pgn", "1. f3 e5 2. g4 Qh4# 0-1\n", r"mate\.pgn, game 1: .*already over"),
        ("empty.pgn", "\n", r"empty\.pgn: no openings"),
        ("empty.fen", "# nothing here\n\n", r"empty\.fen: no openings"),
        ("empty.tsv", "id\tname\tmoves_uci\n", r"empty\.tsv: no openings"),
        (
            "dup.epd",
            'k7/8/8/8/8/8/P7/7K w - - id "x";\n\nK7/8/8/8/8/8/p7/7k w - - id "x";\n',
            r"dup\.epd, line 3: id 'x' is already used at line 1",
        ),
        (
            "illegal.tsv",
            "id\tname\tmoves_uci\na\tA\te2e4 e7e5 e1e3\n",
            r"illegal\.tsv, line 2: move 3 'e1e3' is not legal in 'rnbqkbnr/pppp1ppp/8/4p3/4P3",
        ),
        (
            "garbled.tsv",
            "id\tname\tmoves_uci\na\tA\tzz99\n",
            r"garbled\.tsv, line 2: move 1 'zz99' is not legal",
        ),
        (
            "wrongfen.tsv",
            f"id\tname\tmoves_uci\tfen\na\tA\te2e4\t{chess.STARTING_FEN}\n",
            r"wrongfen\.tsv, line 2: the moves lead to .* not to the fen column's",
        ),
        ("columns.tsv", "id\tname\tmoves_uci\na\tA\n", r"columns\.tsv, line 2: 2 cells"),
        ("header.tsv", "id\tmoves\na\te2e4\n", r"header\.tsv, line 1: .*\['name', 'moves_uci'\]"),
        ("dup.tsv", "id\tname\tmoves_uci\na\tA\te2e4\na\tB\td2d4\n", r"dup\.tsv, line 3: id 'a'"),
    ],
)
def test_bad_files_name_the_file_and_the_line_or_game(
    tmp_path: Path, name: str, text: str, match: str
) -> None:
    with pytest.raises(InvalidPositionError, match=match):
        load_openings(write(tmp_path, name, text))


def test_a_chess960_pgn_is_refused(tmp_path: Path) -> None:
    fen = "bqnbrkrn/pppppppp/8/8/8/8/PPPPPPPP/BQNBRKRN w KQkq - 0 1"
    text = f'[Variant "Chess960"]\n[FEN "{fen}"]\n\n*\n'
    with pytest.raises(InvalidPositionError, match=r"960\.pgn, game 1: only standard chess"):
        load_openings(write(tmp_path, "960.pgn", text))


# -- pick_openings ---------------------------------------------------------------------------


def test_pick_is_deterministic_a_subset_in_suite_order_and_seeds_differ() -> None:
    picked = pick_openings(DEFAULT, 10, seed=3)
    assert picked == pick_openings(DEFAULT, 10, seed=3) and len(picked) == 10
    order = [DEFAULT.openings.index(opening) for opening in picked]
    assert order == sorted(order) and len(set(order)) == 10
    assert picked != pick_openings(DEFAULT, 10, seed=4)


def test_pick_is_pinned_by_the_seed_alone() -> None:
    # numpy's seeded stream, never hash(): every process picks these for seed 11.
    picked = pick_openings(OpeningSuite("n", _numbered(8)), 3, seed=11)
    assert [opening.id for opening in picked] == ["n0", "n6", "n7"]


@pytest.mark.parametrize("count", [None, 60, 1000])
def test_pick_returns_everything_when_count_covers_the_suite(count: int | None) -> None:
    suite = OpeningSuite("n", _numbered(60))
    assert pick_openings(suite, count, seed=0) == suite.openings


@pytest.mark.parametrize("count", [0, -1])
def test_pick_needs_a_positive_count(count: int) -> None:
    with pytest.raises(ValueError, match="count must be a positive integer"):
        pick_openings(DEFAULT, count, seed=0)


# -- the digest ------------------------------------------------------------------------------


def test_digest_is_stable_and_changes_with_a_move_an_id_or_a_root() -> None:
    openings = DEFAULT.openings
    again = OpeningSuite("copy", tuple(dataclasses.replace(o) for o in openings), source="x")
    assert again.digest == DEFAULT.digest == load_openings("default").digest
    assert len(DEFAULT.digest) == 64
    first = openings[0]
    changed = [
        dataclasses.replace(first, moves=(*first.moves[:-1], "a2a3")),
        dataclasses.replace(first, id="other"),
        dataclasses.replace(first, root_fen=first.fen, moves=()),
    ]
    for opening in changed:
        assert OpeningSuite("default", (opening, *openings[1:])).digest != DEFAULT.digest
    renamed = dataclasses.replace(first, name="Another name")
    assert OpeningSuite("d", (renamed, *openings[1:])).digest == DEFAULT.digest


# -- balance, re-checked by Stockfish ----------------------------------------------------------


@pytest.mark.stockfish
@pytest.mark.skipif(not stockfish_installed(), reason="Stockfish is not installed")
def test_a_few_default_openings_are_balanced_at_depth_10() -> None:
    engine = chess.engine.SimpleEngine.popen_uci(find_stockfish())
    try:
        engine.configure({"Threads": 1})
        for opening in pick_openings(DEFAULT, 12, seed=0):
            info = engine.analyse(opening.board(), chess.engine.Limit(depth=10), game=object())
            score = info["score"].white().score(mate_score=100_000)
            assert abs(score) <= 80, (opening.id, score)
    finally:
        engine.quit()


def _numbered(count: int) -> tuple[Opening, ...]:
    return tuple(Opening(f"n{index}", f"n{index}", ("e2e4",)) for index in range(count))


def _default_rows() -> list[dict[str, str]]:
    text = resources.files("chess_env.arena").joinpath("data/openings.tsv").read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]
