"""DAgger: the policy's own positions, labelled by the expert, aggregated, cloned again."""

from __future__ import annotations

from pathlib import Path

import chess
import numpy as np
import pytest

from chess_env.core.encoding import decode_action, legal_action_mask
from training.annealing import anneal
from training.bc import bc_model
from training.config import AnnealConfig, BCConfig, DaggerConfig, PPOConfig
from training.dagger import collect_positions, dagger_round
from training.datasets import combine, generate_chess_dataset, label_positions
from training.evaluation import evaluate, play_policy_games

QUICK = BCConfig(expert="alphabeta:1", positions=120, epochs=1, progress_bar=False, eval_games=0)


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    return bc_model(QUICK)


def test_collected_positions_are_the_policys_turns_in_its_games(model) -> None:  # type: ignore[no-untyped-def]
    fens, episodes, _ = collect_positions(
        model.policy, games=4, opponent="random", seed=0, max_plies=40
    )
    games = play_policy_games(model.policy, "random", games=4, seed=0, max_plies=40)
    for game in games:
        colour = chess.WHITE if game.color == "white" else chess.BLACK
        replay, expected = chess.Board(), []
        for move in game.env.board.move_stack:
            if replay.turn == colour:
                expected.append(replay.fen())
            replay.push(move)
        assert [f for f, e in zip(fens, episodes, strict=True) if e == game.index] == expected


def test_labels_are_the_experts_legal_moves_with_exact_masks() -> None:
    fens = [
        chess.STARTING_FEN,
        "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1",
        "8/8/8/8/8/5k2/4p3/4K3 b - - 0 1",
    ]
    data = label_positions("alphabeta:2", fens, np.array([0, 1, 2]), seed=0, progress_bar=False)
    assert data.manifest.sources == {"dagger": 3} and data.manifest.expert == "alphabeta:2"
    for row, fen in enumerate(fens):
        board = chess.Board(fen)
        assert decode_action(int(data.actions[row]), board) in board.legal_moves
        assert np.array_equal(data.unpacked_masks([row])[0], legal_action_mask(board))
    assert decode_action(int(data.actions[1]), chess.Board(fens[1])).uci() == "a1a8"  # mate in one


def test_label_positions_is_the_same_in_worker_processes() -> None:
    fens = [b.fen() for b in _boards(12)]
    alone = label_positions(
        "alphabeta:1", fens, np.zeros(12, dtype=np.int32), seed=3, progress_bar=False
    )
    pooled = label_positions(
        "alphabeta:1", fens, np.zeros(12, dtype=np.int32), seed=3, progress_bar=False, workers=2
    )
    assert alone.manifest == pooled.manifest


def _boards(count: int) -> list[chess.Board]:
    board, rng, boards = chess.Board(), np.random.default_rng(0), []
    while len(boards) < count:
        moves = list(board.legal_moves)
        if not moves:
            board = chess.Board()
            continue
        board.push(moves[int(rng.integers(len(moves)))])
        boards.append(board.copy(stack=False))
    return boards


def test_combine_keeps_games_apart_and_merges_sources() -> None:
    bc = generate_chess_dataset("alphabeta:1", 10, seed=0, progress_bar=False)
    dagger = label_positions("alphabeta:1", [bc.fens[0]], np.array([0]), seed=0, progress_bar=False)
    both = combine([bc, dagger])
    assert both.manifest.sources == {"vs_random": 5, "self_play": 5, "dagger": 1}
    assert both.episodes[-1] > bc.episodes.max()
    assert np.array_equal(both.observations[:10], bc.observations)


def test_a_round_aggregates_and_trains_the_model_in_place(model) -> None:  # type: ignore[no-untyped-def]
    base = generate_chess_dataset("alphabeta:1", 60, seed=0, progress_bar=False)
    config = DaggerConfig(expert="alphabeta:1", games=2, epochs=1, max_plies=30, replay=1.0)
    before = [p.detach().clone() for p in model.policy.parameters()]
    first, aggregate = dagger_round(model, config, QUICK, base=base, aggregate=None, seed=1)
    second, bigger = dagger_round(model, config, QUICK, base=base, aggregate=aggregate, seed=2)
    assert len(bigger) > len(aggregate) and set(bigger.manifest.sources) == {"dagger"}
    assert first.dataset.sources["dagger"] == len(aggregate)
    assert second.dataset.sources["dagger"] == len(bigger)
    assert second.dataset.sources["vs_random"] + second.dataset.sources["self_play"] == len(bigger)
    after = list(model.policy.parameters())
    assert any(not np.array_equal(a.detach(), b) for a, b in zip(after, before, strict=True))


def test_the_lockstep_match_equals_one_game_at_a_time(model) -> None:  # type: ignore[no-untyped-def]
    """Batching the policy's moves over games changes nothing in the match."""
    import training.evaluation

    batched = evaluate(model, "random", games=6, seed=4, max_plies=60)
    one_by_one = training.evaluation.LOCKSTEP_GAMES
    try:
        training.evaluation.LOCKSTEP_GAMES = 1
        single = evaluate(model, "random", games=6, seed=4, max_plies=60)
    finally:
        training.evaluation.LOCKSTEP_GAMES = one_by_one
    assert batched == single


def test_an_anneal_with_dagger_rounds(tmp_path: Path) -> None:
    config = AnnealConfig(
        schedule=("bc", "dagger", "dagger"),
        bc=QUICK,
        dagger=DaggerConfig(expert="alphabeta:1", games=2, epochs=1, max_plies=30),
        ppo=PPOConfig(n_envs=1, vec_env="dummy", progress_bar=False),
        eval_games=2,
        final_eval_games=2,
        bc_accuracy_threshold=0.0,
        score_tolerance=1.0,
    )
    summary = anneal(config, out_dir=str(tmp_path))
    assert summary.status == "PASS"
    assert [stage.mode for stage in summary.stages] == ["bc", "dagger", "dagger"]
    positions = [stage.metrics["positions"] for stage in summary.stages[1:]]
    assert positions[1] > positions[0] > 0  # the aggregate grows


def test_focus_repeats_the_rows_where_the_game_could_end() -> None:
    config = DaggerConfig(expert="alphabeta:1", games=2, epochs=1, max_plies=300, replay=0.0)
    runs = []
    for focus in (1, 3):
        focused = config.model_copy(update={"focus": focus})
        runs.append(
            dagger_round(bc_model(QUICK), focused, QUICK, base=None, aggregate=None, seed=1)
        )
    (plain, aggregate), (repeated, same) = runs
    assert np.array_equal(aggregate.actions, same.actions)  # the same games, the same rows
    ending = int((aggregate.mates.any(axis=1) | aggregate.avoid.any(axis=1)).sum())  # type: ignore[union-attr]
    assert 0 < ending < len(aggregate)
    assert plain.dataset.positions == len(aggregate)
    assert repeated.dataset.positions == len(aggregate) + 2 * ending
