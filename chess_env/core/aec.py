"""``aec_env()``: two-player chess as a PettingZoo ``AECEnv`` (self-play, RLlib's PettingZooEnv).

Agents ``player_0`` (white) and ``player_1`` (black). Each observes ``{"observation": (8, 8, 12)
uint8 board from its own side, "action_mask": (4672,) int8}``; the mask is all zeros for the
agent not to move, as in PettingZoo's classic envs. Rewards are +1 / -1 / 0 at the end; the game
ends and truncates as ``ChessEnv`` does (see ``chess_env.core.rules``). ``aec_env()`` wraps the bare
``ChessAECEnv`` the way PettingZoo's ``chess_v6.env()`` does: an illegal action ends the game with
-1 for the agent that played it.

``ClassicWrapper`` is that wrapping (PettingZoo's order enforcing, bounds assertion and
illegal-move termination) in one layer with the same behaviour: through PettingZoo's three layers,
every attribute an AEC loop reads (``agent_selection``, ``terminations``, ...) took three failed
look-ups and ``__getattr__`` calls, which cost more than the env's own step.
"""

from __future__ import annotations

from typing import Any

import chess
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers.order_enforcing import (
    AECOrderEnforcingIterable,
    AECOrderEnforcingIterator,
)

from chess_env.core.encoding import ACTION_SIZE
from chess_env.core.env import board_space
from chess_env.core.positions import start_game
from chess_env.core.render import RENDER_MODES, render
from chess_env.core.rules import DEFAULT_MAX_PLIES, ChessGame

__all__ = ["ChessAECEnv", "ClassicWrapper", "aec_env", "raw_env"]

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
        game = self.game
        if agent == self.agent_selection and not game.is_over:
            mask = game.action_mask(np.int8)
        else:
            mask = np.zeros(ACTION_SIZE, dtype=np.int8)
        return {
            "observation": game.observation("white" if agent == AGENTS[0] else "black"),
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
    """``ChessAECEnv`` with PettingZoo's standard wrappers (illegal move -> -1 and game over), in
    one layer: ``ClassicWrapper``, which behaves as chess_v6's stack of three."""
    return ClassicWrapper(ChessAECEnv(**kwargs), illegal_reward=-1)


# What the AEC API reads off a wrapper by ``__getattr__``. Set on a PettingZoo wrapper (it has no
# __setattr__), such a name hides the env's for calls made through that wrapper; ClassicWrapper's
# fast paths read the env directly, so they step aside for PettingZoo's own code when one is set.
_ENV_STATE = frozenset(
    ("agents", "agent_selection", "rewards", "_cumulative_rewards", "terminations",
     "truncations", "infos")
)  # fmt: skip


class ClassicWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's classic-env wrappers in one layer, with exactly their behaviour.

    ``ClassicWrapper(env, r)`` behaves as ``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(
    TerminateIllegalWrapper(env, illegal_reward=r)))``, the stack of ``chess_v6.env()``: the same
    observations, rewards, terminations, truncations and infos, the same errors for calls before
    ``reset`` and for out-of-bounds actions (``AssertionError``, gone under ``python -O`` as
    there), the same logged warnings for an illegal action (the mover gets ``r``, the game ends)
    and for a step after the end, the same ``agent_iter`` checks and the same ``str``. It is an
    ``OrderEnforcingWrapper`` (PettingZoo's iterator and ``isinstance`` checks hold). What differs
    is only the build: ``env.env`` is the bare env, not an ``AssertOutOfBoundsWrapper``, and the
    inner wrappers' private fields (``_prev_obs``, ...) are this object's own.
    ``tests/chess_env/test_aec_wrapper.py`` plays the same calls, legal, illegal and out of order,
    through both and compares everything.

    Args:
        env: a bare ``AECEnv`` (``env.unwrapped is env``) whose observations are dicts holding
            ``"action_mask"`` or whose infos hold it, as ``TerminateIllegalWrapper`` requires.
        illegal_reward: the reward of an agent that plays an action its mask forbids.

    Example:
        >>> env = ClassicWrapper(ChessAECEnv(), illegal_reward=-1)
        >>> env.reset(seed=0)
        >>> str(env), isinstance(env, wrappers.OrderEnforcingWrapper)
        ('chess_polyarena_v0', True)
        >>> observation, reward, termination, truncation, info = env.last()
        >>> int(observation["action_mask"].sum()), reward, termination, env.env is env.unwrapped
        (20, 0.0, False, True)
    """

    def __init__(self, env: AECEnv, illegal_reward: float) -> None:
        if not isinstance(env, AECEnv) or env.unwrapped is not env:
            raise TypeError(f"ClassicWrapper wraps a bare AECEnv (env.unwrapped is env), got {env}")
        super().__init__(env)
        self._illegal_value = illegal_reward
        self._prev_obs: Any = None  # the mover's last observation, whose mask judges its action
        self._prev_info: Any = None
        self._terminated = False  # ended by an illegal action

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._has_reset = True
        self._has_updated = True
        self._terminated = False
        self._prev_obs = None
        self._prev_info = None
        self.env.reset(seed=seed, options=options)

    def observe(self, agent: str) -> Any:
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self._observe(agent)

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not self._has_reset or not _ENV_STATE.isdisjoint(self.__dict__):
            return super().last(observe)
        env = self.env
        agent = env.agent_selection
        assert agent is not None
        observation = self.observe(agent) if observe else None
        return (
            observation,
            env._cumulative_rewards[agent],
            env.terminations[agent],
            env.truncations[agent],
            env.infos[agent],
        )

    def step(self, action: Any) -> None:
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        env = self.env
        if not (env.agents if _ENV_STATE.isdisjoint(self.__dict__) else self.agents):
            self._has_updated = True
            EnvLogger.warn_step_after_terminated_truncated()
            return
        self._has_updated = True
        agent = env.agent_selection
        # AssertOutOfBoundsWrapper's check
        assert (
            action is None and (env.terminations[agent] or env.truncations[agent])
        ) or _in_space(env.action_space(agent), action), "action is not in action space"
        # TerminateIllegalWrapper's
        mask = self._mover_mask(agent)
        if self._terminated and (env.terminations[agent] or env.truncations[agent]):
            env._was_dead_step(action)
        elif not env.terminations[agent] and not env.truncations[agent] and not mask[action]:
            self._terminate_illegal(agent)
        else:
            env.step(action)

    def agent_iter(self, max_iter: int = 2**63) -> AECOrderEnforcingIterable:
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return _Iterable(self, max_iter)

    def __str__(self) -> str:
        return str(self.env) if hasattr(self, "metadata") else repr(self)

    # -- TerminateIllegalWrapper ------------------------------------------------------------

    def _observe(self, agent: str) -> Any:
        """Observe, keeping the mover's observation and info for its next step."""
        env = self.env
        observation = env.observe(agent)
        selected = env.agent_selection
        if agent == selected:
            self._prev_obs = observation
            self._prev_info = env.infos.get(selected, {})
        return observation

    def _mover_mask(self, agent: str) -> Any:
        """The action mask of the mover's last observation (observed now if it was not)."""
        if self._prev_obs is None:
            self._observe(agent)
        previous = self._prev_obs
        if isinstance(previous, dict):
            assert "action_mask" in previous, (
                f"`action_mask` not found in dictionary observation: {previous}. Action mask "
                "must either be in `observation['action_mask']` or `info['action_mask']` to use "
                "TerminateIllegalWrapper."
            )
            mask = previous["action_mask"]
        else:
            assert self._prev_info is not None
            assert "action_mask" in self._prev_info, (
                f"`action_mask` not found in info for non-dictionary observation: "
                f"{self._prev_info}. Action mask must either be in observation['action_mask'] or "
                "info['action_mask'] to use TerminateIllegalWrapper."
            )
            mask = self._prev_info["action_mask"]
        self._prev_obs = None
        self._prev_info = None
        return mask

    def _terminate_illegal(self, agent: str) -> None:
        """The mover loses by ``illegal_reward``; every agent is terminated and truncated."""
        env = self.env
        EnvLogger.warn_on_illegal_move()
        env._cumulative_rewards[agent] = 0
        env.terminations = dict.fromkeys(env.agents, True)
        env.truncations = dict.fromkeys(env.agents, True)
        env.rewards = dict.fromkeys(env.truncations, 0)
        env.rewards[agent] = float(self._illegal_value)
        env._accumulate_rewards()
        env._deads_step_first()
        self._terminated = True


def _in_space(space: spaces.Space, action: Any) -> bool:
    """``space.contains(action)``; a plain int inside a plain ``Discrete`` skips its numpy cast."""
    if (
        type(action) is int
        and type(space) is spaces.Discrete
        and space.start <= action < space.start + space.n
    ):
        return True
    return space.contains(action)


class _Iterable(AECOrderEnforcingIterable):
    def __iter__(self) -> AECOrderEnforcingIterator:
        return _Iterator(self.env, self.max_iter)


class _Iterator(AECOrderEnforcingIterator):
    """PettingZoo's order-enforcing iterator, reading the bare env's state directly."""

    def __next__(self) -> str:
        wrapper = self.env
        if not _ENV_STATE.isdisjoint(wrapper.__dict__):
            return super().__next__()
        env = wrapper.env
        if not env.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        agent = env.agent_selection
        assert wrapper._has_updated, "need to call step() or reset() in a loop over `agent_iter`"
        wrapper._has_updated = False
        return agent
