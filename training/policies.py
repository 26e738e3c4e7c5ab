"""A small CNN for the (8, 8, 12) chess board, with a convolutional action head.

SB3's ``NatureCNN`` rejects 8x8 inputs (its 8x8 stride-4 kernel), and a linear layer from the
features to 4672 logits is most of the network's cost. Here four 3x3 convolutions keep the board's
8x8 grid, and a 1x1 convolution gives 73 move-type logits on every from-square, several times faster
than the linear head. The 73x8x8 logits are reordered into the
action encoding's index order, ``(file * 8 + rank) * 73 + plane`` with the ranks of the side to move
(``chess_env.core.encoding``), which the tensor shows with rank 8 in row 0.

- ``ChessCNN``: the features extractor, ``(B, 8, 8, 12) -> (B, channels * 64)``.
- ``ConvActionHead``: ``(B, channels * 64) -> (B, 4672)`` logits in action order.
- ``DestinationActionHead``: the same plus a learned score for each move's landing square and
  piece (``ChessCNN(destinations=True)``).
- ``ChessCnnMaskablePolicy`` (MaskablePPO) and ``ChessCnnPolicy`` (PPO): SB3's actor-critic
  policies with that extractor and head; everything else (value head, optimiser, saving) is SB3's.

Example:
    >>> import torch
    >>> head = ConvActionHead(channels=4)
    >>> head(torch.zeros(2, 4 * 64)).shape
    torch.Size([2, 4672])
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

import chess
import gymnasium as gym
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.type_aliases import Schedule
from torch import nn

from chess_env.core.encoding import ACTION_SIZE, ACTION_TO_MOVE, N_PLANES
from training.attacks import ATTACK_PLANES, CHECK_PLANES, attack_maps, check_squares

__all__ = [
    "ChessCNN",
    "ChessCnnMaskablePolicy",
    "ChessCnnPolicy",
    "ConvActionHead",
    "DestinationActionHead",
    "is_chess_board_space",
]

SQUARES = 64
PIECE_TYPES = 6
_PIECE_INDEX = torch.arange(float(PIECE_TYPES)).view(1, PIECE_TYPES, 1)


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
        checks: also read where a knight, a rook, a bishop of the mover's would check their king
            (``training.attacks.check_squares``), three planes more.
        destinations: for ``DestinationActionHead``: pass the mover's six piece planes through
            after the features, so the head knows which piece each move moves.

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
        checks: bool = False,
        destinations: bool = False,
    ) -> None:
        if not is_chess_board_space(observation_space):
            raise ValueError(
                f"ChessCNN needs the (8, 8, 12) chess board, got {observation_space}; "
                "use features='mlp' for other envs"
            )
        if channels < 1 or layers < 1:
            raise ValueError(f"channels and layers must be positive, got {channels}, {layers}")
        passed = PIECE_TYPES if destinations else 0
        super().__init__(observation_space, features_dim=(channels + passed) * SQUARES)
        self.channels = channels
        self.attacks = attacks
        self.checks = checks
        self.destinations = destinations
        inputs = 12 + (ATTACK_PLANES if attacks else 0) + (CHECK_PLANES if checks else 0)
        stack: list[nn.Module] = []
        for index in range(layers):
            stack += [
                nn.Conv2d(inputs if index == 0 else channels, channels, 3, padding=1),
                nn.ReLU(),
            ]
        self.convolutions = nn.Sequential(*stack, nn.Flatten())

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        boards = observations.permute(0, 3, 1, 2).float()
        planes = [boards]
        if self.attacks:
            planes.append(attack_maps(boards))
        if self.checks:
            planes.append(check_squares(boards))
        features = self.convolutions(torch.cat(planes, dim=1))
        if self.destinations:
            features = torch.cat([features, boards[:, :PIECE_TYPES].flatten(1)], dim=1)
        return features


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


def _move_cells() -> tuple[torch.Tensor, torch.Tensor]:
    """Each action's from- and to-cell in the board tensor's (row, file) order, row 0 = the
    mover's rank 8; 0 for the actions that leave the board (never legal)."""
    cells = torch.zeros(2, ACTION_SIZE, dtype=torch.long)
    for action, move in enumerate(ACTION_TO_MOVE[chess.WHITE]):  # the mover's own ranks
        if move is not None:
            for end, square in enumerate(move[:2]):
                cells[end, action] = chess.square_mirror(square)  # rank r -> row 7 - r
    return cells[0], cells[1]


class DestinationActionHead(ConvActionHead):
    """``ConvActionHead``'s logits plus a score for the square a move lands on, one map per kind
    of piece moving: ``logit(move) = plane logit at its from-square + destination[piece, to]``.

    Why: the 1x1 head scores a move at its from-square only, so it must work out there, up to
    seven squares away, what the landing square is worth; a mate in one is a fact about the
    landing square (next to their king, covered twice, ...). With the same data, this head played
    76% of the held-out mates in one against 47% for the plain head (docs/training.md).

    The latent is ``ChessCNN(destinations=True)``'s: ``channels`` feature maps, then the mover's
    six piece planes (P, N, B, R, Q, K), which say what stands on each from-square.
    """

    from_cells: torch.Tensor  # buffers, registered below
    to_cells: torch.Tensor

    def __init__(self, channels: int) -> None:
        super().__init__(channels)
        self.destinations = nn.Conv2d(channels, PIECE_TYPES, kernel_size=1)
        from_cells, to_cells = _move_cells()
        self.register_buffer("from_cells", from_cells, persistent=False)
        self.register_buffer("to_cells", to_cells, persistent=False)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        rows, width = latent.shape[0], self.channels * SQUARES
        features, pieces = latent[:, :width], latent[:, width:].view(rows, PIECE_TYPES, SQUARES)
        scores = self.destinations(features.view(rows, self.channels, 8, 8)).view(rows, -1)
        kinds = (pieces * _PIECE_INDEX).sum(dim=1).long()  # (rows, 64): 0 = pawn or empty
        return super().forward(features) + scores.gather(
            1, kinds[:, self.from_cells] * SQUARES + self.to_cells
        )


def _conv_head_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The policy's keyword arguments, ``ChessCNN`` and ``pi=[]`` the defaults (``pi`` must be
    empty: the head reads the board features directly)."""
    kwargs.setdefault("features_extractor_class", ChessCNN)
    kwargs.setdefault("net_arch", {"pi": [], "vf": [64]})
    net_arch = kwargs["net_arch"]
    if not (isinstance(net_arch, dict) and net_arch.get("pi") == []):
        raise ValueError(
            "the convolutional head reads the board features directly: net_arch needs pi=[]"
        )
    return kwargs


@contextmanager
def _conv_action_net(
    extractor: BaseFeaturesExtractor, distribution: Any
) -> Generator[None, None, None]:
    """While it lasts, SB3's actor-critic builds ``ConvActionHead`` where it would build its
    linear action net.

    SB3 makes the action net through ``action_dist.proba_distribution_net`` (``distribution``,
    whose method is replaced meanwhile); answering that call with the convolutional head lets SB3
    initialise it (orthogonal, gain 0.01) and give its parameters to the optimiser, and spares a
    4096x4672 linear layer whose orthogonal initialisation alone takes seconds per model built or
    loaded.
    """
    if not isinstance(extractor, ChessCNN):
        raise TypeError(f"the convolutional head needs ChessCNN features, got {extractor!r}")
    head = DestinationActionHead if extractor.destinations else ConvActionHead
    distribution.proba_distribution_net = lambda latent_dim: head(extractor.channels)
    try:
        yield
    finally:
        del distribution.proba_distribution_net


class ChessCnnMaskablePolicy(MaskableActorCriticPolicy):
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
        super().__init__(*args, **_conv_head_options(kwargs))

    def _build(self, lr_schedule: Schedule) -> None:
        with _conv_action_net(self.features_extractor, self.action_dist):
            super()._build(lr_schedule)


class ChessCnnPolicy(ActorCriticPolicy):
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
        super().__init__(*args, **_conv_head_options(kwargs))

    def _build(self, lr_schedule: Schedule) -> None:
        with _conv_action_net(self.features_extractor, self.action_dist):
            super()._build(lr_schedule)
