"""The rules core against python-chess: termination, the documented draw semantics, undo."""

from __future__ import annotations

import random
from collections.abc import Callable

import chess
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chess_env import ChessGame, IllegalActionError
from chess_env.core.encoding import encode_move, legal_action_mask
from chess_env.core.move_parsing import MoveParseError, parse_move

T = chess.Termination
KNIGHT_SHUFFLE = ["g1f3", "g8f6", "f3g1", "f6g8"]  # back to the start position every 4 plies


def documented_outcome(board: chess.Board, claim_draws: bool) -> chess.Outcome | None:
    """python-chess's outcome as chess_env.core.rules documents it: claims without look-ahead."""
    outcome = board.outcome(claim_draw=False)
    if outcome is None and claim_draws:
        if board.is_fifty_moves():
            outcome = chess.Outcome(T.FIFTY_MOVES, None)
        elif board.is_repetition(3):
            outcome = chess.Outcome(T.THREEFOLD_REPETITION, None)
    return outcome


def play_out(seed: int, claim_draws: bool) -> tuple[list[chess.Termination], int]:
    """Play one random game, checking every ply against python-chess; return what ended it."""
    rng = random.Random(seed)
    game = ChessGame(claim_draws=claim_draws, max_plies=None)
    board = game.board
    lookahead_claims = 0
    while True:
        expected = documented_outcome(board, claim_draws)
        assert game.outcome == expected, (board.fen(), game.outcome, expected)
        assert game.legal_moves == list(board.legal_moves)
        assert game.legal_uci == [m.uci() for m in board.legal_moves]
        if claim_draws and expected is None and board.can_claim_draw():
            lookahead_claims += 1  # python-chess would let the mover claim one ply early
        if expected is not None:
            return [expected.termination], lookahead_claims
        game.play_action(rng.choice(game.legal_actions))


@pytest.mark.parametrize("claim_draws", [True, False])
def test_termination_matches_python_chess_over_random_games(claim_draws: bool) -> None:
    endings: dict[chess.Termination, int] = {}
    for seed in range(60 if claim_draws else 25):
        (termination,), _ = play_out(seed, claim_draws)
        endings[termination] = endings.get(termination, 0) + 1
    assert T.CHECKMATE in endings and T.INSUFFICIENT_MATERIAL in endings
    if claim_draws:
        assert T.FIFTY_MOVES in endings
    else:
        assert T.FIFTY_MOVES not in endings and T.THREEFOLD_REPETITION not in endings


def test_threefold_triggers_on_the_ply_that_reaches_the_third_occurrence() -> None:
    game = ChessGame()
    for ply, uci in enumerate(KNIGHT_SHUFFLE * 2, start=1):
        assert game.outcome is None, ply
        game.play_uci(uci)
    # The start position has now occurred three times (plies 0, 4 and 8).
    assert game.board.is_repetition(3)
    assert game.outcome == chess.Outcome(T.THREEFOLD_REPETITION, None)


def test_python_chess_claims_one_ply_earlier_and_we_document_that() -> None:
    game = ChessGame()
    for uci in (KNIGHT_SHUFFLE * 2)[:-1]:
        game.play_uci(uci)
    # Black could move f6g8 into a threefold: python-chess lets it claim now; we wait for the move.
    assert game.board.can_claim_threefold_repetition() and not game.board.is_repetition(3)
    assert game.outcome is None
    game.play_uci("f6g8")
    assert game.outcome is not None and game.outcome.termination == T.THREEFOLD_REPETITION


def test_without_claims_fivefold_ends_the_game() -> None:
    game = ChessGame(claim_draws=False)
    for uci in KNIGHT_SHUFFLE * 4:
        assert game.outcome is None
        game.play_uci(uci)
    assert game.outcome == chess.Outcome(T.FIVEFOLD_REPETITION, None)


def test_a_pawn_move_resets_the_repetition_count() -> None:
    game = ChessGame()
    for uci in [*KNIGHT_SHUFFLE, "e2e4", "e7e5", *KNIGHT_SHUFFLE, *KNIGHT_SHUFFLE[:3]]:
        game.play_uci(uci)
    assert game.outcome is None  # twice since e4/e5, never three times
    game.play_uci("f6g8")
    assert game.outcome is not None and game.outcome.termination == T.THREEFOLD_REPETITION


@pytest.mark.parametrize(
    ("fen", "uci", "claim_draws", "termination"),
    [
        ("4k3/8/8/8/8/8/8/R3K3 w - - 99 80", "a1a2", True, T.FIFTY_MOVES),
        ("4k3/8/8/8/8/8/8/R3K3 w - - 99 80", "a1a2", False, None),
        ("4k3/8/8/8/8/8/8/R3K3 w - - 149 80", "a1a2", False, T.SEVENTYFIVE_MOVES),
        # mate on the 100th halfmove: checkmate wins over the 50-move rule
        ("6k1/5ppp/8/8/8/8/8/R5K1 w - - 99 80", "a1a8", True, T.CHECKMATE),
        ("7k/8/5KQ1/8/8/8/8/8 w - - 0 1", "g6g5", True, None),
        ("7k/8/5KQ1/8/8/8/8/8 w - - 0 1", "g6g7", True, T.CHECKMATE),
        ("k7/8/1Q6/8/8/8/8/7K w - - 0 1", "b6c7", True, T.STALEMATE),
        ("k7/8/8/8/8/8/1r6/BK6 w - - 0 1", "a1b2", True, T.INSUFFICIENT_MATERIAL),
        ("4k3/8/8/8/8/8/4p3/3QK3 b - - 0 1", "e2d1q", True, None),
    ],
)
def test_single_ply_endings(
    fen: str, uci: str, claim_draws: bool, termination: chess.Termination | None
) -> None:
    game = ChessGame(chess.Board(fen), claim_draws=claim_draws)
    game.play_uci(uci)
    assert (game.outcome.termination if game.outcome else None) == termination
    assert game.outcome == documented_outcome(game.board, claim_draws)


def test_truncation_at_max_plies_and_termination_wins_ties() -> None:
    game = ChessGame(max_plies=3)
    for uci in ("e2e4", "e7e5"):
        game.play_uci(uci)
        assert not game.is_over
    game.play_uci("g1f3")
    assert game.truncated and not game.terminated and game.is_over
    mate = ChessGame(max_plies=4)
    for uci in ("f2f3", "e7e5", "g2g4", "d8h4"):
        mate.play_uci(uci)
    assert mate.terminated and not mate.truncated


def test_max_plies_none_never_truncates_and_bad_values_are_rejected() -> None:
    game = ChessGame(chess.Board("4k3/8/8/8/8/8/8/R3K3 w - - 0 1"), max_plies=None)
    for _ in range(40):
        game.play_action(game.legal_actions[0])
        if game.is_over:
            break
    assert not game.truncated
    with pytest.raises(ValueError, match="max_plies must be a positive integer or None, got 0"):
        ChessGame(max_plies=0)


def snapshot(game: ChessGame) -> tuple:
    return (
        game.board.fen(),
        list(game.board.move_stack),
        list(game.legal_moves),
        list(game.legal_actions),
        game.outcome,
        game.plies,
        dict(game._repetitions),
    )


def random_position(seed: int, plies: int, *, by_action: bool = False) -> ChessGame:
    """A game ``plies`` random plies in, played by move (its action index never built) or by
    action index."""
    rng = random.Random(seed)
    game = ChessGame(max_plies=None)
    for _ in range(plies):
        if game.terminated:
            break
        if by_action:
            game.play_action(rng.choice(game.legal_actions))
        else:
            game.play(rng.choice(game.legal_moves))
    return game


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), plies=st.integers(0, 120))
def test_undo_restores_everything_exactly(seed: int, plies: int) -> None:
    game = random_position(seed, plies, by_action=True)
    if game.terminated:
        return
    before = snapshot(game)
    game.play_action(game.legal_actions[seed % len(game.legal_actions)])
    game.undo()
    assert snapshot(game) == before
    assert game.action_mask().tolist() == legal_action_mask(game.board).tolist()
    with pytest.raises(RuntimeError, match="nothing to undo"):
        game.undo()


def test_play_uci_errors_name_the_move_and_leave_the_game_unchanged() -> None:
    game = ChessGame()
    before = snapshot(game)
    with pytest.raises(IllegalActionError, match="move 'e9e4' is not UCI"):
        game.play_uci("e9e4")
    with pytest.raises(IllegalActionError, match=r"move e2e5 is illegal in rnbqkbnr/"):
        game.play_uci("e2e5")
    assert snapshot(game) == before


def test_action_mask_is_a_fresh_array_each_call() -> None:
    game = ChessGame()
    first = game.action_mask()
    first[:] = False
    assert game.action_mask().sum() == 20


def ends_after(board: chess.Board, move: chess.Move) -> chess.Outcome | None:
    """python-chess's verdict on the position after ``move``, under the documented rules."""
    board.push(move)
    try:
        return documented_outcome(board, claim_draws=True)
    finally:
        board.pop()


@pytest.mark.parametrize("seed", range(3))
def test_ending_actions_are_the_moves_python_chess_ends_the_game_with(seed: int) -> None:
    rng = random.Random(seed)
    game = ChessGame(max_plies=None)
    while not game.is_over:
        before, actions = game.board.fen(), list(game.legal_actions)
        outcomes = [ends_after(game.board.copy(), move) for move in game.legal_moves]
        ended = [(a, o.winner) for a, o in zip(game.legal_actions, outcomes, strict=True) if o]
        mating = [action for action, winner in ended if winner is not None]  # chess.BLACK is False
        drawing = [action for action, winner in ended if winner is None]
        assert game.ending_actions() == (mating, drawing), before
        assert game.board.fen() == before and game.outcome is None  # nothing played for good
        assert game.legal_actions == actions
        game.play(rng.choice(game.legal_moves))


def test_ending_actions_name_mates_a_stalemate_and_a_threefold_repetition() -> None:
    queen = ChessGame(chess.Board("k7/8/8/2Q5/8/8/8/7K w - - 0 1"))
    mating, drawing = queen.ending_actions()
    assert mating == []  # the lone queen cannot mate with the king far away
    # each leaves the king on a8 no move, not in check
    assert {queen.move_for_action(a).uci() for a in drawing} == {"c5b6", "c5c7"}
    rook = ChessGame(chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"))
    assert [rook.move_for_action(a).uci() for a in rook.ending_actions().mating] == ["a1a8"]
    repeated = ChessGame()
    for uci in KNIGHT_SHUFFLE + KNIGHT_SHUFFLE[:3]:
        repeated.play_uci(uci)
    # Black's knight back to g8 reaches the start position a third time.
    mating, drawing = repeated.ending_actions()
    assert mating == [] and [repeated.move_for_action(a).uci() for a in drawing] == ["f6g8"]
    assert ChessGame().ending_actions() == ([], [])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), plies=st.integers(0, 120))
def test_indexes_built_after_an_undo_are_the_restored_positions(seed: int, plies: int) -> None:
    game = random_position(seed, plies)
    if game.terminated:
        return
    game.play(game.legal_moves[seed % len(game.legal_moves)])  # the index is built after undo
    game.undo()
    board = game.board
    assert game.legal_actions == [encode_move(move, board.turn) for move in board.legal_moves]
    assert game.legal_uci == [move.uci() for move in board.legal_moves]
    assert game.action_mask().tolist() == legal_action_mask(board).tolist()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), plies=st.integers(0, 80))
def test_is_legal_agrees_with_python_chess_with_or_without_the_index(seed: int, plies: int) -> None:
    game = random_position(seed, plies)
    board = game.board
    candidates = [*board.generate_pseudo_legal_moves(), chess.Move.from_uci("a1a2")]
    candidates += [chess.Move(m.from_square, m.to_square, chess.QUEEN) for m in candidates[:5]]
    unbuilt = [game.is_legal(move) for move in candidates]
    _ = game.legal_actions
    built = [game.is_legal(move) for move in candidates]
    assert unbuilt == built == [board.is_legal(move) for move in candidates]


def outcome_of_reading(read: Callable[[], chess.Move]) -> tuple[str, str]:
    try:
        return "move", read().uci()
    except MoveParseError as error:
        return error.reason, str(error)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    plies=st.integers(0, 80),
    pick=st.integers(0, 200),
    shape=st.sampled_from(["uci", "san", "upper", "prose", "illegal", "text"]),
    text=st.text(max_size=12),
)
def test_read_move_reads_what_parse_move_reads(
    seed: int, plies: int, pick: int, shape: str, text: str
) -> None:
    game = random_position(seed, plies)
    board, moves = game.board, game.legal_moves
    move = moves[pick % len(moves)] if moves else chess.Move.from_uci("e2e4")
    said = {
        "uci": move.uci(),
        "san": board.san(move) if moves else "e4",
        "upper": move.uci().upper(),
        "prose": f"I play {move.uci()}!",
        "illegal": "a1a1",
        "text": text,
    }[shape]
    expected = outcome_of_reading(lambda: parse_move(said, board.copy(), list(moves)))
    assert outcome_of_reading(lambda: game.read_move(said)) == expected


def test_legal_uci_is_a_fresh_list_each_call() -> None:
    game = ChessGame()
    first = game.legal_uci
    first.clear()
    assert len(game.legal_uci) == 20 and game.read_move("e2e4") == chess.Move.from_uci("e2e4")


def test_actions_uci_and_decoding_match_python_chess_on_every_sampled_position(
    positions: list[chess.Board],
) -> None:
    """~10,000 positions with promotions, castling and en passant: the index built from move keys
    (without the promotion term when no pawn stands on its seventh rank) is python-chess's."""
    for board in positions:
        game = ChessGame(board.copy(stack=False), max_plies=None)
        moves = list(board.legal_moves)
        assert game.legal_actions == [encode_move(move, board.turn) for move in moves]
        assert game.legal_uci == [move.uci() for move in moves]
        assert [game.move_for_action(action) for action in game.legal_actions] == moves
        assert all(game.is_legal(chess.Move.from_uci(move.uci())) for move in moves)
