"""``ChessVectorEnv``: N chess games stepped in one process, batched (Chess-v0's vector env).

- ``ChessVectorEnv``: a ``gymnasium.vector.VectorEnv`` over N ``ChessEnv`` games, what
  ``gym.make_vec("chess_env/Chess-v0", num_envs=N, vectorization_mode="vector_entry_point")``
  returns. Its trajectories equal ``SyncVectorEnv``'s over the same env (next-step autoreset).
- ``boards_to_tensor``, ``boards_to_fens``: from ``chess_env.core.batch_encoding``, re-exported.

Why it is faster than ``SyncVectorEnv``: each game is a ``ChessEnv`` (same opponent, seeding,
rules, forfeits), but the turns of all games are played phase by phase (``TurnBatch``: every
agent move, then every opponent's choice, then every reply), and a game that goes on skips the
per-env observation and info dict: the boards go through one ``BoardBatch`` (a few numpy calls
for the planes, FENs and masks of the whole batch), and the info arrays are built from lists once
per step, in two arrays, where ``SyncVectorEnv`` pays a tensor, a mask and a dict per game, a
merge of each dict key by key and a deep copy of the batch. An autoreset joins the batch too.
Steps that end an episode or meet an illegal action, and every step of a game rendered to a
window, go through ``ChessEnv`` itself and are merged the way ``SyncVectorEnv`` merges them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import chess
import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from chess_env.core.batch_encoding import BoardBatch, boards_to_fens, boards_to_tensor
from chess_env.core.encoding import ACTION_SIZE, UCI_OF_KEY, move_key
from chess_env.core.env import (
    ChessEnv,
    EnvPerspective,
    IllegalAction,
    ObsMode,
    RenderMode,
    RewardShaping,
)
from chess_env.core.episode import AgentColor
from chess_env.core.opponents import Opponent
from chess_env.core.rules import DEFAULT_MAX_PLIES, ChessGame
from chess_env.core.turn_batch import Turn, TurnBatch
from chess_env.errors import IllegalActionError

__all__ = ["ChessVectorEnv", "boards_to_fens", "boards_to_tensor"]

_BOARD_SHAPE = (8, 8, 12)
_PRESENT = {
    key: f"_{key}"
    for key in ("fen", "outcome", "result", "opponent_move", "ply", "legal_moves", "action_mask",
                "agent_color")
}  # fmt: skip


def _object_array(values: list[Any]) -> np.ndarray:
    """A 1-d object array holding ``values`` as they are (lists stay list elements)."""
    return np.fromiter(values, dtype=object, count=len(values))


class _Templates:
    """What every n-game step starts its info from: the values of games that go on."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.nones: list[None] = [None] * n
        self.unfinished = ["*"] * n


class _StepRows:
    """One step's per-game results, gathered as lists and batched into arrays once.

    A "live" row (the game goes on) is read off the game directly, its board and legal moves
    going into one ``BoardBatch``; any other row (a reset, an ended episode, an illegal action)
    arrives as ChessEnv's own observation and info and is merged afterwards with
    ``VectorEnv._add_info``, as ``SyncVectorEnv`` merges every row.
    """

    __slots__ = (
        "agent_colors", "batch", "fens", "legal", "n", "opponent_moves", "others", "plies",
        "templates",
    )  # fmt: skip

    def __init__(self, templates: _Templates) -> None:
        n = self.n = templates.n
        self.templates = templates
        self.batch = BoardBatch(n)
        self.fens: list[str | None] = [None] * n
        self.opponent_moves: list[str | None] = [None] * n
        self.plies = [0] * n
        self.legal: list[list[str] | None] = [None] * n
        self.agent_colors: list[str | None] = [None] * n
        self.others: list[tuple[int, Any, dict[str, Any]]] = []

    def add_live(
        self, index: int, env: ChessEnv, game: ChessGame, opponent_move: chess.Move | None
    ) -> None:
        """A row whose game goes on: what ``ChessEnv._observation`` and ``_info`` would show."""
        board = game.board
        agent = env.agent
        self.batch.add(index, board, env.perspective == "white" or agent, game.legal_actions)
        self.legal[index] = game.legal_uci
        if opponent_move:
            self.opponent_moves[index] = UCI_OF_KEY[move_key(opponent_move)]
        self.plies[index] = board.ply()
        self.agent_colors[index] = "white" if agent else "black"

    def add_other(self, index: int, observation: Any, info: dict[str, Any]) -> None:
        self.others.append((index, observation, info))

    def encode(self) -> tuple[np.ndarray, np.ndarray]:
        """The live rows' planes (in row order) and the (n, 4672) int8 info mask; the FENs go
        into this step's rows."""
        batch = self.batch
        planes, fens = batch.planes_and_fens()
        for index, fen in zip(batch.rows, fens, strict=True):
            self.fens[index] = fen
        return planes, batch.masks()

    def infos(self, masks: np.ndarray, env: VectorEnv) -> dict[str, Any]:
        """The batched info, keys and ``_key`` masks in ``SyncVectorEnv``'s order.

        The object-valued keys are rows of one (6, n) array and the ``_key`` masks rows of one
        (8, n) array: a step pays the few numpy calls of two arrays instead of those of sixteen
        (each one costs several microseconds once the moves of n games have left numpy's code
        out of the processor's caches). The rows never overlap, so each array can be written
        alone, as ``SyncVectorEnv``'s can.
        """
        templates, n = self.templates, self.n
        objects = _object_array(
            [*self.fens, *templates.nones, *templates.unfinished, *self.opponent_moves,
             *self.legal, *self.agent_colors]
        ).reshape(6, n)  # fmt: skip
        fens, outcomes, results, opponent_moves, legal, agent_colors = objects
        values = (
            ("fen", fens),
            ("outcome", outcomes),
            ("result", results),
            ("opponent_move", opponent_moves),
            ("ply", np.array(self.plies, dtype=int)),
            ("legal_moves", legal),
            ("action_mask", masks),
            ("agent_color", agent_colors),
        )
        infos: dict[str, Any] = {}
        for (key, value), present in zip(
            values, np.ones((len(values), n), dtype=np.bool_), strict=True
        ):
            infos[key] = value
            infos[_PRESENT[key]] = present
        for index, _observation, info in self.others:
            infos = env._add_info(infos, info, index)
        return infos


def _plain_move(env: ChessEnv, action: Any) -> chess.Move | None:
    """The move of a step ``TurnBatch`` can play: a legal action in a live game that does not
    render to a window. None for any other step (``ChessEnv.step`` then raises, penalizes or
    renders as it does alone)."""
    if env._ended_by is not None or env.render_mode == "human":
        return None
    try:
        return env.game.move_for_action(action)
    except IllegalActionError:
        return None


class ChessVectorEnv(VectorEnv):
    """N games of ``ChessEnv`` in one process, batched, with next-step autoreset.

    What ``gym.make_vec("chess_env/Chess-v0", num_envs=N, vectorization_mode=
    "vector_entry_point")`` returns (also ``make_vec``'s default mode for this id). Observations,
    rewards, terminations, truncations and infos equal ``SyncVectorEnv``'s over N ``ChessEnv``
    with the same seeds and actions, array for array and key for key (``_key`` masks included):
    ``reset(seed=s)`` seeds game i with ``s + i``, each game's opponent is seeded from its env as
    ``ChessEnv`` seeds it, and a game that ended is reset by the next ``step``, which ignores its
    action and returns its first observation with reward 0 (``AutoresetMode.NEXT_STEP``).

    Observation: (N, 8, 8, 12) uint8 (``obs_mode="board"``) or ``{"action_mask": (N, 4672) int8,
    "board": (N, 8, 8, 12) uint8}`` (``obs_mode="dict"``). ``info`` holds ``ChessEnv``'s keys
    batched: ``fen``, ``outcome``, ``result``, ``opponent_move``, ``legal_moves`` and
    ``agent_color`` as object arrays, ``ply`` int64, ``action_mask`` (N, 4672) int8 (all zeros for
    a game that just ended), each with its ``_key`` bool mask; ``illegal_action`` appears only on a
    step where some game met one (``illegal_action="terminate"`` or ``"penalize"``). Every array
    returned is new: holding one across steps is safe.

    Args:
        num_envs: the number of games N (default 1).
        opponent: as ``ChessEnv`` (default "random"); one ``Opponent`` object or callable is
            shared by all N games, as ``make_vec``'s "sync" mode shares it.
        agent_color: as ``ChessEnv`` (default "white"; "random" draws per game from its seed).
        perspective: as ``ChessEnv`` (default "side_to_move").
        obs_mode: as ``ChessEnv`` (default "board").
        reward_shaping: as ``ChessEnv`` (default None).
        illegal_action: as ``ChessEnv`` (default "raise": ``step`` raises ``IllegalActionError``
            and the games before the offending one have already moved, as in ``SyncVectorEnv``).
        max_plies: as ``ChessEnv`` (default 512).
        claim_draws: as ``ChessEnv`` (default True).
        render_mode: as ``ChessEnv`` (default None); ``render()`` returns one frame per game.

    ``envs`` holds the N ``ChessEnv``; ``call``, ``get_attr`` and ``set_attr`` reach them as in
    ``SyncVectorEnv`` (``envs.call("action_masks")``: N bool masks).

    Example:
        >>> import gymnasium as gym
        >>> envs = gym.make_vec("chess_env/Chess-v0", num_envs=3,
        ...                     vectorization_mode="vector_entry_point", max_plies=40)
        >>> obs, info = envs.reset(seed=0)
        >>> obs.shape, obs.dtype, info["action_mask"].shape, int(info["action_mask"][0].sum())
        ((3, 8, 8, 12), dtype('uint8'), (3, 4672), 20)
        >>> envs.metadata["autoreset_mode"]
        <AutoresetMode.NEXT_STEP: 'NextStep'>
        >>> actions = [int(np.flatnonzero(mask)[0]) for mask in info["action_mask"]]
        >>> obs, rewards, terminated, truncated, info = envs.step(actions)
        >>> rewards, terminated, info["ply"].tolist()
        (array([0., 0., 0.]), array([False, False, False]), [2, 2, 2])
        >>> envs.close()
    """

    metadata = {**ChessEnv.metadata, "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
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
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        self.envs = [
            ChessEnv(
                opponent=opponent, agent_color=agent_color, perspective=perspective,
                obs_mode=obs_mode, reward_shaping=reward_shaping,
                illegal_action=illegal_action, max_plies=max_plies, claim_draws=claim_draws,
                render_mode=render_mode,
            )
            for _ in range(num_envs)
        ]  # fmt: skip
        self.num_envs = num_envs
        self.render_mode = render_mode
        self.metadata = dict(self.metadata)
        self.single_observation_space = self.envs[0].observation_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.single_action_space = self.envs[0].action_space
        self.action_space = batch_space(self.single_action_space, num_envs)
        # The last observation of every game, for a reset that spares some games; the caller gets
        # copies, so these may be written in place.
        self._boards = np.zeros((num_envs, *_BOARD_SHAPE), dtype=np.uint8)
        self._masks = np.zeros((num_envs, ACTION_SIZE), dtype=np.int8)
        self._obs_is_dict = obs_mode == "dict"
        self._templates = _Templates(num_envs)
        self._autoreset = [False] * num_envs
        self._started = False

    # -- the vector API ------------------------------------------------------------------------

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every game (or those of ``options["reset_mask"]``), as ``SyncVectorEnv`` does.

        ``seed``: None (unseeded), an int s (game i gets s + i) or one seed per game.
        ``options``: ``ChessEnv``'s reset options for every game, plus ``reset_mask``, a (N,)
        bool array of the games to reset (the others keep their state and observation).
        """
        seeds = self._seeds(seed)
        options, reset_mask = self._reset_mask(options)
        infos: dict[str, Any] = {}
        for index, (env, single_seed) in enumerate(zip(self.envs, seeds, strict=True)):
            if reset_mask is not None and not reset_mask[index]:
                continue
            observation, info = env.reset(seed=single_seed, options=options)
            self._store(index, observation)
            self._autoreset[index] = False
            infos = self._add_info(infos, info, index)
        self._started = True
        return self._observations(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._started:
            raise ResetNeeded("call reset() before step()")
        n = self.num_envs
        rewards, terminated, truncated = [0.0] * n, [False] * n, [False] * n
        rows = _StepRows(self._templates)
        turns = TurnBatch()
        for index, (env, action, reset) in enumerate(
            zip(self.envs, self._action_list(actions), self._autoreset, strict=True)
        ):
            move = None if reset else _plain_move(env, action)
            if move is not None:
                turns.add(index, env, move)
                continue
            # Anything else goes alone, after the turns before it (they may raise).
            self._add_turns(turns.play(), rows, rewards, terminated, truncated)
            if reset:
                self._restart(index, env, rows)
            else:
                rewards[index], terminated[index], truncated[index] = self._step_game(
                    index, env, action, rows
                )
        self._add_turns(turns.play(), rows, rewards, terminated, truncated)
        self._autoreset = [end or cut for end, cut in zip(terminated, truncated, strict=True)]
        planes, masks = rows.encode()
        self._keep(rows, planes, masks)
        return (
            self._observations(),
            np.array(rewards, dtype=np.float64),
            np.array(terminated, dtype=np.bool_),
            np.array(truncated, dtype=np.bool_),
            rows.infos(masks, self),
        )

    def render(self) -> tuple[Any, ...]:
        """Each game's ``render()``, in order."""
        return tuple(env.render() for env in self.envs)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every game (or read attribute ``name``), as ``SyncVectorEnv``."""
        results = []
        for env in self.envs:
            function = env.get_wrapper_attr(name)
            results.append(function(*args, **kwargs) if callable(function) else function)
        return tuple(results)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return self.call(name)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """Set attribute ``name`` of every game: one value for all, or a list of N."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(
                f"values must be a list or tuple of {self.num_envs} values, got {len(values)}"
            )
        for env, value in zip(self.envs, values, strict=True):
            env.set_wrapper_attr(name, value)

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()

    @property  # type: ignore[misc]  # read-only: one generator per game, as SyncVectorEnv's
    def np_random(self) -> tuple[np.random.Generator, ...]:  # type: ignore[override]
        """Each game's generator (as ``SyncVectorEnv``)."""
        return self.get_attr("np_random")

    @property
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]
        """Each game's seed (as ``SyncVectorEnv``)."""
        return self.get_attr("np_random_seed")

    # -- helpers -------------------------------------------------------------------------------

    def _add_turns(
        self,
        turns: list[Turn],
        rows: _StepRows,
        rewards: list[float],
        terminated: list[bool],
        truncated: list[bool],
    ) -> None:
        """The rows of played turns: live games into the batch, ended ones as ``ChessEnv``
        shows them."""
        for turn in turns:
            index, env, game = turn.index, turn.env, turn.game
            rewards[index] = turn.reward
            if env._ended_by is None:
                rows.add_live(index, env, game, turn.reply)
            else:
                rows.add_other(index, env._observation(), env._info(turn.reply))
                terminated[index], truncated[index] = env._terminated, game.truncated

    def _restart(self, index: int, env: ChessEnv, rows: _StepRows) -> None:
        """Autoreset game ``index``: ``ChessEnv.reset()``, its first position in the batch."""
        if env.render_mode == "human":
            rows.add_other(index, *env.reset())
            return
        opponent_move = env._start_episode(None, None)
        rows.add_live(index, env, env.game, opponent_move)

    def _step_game(
        self, index: int, env: ChessEnv, action: Any, rows: _StepRows
    ) -> tuple[float, bool, bool]:
        """A step ``TurnBatch`` does not take (see ``_plain_move``): ``ChessEnv``'s own, its
        observation and info merged afterwards; (reward, terminated, truncated)."""
        observation, reward, terminated, truncated, info = env.step(action)
        rows.add_other(index, observation, info)
        return reward, terminated, truncated

    def _keep(self, rows: _StepRows, planes: np.ndarray, masks: np.ndarray) -> None:
        """Keep this step's observations (``_boards`` and ``_masks`` are never handed out)."""
        live = rows.batch.rows
        if len(live) == self.num_envs:
            self._boards = planes  # this step's own array
        elif live:
            self._boards[live] = planes
        if self._obs_is_dict and live:
            self._masks[live] = masks[live]
        for index, observation, _info in rows.others:
            self._store(index, observation)

    def _store(self, index: int, observation: Any) -> None:
        """Keep game ``index``'s observation from ``ChessEnv`` for the batch."""
        if isinstance(observation, dict):
            self._boards[index] = observation["board"]
            self._masks[index] = observation["action_mask"]
        else:
            self._boards[index] = observation

    def _observations(self) -> Any:
        """Fresh copies of the batch: the caller's arrays never change under it."""
        if not self._obs_is_dict:
            return self._boards.copy()
        parts = {"board": self._boards, "action_mask": self._masks}
        assert isinstance(self.single_observation_space, spaces.Dict)  # obs_mode="dict"
        return {key: parts[key].copy() for key in self.single_observation_space.spaces}

    def _action_list(self, actions: Any) -> list[Any]:
        """One action per game: Python ints for an integer array, else the items as they are
        (so a bad action fails in ``ChessEnv`` with ``ChessEnv``'s message)."""
        array = np.asarray(actions)
        if array.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {array.shape}")
        return array.tolist() if array.dtype.kind in "iu" else list(array)

    def _seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, (int, np.integer)):
            return [int(seed) + index for index in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(
                f"a list of seeds must have num_envs={self.num_envs} seeds, got {len(seeds)}"
            )
        return seeds

    def _reset_mask(
        self, options: dict[str, Any] | None
    ) -> tuple[dict[str, Any] | None, np.ndarray | None]:
        """``options`` without ``reset_mask``, and the mask (checked as ``SyncVectorEnv`` does)."""
        if options is None or "reset_mask" not in options:
            return options, None
        options = dict(options)
        mask = options.pop("reset_mask")
        if not isinstance(mask, np.ndarray):
            raise TypeError(f"options['reset_mask'] must be a numpy array, got {type(mask)}")
        if mask.shape != (self.num_envs,):
            raise ValueError(
                f"options['reset_mask'] must have shape ({self.num_envs},), got {mask.shape}"
            )
        if mask.dtype != np.bool_:
            raise TypeError(f"options['reset_mask'] must have dtype bool, got {mask.dtype}")
        if not mask.any():
            raise ValueError("options['reset_mask'] must reset at least one game")
        return options, mask
