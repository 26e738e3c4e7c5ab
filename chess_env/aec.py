"""``aec_env()``: two-player chess as a PettingZoo ``AECEnv`` (self-play, RLlib's PettingZooEnv).

Agents ``player_0`` (white) and ``player_1`` (black). Each observes ``{"observation": (8, 8, 12)
uint8 board from its own side, "action_mask": (4672,) int8}``; the mask is all zeros for the
agent not to move, as in PettingZoo's classic envs. Rewards are +1 / -1 / 0 at the end; the game
ends and truncates as ``ChessEnv`` does (see ``chess_env.rules``). ``aec_env()`` wraps the bare
``ChessAECEnv`` the way PettingZoo's ``chess_v6.env()`` does: an illegal action ends the game with
-1 for the agent that played it.
"""

from __future__ import annotations

from typing import Any

import chess
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from chess_env.encoding import ACTION_SIZE
from chess_env.env import board_space
from chess_env.positions import start_game
from chess_env.render import RENDER_MODES, render
from chess_env.rules import DEFAULT_MAX_PLIES, ChessGame

__all__ = ["ChessAECEnv", "aec_env", "raw_env"]

AGENTS = ("player_0", "player_1")


class ChessAECEnv(AECEnv, EzPickle):
    """Two-player chess with the AlphaZero action encoding (index-compatible with chess_v6).

    Args:
        render_mode: None (default), "human" (prints the unicode board and the last move to
            stdout after every reset and step, from white's side, no window; ``render()`` prints
            it again and returns None), "ansi" (``render()`` returns that board as text), "svg"
            or "rgb_array" (a (400, 400, 3) uint8 image).
        max_plies: truncate after this many plies (default 512; None: no cap).
        claim_draws: end on threefold repetition and the 50-move rule (default True).

    Example:
        >>> env = raw_env()
        >>> env.reset(seed=0)
        >>> observation, reward, termination, truncation, info = env.last()
        >>> mask = observation["action_mask"]
        >>> env.agent_selection, observation["observation"].shape, int(mask.sum())
        ('player_0', (8, 8, 12), 20)
        >>> action = env.action_space("player_0").sample(mask=mask)  # a random legal move
        >>> env.step(action)
        >>> env.agent_selection
        'player_1'
        >>> env.close()
    """

    metadata = {
        "render_modes": list(RENDER_MODES),
        "name": "chess_polyarena_v0",
        "is_parallelizable": False,
        "render_fps": 2,
    }

    def __init__(
        self,
        render_mode: str | None = None,
        max_plies: int | None = DEFAULT_MAX_PLIES,
        claim_draws: bool = True,
    ) -> None:
        EzPickle.__init__(self, render_mode, max_plies, claim_draws)
        super().__init__()
        if render_mode not in (None, *RENDER_MODES):
            raise ValueError(
                f"render_mode must be one of {list(RENDER_MODES)} or None, got {render_mode!r}"
            )
        self.render_mode, self.max_plies, self.claim_draws = render_mode, max_plies, claim_draws
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        self._observation_spaces = {
            agent: spaces.Dict(
                {
                    "observation": board_space(),
                    "action_mask": spaces.Box(0, 1, shape=(ACTION_SIZE,), dtype=np.int8),
                }
            )
            for agent in AGENTS
        }
        self._action_spaces = {agent: spaces.Discrete(ACTION_SIZE) for agent in AGENTS}
        self.game = ChessGame(claim_draws=claim_draws, max_plies=max_plies)

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_spaces[agent]

    @property
    def board(self) -> chess.Board:
        return self.game.board

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        color = agent == AGENTS[0]
        mask = np.zeros(ACTION_SIZE, dtype=np.int8)
        if agent == self.agent_selection and not self.game.is_over:
            mask[self.game.legal_actions] = 1
        return {
            "observation": self.game.observation("white" if color else "black"),
            "action_mask": mask,
        }

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        # Nothing here is random: ``seed`` is accepted for the API; options give the position.
        self.game = start_game(options, claim_draws=self.claim_draws, max_plies=self.max_plies)
        self.agents = list(AGENTS)
        self.rewards = dict.fromkeys(AGENTS, 0.0)
        self._cumulative_rewards = dict.fromkeys(AGENTS, 0.0)
        self.terminations = dict.fromkeys(AGENTS, False)
        self.truncations = dict.fromkeys(AGENTS, False)
        self.infos: dict[str, dict[str, Any]] = {agent: {} for agent in AGENTS}
        self.agent_selection = self._agent_to_move()
        self._render_human()

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        move = self.game.move_for_action(action)
        self.game.play(move)
        self._cumulative_rewards[agent] = 0.0
        self.rewards = dict.fromkeys(AGENTS, 0.0)
        game = self.game
        if game.is_over:
            if game.terminated:
                self.terminations = dict.fromkeys(AGENTS, True)
                winner = game.outcome.winner if game.outcome else None
                if winner is not None:
                    self.rewards = {a: 1.0 if (a == AGENTS[0]) == winner else -1.0 for a in AGENTS}
            else:
                self.truncations = dict.fromkeys(AGENTS, True)
            reason = game.outcome.termination.name.lower() if game.outcome else "max_plies"
            result = game.outcome.result() if game.outcome else "*"
            self.infos = {a: {"outcome": reason, "result": result} for a in AGENTS}
        self.agent_selection = self._agent_to_move()
        self._accumulate_rewards()
        self._render_human()

    def render(self) -> str | np.ndarray | None:
        return render(self.board, self.render_mode)

    def close(self) -> None:
        """Nothing to release ("human" prints, it opens no window); PettingZoo's ``api_test``
        wants ``close`` wherever ``render`` is defined."""

    def _render_human(self) -> None:
        """PettingZoo's classic envs render "human" inside reset and step, as Gymnasium does."""
        if self.render_mode == "human":
            self.render()

    def _agent_to_move(self) -> str:
        return AGENTS[0] if self.game.board.turn == chess.WHITE else AGENTS[1]


raw_env = ChessAECEnv


def aec_env(**kwargs: Any) -> AECEnv:
    """``ChessAECEnv`` with PettingZoo's standard wrappers (illegal move -> -1 and game over)."""
    env: AECEnv = ChessAECEnv(**kwargs)
    env = wrappers.TerminateIllegalWrapper(env, illegal_reward=-1)
    env = wrappers.AssertOutOfBoundsWrapper(env)
    return wrappers.OrderEnforcingWrapper(env)
