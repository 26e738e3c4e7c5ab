"""``ChessVectorEnv``: N chess games stepped in one process, batched (Chess-v0's vector env).

- ``ChessVectorEnv``: a ``gymnasium.vector.VectorEnv`` over N ``ChessEnv`` games, what
  ``gym.make_vec("chess_env/Chess-v0", num_envs=N, vectorization_mode="vector_entry_point")``
  returns. Its trajectories equal ``SyncVectorEnv``'s over the same env (next-step autoreset).
- ``boards_to_tensor``, ``boards_to_fens``: the (N, 8, 8, 12) piece planes and the FENs of N boards
  in one pass, equal to ``chess_env.core.encoding.board_to_tensor`` and
  ``chess_env.core.fen.fen_of``.

Why it is faster than ``SyncVectorEnv``: each game is a ``ChessEnv`` (same opponent, seeding,
rules, forfeits), but a step that leaves the game running skips the per-env observation and info
dict: the boards' bitboards go through one ``unpackbits`` for the whole batch, the legal actions
of all games fill one fresh mask array, and the info arrays are built from lists once per step,
where ``SyncVectorEnv`` pays a tensor, a mask and a dict per game, a merge of each dict key by key
and a deep copy of the batch. Steps that end an episode, reset one or meet an illegal action go
through ``ChessEnv`` itself and are merged the way ``SyncVectorEnv`` merges them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import chess
import numpy as np
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from chess_env.core.encoding import ACTION_SIZE, UCI_OF_KEY, move_key
from chess_env.core.env import MATERIAL_REWARD_SCALE, ChessEnv, ObsMode
from chess_env.core.opponents import Opponent
from chess_env.core.rules import DEFAULT_MAX_PLIES, ChessGame
from chess_env.errors import IllegalActionError

__all__ = ["ChessVectorEnv", "boards_to_fens", "boards_to_tensor"]

_BOARD_SHAPE = (8, 8, 12)


def _bitboards(board: chess.BaseBoard, us: chess.Color) -> tuple[int, ...]:
    """The 12 piece bitboards in ``board_to_tensor``'s channel order: ``us`` first."""
    ours, theirs = board.occupied_co[us], board.occupied_co[not us]
    pawns, knights, bishops = board.pawns, board.knights, board.bishops
    rooks, queens, kings = board.rooks, board.queens, board.kings
    return (
        pawns & ours, knights & ours, bishops & ours, rooks & ours, queens & ours, kings & ours,
        pawns & theirs, knights & theirs, bishops & theirs, rooks & theirs, queens & theirs,
        kings & theirs,
    )  # fmt: skip


# A square's code in a FEN: 0 empty, 1-6 white's P-K, 7-12 black's p-k. Channel c of a row whose
# channels 0-5 are white's pieces (row 0 here) or black's (row 1) holds code _CODES[row][c].
_CODES = np.array([range(1, 13), [*range(7, 13), *range(1, 7)]], dtype=np.uint8)
_FEN_LETTERS = np.frombuffer(b"1PNBRQKpnbrqk/ ", dtype=np.uint8)  # codes 13, 14: separators
_SLASH, _SPACE = 13, 14
_EMPTY_RUNS = [(b"1" * length, b"%d" % length) for length in range(8, 1, -1)]  # longest first
_CASTLING: dict[int, str] = {}  # castling rights on the corner squares -> python-chess's X-FEN
_CORNERS = chess.BB_A1 | chess.BB_H1 | chess.BB_A8 | chess.BB_H8


def _decode(bitboards: Sequence[int], whites: Sequence[bool]) -> tuple[np.ndarray, list[str]]:
    """The (k, 8, 8, 12) planes and the k FEN piece placements of k boards, from 12 bitboards
    per board in ``_bitboards`` order, ``whites[i]`` telling whose pieces come first in row i.

    One ``unpackbits`` serves both: big-endian bytes put rank 8 first, as a FEN and a white
    observation want it; a black observation has its 8 bytes (ranks) in reverse.
    """
    count = len(whites)
    raw = np.frombuffer(struct.pack(f">{len(bitboards)}Q", *bitboards), dtype=np.uint8)
    raw = raw.reshape(count, 12, 8)  # (board, channel, 8 - rank)
    blacks = [row for row, white in enumerate(whites) if not white]
    if blacks:  # black's side: ranks in reverse
        raw = raw.copy()
        raw[blacks] = raw[blacks, :, ::-1]
    bits = np.unpackbits(raw, axis=2, bitorder="little").reshape(count, 12, 8, 8)
    text = np.empty((count, 8, 9), dtype=np.uint8)  # square codes, then FEN letters
    text[:, :, 8] = _SLASH
    text[:, 7, 8] = _SPACE  # one board's placement ends where the next one's starts
    codes = text[:, :, :8]
    if blacks:
        weights = _CODES[np.logical_not(whites).view(np.uint8)]
        np.einsum("kc,kcrf->krf", weights, bits, out=codes)
        codes[blacks] = codes[blacks, ::-1]  # a FEN has rank 8 first whatever the side
    else:
        np.einsum("c,kcrf->krf", _CODES[0], bits, out=codes)
    placements = _FEN_LETTERS.take(text).tobytes()[:-1]
    for run, digits in _EMPTY_RUNS:
        placements = placements.replace(run, digits)
    return bits.transpose(0, 2, 3, 1), placements.decode("ascii").split(" ")


def _fen_fields(board: chess.Board) -> str:
    """The FEN after the piece placement, as ``fen_of`` writes it: " w KQkq - 0 1"."""
    rights = board.clean_castling_rights()
    castling = _CASTLING.get(rights)
    if castling is None:
        castling = board.castling_xfen()
        if not rights & ~_CORNERS:  # rooks in the corners: "KQkq" letters, whatever else stands
            _CASTLING[rights] = castling
    en_passant = board.ep_square if board.has_legal_en_passant() else None
    return (
        f" {'w' if board.turn else 'b'} {castling} "
        f"{'-' if en_passant is None else chess.SQUARE_NAMES[en_passant]} "
        f"{board.halfmove_clock} {board.fullmove_number}"
    )


def boards_to_tensor(
    boards: Sequence[chess.BaseBoard], colors: Sequence[chess.Color]
) -> np.ndarray:
    """The (N, 8, 8, 12) uint8 planes of ``boards``, row i seen from ``colors[i]``'s side.

    Row i equals ``board_to_tensor(boards[i], "white" if colors[i] else "black")``.

    Example:
        >>> from chess_env.core.encoding import board_to_tensor
        >>> boards = [chess.Board(), chess.Board("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1")]
        >>> planes = boards_to_tensor(boards, [chess.WHITE, chess.BLACK])
        >>> planes.shape, planes.dtype
        ((2, 8, 8, 12), dtype('uint8'))
        >>> bool((planes[1] == board_to_tensor(boards[1], "black")).all())
        True
    """
    if len(boards) != len(colors):
        raise ValueError(f"{len(boards)} boards but {len(colors)} colors")
    if not boards:
        return np.zeros((0, *_BOARD_SHAPE), dtype=np.uint8)
    bitboards = [
        bb for board, us in zip(boards, colors, strict=True) for bb in _bitboards(board, us)
    ]
    return np.ascontiguousarray(_decode(bitboards, [bool(us) for us in colors])[0])


def boards_to_fens(boards: Sequence[chess.Board]) -> list[str]:
    """The FEN of each board, equal to ``chess_env.core.fen.fen_of`` (and ``board.fen()``), in one
    pass.

    Example:
        >>> board = chess.Board()
        >>> _ = board.push_uci("e2e4")
        >>> boards_to_fens([chess.Board(), board])[1]
        'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1'
    """
    if not boards:
        return []
    bitboards = [bb for board in boards for bb in _bitboards(board, chess.WHITE)]
    placements = _decode(bitboards, [True] * len(boards))[1]
    return [place + _fen_fields(board) for place, board in zip(placements, boards, strict=True)]


_PRESENT = {
    key: f"_{key}"
    for key in ("fen", "outcome", "result", "opponent_move", "ply", "legal_moves", "action_mask",
                "agent_color")
}  # fmt: skip


def _object_array(values: list[Any]) -> np.ndarray:
    """A 1-d object array holding ``values`` as they are (lists stay list elements)."""
    return np.fromiter(values, dtype=object, count=len(values))


class _Templates:
    """The arrays an n-game step copies instead of building (a copy is several times faster)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.offsets = np.arange(n) * ACTION_SIZE  # row i's first index in a flattened mask
        self.present = np.ones(n, dtype=np.bool_)  # a ``_key`` mask: every game has the key
        self.nones = np.full(n, None, dtype=object)
        self.unfinished = np.full(n, "*", dtype=object)


class _StepRows:
    """One step's per-game results, gathered as lists and batched into arrays once.

    A "live" row (the game goes on) is read off the game directly; any other row (a reset, an
    ended episode, an illegal action) arrives as ChessEnv's own observation and info and is merged
    afterwards with ``VectorEnv._add_info``, as ``SyncVectorEnv`` merges every row.
    """

    __slots__ = (
        "actions", "agent_colors", "bitboards", "counts", "fen_fields", "fens", "legal", "live",
        "n", "opponent_moves", "others", "planes", "plies", "templates", "whites",
    )  # fmt: skip

    def __init__(self, templates: _Templates) -> None:
        n = self.n = templates.n
        self.templates = templates
        self.live: list[int] = []
        self.bitboards: list[int] = []
        self.whites: list[bool] = []
        self.actions: list[int] = []  # the legal actions of all live rows, row after row
        self.counts = [0] * n
        self.fen_fields: list[str] = []  # each live row's FEN after its piece placement
        self.fens: list[str | None] = [None] * n
        self.planes: np.ndarray | None = None  # the live rows' observations, once decoded
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
        white = env.perspective == "white" or agent
        self.live.append(index)
        self.whites.append(white)
        self.bitboards.extend(_bitboards(board, white))
        actions = game.legal_actions
        self.actions.extend(actions)
        self.counts[index] = len(actions)
        self.fen_fields.append(_fen_fields(board))
        if opponent_move:
            self.opponent_moves[index] = UCI_OF_KEY[move_key(opponent_move)]
        self.plies[index] = board.ply()
        self.legal[index] = game.legal_uci
        self.agent_colors[index] = "white" if agent else "black"

    def add_other(self, index: int, observation: Any, info: dict[str, Any]) -> None:
        self.others.append((index, observation, info))

    def decode(self) -> None:
        """The live rows' observation planes and FENs, for the whole batch at once."""
        if self.live:
            self.planes, placements = _decode(self.bitboards, self.whites)
            for index, placement, fields in zip(
                self.live, placements, self.fen_fields, strict=True
            ):
                self.fens[index] = placement + fields

    def masks(self) -> np.ndarray:
        """The (n, 4672) int8 info mask: 1 at the live rows' legal actions."""
        masks = np.zeros(self.n * ACTION_SIZE, dtype=np.int8)
        if self.actions:
            flat = np.fromiter(self.actions, dtype=np.intp, count=len(self.actions))
            if self.n > 1:
                flat += np.repeat(self.templates.offsets, self.counts)
            masks.put(flat, 1)
        return masks.reshape(self.n, ACTION_SIZE)

    def infos(self, masks: np.ndarray, env: VectorEnv) -> dict[str, Any]:
        """The batched info, keys and ``_key`` masks in ``SyncVectorEnv``'s order."""
        templates = self.templates
        values = (
            ("fen", _object_array(self.fens)),
            ("outcome", templates.nones.copy()),
            ("result", templates.unfinished.copy()),
            ("opponent_move", _object_array(self.opponent_moves)),
            ("ply", np.array(self.plies, dtype=int)),
            ("legal_moves", _object_array(self.legal)),
            ("action_mask", masks),
            ("agent_color", _object_array(self.agent_colors)),
        )
        infos: dict[str, Any] = {}
        present = templates.present
        for key, value in values:
            infos[key] = value
            infos[_PRESENT[key]] = present.copy()
        for index, _observation, info in self.others:
            infos = env._add_info(infos, info, index)
        return infos


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
        agent_color: str = "white",
        perspective: str = "side_to_move",
        obs_mode: ObsMode = "board",
        reward_shaping: str | None = None,
        illegal_action: str = "raise",
        max_plies: int | None = DEFAULT_MAX_PLIES,
        claim_draws: bool = True,
        render_mode: str | None = None,
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
        for index, (env, action, reset) in enumerate(
            zip(self.envs, self._action_list(actions), self._autoreset, strict=True)
        ):
            if reset:
                rows.add_other(index, *env.reset())
            else:
                rewards[index], terminated[index], truncated[index] = self._step_game(
                    index, env, action, rows
                )
        self._autoreset = [end or cut for end, cut in zip(terminated, truncated, strict=True)]
        masks = rows.masks()
        rows.decode()
        self._keep(rows, masks)
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

    @property
    def np_random(self) -> tuple[np.random.Generator, ...]:  # type: ignore[override]
        """Each game's generator (as ``SyncVectorEnv``)."""
        return self.get_attr("np_random")

    @property
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]
        """Each game's seed (as ``SyncVectorEnv``)."""
        return self.get_attr("np_random_seed")

    # -- helpers -------------------------------------------------------------------------------

    def _step_game(
        self, index: int, env: ChessEnv, action: Any, rows: _StepRows
    ) -> tuple[float, bool, bool]:
        """Play game ``index``'s action and its opponent's reply; (reward, terminated, truncated).

        The common step (a legal move, the game goes on) is read off the game; anything else is
        ``ChessEnv``'s own step or its own observation and info.
        """
        game = env.game
        try:
            move = game.move_for_action(action)
        except IllegalActionError:  # raise, terminate or penalize: ChessEnv decides
            observation, reward, terminated, truncated, info = env.step(action)
            rows.add_other(index, observation, info)
            return reward, terminated, truncated
        if env.reward_shaping is None:
            opponent_move, reward = env.play_agent_move(move)
        else:
            material = env._material()
            opponent_move, reward = env.play_agent_move(move)
            reward += MATERIAL_REWARD_SCALE * (env._material() - material)
        if env.render_mode == "human":
            env.render()
        if env._ended_by is None:
            rows.add_live(index, env, game, opponent_move)
            return reward, False, False
        rows.add_other(index, env._observation(), env._info(opponent_move))
        return reward, env._terminated, game.truncated

    def _keep(self, rows: _StepRows, masks: np.ndarray) -> None:
        """Keep this step's observations (``_boards`` and ``_masks`` are never handed out)."""
        if len(rows.live) == self.num_envs:
            self._boards = rows.planes  # type: ignore[assignment]  # this step's own array
        elif rows.live:
            self._boards[rows.live] = rows.planes
        if self._obs_is_dict and rows.live:
            self._masks[rows.live] = masks[rows.live]
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
