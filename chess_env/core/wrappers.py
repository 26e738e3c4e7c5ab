"""Observation wrappers for the chess envs: the rules stay standard chess, only the view changes.

- ``FogOfWar(env)``: dark chess (fog of war) for ``ChessEnv`` or the AEC env; returns
  ``GymFogOfWar`` or ``AECFogOfWar``.
- ``visible_mask(board, color)``: the squares a player sees, as a python-chess bitboard.
- ``fog_planes(planes, board, color, orientation)``: (8, 8, 12) planes -> fogged (8, 8, 13) planes.

What a player sees (the dark-chess rule, with pseudo-legal reach): the squares its own pieces stand
on, every square one of them attacks (``chess.Board.attacks``: sliders up to and including the
first piece in the way, pawns both forward diagonals whether or not anything stands there) and the
squares its pawns could push to (one ahead when empty, two from the start rank when both are
empty). That is the destination of every pseudo-legal move of the player (castling and en passant
included) plus the empty squares its pawns attack. Check, pins and whose turn it is do not matter:
dark chess has no check, so a pinned piece still sees along its lines. Seeing the empty pawn
diagonals shows no piece that a moves-only rule would hide, and without them the fog's own outline
would give their emptiness away.

Only the observation changes. The action mask stays the legal moves of standard chess (being in
check or pinned can hint at hidden pieces), and Gymnasium's ``info`` still holds the full FEN for
logging and evaluation: it is the referee's view, not something to feed a policy.
"""

from __future__ import annotations

from typing import Any

import chess
import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import BaseWrapper

from chess_env.core.aec import AGENTS, ChessAECEnv
from chess_env.core.env import ChessEnv

__all__ = ["AECFogOfWar", "FogOfWar", "GymFogOfWar", "fog_planes", "fog_space", "visible_mask"]

_BOARD_SHAPE = (8, 8, 12)


def fog_space() -> spaces.Box:
    """The (8, 8, 13) uint8 fogged planes: the 12 piece planes and the visible squares."""
    return spaces.Box(low=0, high=1, shape=(8, 8, 13), dtype=np.uint8)


def visible_mask(board: chess.Board, color: chess.Color) -> int:
    """The bitboard of squares ``color`` sees (see the module doc for the rule).

    Example:
        >>> len(chess.SquareSet(visible_mask(chess.Board(), chess.WHITE)))  # ranks 1 to 4
        32
    """
    ours = board.occupied_co[color]
    visible = ours
    for square in chess.scan_reversed(ours):
        visible |= board.attacks_mask(square)
    empty = ~board.occupied & chess.BB_ALL
    pawns = board.pawns & ours
    if color == chess.WHITE:
        single = (pawns << 8) & empty
        double = ((single & chess.BB_RANK_3) << 8) & empty
    else:
        single = (pawns >> 8) & empty
        double = ((single & chess.BB_RANK_6) >> 8) & empty
    return visible | single | double


def _mask_plane(mask: int, orientation: chess.Color) -> np.ndarray:
    """A bitboard as an (8, 8) uint8 plane laid out like ``board_to_tensor`` for ``orientation``."""
    # Big-endian bytes put rank 8 in row 0; little-endian puts rank 1 there (black's flip).
    packed = mask.to_bytes(8, "big" if orientation == chess.WHITE else "little")
    return np.unpackbits(np.frombuffer(packed, dtype=np.uint8), bitorder="little").reshape(8, 8)


def fog_planes(
    planes: np.ndarray, board: chess.Board, color: chess.Color, orientation: chess.Color
) -> np.ndarray:
    """``color``'s fogged view of ``planes``: a new (8, 8, 13) uint8 array.

    ``planes`` are ``board_to_tensor(board, orientation)`` (or a noisy copy of them): rows and
    "our" channels 0-5 are ``orientation``'s, which is ``color`` unless the env shows the board
    from white's side to a black agent. The opponent's planes are zeroed off the visible squares;
    channel 12 marks the visible squares.

    Example:
        >>> from chess_env.core.encoding import board_to_tensor
        >>> fogged = fog_planes(board_to_tensor(chess.Board()), chess.Board(), True, True)
        >>> fogged.shape, int(fogged[..., :6].sum()), int(fogged[..., 6:12].sum())
        ((8, 8, 13), 16, 0)
    """
    visible = _mask_plane(visible_mask(board, color), orientation)
    fogged = np.empty((8, 8, 13), dtype=np.uint8)
    fogged[..., :12] = planes
    theirs = slice(6, 12) if orientation == color else slice(0, 6)
    fogged[..., theirs] *= visible[..., None]
    fogged[..., 12] = visible
    return fogged


def _check_board_space(space: spaces.Space[Any], where: str) -> None:
    if not (isinstance(space, spaces.Box) and space.shape == _BOARD_SHAPE):
        raise ValueError(
            f"FogOfWar needs the (8, 8, 12) board planes at {where}, but the wrapped env "
            f"observes {space}; apply FogOfWar before wrappers that reshape the observation"
        )


class GymFogOfWar(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Dark chess for ``ChessEnv``: the agent sees only what its pieces see (module doc).

    The (8, 8, 12) board (``obs_mode="board"``, or the "board" entry with ``obs_mode="dict"``)
    becomes the (8, 8, 13) ``fog_planes`` in the env's orientation. ``action_masks()`` passes
    through unchanged, so MaskablePPO works as before. Noise composes in either order:
    ``multiagent.wrappers.GymNoiseWrapper`` outside the fog flips bits anywhere (hidden pieces may
    appear as noise); inside it, only what the agent sees is noisy.

    Args:
        env: a ``ChessEnv`` (bare, from ``gymnasium.make``, or under wrappers that keep its
            observation space).

    Example:
        >>> env = GymFogOfWar(ChessEnv())
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, int(obs[..., 6:12].sum()), int(obs[..., 12].sum())  # black unseen
        ((8, 8, 13), 0, 32)
        >>> int(env.action_masks().sum())
        20
    """

    def __init__(self, env: gym.Env) -> None:
        if not isinstance(env.unwrapped, ChessEnv):
            raise TypeError(
                "GymFogOfWar wraps a chess_env.ChessEnv (board observations), got "
                f"{type(env.unwrapped).__name__}"
            )
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        self._chess: ChessEnv = env.unwrapped
        inner = env.observation_space
        if isinstance(inner, spaces.Dict):
            _check_board_space(inner["board"], 'observation["board"]')
            self.observation_space = spaces.Dict({**inner, "board": fog_space()})
        else:
            _check_board_space(inner, "the observation")
            self.observation_space = fog_space()
        self._dict = isinstance(inner, spaces.Dict)

    def observation(self, observation: Any) -> Any:
        chess_env = self._chess
        color = chess_env.agent
        orientation = chess.WHITE if chess_env.perspective == "white" else color
        if self._dict:
            board = fog_planes(observation["board"], chess_env.board, color, orientation)
            return {**observation, "board": board}
        return fog_planes(observation, chess_env.board, color, orientation)

    def action_masks(self) -> np.ndarray:
        """The wrapped env's legal-action mask, unchanged (sb3-contrib's convention)."""
        return self.env.get_wrapper_attr("action_masks")()


class AECFogOfWar(BaseWrapper):
    """Dark chess for the PettingZoo AEC env: each agent sees what its own pieces see.

    ``observe(agent)["observation"]`` becomes the (8, 8, 13) ``fog_planes`` from the agent's side;
    ``"action_mask"`` is unchanged.

    Args:
        env: ``chess_env.aec_env()`` or a bare ``ChessAECEnv``, under any wrappers that keep its
            observation spaces.

    Example:
        >>> from chess_env.core.aec import aec_env
        >>> env = AECFogOfWar(aec_env())
        >>> env.reset(seed=0)
        >>> observation = env.observe("player_1")
        >>> planes = observation["observation"]
        >>> planes.shape, int(planes[..., 6:12].sum()), int(planes[..., 12].sum())
        ((8, 8, 13), 0, 32)
    """

    def __init__(self, env: AECEnv) -> None:
        if not isinstance(env.unwrapped, ChessAECEnv):
            raise TypeError(
                "AECFogOfWar wraps a chess_env AEC env (chess_env.aec_env()), got "
                f"{type(env.unwrapped).__name__}"
            )
        super().__init__(env)
        self._chess: ChessAECEnv = env.unwrapped
        self._spaces: dict[str, spaces.Dict] = {}
        for agent in env.possible_agents:
            inner = env.observation_space(agent)
            _check_board_space(inner["observation"], f'{agent}\'s observation["observation"]')
            self._spaces[agent] = spaces.Dict({**inner, "observation": fog_space()})

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._spaces[agent]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        observation = self.env.observe(agent)
        color = agent == AGENTS[0]
        planes = fog_planes(observation["observation"], self._chess.board, color, color)
        return {**observation, "observation": planes}


def FogOfWar(env: gym.Env | AECEnv) -> GymFogOfWar | AECFogOfWar:  # noqa: N802 -- used like a class
    """Dark-chess observations for ``ChessEnv`` (Gymnasium) or the chess AEC env (PettingZoo).

    Raises ``TypeError`` for any other env (see the module doc for what the player sees).

    Example:
        >>> env = FogOfWar(ChessEnv(agent_color="black"))
        >>> obs, info = env.reset(seed=0)  # white has moved; black sees its half and beyond
        >>> type(env).__name__, obs.shape, env.observation_space.contains(obs)
        ('GymFogOfWar', (8, 8, 13), True)
    """
    if isinstance(env, gym.Env):
        return GymFogOfWar(env)
    if isinstance(env, AECEnv):
        return AECFogOfWar(env)
    raise TypeError(
        "FogOfWar wraps a chess_env.ChessEnv or a chess_env AEC env (chess_env.aec_env()), got "
        f"{type(env).__name__}"
    )
