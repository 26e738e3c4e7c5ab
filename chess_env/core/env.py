"""``ChessEnv`` (``chess_env/Chess-v0``): one learning agent against an opponent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import chess
import numpy as np
from gymnasium import spaces

from chess_env.core.encoding import ACTION_SIZE, check_action_range
from chess_env.core.episode import AgentColor, OpponentEpisode, check_choice
from chess_env.core.fen import fen_of
from chess_env.core.opponents import Opponent
from chess_env.core.render import RENDER_MODES, render
from chess_env.core.rules import DEFAULT_MAX_PLIES
from chess_env.errors import IllegalActionError

__all__ = ["MATERIAL_REWARD_SCALE", "PENALTY_REWARD", "ChessEnv", "board_space"]

MATERIAL_REWARD_SCALE = 0.01  # reward per pawn of material swing, with reward_shaping="material"
PENALTY_REWARD = -0.1  # reward for an illegal action with illegal_action="penalize"
_MATERIAL = (
    (chess.PAWN, 1),
    (chess.KNIGHT, 3),
    (chess.BISHOP, 3),
    (chess.ROOK, 5),
    (chess.QUEEN, 9),
)

ObsMode = Literal["board", "dict"]
# The board as the side to move sees it (its pieces in channels 0-5), or always as white sees it.
EnvPerspective = Literal["side_to_move", "white"]
RewardShaping = Literal["material"]
# An illegal action: raise IllegalActionError (the step never happened), end the episode with
# -1, or score it -1 and let the agent move again.
IllegalAction = Literal["raise", "terminate", "penalize"]
RenderMode = Literal["human", "ansi", "rgb_array", "svg"]


def board_space() -> spaces.Box:
    """The (8, 8, 12) uint8 piece planes (see ``chess_env.core.encoding.board_to_tensor``)."""
    return spaces.Box(low=0, high=1, shape=(8, 8, 12), dtype=np.uint8)


class ChessEnv(OpponentEpisode):
    """Chess for one learning agent against an opponent, with a masked 4672-way action space.

    Observation: the (8, 8, 12) uint8 board tensor from the agent's side (``obs_mode="board"``),
    or ``{"board": ..., "action_mask": (4672,) int8}`` (``obs_mode="dict"``, for RLlib-style
    masking). The legal actions come two ways: ``info["action_mask"]``, (4672,) int8 0/1 as
    Gymnasium's ``env.action_space.sample(mask=info["action_mask"])`` wants it, and
    ``env.action_masks()``, the same mask as bool (sb3-contrib's convention; index with it, since
    ``~`` of the int8 mask gives -1/-2). Once the episode has ended both masks are all zeros and
    ``legal_moves`` is empty.

    Args:
        opponent: any player of ``chess_env.core.players`` (default "random"): a spec ("greedy",
            "stockfish:3", "stockfish?elo=1500", "alphabeta:2", "runs/x/model.zip",
            "openai:MODEL", "human"), an ``Opponent``, an SB3 model or policy, or any callable
            ``board -> chess.Move`` (called on a copy of the board). An opponent that cannot
            move (its engine died or overran) loses: outcome "opponent_failed", reward +1.
        agent_color: "white" (default), "black", or "random" (drawn each episode from the seed).
        perspective: "side_to_move" (default; the agent's pieces in channels 0-5, playing up the
            board) or "white" (absolute: white's pieces first, rank 8 in row 0).
        obs_mode: "board" (default) or "dict".
        reward_shaping: None (default) or "material": adds ``MATERIAL_REWARD_SCALE`` (0.01) per
            pawn of material the step won for the agent (P=1, N=B=3, R=5, Q=9; the opponent's
            reply counts against it).
        illegal_action: "raise" (default, ``IllegalActionError``), "terminate" (reward -1 and the
            episode ends) or "penalize" (reward -0.1, nothing is played, the agent moves again).
            An index outside [0, 4672) always raises.
        max_plies: truncate after this many plies since reset, opening moves and the opponent's
            plies included (default 512; None: no cap).
        claim_draws: end on threefold repetition and the 50-move rule (default True; see
            ``chess_env.core.rules`` for exactly when).
        render_mode: None (default), "human" (prints the unicode board and the last move to
            stdout after every reset and step, no window; ``render()`` prints it again and
            returns None), "ansi" (``render()`` returns that board as text), "svg" or "rgb_array"
            (a (400, 400, 3) uint8 image).

    Rewards are +1 for a win, -1 for a loss and 0 for a draw, from the agent's side. ``info``
    holds ``fen``, ``outcome`` (termination reason, e.g. "checkmate", or None), ``result``
    ("1-0", "0-1", "1/2-1/2", "*"), ``opponent_move`` (UCI or None), ``ply``, ``legal_moves``
    (UCI), ``action_mask`` ((4672,) int8) and ``agent_color``.

    ``reset(options={"fen": ..., "moves": [uci, ...]})`` starts from any legal position and
    opening. Stockfish and callables are external: only "random", "greedy" and policy opponents
    replay exactly from a seed.

    Example:
        >>> env = ChessEnv(opponent="random")
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, int(env.action_masks().sum()), info["legal_moves"][:3]
        ((8, 8, 12), 20, ['g1h3', 'g1f3', 'b1c3'])
        >>> _ = env.action_space.seed(0)
        >>> action = env.action_space.sample(mask=info["action_mask"])  # a random legal move
        >>> bool(env.action_masks()[action]), info["action_mask"].dtype
        (True, dtype('int8'))
        >>> obs, reward, terminated, truncated, info = env.step(2421)  # e2e4
        >>> info["ply"], reward, terminated, info["fen"].split()[1]
        (2, 0.0, False, 'w')
    """

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 2}

    def __init__(
        self,
        opponent: str | Opponent | Callable[[chess.Board], chess.Move] = "random",
        agent_color: AgentColor = "white",
        perspective: EnvPerspective = "side_to_move",
        obs_mode: ObsMode = "board",
        reward_shaping: RewardShaping | None = None,
        illegal_action: IllegalAction = "raise",
        max_plies: int | None = DEFAULT_MAX_PLIES,
        claim_draws: bool = True,
        render_mode: RenderMode | None = None,
    ) -> None:
        super().__init__(opponent, agent_color, max_plies, claim_draws)
        check_choice("perspective", perspective, ("side_to_move", "white"))
        check_choice("obs_mode", obs_mode, ("board", "dict"))
        check_choice("reward_shaping", reward_shaping, (None, "material"))
        check_choice("illegal_action", illegal_action, ("raise", "terminate", "penalize"))
        check_choice("render_mode", render_mode, (None, *RENDER_MODES))
        self.perspective, self.obs_mode = perspective, obs_mode
        self.reward_shaping, self.illegal_action = reward_shaping, illegal_action
        self.render_mode = render_mode

        self.action_space = spaces.Discrete(ACTION_SIZE)
        if obs_mode == "board":
            self.observation_space: spaces.Space = board_space()
        else:
            self.observation_space = spaces.Dict(
                {
                    "board": board_space(),
                    "action_mask": spaces.Box(0, 1, shape=(ACTION_SIZE,), dtype=np.int8),
                }
            )

    # -- the Gymnasium API -------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        opponent_move = self._start_episode(seed, options)
        observation, info = self._observation(), self._info(opponent_move)
        self._render_human()
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        result = self._step(action)
        self._render_human()
        return result

    def _step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        game = self._require_live_game()
        index = check_action_range(action)
        try:
            move = game.move_for_action(index)
        except IllegalActionError as error:
            if self.illegal_action == "raise":
                raise
            return self._illegal_step(str(error))
        material_before = self._material() if self.reward_shaping else 0
        opponent_move, reward = self._play_turn(move)
        if self.reward_shaping:
            reward += MATERIAL_REWARD_SCALE * (self._material() - material_before)
        observation, info = self._observation(), self._info(opponent_move)
        return observation, reward, self._terminated, game.truncated, info

    def action_masks(self) -> np.ndarray:
        """The (4672,) bool mask of the agent's legal actions (all False once the episode ended)."""
        return self._mask(bool)

    def render(self) -> str | np.ndarray | None:
        orientation = self._agent if self.perspective == "side_to_move" else chess.WHITE
        return render(self.board, self.render_mode, orientation)

    # -- helpers -----------------------------------------------------------------------------

    def _render_human(self) -> None:
        """Gymnasium's convention: "human" rendering happens inside reset and step."""
        if self.render_mode == "human":
            self.render()

    def _mask(self, dtype: type) -> np.ndarray:
        """A fresh (4672,) mask of the agent's legal actions (zeros once the episode ended)."""
        game = self._require_game()
        if self._ended_by is not None:
            return np.zeros(ACTION_SIZE, dtype=dtype)
        return game.action_mask(dtype)

    def _illegal_step(self, reason: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self.illegal_action == "terminate":
            self._ended_by = "illegal_action"
        info = {**self._info(None), "illegal_action": reason}
        if self.illegal_action == "terminate":
            return self._observation(), -1.0, True, False, info
        return self._observation(), PENALTY_REWARD, False, False, info

    def _observation(self) -> Any:
        game = self._require_game()
        perspective = "white" if self.perspective == "white" or self._agent else "black"
        board = game.observation(perspective)  # type: ignore[arg-type]
        if self.obs_mode == "board":
            return board
        return {"board": board, "action_mask": self._mask(np.int8)}

    def _info(self, opponent_move: chess.Move | None) -> dict[str, Any]:
        game = self._require_game()
        over = self._ended_by is not None or game.is_over
        return {
            "fen": fen_of(game.board),
            "outcome": (self._ended_by or game.ending) if over else None,
            "result": self._result(),
            "opponent_move": opponent_move.uci() if opponent_move else None,
            "ply": game.board.ply(),
            "legal_moves": [] if over else game.legal_uci,
            "action_mask": self._mask(np.int8),
            "agent_color": "white" if self._agent else "black",
        }

    def _material(self) -> int:
        """The agent's material minus the opponent's, in pawns."""
        board, agent = self.board, self._agent
        return sum(
            value * (board.pieces_mask(piece, agent).bit_count()
                     - board.pieces_mask(piece, not agent).bit_count())
            for piece, value in _MATERIAL
        )  # fmt: skip
