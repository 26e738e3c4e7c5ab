"""Chess for reinforcement learning: a Gymnasium env, a PettingZoo AEC env, opponents.

Importing this package registers ``chess_env/Chess-v0`` with Gymnasium.

- ``ACTION_SIZE`` (4672), ``chess_env.core.encoding`` (tensors, action indices, masks)
- ``ChessEnv``: one agent against an opponent; ``aec_env()``: two players
- ``ChessVectorEnv``: N ``ChessEnv`` games batched in one process (``gym.make_vec``'s
  ``vector_entry_point`` for ``chess_env/Chess-v0``)
- ``chess_env.core.opponents``: random, greedy, Stockfish, SB3 policy, any callable
- ``chess_env.core.rules.ChessGame``: the rules core both envs share
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from chess_env.core.aec import ChessAECEnv, aec_env
from chess_env.core.encoding import (
    ACTION_SIZE,
    board_to_tensor,
    decode_action,
    encode_move,
    legal_action_mask,
)
from chess_env.core.env import ChessEnv
from chess_env.core.rules import ChessGame
from chess_env.core.vector import ChessVectorEnv
from chess_env.errors import (
    GameOverError,
    IllegalActionError,
    InvalidPositionError,
    OpponentError,
    StockfishNotFoundError,
)
from chess_env.text.env import ChessTextEnv

__all__ = [
    "ACTION_SIZE",
    "ChessAECEnv",
    "ChessEnv",
    "ChessGame",
    "ChessTextEnv",
    "ChessVectorEnv",
    "GameOverError",
    "IllegalActionError",
    "InvalidPositionError",
    "OpponentError",
    "StockfishNotFoundError",
    "aec_env",
    "board_to_tensor",
    "decode_action",
    "encode_move",
    "legal_action_mask",
]

__version__ = "0.1.0"

if "chess_env/Chess-v0" not in registry:
    register(
        id="chess_env/Chess-v0",
        entry_point="chess_env.core.env:ChessEnv",
        vector_entry_point="chess_env.core.vector:ChessVectorEnv",
    )
if "chess_env/ChessText-v0" not in registry:
    register(id="chess_env/ChessText-v0", entry_point="chess_env.text.env:ChessTextEnv")
