"""The SB3 model for a config and an env: MaskablePPO when the env masks actions, else PPO.

``build_model`` picks the policy too: ``ChessCnnMaskablePolicy`` / ``ChessCnnPolicy`` for the
chess board (``features="auto"`` or ``"chess_cnn"``; ``"chess_cnn_attacks"`` adds the attack
maps to its inputs, ``"chess_cnn_destinations"`` also the check squares and
``DestinationActionHead``), SB3's ``MultiInputPolicy`` for Dict observations (a world through
``FlattenForSB3``) and ``MlpPolicy`` otherwise. BC trains the policy of such a model and saves
it; ``init_model`` loads those weights, so PPO continues from them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal, overload

import gymnasium as gym
import torch

from chess_env.core.model_player import load_sb3_model
from training.config import Features, PPOConfig
from training.policies import ChessCnnMaskablePolicy, ChessCnnPolicy, is_chess_board_space

if TYPE_CHECKING:
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
    from stable_baselines3 import PPO
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.common.vec_env import VecEnv

__all__ = ["SMALL_NET_THREADS", "algorithm_name", "build_model", "load_model", "policy_for"]

SMALL_NET_THREADS = 1  # small networks train faster on one thread than on two (training_speed)


def algorithm_name(masked: bool) -> Literal["PPO", "MaskablePPO"]:
    return "MaskablePPO" if masked else "PPO"


CHESS_CNN_EXTRACTORS: dict[str, dict[str, bool]] = {  # features -> ChessCNN's options
    "chess_cnn": {},
    "chess_cnn_attacks": {"attacks": True},
    "chess_cnn_destinations": {"attacks": True, "checks": True, "destinations": True},
}


@overload
def policy_for(
    observation_space: gym.Space, features: Features, masked: Literal[True]
) -> type[MaskableActorCriticPolicy] | str: ...
@overload
def policy_for(
    observation_space: gym.Space, features: Features, masked: Literal[False]
) -> type[ActorCriticPolicy] | str: ...
@overload
def policy_for(
    observation_space: gym.Space, features: Features, masked: bool
) -> type[ActorCriticPolicy] | type[MaskableActorCriticPolicy] | str: ...
def policy_for(
    observation_space: gym.Space, features: Features, masked: bool
) -> type[ActorCriticPolicy] | type[MaskableActorCriticPolicy] | str:
    """The policy class (or SB3 name) for ``features`` on ``observation_space``."""
    board = is_chess_board_space(observation_space)
    if features in CHESS_CNN_EXTRACTORS and not board:
        raise ValueError(
            f"features={features!r} needs the (8, 8, 12) chess board, got {observation_space}"
        )
    if board and features in ("auto", *CHESS_CNN_EXTRACTORS):
        if isinstance(observation_space, gym.spaces.Dict):
            raise ValueError("the chess CNN reads obs_mode='board'; masks come from action_masks()")
        return ChessCnnMaskablePolicy if masked else ChessCnnPolicy
    return "MultiInputPolicy" if isinstance(observation_space, gym.spaces.Dict) else "MlpPolicy"


def build_model(
    config: PPOConfig, vec_env: VecEnv, *, masked: bool, tensorboard_log: str | None = None
) -> PPO | MaskablePPO:
    """A fresh model for ``config`` on ``vec_env``, with ``config.init_model``'s weights if set."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO

    torch.set_num_threads(SMALL_NET_THREADS)
    extractor = CHESS_CNN_EXTRACTORS.get(config.features)
    space = vec_env.observation_space
    options: dict[str, Any] = {  # PPO's and MaskablePPO's keyword arguments
        "policy_kwargs": {"features_extractor_kwargs": extractor} if extractor else None,
        "n_steps": config.n_steps,
        "batch_size": config.batch_size,
        "n_epochs": config.n_epochs,
        "learning_rate": config.learning_rate,
        "gamma": config.gamma,
        "gae_lambda": config.gae_lambda,
        "clip_range": config.clip_range,
        "ent_coef": config.ent_coef,
        "vf_coef": config.vf_coef,
        "max_grad_norm": config.max_grad_norm,
        "seed": config.seed,
        "device": config.device,
        "tensorboard_log": tensorboard_log,
        "verbose": 0,
    }
    model: PPO | MaskablePPO
    if masked:
        model = MaskablePPO(policy_for(space, config.features, True), vec_env, **options)
    else:
        model = PPO(policy_for(space, config.features, False), vec_env, **options)
    if config.init_model is not None:
        model.set_parameters(config.init_model, exact_match=True, device=config.device)
    return model


def load_model(path: str | os.PathLike[str], device: str = "cpu") -> PPO | MaskablePPO:
    """A saved MaskablePPO or PPO model, whichever the file holds (``.zip`` may be left off):
    ``chess_env.core.model_player.load_sb3_model``, the loader every player spec uses.

    Raises:
        FileNotFoundError: no file at ``path`` (nor at ``path.zip``).
        ValueError: the file is not a saved PPO or MaskablePPO model.

    Example:
        >>> load_model("no/such/model.zip")
        Traceback (most recent call last):
        ...
        chess_env.core.model_player.MissingModelError: no saved model at 'no/such/model.zip'
    """
    return load_sb3_model(path, device)
