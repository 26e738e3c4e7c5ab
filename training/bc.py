"""``train_bc``: behaviour cloning into an SB3 policy, so PPO can continue from it unchanged.

A plain torch loop, not the ``imitation`` package (it pins SB3 2.2 and gymnasium 0.29 and breaks
sb3-contrib). The loss is the negative log-likelihood of the expert's action under the policy's
own distribution, with the legal-move mask applied for chess (MaskablePPO's distribution), minus a
small entropy bonus that keeps the policy from collapsing before PPO explores. A validation split
decides early stopping, and the best epoch's weights are kept.

The model is the one ``training.sb3_models.build_model`` makes for the env, so its saved zip loads
into a PPO stage with ``PPOConfig(init_model=...)``. It is saved under ``runs/bc-<time>`` by default
(``out_dir="auto"``), unless the caller passed its own model to train, which it keeps.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from tqdm import tqdm  # text bars: tqdm.auto warns in Jupyter without ipywidgets

from training.config import AUTO, BCConfig, PPOConfig, resolve_out_dir
from training.dto import Artifacts, BCEpoch, BCTrainingResult, EvaluationResult
from training.envs import WORLD_PREFIX, env_factory, has_action_masks, make_vec
from training.evaluation import evaluate
from training.sb3_models import SMALL_NET_THREADS, build_model

if TYPE_CHECKING:
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO

    from training.datasets import BCDataset

__all__ = ["bc_dataset", "bc_model", "train_bc"]

CHESS_ENV_ID = "chess_env/Chess-v0"


def bc_model(config: BCConfig) -> PPO | MaskablePPO:
    """The untrained SB3 model BC fills: the chess CNN under MaskablePPO, or a world's MLP."""
    env = CHESS_ENV_ID if config.env == "chess" else f"{WORLD_PREFIX}{config.env}"
    factory = env_factory(env, learner=config.learner)
    probe = factory()
    masked = has_action_masks(probe)
    probe.close()
    ppo = PPOConfig(
        env=env,
        learner=config.learner,
        features=config.features,
        seed=config.seed,
        device=config.device,
    )
    return build_model(ppo, make_vec(factory, 1, config.seed, "dummy"), masked=masked)


def bc_dataset(config: BCConfig) -> BCDataset:
    """``config.dataset`` loaded (it must hold ``config.env``), or a new one from the expert."""
    from training.datasets import generate_chess_dataset, generate_world_dataset, load_dataset

    if config.dataset is not None:
        dataset = load_dataset(config.dataset)
        if dataset.manifest.env != config.env:
            raise ValueError(
                f"dataset {config.dataset} holds {dataset.manifest.env} positions, "
                f"but the config trains {config.env}"
            )
        return dataset
    if config.env == "chess":
        return generate_chess_dataset(
            config.expert,
            config.positions,
            config.seed,
            progress_bar=config.progress_bar,
            workers=config.workers,
        )
    return generate_world_dataset(
        config.env,
        config.positions,
        config.seed,
        learner=config.learner,
        progress_bar=config.progress_bar,
    )


@dataclass
class _Batches:
    """Index batches over a dataset, reshuffled each epoch by one seeded generator."""

    size: int
    batch_size: int
    rng: np.random.Generator

    def epoch(self, shuffle: bool) -> list[np.ndarray]:
        order = self.rng.permutation(self.size) if shuffle else np.arange(self.size)
        return [order[i : i + self.batch_size] for i in range(0, self.size, self.batch_size)]


def _select(observations: Any, indices: np.ndarray) -> Any:
    if isinstance(observations, dict):
        return {key: value[indices] for key, value in observations.items()}
    return observations[indices]


@dataclass(frozen=True)
class _LossCoefs:
    """The loss terms' weights (see ``BCConfig``)."""

    entropy: float
    mate: float = 0.0
    avoid: float = 0.0


def _pass(
    policy: Any,
    dataset: Any,
    batches: list[np.ndarray],
    coefs: _LossCoefs,
    optimizer: torch.optim.Optimizer | None,
    progress: tqdm | None,
) -> tuple[float, float]:
    """One pass over ``batches``: (mean loss, accuracy); trains when given an optimizer.

    The reported loss is the plain NLL on validation (no optimizer) and the training loss in
    training, weighted by batch size.
    """
    total_loss, correct, seen = 0.0, 0, 0
    policy.train(optimizer is not None)
    for indices in batches:
        observations, _ = policy.obs_to_tensor(_select(dataset.observations, indices))
        actions = torch.as_tensor(dataset.actions[indices], device=policy.device)
        with torch.set_grad_enabled(optimizer is not None):
            if dataset.masks is not None:
                nll, bonus, predicted = _masked_terms(
                    policy, dataset, indices, observations, actions, coefs
                )
            else:
                distribution = policy.get_distribution(observations)
                nll = -distribution.log_prob(actions).mean()
                bonus, predicted = (
                    coefs.entropy * distribution.entropy().mean(),
                    distribution.mode(),
                )
            loss = nll
            if optimizer is not None:
                loss = nll - bonus
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        hits = predicted == actions
        correct += int((hits.all(dim=-1) if hits.dim() > 1 else hits).sum())
        seen += len(indices)
        total_loss += loss.item() * len(indices)
        if progress is not None:
            progress.update(len(indices))
            progress.set_postfix(loss=f"{total_loss / seen:.3f}", acc=f"{correct / seen:.3f}")
    return total_loss / seen, correct / seen


def _masked_terms(
    policy: Any,
    dataset: Any,
    indices: np.ndarray,
    observations: Any,
    actions: torch.Tensor,
    coefs: _LossCoefs,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(NLL, bonus, argmax) under the policy's distribution over each row's legal moves.

    That is MaskablePPO's masked distribution (illegal moves have probability 0 there too), but
    normalised over the ~35 legal moves of a row instead of all 4672 actions: the softmax, its
    entropy and their gradients over every action were a third of a BC step.

    The bonus is the entropy term plus two terms for rows of the learner's own games: where it
    could mate (``dataset.mates``), ``log p(any mating move)``, since any mate wins whichever the
    expert named; where moves would have drawn (``dataset.avoid``), the unlikelihood
    ``log(1 - p(drawing moves))``, unless the expert's move is one of them (a drawn game anyway).
    """
    legal, valid = _legal_actions(dataset.unpacked_masks(indices))
    legal_t = torch.as_tensor(legal, device=actions.device)
    valid_t = torch.as_tensor(valid, device=actions.device)
    logits = _action_logits(policy, observations).gather(1, legal_t)
    log_probs = torch.log_softmax(logits.masked_fill(~valid_t, _ILLEGAL_LOGIT), dim=-1)
    probs = log_probs.exp()
    target = (legal_t == actions[:, None]) & valid_t
    if not bool(target.any(dim=-1).all()):
        row = int(indices[int((~target.any(dim=-1)).nonzero()[0, 0])])
        raise ValueError(f"dataset row {row}: the expert's action is not a legal move there")
    nll = -log_probs[target].mean()
    bonus = coefs.entropy * -(probs * log_probs).sum(dim=-1).mean()
    if coefs.mate > 0 and dataset.mates is not None:
        mates = _on_legal_slots(dataset.unpacked("mates", indices), legal, valid, probs.device)
        mating = (probs * mates).sum(dim=-1)
        can_mate = mates.any(dim=-1)
        bonus = bonus + coefs.mate * torch.log(mating.clamp(min=1e-8)).where(can_mate, 0).mean()
    if coefs.avoid > 0 and dataset.avoid is not None:
        avoid = _on_legal_slots(dataset.unpacked("avoid", indices), legal, valid, probs.device)
        avoid &= ~(avoid & target).any(dim=-1, keepdim=True)  # the expert drew too: none to avoid
        avoided = (probs * avoid).sum(dim=-1)
        bonus = bonus + coefs.avoid * torch.log1p(-avoided.clamp(max=1 - 1e-6)).mean()
    return nll, bonus, legal_t.gather(1, log_probs.argmax(dim=-1, keepdim=True))[:, 0]


# Padding for rows with fewer legal moves than the batch's widest row: MaskablePPO's own value
# for illegal moves, so their probability is 0 (and 0 * log p stays finite).
_ILLEGAL_LOGIT = -1e8


def _action_logits(policy: Any, observations: Any) -> torch.Tensor:
    """The action net's raw logits over every action: what ``get_distribution`` feeds its
    distribution, before it normalises them over all actions."""
    features = policy.extract_features(observations, policy.pi_features_extractor)
    logits: torch.Tensor = policy.action_net(policy.mlp_extractor.forward_actor(features))
    return logits


def _on_legal_slots(
    moves: np.ndarray, legal: np.ndarray, valid: np.ndarray, device: torch.device
) -> torch.Tensor:
    """A (rows, 4672) move set read at each row's legal slots (``_legal_actions``)."""
    return torch.as_tensor(np.take_along_axis(moves, legal, axis=1) & valid, device=device)


def _legal_actions(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's legal actions, left-aligned and padded: (indices, valid), both (rows, widest).

    Example:
        >>> masks = np.zeros((2, 6), dtype=bool)
        >>> masks[0, [1, 4]] = masks[1, 5] = True
        >>> indices, valid = _legal_actions(masks)
        >>> indices.tolist(), valid.tolist()
        ([[1, 4], [5, 0]], [[True, True], [True, False]])
    """
    counts = masks.sum(axis=1)
    rows, actions = np.nonzero(masks)
    slots = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    width = max(int(counts.max(initial=0)), 1)
    indices = np.zeros((len(masks), width), dtype=np.int64)
    valid = np.zeros((len(masks), width), dtype=bool)
    indices[rows, slots] = actions
    valid[rows, slots] = True
    return indices, valid


def train_bc(
    config: BCConfig | None = None,
    *,
    dataset: BCDataset | None = None,
    model: PPO | MaskablePPO | None = None,
    **overrides: Any,
) -> BCTrainingResult:
    """Clone the expert into ``model`` (default: ``bc_model(config)``, saved with the artefacts).

    Args:
        config: the run (default ``BCConfig()``); ``overrides`` replace its fields. Its
            ``out_dir="auto"`` is a new ``runs/bc-<time>`` when this call builds the model, and no
            files when ``model`` is given; ``None`` writes nothing.
        dataset: a ``training.datasets`` dataset to use instead of ``config.dataset`` or a newly
            generated one.
        model: an SB3 model whose policy is trained in place (it must fit the dataset); the
            caller keeps it, e.g. to continue with PPO.
    """
    config = BCConfig.model_validate({**(config or BCConfig()).model_dump(), **overrides})
    config = config.model_copy(update={"out_dir": _out_dir(config, model)})
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    dataset = dataset if dataset is not None else bc_dataset(config)
    model = model if model is not None else bc_model(config)
    policy = model.policy
    train, val = dataset.split(config.val_fraction, config.seed)
    optimizer = torch.optim.AdamW(
        policy.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    batches = _Batches(len(train), config.batch_size, np.random.default_rng(config.seed))
    val_batches = _Batches(len(val), config.batch_size, np.random.default_rng(0)).epoch(False)
    coefs = _LossCoefs(config.entropy_coef, config.mate_coef, config.avoid_coef)
    history: list[BCEpoch] = []
    best_state, best_epoch, best_val = copy.deepcopy(policy.state_dict()), 1, float("inf")
    start = time.perf_counter()
    for epoch in range(1, config.epochs + 1):
        with tqdm(
            total=len(train),
            desc=f"BC epoch {epoch}/{config.epochs}",
            unit="pos",
            disable=not config.progress_bar,
        ) as progress:
            loss, accuracy = _pass(policy, train, batches.epoch(True), coefs, optimizer, progress)
        val_loss, val_accuracy = _pass(policy, val, val_batches, _LossCoefs(0.0), None, None)
        history.append(
            BCEpoch(
                epoch=epoch,
                loss=loss,
                accuracy=accuracy,
                val_loss=val_loss,
                val_accuracy=val_accuracy,
            )
        )
        if val_loss < best_val:
            best_state, best_epoch, best_val = copy.deepcopy(policy.state_dict()), epoch, val_loss
        elif epoch - best_epoch >= config.patience:
            break
    policy.load_state_dict(best_state)
    policy.set_training_mode(False)
    duration = time.perf_counter() - start
    torch.set_num_threads(SMALL_NET_THREADS)  # the evaluation's one-board forward passes
    artifacts, evaluation = _finish(config, model, dataset)
    best = history[best_epoch - 1]
    result = BCTrainingResult(
        dataset=dataset.manifest,
        accuracy=best.accuracy,
        loss=best.loss,
        val_accuracy=best.val_accuracy,
        val_loss=best.val_loss,
        learning_rate=config.learning_rate,
        batch_size=config.batch_size,
        epochs=len(history),
        best_epoch=best_epoch,
        weight_decay=config.weight_decay,
        device=str(policy.device),
        duration_sec=duration,
        history=tuple(history),
        evaluation=evaluation,
        artifacts=artifacts,
        config=config,
    )
    if artifacts.result is not None:
        Path(artifacts.result).write_text(result.model_dump_json(indent=2), encoding="utf-8")
    return result


def _out_dir(config: BCConfig, model: Any) -> str | None:
    """Where the run writes: ``"auto"`` names a new folder, unless the caller keeps its model."""
    if model is not None and config.out_dir == AUTO:
        return None
    return resolve_out_dir(config.out_dir, "bc")


def _finish(
    config: BCConfig, model: Any, dataset: Any
) -> tuple[Artifacts, EvaluationResult | None]:
    """Save what the config asks for, and evaluate a chess policy."""
    out = Path(config.out_dir) if config.out_dir else None
    paths: dict[str, str] = {}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        model.save(out / "model.zip")
        if config.dataset is None:
            dataset.save(out / "dataset")
            paths["dataset"] = str(out / "dataset.npz")
        paths.update(
            directory=str(out), model=str(out / "model.zip"), result=str(out / "result.json")
        )
    evaluation = None
    if config.env == "chess" and config.eval_games > 0:
        pgn = out / "evaluation.pgn" if out is not None else None
        if pgn is not None:
            paths["games_pgn"] = str(pgn)
        evaluation = evaluate(
            model,
            config.eval_opponent,
            games=config.eval_games,
            seed=config.seed,
            pgn_path=pgn,
            progress_bar=config.progress_bar,
        )
    return Artifacts.model_validate(paths), evaluation
