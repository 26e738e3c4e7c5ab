"""A small CNN for the (8, 8, 12) chess board, with a convolutional action head.

SB3's ``NatureCNN`` rejects 8x8 inputs (its 8x8 stride-4 kernel), and a linear layer from the
features to 4672 logits is most of the network's cost. Here four 3x3 convolutions keep the
board's 8x8 grid, and a 1x1 convolution gives 73 move-type logits on every from-square, 6x faster
than the linear head (measured on this project's 2-core machine). The 73x8x8 logits are
reordered into the action encoding's index order, ``(file * 8 + rank) * 73 + plane`` with the
ranks of the side to move (``chess_env.encoding``), which the tensor shows with rank 8 in row 0.

- ``ChessCNN``: the features extractor, ``(B, 8, 8, 12) -> (B, channels * 64)``.
- ``ConvActionHead``: ``(B, channels * 64) -> (B, 4672)`` logits in action order.
- ``ChessCnnMaskablePolicy`` (MaskablePPO) and ``ChessCnnPolicy`` (PPO): SB3's actor-critic
  policies with that extractor and head; everything else (value head, optimiser, saving) is SB3's.

Example:
    >>> import torch
    >>> head = ConvActionHead(channels=4)
    >>> head(torch.zeros(2, 4 * 64)).shape
    torch.Size([2, 4672])
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from chess_env.encoding import ACTION_SIZE, N_PLANES
from training.attacks import ATTACK_PLANES, attack_maps

__all__ = [
    "ChessCNN",
    "ChessCnnMaskablePolicy",
    "ChessCnnPolicy",
    "ConvActionHead",
    "is_chess_board_space",
]

SQUARES = 64


def is_chess_board_space(space: gym.Space) -> bool:
    """True for the chess env's (8, 8, 12) board, alone or as a Dict's ``board``."""
    if isinstance(space, gym.spaces.Dict) and "board" in space.spaces:
        space = space["board"]
    return isinstance(space, gym.spaces.Box) and space.shape == (8, 8, 12)


class ChessCNN(BaseFeaturesExtractor):
    """``layers`` 3x3 convolutions of ``channels`` each over the board, keeping the 8x8 grid.

    Args:
        observation_space: the (8, 8, 12) board (channels last, as the env gives it).
        channels: filters per layer (default 64).
        layers: convolutions (default 4).
        attacks: also read the squares each side attacks (``training.attacks``), two planes
            more at the input.

    Example:
        >>> from chess_env import ChessEnv
        >>> extractor = ChessCNN(ChessEnv().observation_space, channels=8)
        >>> extractor(torch.zeros(2, 8, 8, 12)).shape
        torch.Size([2, 512])
    """

    def __init__(
        self,
        observation_space: gym.Space,
        channels: int = 64,
        layers: int = 4,
        attacks: bool = False,
    ) -> None:
        if not is_chess_board_space(observation_space):
            raise ValueError(
                f"ChessCNN needs the (8, 8, 12) chess board, got {observation_space}; "
                "use features='mlp' for other envs"
            )
        if channels < 1 or layers < 1:
            raise ValueError(f"channels and layers must be positive, got {channels}, {layers}")
        super().__init__(observation_space, features_dim=channels * SQUARES)
        self.channels = channels
        self.attacks = attacks
        inputs = 12 + (ATTACK_PLANES if attacks else 0)
        stack: list[nn.Module] = []
        for index in range(layers):
            stack += [
                nn.Conv2d(inputs if index == 0 else channels, channels, 3, padding=1),
                nn.ReLU(),
            ]
        self.convolutions = nn.Sequential(*stack, nn.Flatten())

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        boards = observations.permute(0, 3, 1, 2).float()
        if self.attacks:
            boards = torch.cat([boards, attack_maps(boards)], dim=1)
        return self.convolutions(boards)


class ConvActionHead(nn.Module):
    """A 1x1 convolution from the board features to the 73 move planes of every square."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.channels = channels
        self.planes = nn.Conv2d(channels, N_PLANES, kernel_size=1)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        grid = latent.view(-1, self.channels, 8, 8)  # (B, C, row, file), row 0 = rank 8
        logits = self.planes(grid).flip(2)  # (B, 73, rank, file)
        return logits.permute(0, 3, 2, 1).reshape(-1, ACTION_SIZE)  # (file, rank, plane)


class _ConvHeadMixin:
    """Has SB3's actor-critic build ``ConvActionHead`` where it would build its linear action net.

    SB3 makes the action net through ``action_dist.proba_distribution_net``; answering that call
    with the convolutional head lets SB3 initialise it (orthogonal, gain 0.01) and give its
    parameters to the optimiser, and spares a 4096x4672 linear layer whose orthogonal
    initialisation alone took 7 s per model built or loaded here.
    """

    features_extractor: ChessCNN
    action_dist: Any

    @staticmethod
    def _defaults(kwargs: dict[str, Any]) -> dict[str, Any]:
        kwargs.setdefault("features_extractor_class", ChessCNN)
        kwargs.setdefault("net_arch", {"pi": [], "vf": [64]})
        net_arch = kwargs["net_arch"]
        if not (isinstance(net_arch, dict) and net_arch.get("pi") == []):
            raise ValueError(
                "the convolutional head reads the board features directly: net_arch needs pi=[]"
            )
        return kwargs

    def _build(self, lr_schedule: Any) -> None:
        channels = self.features_extractor.channels
        self.action_dist.proba_distribution_net = lambda latent_dim: ConvActionHead(channels)
        try:
            super()._build(lr_schedule)  # type: ignore[misc]
        finally:
            del self.action_dist.proba_distribution_net


class ChessCnnMaskablePolicy(_ConvHeadMixin, MaskableActorCriticPolicy):
    """MaskablePPO's policy over the chess board: ``ChessCNN`` features, ``ConvActionHead``.

    Example:
        >>> from chess_env import ChessEnv
        >>> env = ChessEnv()
        >>> policy = ChessCnnMaskablePolicy(env.observation_space, env.action_space, lambda _: 3e-4,
        ...                                 features_extractor_kwargs={"channels": 8})
        >>> observation, _ = env.reset(seed=0)
        >>> legal = env.action_masks()
        >>> action, _ = policy.predict(observation, deterministic=True, action_masks=legal)
        >>> bool(legal[action])  # untrained, yet a legal move
        True
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **self._defaults(kwargs))


class ChessCnnPolicy(_ConvHeadMixin, ActorCriticPolicy):
    """PPO's policy over the chess board: ``ChessCNN`` features, ``ConvActionHead``.

    Example:
        >>> from chess_env import ChessEnv
        >>> env = ChessEnv()
        >>> policy = ChessCnnPolicy(env.observation_space, env.action_space, lambda _: 3e-4,
        ...                         features_extractor_kwargs={"channels": 8})
        >>> type(policy.action_net).__name__, policy.action_net(torch.zeros(1, 8 * 64)).shape
        ('ConvActionHead', torch.Size([1, 4672]))
        >>> ChessCnnPolicy(env.observation_space, env.action_space, lambda _: 3e-4, net_arch=[64])
        Traceback (most recent call last):
        ...
        ValueError: the convolutional head reads the board features directly: net_arch needs pi=[]
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **self._defaults(kwargs))
