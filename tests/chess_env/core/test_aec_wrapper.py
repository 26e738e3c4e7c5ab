"""``ClassicWrapper`` against the PettingZoo stack it replaces, call for call.

Every test drives two envs with the same calls: ``aec_env()`` (one ``ClassicWrapper``) and the
stack ``aec_env()`` used to return, ``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(
TerminateIllegalWrapper(ChessAECEnv(), -1)))``. After each call it records what came back (values
with their types, arrays with their dtypes), what was raised (type and message), what PettingZoo
logged, and the state any caller can read (agents, selection, rewards, cumulative rewards,
terminations, truncations, infos, the board); the two records must be equal. The calls include
illegal and out-of-bounds actions, calls before ``reset`` and after the end, a mutated mask, a
shadowed attribute, and ``agent_iter`` misuse; one test replays the scripts under ``python -O``,
where the wrappers' ``assert`` checks are gone.
"""

from __future__ import annotations

import copy
import importlib
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import chess
import numpy as np
import pytest
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger

from chess_env.core.aec import ChessAECEnv, ClassicWrapper, aec_env
from chess_env.core.encoding import encode_move

AGENTS = ("player_0", "player_1")
STATE = ("agents", "agent_selection", "rewards", "_cumulative_rewards", "terminations",
         "truncations", "infos", "num_agents", "possible_agents", "max_num_agents")  # fmt: skip
SCRIPT_MAX_PLIES = 20  # short games: random scripts reach truncation too
# Positions a few plies from the end, so that scripts reach mates, stalemates and draws often.
FENS = [
    "7k/8/6K1/8/8/8/8/5Q2 w - - 0 1",  # mate in one (Qf8) or stalemate (Qf7)
    "k7/2Q5/1K6/8/8/8/8/8 w - - 0 1",  # many queen moves mate, some stalemate
    "4k3/8/8/8/8/8/4P3/4K3 b - - 98 80",  # the 50-move rule in two plies
    "8/5P1k/8/8/8/8/8/K7 w - - 0 1",  # a promotion, four ways
]


def pettingzoo_stack(**kwargs: Any) -> AECEnv:
    """What ``aec_env()`` returned before ``ClassicWrapper``: PettingZoo's classic stack."""
    env: AECEnv = ChessAECEnv(**kwargs)
    env = wrappers.TerminateIllegalWrapper(env, illegal_reward=-1)
    env = wrappers.AssertOutOfBoundsWrapper(env)
    return wrappers.OrderEnforcingWrapper(env)


def plain(value: Any) -> Any:
    """``value`` as comparable data that keeps types: 0 and 0.0, int8 and bool arrays differ."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return ("dict", [(plain(key), plain(item)) for key, item in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [plain(item) for item in value])
    if isinstance(value, BaseException):
        return ("raised", type(value).__name__, str(value))
    if value is None or isinstance(value, (bool, int, float, str, np.generic)):
        return (type(value).__name__, repr(value))
    return ("object", type(value).__name__)


def read(get: Callable[[], Any]) -> Any:
    try:
        return plain(get())
    except Exception as error:  # an error is part of the behaviour compared
        return plain(error)


class Driver:
    """One env under test, its open iterator and its last observation (for mask mutation)."""

    def __init__(self, env: AECEnv) -> None:
        self.env = env
        self.iterator: Iterator[str] | None = None
        self.observation: Any = None

    def call(self, op: tuple[Any, ...]) -> Any:
        """Apply ``op`` and return what any caller could see: result, raise, logs, state."""
        EnvLogger.flush()
        result = read(lambda: self._apply(op))
        logged = sorted(set(EnvLogger.mqueue))
        env = self.env
        state = [read(lambda name=name: getattr(env, name)) for name in STATE]
        raw = env.unwrapped
        state.append(read(lambda: raw.board.fen()))
        state.append(read(lambda: getattr(raw, "_skip_agent_selection", None)))
        state.append(read(lambda: str(env)))
        return op[0], result, logged, state

    def _apply(self, op: tuple[Any, ...]) -> Any:
        kind, *args = op
        env = self.env
        if kind == "reset":
            return env.reset(seed=args[0], options=args[1])
        if kind == "last":
            result = env.last(observe=args[0])
            self.observation = result[0] if args[0] else self.observation
            return result
        if kind == "observe":
            self.observation = env.observe(args[0])
            return self.observation
        if kind == "step":
            return env.step(args[0])
        if kind == "iter":
            self.iterator = iter(env.agent_iter(*args))
            return None
        if kind == "next":
            assert self.iterator is not None
            return next(self.iterator)
        if kind == "allow":  # the caller edits the mask it was given: the wrapper trusts it
            self.observation["action_mask"][args[0]] = 1
            return None
        if kind == "shadow":  # PettingZoo's wrappers have no __setattr__: this hides the env's
            return setattr(env, args[0], args[1])
        if kind == "unshadow":
            return delattr(env, args[0])
        if kind == "read":
            return getattr(env, args[0])
        if kind in ("render", "state", "close"):
            return getattr(env, kind)()
        raise ValueError(f"unknown op {op!r}")


def compare(ops: list[tuple[Any, ...]], **kwargs: Any) -> list[str]:
    """Play ``ops`` through both stacks; the first difference, described, or []."""
    ours, theirs = Driver(aec_env(**kwargs)), Driver(pettingzoo_stack(**kwargs))
    for index, op in enumerate(ops):
        got, expected = ours.call(op), theirs.call(op)
        if got != expected:
            return [f"op {index} {op!r}:\n  ClassicWrapper: {got}\n  PettingZoo:     {expected}"]
    return []


def random_script(seed: int, length: int = 400) -> list[tuple[Any, ...]]:
    """Calls an AEC user might make, right and wrong, chosen against a reference env."""
    rng = np.random.default_rng(seed)
    reference = Driver(pettingzoo_stack(max_plies=SCRIPT_MAX_PLIES))
    ops: list[tuple[Any, ...]] = []

    def do(*op: Any) -> None:
        ops.append(op)
        reference.call(op)

    if rng.random() < 0.5:  # sometimes start with calls made before reset
        for op in (("step", 0), ("observe", "player_0"), ("last", True), ("read", "rewards")):
            do(*op)
    do("reset", int(rng.integers(100)), None)
    while len(ops) < length:
        env, raw = reference.env, reference.env.unwrapped
        shadowed = [name for name in ("agent_selection", "agents") if name in vars(env)]
        roll = rng.random()
        if roll < 0.015 or (not raw.agents and roll < 0.5):
            fen = FENS[int(rng.integers(len(FENS)))] if rng.random() < 0.7 else None
            do("reset", None, None if fen is None else {"fen": fen})
        elif shadowed and roll < 0.3:
            do("unshadow", shadowed[0])
        elif roll < 0.33:
            do("last", bool(rng.random() < 0.9))
        elif roll < 0.38:
            do("observe", AGENTS[int(rng.integers(2))])
        elif roll < 0.42:
            do("iter", *(() if rng.random() < 0.7 else (int(rng.integers(1, 4)),)))
        elif roll < 0.50:
            do(*(("next",) if reference.iterator is not None else ("iter",)))
        elif roll < 0.53 and reference.observation is not None:
            action = int(rng.integers(4672))
            do("allow", action)  # then play it: the bare env raises IllegalActionError
            do("step", action)
        elif roll < 0.55:
            name = ("agent_selection", "agents")[int(rng.integers(2))]
            do("shadow", name, AGENTS[int(rng.integers(2))] if name == "agent_selection" else [])
        else:
            selected = getattr(raw, "agent_selection", None)
            dead = not raw.agents or raw.terminations[selected] or raw.truncations[selected]
            do("step", pick_action(rng, [] if dead else [int(a) for a in raw.game.legal_actions]))
    return ops


def pick_action(rng: np.random.Generator, legal: list[int]) -> Any:
    """Mostly a legal action (None once the game is over); else a wrong one, or out of bounds."""
    roll = rng.random()
    if roll < 0.75:
        if not legal:
            return None
        action: Any = legal[int(rng.integers(len(legal)))]
        kind = rng.integers(4)
        return action if kind < 2 else np.int64(action) if kind == 2 else np.array(action)
    if roll < 0.85:
        return None if legal else int(rng.integers(4672))
    if roll < 0.93:
        return int(rng.integers(4672))
    return (-1, 4672, 2**70, 2.0, True, "e2e4", np.int8(-3))[int(rng.integers(7))]


@pytest.mark.parametrize("seed", range(12))
def test_random_scripts_behave_the_same_through_both(seed: int) -> None:
    assert compare(random_script(seed), max_plies=SCRIPT_MAX_PLIES) == []


@pytest.mark.parametrize("where", ["info", "obs"])
@pytest.mark.parametrize("seed", range(4))
def test_pettingzoos_example_envs_with_masks_in_infos_or_observations(
    where: str, seed: int
) -> None:
    """``ClassicWrapper`` is general: PettingZoo's own test envs, agents coming and going."""
    module = importlib.import_module(
        f"pettingzoo.test.example_envs.generated_agents_env_action_mask_{where}_v0"
    )
    ours = Driver(ClassicWrapper(module.raw_env(), illegal_reward=-1))
    theirs = Driver(module.env())
    rng = np.random.default_rng(seed)
    ops: list[tuple[Any, ...]] = [("reset", seed, None)]
    assert ours.call(ops[0]) == theirs.call(ops[0])
    for _ in range(300):
        roll, raw = rng.random(), theirs.env.unwrapped
        if not raw.agents or roll < 0.01:
            op: tuple[Any, ...] = ("reset", int(rng.integers(100)), None)
        elif roll < 0.3:
            op = ("last", bool(rng.random() < 0.8))
        elif roll < 0.35:
            op = ("observe", raw.agents[int(rng.integers(len(raw.agents)))])
        else:
            n = int(raw.action_space(raw.agent_selection).n)
            op = ("step", None if rng.random() < 0.2 else int(rng.integers(-1, n + 1)))
        got, expected = ours.call(op), theirs.call(op)
        assert got == expected, op
        ops.append(op)
    assert {"reset", "last", "observe", "step"} <= {op[0] for op in ops}


def test_calls_before_reset_raise_the_same_errors() -> None:
    ops = [("read", name) for name in (*STATE, "_private", "metadata", "render_mode")]
    ops += [("step", 0), ("step", None), ("observe", "player_0"), ("last", True),
            ("last", False), ("iter",), ("render",), ("state",), ("close",)]  # fmt: skip
    assert compare(ops) == []


def test_an_illegal_action_ends_the_game_and_dead_agents_step_none_then_stop() -> None:
    e2e5 = encode_move(chess.Move.from_uci("e2e5"), chess.WHITE)  # a shape, but no move here
    ops = [("reset", 0, None), ("last", True), ("step", e2e5), ("iter",)]
    ops += [("next",), ("last", True), ("step", None)] * 3
    ops += [("step", None), ("step", 0), ("reset", 1, None), ("last", False), ("step", 2421)]
    assert compare(ops) == []


def test_out_of_bounds_and_wrongly_typed_actions_raise_the_same_errors() -> None:
    ops: list[tuple[Any, ...]] = [("reset", 0, None)]
    for action in (-1, 4672, 2**70, 2.0, True, np.True_, "e2e4", None, np.array([2421]),
                   np.int64(2421), np.uint16(2421), np.array(2421)):  # fmt: skip
        ops += [("last", True), ("step", action)]
    assert compare(ops) == []


def test_a_step_without_last_observes_for_the_mask_and_a_mutated_mask_is_trusted() -> None:
    ops = [("reset", 0, None), ("step", 2421), ("step", 2421), ("observe", "player_0")]
    ops += [("allow", 100), ("step", 100), ("last", True), ("allow", 7), ("step", 7)]
    assert compare(ops) == []


def test_games_that_end_by_mate_and_by_stalemate() -> None:
    for uci in ("f1f8", "f1f7"):  # mate, stalemate
        action = encode_move(chess.Move.from_uci(uci), chess.WHITE)
        ops = [("reset", None, {"fen": FENS[0]}), ("last", True), ("step", action), ("iter",)]
        ops += [("next",), ("last", True), ("step", None)] * 2 + [("next",), ("step", None)]
        assert compare(ops) == []


def test_shadowed_attributes_are_read_the_way_pettingzoo_reads_them() -> None:
    ops = [("reset", 0, None), ("shadow", "agent_selection", "player_1"), ("last", True)]
    ops += [("iter",), ("next",), ("step", 2421), ("unshadow", "agent_selection")]
    ops += [("shadow", "agents", []), ("step", 2421), ("iter",), ("next",)]
    ops += [("unshadow", "agents"), ("last", True), ("step", 2421)]
    assert compare(ops) == []


def test_agent_iter_needs_a_step_between_agents_and_stops_at_max_iter() -> None:
    ops = [("reset", 0, None), ("iter", 2), ("next",), ("next",), ("step", 2421), ("next",)]
    ops += [("last", True), ("step", 2421), ("next",), ("iter",), ("next",)]
    assert compare(ops) == []


def test_the_wrapper_is_an_order_enforcing_wrapper_with_the_stacks_face() -> None:
    ours, theirs = aec_env(render_mode="ansi"), pettingzoo_stack(render_mode="ansi")
    assert isinstance(ours, wrappers.OrderEnforcingWrapper)
    assert str(ours) == str(theirs) == "chess_polyarena_v0"
    assert ours.unwrapped is ours.env and isinstance(ours.unwrapped, ChessAECEnv)
    assert ours.observation_space("player_0") == theirs.observation_space("player_0")
    assert ours.action_space("player_1") == theirs.action_space("player_1")
    ours.reset(seed=0)
    theirs.reset(seed=0)
    assert ours.render() == theirs.render()
    with pytest.raises(TypeError, match="bare AECEnv"):
        ClassicWrapper(aec_env(), illegal_reward=-1)


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_copies_and_pickles_behave_the_same(how: str) -> None:
    """EzPickle rebuilds the bare env from its arguments (unreset) in a deep copy or a pickle;
    the wrapper's own state comes along: so in both stacks."""
    duplicate = {
        "copy": copy.copy,
        "deepcopy": copy.deepcopy,
        "pickle": lambda env: pickle.loads(pickle.dumps(env)),
    }[how]
    drivers = []
    for env in (aec_env(), pettingzoo_stack()):
        env.reset(seed=0)
        env.step(encode_move(chess.Move.from_uci("e2e4"), chess.WHITE))
        drivers.append(Driver(duplicate(env)))
    ops = [("last", True), ("step", 2421), ("iter",), ("next",), ("reset", 0, None), ("last", True)]
    for op in ops:
        assert drivers[0].call(op) == drivers[1].call(op), op


def test_the_same_under_python_dash_o_where_asserts_are_gone() -> None:
    """``python -O`` strips the wrappers' asserts: out-of-bounds actions reach the mask."""
    script = f"""
import importlib.util, sys
if not sys.flags.optimize:
    sys.exit("asserts are on")
spec = importlib.util.spec_from_file_location("harness", {str(Path(__file__))!r})
harness = importlib.util.module_from_spec(spec)
spec.loader.exec_module(harness)
ops = [("reset", 0, None), ("step", -1), ("step", None), ("reset", 0, None), ("step", 4672),
       ("step", "x"), ("step", None), ("reset", 0, None), ("step", 2.0), ("step", 2**70)]
diffs = harness.compare(ops)
for seed in range(4):
    diffs += harness.compare(harness.random_script(seed), max_plies=harness.SCRIPT_MAX_PLIES)
print("\\n".join(diffs))
sys.exit(1 if diffs else 0)
"""
    ran = subprocess.run(
        [sys.executable, "-O", "-c", script], capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr


def legal_play(seed: int, options: dict[str, Any] | None, max_plies: int | None) -> list[Any]:
    """The benchmark's loop (agent_iter, last, a random legal step) for one whole game, as ops."""
    rng = np.random.default_rng(seed)
    reference = pettingzoo_stack(max_plies=max_plies)
    reference.reset(seed=seed, options=options)
    ops: list[tuple[Any, ...]] = [("reset", seed, options), ("iter",)]
    for _agent in reference.agent_iter():
        observation, _, termination, truncation, _ = reference.last()
        action = None
        if not (termination or truncation):
            legal = np.flatnonzero(observation["action_mask"])
            action = int(legal[rng.integers(len(legal))])
        reference.step(action)
        ops += [("next",), ("last", True), ("step", action)]
    return [*ops, ("next",)]


@pytest.mark.parametrize("seed", range(3))
def test_whole_random_games_agree(seed: int) -> None:
    ops = legal_play(seed, None, max_plies=None)
    assert len(ops) > 30
    assert compare(ops, max_plies=None) == []


@pytest.mark.parametrize("fen", FENS[1:])
def test_games_from_near_the_end_agree(fen: str) -> None:
    for seed in range(3):
        assert compare(legal_play(seed, {"fen": fen}, max_plies=40), max_plies=40) == []
