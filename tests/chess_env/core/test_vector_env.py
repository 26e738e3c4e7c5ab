"""ChessVectorEnv (Chess-v0's vector entry point): Gymnasium's vector conventions, and trajectories
equal to SyncVectorEnv's over ChessEnv, step for step, under the same seeds and actions."""

from __future__ import annotations

import random
import re
import warnings
from collections.abc import Callable
from typing import Any

import chess
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.spaces import Dict, MultiDiscrete
from gymnasium.utils.env_checker import check_returned_data_not_reused, data_equivalence
from gymnasium.utils.env_match import check_environments_match
from gymnasium.utils.passive_env_checker import (
    check_action_space,
    check_observation_space,
    data_shares_objects,
)
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv
from gymnasium.vector.utils import batch_space
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chess_env  # noqa: F401 -- registers chess_env/Chess-v0 and its vector entry point
from chess_env import ACTION_SIZE, ChessEnv, ChessVectorEnv, IllegalActionError
from chess_env.core.encoding import board_to_tensor
from chess_env.core.fen import fen_of
from chess_env.core.opponents import Opponent
from chess_env.core.vector import boards_to_fens, boards_to_tensor
from chess_env.errors import PlayerFailedError

ENV_ID = "chess_env/Chess-v0"
INFO_KEYS = [
    "fen", "outcome", "result", "opponent_move", "ply", "legal_moves", "action_mask",
    "agent_color",
]  # fmt: skip


def make_pair(num_envs: int, **kwargs: Any) -> tuple[VectorEnv, VectorEnv]:
    """The same games twice: make_vec's "sync" mode and its "vector_entry_point" mode."""
    sync = gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode="sync", **kwargs)
    native = gym.make_vec(
        ENV_ID, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs
    )
    return sync, native


def legal_actions(masks: np.ndarray, rng: np.random.Generator, illegal: float = 0.0) -> np.ndarray:
    """A random legal action per row of the info masks (0 where a game just ended); with
    probability ``illegal`` any index instead."""
    actions = np.zeros(len(masks), dtype=np.int64)
    for row, mask in enumerate(masks):
        legal = np.flatnonzero(mask)
        if rng.random() < illegal:
            actions[row] = rng.integers(ACTION_SIZE)
        elif len(legal):
            actions[row] = legal[rng.integers(len(legal))]
    return actions


def assert_same(sync_result: tuple[Any, ...], native_result: tuple[Any, ...], where: str) -> None:
    """Equal values, dtypes, shapes and info keys in the same order (``_key`` masks included)."""
    assert len(sync_result) == len(native_result)
    for part, (expected, got) in enumerate(zip(sync_result, native_result, strict=True)):
        assert data_equivalence(expected, got, exact=True), f"{where}: part {part} differs"
    assert list(sync_result[-1]) == list(native_result[-1]), f"{where}: info key order"


def run_both(
    num_envs: int, steps: int, seed: int, illegal: float = 0.0, **kwargs: Any
) -> dict[str, int]:
    """Step both envs with the same seeded actions; assert every result equal; count the ends."""
    sync, native = make_pair(num_envs, **kwargs)
    rng = np.random.default_rng(seed)
    first = sync.reset(seed=seed)
    assert_same(first, native.reset(seed=seed), "reset")
    masks = first[1]["action_mask"]
    counts = {"terminated": 0, "truncated": 0, "illegal_action": 0}
    for step in range(steps):
        actions = legal_actions(masks, rng, illegal)
        expected = sync.step(actions)
        assert_same(expected, native.step(actions), f"step {step}")
        _, _, terminated, truncated, info = expected
        counts["terminated"] += int(terminated.sum())
        counts["truncated"] += int(truncated.sum())
        counts["illegal_action"] += int(info.get("_illegal_action", np.zeros(1)).sum())
        masks = info["action_mask"]
    sync.close()
    native.close()
    return counts


# -- make_vec, metadata, spaces ---------------------------------------------------------------


def test_make_vec_builds_the_native_env_without_a_warning_and_by_default() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # make_vec warns on missing or wrong autoreset metadata
        envs = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point")
        default = gym.make_vec(ENV_ID, num_envs=2)
    assert isinstance(envs, ChessVectorEnv) and isinstance(envs, VectorEnv)
    assert isinstance(default, ChessVectorEnv)
    assert envs.num_envs == 3 and len(envs.envs) == 3
    assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert envs.spec is not None and envs.spec.id == ENV_ID
    assert repr(envs) == "ChessVectorEnv(chess_env/Chess-v0, num_envs=3)"
    sync = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="sync")
    assert isinstance(sync, SyncVectorEnv)
    assert envs.metadata == sync.metadata
    assert envs.render_mode == sync.render_mode is None


@pytest.mark.parametrize("obs_mode", ["board", "dict"])
def test_spaces_dtypes_and_batched_shapes_are_sync_vector_envs(obs_mode: str) -> None:
    sync, native = make_pair(4, obs_mode=obs_mode)
    single = ChessEnv(obs_mode=obs_mode)
    assert native.single_observation_space == sync.single_observation_space
    assert native.single_observation_space == single.observation_space
    assert native.observation_space == sync.observation_space
    assert native.observation_space == batch_space(single.observation_space, 4)
    assert native.single_action_space == single.action_space
    assert native.action_space == sync.action_space == MultiDiscrete([ACTION_SIZE] * 4)
    check_observation_space(native.observation_space)
    check_action_space(native.action_space)
    obs, info = native.reset(seed=0)
    assert obs in native.observation_space
    boards = obs["board"] if obs_mode == "dict" else obs
    assert boards.shape == (4, 8, 8, 12) and boards.dtype == np.uint8 and boards.flags.c_contiguous
    if obs_mode == "dict":
        assert isinstance(native.observation_space, Dict)
        assert list(obs) == list(native.observation_space.spaces)
        assert obs["action_mask"].shape == (4, ACTION_SIZE) and obs["action_mask"].dtype == np.int8
        np.testing.assert_array_equal(obs["action_mask"], info["action_mask"])
        assert not np.shares_memory(obs["action_mask"], info["action_mask"])
    assert list(info) == [name for key in INFO_KEYS for name in (key, f"_{key}")]
    assert info["action_mask"].shape == (4, ACTION_SIZE) and info["action_mask"].dtype == np.int8
    assert info["ply"].dtype == np.int64 and info["fen"].dtype == object
    assert all(info[f"_{key}"].dtype == np.bool_ and info[f"_{key}"].all() for key in INFO_KEYS)
    obs, rewards, terminated, truncated, info = native.step(
        legal_actions(info["action_mask"], np.random.default_rng(0))
    )
    assert obs in native.observation_space
    assert rewards.dtype == np.float64 and rewards.shape == (4,)
    assert terminated.dtype == truncated.dtype == np.bool_ and terminated.shape == (4,)


# -- trajectories equal SyncVectorEnv's ---------------------------------------------------------


@pytest.mark.parametrize(
    ("num_envs", "steps", "kwargs"),
    [
        (4, 300, {"max_plies": 40}),
        (3, 300, {"max_plies": 60, "agent_color": "random", "obs_mode": "dict"}),
        (2, 300, {"agent_color": "black", "perspective": "white", "max_plies": 30}),
        (5, 300, {"agent_color": "random", "reward_shaping": "material", "max_plies": 50}),
        (3, 250, {"opponent": "greedy", "claim_draws": False, "max_plies": 80}),
        (8, 300, {"agent_color": "random"}),
    ],
)
def test_trajectories_equal_sync_vector_envs(
    num_envs: int, steps: int, kwargs: dict[str, Any]
) -> None:
    counts = run_both(num_envs, steps, seed=num_envs, **kwargs)
    assert counts["truncated"] + counts["terminated"] >= 3  # several autoresets on the way


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_envs=st.integers(1, 6),
    seed=st.integers(0, 2**16),
    illegal=st.sampled_from([0.0, 0.2]),
    options=st.fixed_dictionaries(
        {
            "opponent": st.sampled_from(["random", "greedy"]),
            "agent_color": st.sampled_from(["white", "black", "random"]),
            "perspective": st.sampled_from(["side_to_move", "white"]),
            "obs_mode": st.sampled_from(["board", "dict"]),
            "reward_shaping": st.sampled_from([None, "material"]),
            "illegal_action": st.sampled_from(["terminate", "penalize"]),
            "max_plies": st.sampled_from([4, 15, 40]),
            "claim_draws": st.booleans(),
        }
    ),
)
def test_any_options_give_sync_vector_envs_trajectories(
    num_envs: int, seed: int, illegal: float, options: dict[str, Any]
) -> None:
    """Every option together, illegal actions mixed in: the phased turns change nothing."""
    run_both(num_envs, 40, seed=seed, illegal=illegal, **options)


def test_trajectories_reach_rule_endings_too() -> None:
    """Long random games end by the rules (mates, draws), not only by the ply cap."""
    counts = run_both(16, 300, seed=7)
    assert counts["terminated"] >= 3


@pytest.mark.parametrize("illegal_action", ["terminate", "penalize"])
def test_illegal_actions_equal_sync_vector_envs(illegal_action: str) -> None:
    counts = run_both(
        4, 200, seed=11, illegal=0.3, illegal_action=illegal_action, agent_color="random",
        max_plies=60,
    )  # fmt: skip
    assert counts["illegal_action"] >= 10


def shared_opponent_pair(
    num_envs: int, make_opponent: Callable[[], Opponent], seed: int, **kwargs: Any
) -> tuple[VectorEnv, VectorEnv, np.ndarray]:
    """Both envs, each with one opponent object shared by its games (as make_vec shares it),
    reset alike with ``seed``; and the first action masks."""
    sync, native = (
        gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode=mode,
                     opponent=make_opponent(), **kwargs)
        for mode in ("sync", "vector_entry_point")
    )  # fmt: skip
    first = sync.reset(seed=seed)
    assert_same(first, native.reset(seed=seed), "reset")
    return sync, native, first[1]["action_mask"]


class FailingOpponent(Opponent):
    """Plays a seeded random move, except that every 9th call its "engine dies"."""

    name = "failing"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def choose_move(self, board: chess.Board, legal_moves: Any) -> chess.Move:
        self.calls += 1
        if self.calls % 9 == 0:
            raise PlayerFailedError("the engine died")
        return legal_moves[int(self.rng.integers(len(legal_moves)))]


def test_an_opponent_that_fails_loses_as_in_sync_vector_env() -> None:
    """One opponent object shared by the games of each vector env, as make_vec shares it."""
    sync, native, masks = shared_opponent_pair(3, FailingOpponent, seed=8)
    rng, failures = np.random.default_rng(8), 0
    for step in range(60):
        actions = legal_actions(masks, rng)
        expected = sync.step(actions)
        assert_same(expected, native.step(actions), f"step {step}")
        masks = expected[-1]["action_mask"]
        failures += int((expected[-1]["outcome"] == "opponent_failed").sum())
    assert failures >= 5


class BreakingOpponent(Opponent):
    """A seeded random mover that, on its calls in ``breaks``, raises or answers an illegal move."""

    name = "breaking"

    def __init__(self, breaks: dict[int, str]) -> None:
        super().__init__()
        self.breaks, self.calls = breaks, 0

    def choose_move(self, board: chess.Board, legal_moves: Any) -> chess.Move:
        self.calls += 1
        match self.breaks.get(self.calls):
            case "raise":
                raise RuntimeError(f"call {self.calls} broke")
            case "illegal":
                return chess.Move.from_uci("a1a1")
        return legal_moves[int(self.rng.integers(len(legal_moves)))]


def game_states(envs: VectorEnv) -> list[tuple[str, list[str], int]]:
    """Each game's FEN, moves and plies, and the FEN after ``undo``, which then is taken back
    by replaying the move (so the env can go on)."""
    states = []
    for env in envs.envs:  # type: ignore[attr-defined]
        game = env.unwrapped.game
        state = [game.board.fen(), [move.uci() for move in game.board.move_stack], game.plies]
        try:
            undone = game.board.peek()
            game.undo()
            state.append(game.board.fen())
            game.play(undone)
        except RuntimeError:  # nothing to undo
            state.append(None)
        states.append(state)
    return states


@pytest.mark.parametrize(
    "breaks", [{10: "raise"}, {11: "illegal"}, {9: "raise", 27: "illegal"}, {12: "raise"}]
)
def test_an_opponent_that_raises_leaves_the_games_as_sync_vector_env_leaves_them(
    breaks: dict[int, str],
) -> None:
    """The games before the broken reply have moved, its own game took its move back, the games
    after it have not moved (their undo points kept); both envs then go on alike. One opponent is
    shared by the four games, so its calls 9-12 are the four games' replies of the third step."""
    sync, native, masks = shared_opponent_pair(
        4, lambda: BreakingOpponent(breaks), seed=3, max_plies=40
    )
    rng, broken = np.random.default_rng(3), 0
    for step in range(30):
        actions = legal_actions(masks, rng)
        try:
            expected = sync.step(actions)
        except Exception as error:  # the same error, word for word, must come from both
            with pytest.raises(type(error), match=re.escape(str(error))):
                native.step(actions)
            assert game_states(sync) == game_states(native), f"step {step}"
            broken += 1
            continue
        assert_same(expected, native.step(actions), f"step {step}")
        masks = expected[-1]["action_mask"]
    assert broken == len(breaks)


def test_an_illegal_action_raises_as_in_sync_vector_env() -> None:
    sync, native = make_pair(2)
    for envs in (sync, native):
        _, info = envs.reset(seed=0)
        actions = legal_actions(info["action_mask"], np.random.default_rng(0))
        actions[1] = 0  # a1 has no piece that moves like that
        with pytest.raises(IllegalActionError, match="action 0"):
            envs.step(actions)


def test_gymnasiums_environment_match_check_passes_for_one_game() -> None:
    """``check_environments_match`` steps with uniform actions; "terminate" makes them end games."""
    sync, native = make_pair(1, illegal_action="terminate")
    check_environments_match(sync, native, num_steps=100, seed=3)


def test_opponents_and_colours_are_seeded_per_game_as_chess_env_seeds_them() -> None:
    native = gym.make_vec(
        ENV_ID, num_envs=6, vectorization_mode="vector_entry_point", agent_color="random"
    )
    _, info = native.reset(seed=5)
    for index in range(6):
        single = ChessEnv(agent_color="random")
        _, expected = single.reset(seed=5 + index)
        assert info["fen"][index] == expected["fen"]
        assert info["agent_color"][index] == expected["agent_color"]
    assert set(info["agent_color"]) == {"white", "black"}


# -- reset: seeds, options, reset_mask -----------------------------------------------------------


def test_reset_takes_a_seed_list_and_options_as_sync_vector_env() -> None:
    sync, native = make_pair(3)  # white moves first: an unseeded game starts the same way too
    assert_same(sync.reset(seed=[4, None, 9]), native.reset(seed=[4, None, 9]), "seeds")
    sync, native = make_pair(3, agent_color="random")
    options = {"fen": "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2", "moves": ["e1d1"]}
    first = sync.reset(seed=1, options=options)
    assert_same(first, native.reset(seed=1, options=options), "options")
    assert native.np_random_seed == sync.np_random_seed
    with pytest.raises(ValueError, match="3 seeds"):
        native.reset(seed=[1, 2])


def test_a_reset_mask_resets_only_those_games_as_sync_vector_env() -> None:
    sync, native = make_pair(4, max_plies=30)
    rng = np.random.default_rng(2)
    masks = sync.reset(seed=2)[1]["action_mask"]
    native.reset(seed=2)
    for step in range(40):
        actions = legal_actions(masks, rng)
        expected = sync.step(actions)
        assert_same(expected, native.step(actions), f"step {step}")
        masks = expected[-1]["action_mask"]
        if step % 9 == 8:
            reset_mask = np.array([True, False, step % 2 == 0, False])
            expected = sync.reset(seed=step, options={"reset_mask": reset_mask.copy()})
            assert_same(
                expected, native.reset(seed=step, options={"reset_mask": reset_mask}), "mask"
            )
            assert not expected[1]["_fen"][1]
            masks = np.where(
                expected[1]["_action_mask"][:, None], expected[1]["action_mask"], masks
            )
    with pytest.raises(ValueError, match="at least one"):
        native.reset(options={"reset_mask": np.zeros(4, dtype=bool)})


def test_step_before_reset_and_bad_shapes_are_refused() -> None:
    native = ChessVectorEnv(num_envs=2)
    with pytest.raises(ResetNeeded):
        native.step(np.zeros(2, dtype=np.int64))
    native.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        native.step(np.zeros(3, dtype=np.int64))
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="num_envs"):
            ChessVectorEnv(num_envs=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="perspective"):
        ChessVectorEnv(num_envs=2, perspective="sideways")


# -- fresh data, wrappers, sub-env access --------------------------------------------------------


def test_returned_data_is_never_reused() -> None:
    """Gymnasium's own check (one game: it reads ``terminated`` as a bool; uniform actions, so
    "penalize"), and the arrays of 3 games held over many steps and episode ends."""
    native = gym.make_vec(
        ENV_ID, num_envs=1, vectorization_mode="vector_entry_point", illegal_action="penalize"
    )
    check_returned_data_not_reused(native)
    dict_env = ChessVectorEnv(num_envs=3, obs_mode="dict", max_plies=20)
    rng = np.random.default_rng(1)
    held = [dict_env.reset(seed=1)]
    snapshots = [(held[0][0]["board"].copy(), held[0][1]["fen"].copy())]
    for _ in range(30):
        obs, _, _, _, info = dict_env.step(legal_actions(held[-1][1]["action_mask"], rng))
        for old_obs, old_info in held:
            assert not data_shares_objects(old_obs, obs) and not data_shares_objects(old_info, info)
        held.append((obs, info))
        snapshots.append((obs["board"].copy(), info["fen"].copy()))
    for (obs, info), (board, fens) in zip(held, snapshots, strict=True):
        np.testing.assert_array_equal(obs["board"], board)  # nothing changed under the caller
        assert list(info["fen"]) == list(fens)


def test_gymnasium_vector_wrappers_see_the_same_episodes() -> None:
    sync, native = make_pair(4, max_plies=24)
    sync = gym.wrappers.vector.RecordEpisodeStatistics(sync)
    native = gym.wrappers.vector.RecordEpisodeStatistics(native)
    scaled = gym.wrappers.vector.DtypeObservation(native.env, np.float32)  # checks autoreset_mode
    assert scaled.observation_space.dtype == np.float32
    rng = np.random.default_rng(4)
    masks = sync.reset(seed=4)[1]["action_mask"]
    native.reset(seed=4)
    episodes = 0
    for _ in range(60):
        actions = legal_actions(masks, rng)
        expected, got = sync.step(actions), native.step(actions)
        for key in (
            "episode",
            "_episode",
        ):  # its episode time "t" is the wall clock's: not compared
            stats, same = expected[-1].get(key, {}), got[-1].get(key, {})
            if isinstance(stats, dict):
                stats, same = {**stats, "t": None}, {**same, "t": None}
            assert data_equivalence(stats, same, exact=True)
        episodes += int(expected[-1].get("_episode", np.zeros(1)).sum())
        masks = expected[-1]["action_mask"]
    assert episodes >= 4


def test_call_get_attr_set_attr_and_render_reach_the_games() -> None:
    native = ChessVectorEnv(num_envs=2, render_mode="ansi")
    _, info = native.reset(seed=0)
    masks = native.call("action_masks")
    assert len(masks) == 2 and masks[0].dtype == bool
    np.testing.assert_array_equal(np.stack(masks), info["action_mask"].astype(bool))
    assert native.get_attr("agent_color") == ("white", "white")
    native.set_attr("illegal_action", ["penalize", "terminate"])
    assert native.get_attr("illegal_action") == ("penalize", "terminate")
    _, rewards, terminated, _, info = native.step(np.zeros(2, dtype=np.int64))
    assert rewards.tolist() == [-0.1, -1.0] and terminated.tolist() == [False, True]
    assert info["_illegal_action"].all()
    frames = native.render()
    assert len(frames) == 2 and all(isinstance(frame, str) for frame in frames)
    native.close()
    assert native.closed
    native.close()  # twice is fine


def test_human_rendering_prints_what_sync_vector_env_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    outputs = []
    for envs in make_pair(2, render_mode="human", max_plies=6):
        rng = np.random.default_rng(0)
        masks = envs.reset(seed=0)[1]["action_mask"]
        for _ in range(6):
            masks = envs.step(legal_actions(masks, rng))[-1]["action_mask"]
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and outputs[0].count("last move") >= 10


# -- the batched encoders ------------------------------------------------------------------------


def played_positions(games: int, seed: int) -> list[chess.Board]:
    """Boards along seeded random games (castling, en passant, ends), each with its last move."""
    rng = random.Random(seed)
    boards = []
    for _ in range(games):
        board = chess.Board()
        while not board.is_game_over() and board.ply() < 200:
            board.push(rng.choice(list(board.legal_moves)))
            boards.append(board.copy(stack=1))  # a move behind it: castling read as played
    return boards


def test_boards_to_fens_and_tensor_equal_the_one_board_encoders(
    positions: list[chess.Board],
) -> None:
    boards = positions + played_positions(20, seed=3)
    assert boards_to_fens(boards) == [fen_of(board) for board in boards]
    assert boards_to_fens(boards) == [board.fen() for board in boards]
    colors = [index % 3 == 0 for index in range(len(boards))]
    planes = boards_to_tensor(boards, colors)
    assert planes.shape == (len(boards), 8, 8, 12) and planes.dtype == np.uint8
    sides = ["white" if color else "black" for color in colors]
    expected = [board_to_tensor(board, side) for board, side in zip(boards, sides, strict=True)]
    np.testing.assert_array_equal(planes, np.stack(expected))
    assert boards_to_fens([]) == [] and boards_to_tensor([], []).shape == (0, 8, 8, 12)
