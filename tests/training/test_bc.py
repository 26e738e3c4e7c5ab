"""``train_bc``: the policy learns the expert's moves, masked, seeded, and PPO continues from it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

import training
from chess_env.core.encoding import encode_move
from training.bc import _LossCoefs, _masked_terms, bc_model, train_bc
from training.config import BCConfig, PPOConfig
from training.datasets import BCDataset, generate_chess_dataset, generate_world_dataset
from training.dto import BCTrainingResult
from training.evaluation import policy_logits

QUICK = {"progress_bar": False, "eval_games": 0, "out_dir": None}  # no files: runs/ is the default


@pytest.fixture(scope="module")
def chess_data() -> BCDataset:
    return generate_chess_dataset("alphabeta:1", 600, seed=0, progress_bar=False)


def _weights(model: object) -> list[torch.Tensor]:
    return [t.detach().clone() for t in model.policy.state_dict().values()]  # type: ignore[attr-defined]


def test_bc_learns_the_experts_moves_above_chance(chess_data: BCDataset) -> None:
    result = train_bc(
        BCConfig(epochs=8, patience=8, learning_rate=3e-3, val_fraction=0.1, **QUICK),
        dataset=chess_data,
    )
    first, last = result.history[0], result.history[-1]
    assert last.accuracy > first.accuracy + 0.05 and last.loss < first.loss - 0.2
    best = result.history[result.best_epoch - 1]
    assert best.val_loss == min(epoch.val_loss for epoch in result.history)
    assert best.val_accuracy > 0.1  # above the ~1/30 of a uniform legal move
    # chance: one legal move in ~30; the masked NLL starts near log(30)
    assert first.val_loss < np.log(60)


def test_the_kept_weights_are_the_best_epochs(chess_data: BCDataset) -> None:
    """Early stopping restores the best epoch, and the reported val metrics are its own."""
    model = bc_model(BCConfig(**QUICK))
    result = train_bc(
        BCConfig(epochs=6, patience=1, learning_rate=3e-2, **QUICK), dataset=chess_data, model=model
    )
    _, val = chess_data.split(result.config.val_fraction, result.config.seed)
    logits = policy_logits(model.policy, val.observations)
    logits[~val.unpacked_masks(slice(None))] = -np.inf
    accuracy = float(np.mean(np.argmax(logits, axis=1) == val.actions))
    assert accuracy == pytest.approx(result.val_accuracy)
    assert result.epochs <= 6 and 1 <= result.best_epoch <= result.epochs


def test_masked_predictions_are_always_legal(chess_data: BCDataset) -> None:
    model = bc_model(BCConfig(**QUICK))
    train_bc(BCConfig(epochs=1, **QUICK), dataset=chess_data, model=model)
    masks = chess_data.unpacked_masks(slice(None))
    actions, _ = model.predict(chess_data.observations, action_masks=masks, deterministic=True)
    assert masks[np.arange(len(actions)), actions].all()


def with_king_moves(data: BCDataset, name: str) -> BCDataset:
    """``data`` with every legal king move marked in the move set ``name``: a pattern the board
    shows (where the king stands), so a network can learn it. The label is marked too for
    ``mates`` (the expert names one mate of several), never for ``avoid``."""
    masks = data.unpacked_masks(slice(None))
    marked = np.zeros_like(masks)
    for row, fen in enumerate(data.fens):
        board = chess.Board(str(fen))
        for move in board.legal_moves:
            if move.from_square == board.king(board.turn):
                marked[row, encode_move(move, board.turn)] = True
        marked[row, data.actions[row]] = name == "mates"
    return replace(data, **{name: np.packbits(marked, axis=1)})


def marked_probability(model: object, data: BCDataset, name: str) -> float:
    """Mean probability the policy gives the moves of the set ``name``, among the legal moves."""
    logits = policy_logits(model.policy, data.observations)  # type: ignore[attr-defined]
    logits[~data.unpacked_masks(slice(None))] = -np.inf
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    return float((probs * data.unpacked(name, slice(None))).sum(axis=1).mean())


@pytest.mark.parametrize(("name", "coef"), [("avoid", "avoid_coef"), ("mates", "mate_coef")])
def test_the_move_set_terms_push_their_moves_down_and_up(
    chess_data: BCDataset, name: str, coef: str
) -> None:
    data = with_king_moves(chess_data, name)
    mass = {}
    for weight in (0.0, 5.0):
        model = bc_model(BCConfig(**QUICK))
        # one epoch: early stopping by validation NLL would keep the epoch the term moved least
        config = BCConfig(epochs=1, batch_size=32, learning_rate=3e-3, **{coef: weight}, **QUICK)
        train_bc(config, dataset=data, model=model)
        mass[weight] = marked_probability(model, data, name)
    if name == "avoid":
        assert mass[5.0] < 0.75 * mass[0.0], mass  # measured: 0.35 -> 0.21
    else:
        assert mass[5.0] > mass[0.0] + 0.2, mass  # measured: 0.49 -> 0.88


def maskable_reference(model: object, data: BCDataset, rows: np.ndarray) -> tuple:
    """The loss terms as MaskablePPO's masked distribution over all 4672 actions gives them."""
    policy = model.policy  # type: ignore[attr-defined]
    observations, _ = policy.obs_to_tensor(data.observations[rows])
    actions = torch.as_tensor(data.actions[rows])
    masks = data.unpacked_masks(rows)
    distribution = policy.get_distribution(observations, action_masks=masks).distribution
    log_probs, probs = distribution.logits, distribution.probs
    nll = -log_probs.gather(1, actions[:, None]).mean()
    entropy = -(probs * log_probs).sum(dim=-1).mean()
    mates = torch.as_tensor(data.unpacked("mates", rows))
    mate = torch.log((probs * mates).sum(dim=-1).clamp(min=1e-8)).where(mates.any(dim=-1), 0)
    avoid = torch.as_tensor(data.unpacked("avoid", rows))
    avoid &= ~avoid.gather(1, actions[:, None])
    unlikely = torch.log1p(-(probs * avoid).sum(dim=-1).clamp(max=1 - 1e-6))
    return nll, entropy, mate.mean(), unlikely.mean(), log_probs.argmax(dim=-1)


def test_the_loss_over_legal_moves_equals_maskable_ppos_masked_distribution(
    chess_data: BCDataset,
) -> None:
    """Normalising over each row's legal moves gives MaskablePPO's terms, values and gradients."""
    data = with_king_moves(with_king_moves(chess_data, "mates"), "avoid")
    avoid = data.unpacked("avoid", slice(None))
    avoid[::3, data.actions[::3]] = False
    avoid[np.arange(0, len(data), 5), data.actions[::5]] = True  # the expert drew too
    data = replace(data, avoid=np.packbits(avoid, axis=1))
    model = bc_model(BCConfig(**QUICK))
    train_bc(BCConfig(epochs=1, **QUICK), dataset=chess_data, model=model)  # not uniform
    policy, rows = model.policy, np.arange(0, len(data), 2)
    coefs = _LossCoefs(entropy=0.3, mate=0.7, avoid=1.1)
    observations, _ = policy.obs_to_tensor(data.observations[rows])
    actions = torch.as_tensor(data.actions[rows])
    nll, bonus, predicted = _masked_terms(policy, data, rows, observations, actions, coefs)
    grads = torch.autograd.grad(nll - bonus, list(policy.parameters()), allow_unused=True)
    ref_nll, entropy, mate, unlikely, ref_predicted = maskable_reference(model, data, rows)
    ref_bonus = coefs.entropy * entropy + coefs.mate * mate + coefs.avoid * unlikely
    ref_grads = torch.autograd.grad(
        ref_nll - ref_bonus, list(policy.parameters()), allow_unused=True
    )
    assert nll.item() == pytest.approx(ref_nll.item(), rel=1e-5)
    assert bonus.item() == pytest.approx(ref_bonus.item(), rel=1e-5)
    assert torch.equal(predicted, ref_predicted)
    for grad, ref in zip(grads, ref_grads, strict=True):
        assert (grad is None) == (ref is None)
        if grad is not None:
            torch.testing.assert_close(grad, ref, rtol=1e-4, atol=1e-6)


def test_an_expert_action_that_is_not_legal_names_its_row(chess_data: BCDataset) -> None:
    actions = chess_data.actions.copy()
    actions[7] = int(np.flatnonzero(~chess_data.unpacked_masks(slice(7, 8))[0])[0])
    broken = replace(chess_data, actions=actions)
    policy, rows = bc_model(BCConfig(**QUICK)).policy, np.array([3, 7, 9])
    observations, _ = policy.obs_to_tensor(broken.observations[rows])
    with pytest.raises(ValueError, match="dataset row 7: the expert's action is not a legal"):
        _masked_terms(
            policy, broken, rows, observations, torch.as_tensor(actions[rows]), _LossCoefs(0.0)
        )


def test_same_seed_same_weights(chess_data: BCDataset) -> None:
    runs = []
    for _ in range(2):
        model = bc_model(BCConfig(seed=5, **QUICK))
        result = train_bc(BCConfig(seed=5, epochs=1, **QUICK), dataset=chess_data, model=model)
        runs.append((result.history, _weights(model)))
    assert runs[0][0] == runs[1][0]
    assert all(torch.equal(a, b) for a, b in zip(runs[0][1], runs[1][1], strict=True))


def test_artefacts_round_trip_and_ppo_continues_from_the_weights(
    chess_data: BCDataset, tmp_path: Path
) -> None:
    model = bc_model(BCConfig(**QUICK))
    out = tmp_path / "bc"
    result = train_bc(
        BCConfig(epochs=1, out_dir=str(out), progress_bar=False, eval_games=2),
        dataset=chess_data,
        model=model,
    )
    assert BCTrainingResult.model_validate_json((out / "result.json").read_text()) == result
    assert result.dataset == chess_data.manifest
    assert result.evaluation is not None and result.evaluation.games == 2
    assert result.artifacts.model == str(out / "model.zip")
    assert (out / "evaluation.pgn").exists() and (out / "dataset.npz").exists()

    from training.envs import env_factory, make_vec
    from training.sb3_models import build_model

    vec = make_vec(env_factory("chess_env/Chess-v0"), 1, 0, "dummy")
    continued = build_model(
        PPOConfig(init_model=result.artifacts.model, n_envs=1), vec, masked=True
    )
    vec.close()
    assert all(torch.equal(a, b) for a, b in zip(_weights(model), _weights(continued), strict=True))


def test_by_default_the_model_is_saved_under_runs_and_loads(
    chess_data: BCDataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = train_bc(BCConfig(epochs=1, progress_bar=False, eval_games=0), dataset=chess_data)
    model = result.artifacts.model
    assert model is not None and Path(model).parent.name.startswith("bc-")
    assert Path(model).parent.parent == Path("runs")
    loaded = training.load_model(model)
    assert policy_logits(loaded.policy, chess_data.observations[:4]).shape == (4, 4672)


def test_a_model_the_caller_passes_is_theirs_and_writes_nothing_by_default(
    chess_data: BCDataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = BCConfig(epochs=1, progress_bar=False, eval_games=0)
    result = train_bc(config, dataset=chess_data, model=bc_model(config))
    assert result.artifacts.model is None and result.config.out_dir is None
    assert not (tmp_path / "runs").exists()


def test_a_dataset_of_another_env_is_refused(tmp_path: Path) -> None:
    data = generate_world_dataset("forage", 50, seed=0, progress_bar=False)
    data.save(tmp_path / "forage")
    with pytest.raises(ValueError, match="holds forage positions, but the config trains chess"):
        train_bc(BCConfig(dataset=str(tmp_path / "forage.npz"), **QUICK))


def test_world_bc_learns_the_scripted_expert() -> None:
    data = generate_world_dataset("forage", 1500, seed=0, progress_bar=False)
    result = train_bc(
        BCConfig(
            env="forage", expert="scripted", epochs=15, patience=15, learning_rate=3e-3, **QUICK
        ),
        dataset=data,
    )
    majority = np.bincount(data.actions).max() / len(data)
    assert result.val_accuracy > majority + 0.1  # well above always playing the commonest action
