"""A real ``trl.GRPOTrainer`` step with ``environment_factory``, on the CPU, offline.

The model is the tiny Qwen3 of ``tests/support/tiny_lm.py``, warmed up to call the tools of two
toy environments defined here, a number guess and a colour pick (so these tests do not depend on
the package's env classes). Generation is transformers ``generate`` (``use_vllm=False``), which TRL
supports for tool calling on the CPU. What TRL must do with an environment class is checked from
the outside: the tools it extracts, that the model's tool calls reach the environment, that
rewards differ inside a group (else the advantage is zero), that the parameters move, that the
same seed gives the same run (CPU sampling draws from torch's global generator, which the trainer
seeds), and that dict mode routes each row to its environment.
"""

from __future__ import annotations

import functools
import math
import sys
from pathlib import Path
from typing import Any, Literal

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from transformers.utils import get_json_schema
from trl import GRPOTrainer
from trl.chat_template_utils import is_chat_template_prefix_preserving, supports_tool_calling

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from tiny_lm import (
    EnvFactory,
    TinyToolLM,
    build_tokenizer,
    demonstrations,
    environment_tools,
)

_DEFAULT_TOKENIZER = build_tokenizer()
NO_GUESS_REWARD = -10.0
# Wall-clock fields differ between two identical runs; everything else TRL logs must not.
TIMING_KEYS = frozenset(
    {"step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second"}
)


class GuessEnv:
    """Guess a hidden number from 1 to 9; the reward is minus the distance of the last guess."""

    def __init__(self, calls: list[tuple[int, int]]) -> None:
        self._calls = calls
        self._target = 0
        self._guesses: list[int] = []

    def reset(self, target: int = 5, **row: Any) -> str:
        self._target = target
        self._guesses = []
        return " Guess a number from 1 to 9."

    def guess(self, number: int) -> str:
        """Guess the hidden number.

        Args:
            number: The guessed number, from 1 to 9.
        """
        self._calls.append((self._target, number))
        self._guesses.append(number)
        if number == self._target:
            return "correct"
        return "higher" if number < self._target else "lower"

    def get_reward(self) -> float:
        if not self._guesses:
            return NO_GUESS_REWARD
        return -float(abs(self._guesses[-1] - self._target))


class PickEnv:
    """Pick the colour the row names; the reward is 1 for it, 0 for another, -1 for none."""

    def __init__(self, calls: list[str]) -> None:
        self._calls = calls
        self._colour = ""
        self._picked: str | None = None

    def reset(self, colour: str = "red", **row: Any) -> str:
        self._colour = colour
        self._picked = None
        return " Pick a colour."

    def pick(self, colour: Literal["red", "green", "blue"]) -> str:
        """Pick a colour.

        Args:
            colour: The colour to pick.
        """
        self._calls.append(colour)
        self._picked = colour
        return "picked"

    def get_reward(self) -> float:
        if self._picked is None:
            return -1.0
        return float(self._picked == self._colour)


COLOURS = ("red", "green", "blue")


def _rows(*targets: int) -> list[dict[str, Any]]:
    return [
        {"prompt": [{"role": "user", "content": "Play."}], "target": target} for target in targets
    ]


def _mixed_rows() -> list[dict[str, Any]]:
    """One row of each environment, for TRL's dict mode."""
    return [
        {"environment": "guess", **_rows(3)[0]},
        {
            "environment": "pick",
            "prompt": [{"role": "user", "content": "Play."}],
            "colour": "green",
        },
    ]


def _demonstrated_call(row: dict[str, Any], k: int) -> tuple[str, dict[str, Any]]:
    if row["environment"] == "pick":
        return "pick", {"colour": COLOURS[k % 3]}
    return "guess", {"number": k % 9 + 1}


# The warm-up shows both environments (dict mode), so one model serves every test here.
TINY_LM_WARM_UP = {
    "env_factory": {
        "guess": functools.partial(GuessEnv, []),
        "pick": functools.partial(PickEnv, []),
    },
    "rows": _mixed_rows(),
    "choose_call": _demonstrated_call,
    "repeats": 9,
}


def _metrics(trainer: GRPOTrainer) -> list[dict[str, float]]:
    return [
        {k: v for k, v in entry.items() if k not in TIMING_KEYS}
        for entry in trainer.state.log_history
    ]


@pytest.fixture(scope="module")
def guess_run(tiny_tool_lm: TinyToolLM) -> tuple[GRPOTrainer, list[tuple[int, int]]]:
    calls: list[tuple[int, int]] = []
    trainer = tiny_tool_lm.grpo(
        functools.partial(GuessEnv, calls), _rows(3, 7), max_steps=2, seed=0
    )
    return trainer, calls


def test_the_tiny_tokenizer_passes_trls_tool_template_checks() -> None:
    tokenizer = build_tokenizer()
    assert supports_tool_calling(tokenizer)
    # So TRL keeps our template rather than swapping in its training variant.
    assert is_chat_template_prefix_preserving(tokenizer)


def test_the_tokenizer_is_trained_deterministically() -> None:
    corpus = ["Kxf7# 1-0", "e2e4 e7e5"]
    assert build_tokenizer(corpus).get_vocab() == build_tokenizer(corpus).get_vocab()


def test_trl_extracts_exactly_the_public_methods_as_tools(
    guess_run: tuple[GRPOTrainer, Any],
) -> None:
    trainer, _ = guess_run
    assert [tool.__name__ for tool in trainer.tools] == ["guess"]
    assert [tool.__name__ for tool in environment_tools(GuessEnv([]))] == ["guess"]
    assert get_json_schema(trainer.tools[0]) == {
        "type": "function",
        "function": {
            "name": "guess",
            "description": "Guess the hidden number.",
            "parameters": {
                "type": "object",
                "properties": {
                    "number": {"type": "integer", "description": "The guessed number, from 1 to 9."}
                },
                "required": ["number"],
            },
            "return": {"type": "string"},
        },
    }


def test_the_models_tool_calls_reach_the_environment(
    guess_run: tuple[GRPOTrainer, list[tuple[int, int]]],
) -> None:
    trainer, calls = guess_run
    assert calls, "no tool call reached the environment"
    # reset(**row) received each row's target, and the arguments arrived as integers.
    assert {target for target, _ in calls} <= {3, 7}
    assert all(isinstance(number, int) for _, number in calls)
    call_frequencies = [entry["tools/call_frequency"] for entry in trainer.state.log_history[:-1]]
    assert max(call_frequencies) > 0


def test_rewards_differ_inside_a_group(guess_run: tuple[GRPOTrainer, Any]) -> None:
    trainer, _ = guess_run
    steps = trainer.state.log_history[:-1]
    assert [entry["step"] for entry in steps] == [1, 2]
    # One prompt per step, so each step is one group: a zero-std fraction below 1 means its
    # rewards differ, and the GRPO advantage is not zero.
    assert steps[0]["frac_reward_zero_std"] == 0.0
    assert steps[0]["rewards/GuessEnv/std"] > 0
    assert all(entry["rewards/GuessEnv/mean"] >= NO_GUESS_REWARD for entry in steps)


def test_the_step_changes_the_parameters(
    tiny_tool_lm: TinyToolLM, guess_run: tuple[GRPOTrainer, Any]
) -> None:
    trainer, _ = guess_run
    before = dict(tiny_tool_lm.model.named_parameters())
    assert trainer.model is not None
    changed = [
        name
        for name, after in trainer.model.named_parameters()
        if not torch.equal(after, before[name])
    ]
    assert changed
    assert math.isfinite(trainer.state.log_history[-1]["train_loss"])


def test_the_same_seed_gives_the_same_run(
    tiny_tool_lm: TinyToolLM, guess_run: tuple[GRPOTrainer, Any]
) -> None:
    trainer, first_calls = guess_run
    calls: list[tuple[int, int]] = []
    again = tiny_tool_lm.grpo(functools.partial(GuessEnv, calls), _rows(3, 7), max_steps=2, seed=0)
    assert calls == first_calls
    assert trainer.model is not None and again.model is not None
    assert _metrics(again) == _metrics(trainer)
    for (name, param), (_, param_again) in zip(
        trainer.model.named_parameters(), again.model.named_parameters(), strict=True
    ):
        assert torch.equal(param, param_again), name


def test_dict_mode_routes_each_row_to_its_environment(tiny_tool_lm: TinyToolLM) -> None:
    guesses: list[tuple[int, int]] = []
    picks: list[str] = []
    factories: EnvFactory = {
        "guess": functools.partial(GuessEnv, guesses),
        "pick": functools.partial(PickEnv, picks),
    }
    trainer = tiny_tool_lm.grpo(factories, _mixed_rows(), max_steps=2, seed=0)
    assert sorted(tool.__name__ for tool in trainer.tools) == ["guess", "pick"]
    assert guesses and picks
    assert {target for target, _ in guesses} == {3}
    assert set(picks) <= set(COLOURS)
    # One reward column per env class; a rollout of the other env scores NaN there, ignored.
    logged = trainer.state.log_history[:-1]
    assert all(
        "rewards/GuessEnv/mean" in entry and "rewards/PickEnv/mean" in entry for entry in logged
    )


def test_a_demonstration_of_an_unknown_tool_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"rows\[0\]: choose_call names 'move', not one of \['guess'\]"
    ):
        demonstrations(functools.partial(GuessEnv, []), _rows(3), lambda row, k: ("move", {}))


def test_a_dict_mode_row_must_name_a_known_environment() -> None:
    rows = [*_mixed_rows(), {"environment": "chess", **_rows(3)[0]}]
    factories: EnvFactory = {
        "guess": functools.partial(GuessEnv, []),
        "pick": functools.partial(PickEnv, []),
    }
    with pytest.raises(ValueError, match=r"rows\[2\].environment: 'chess' is not one of"):
        demonstrations(factories, rows, _demonstrated_call)


@settings(max_examples=200)
@given(st.text())
@example('<tool_call>\n{"name": "guess", "arguments": {"number": 3}}\n</tool_call><|im_end|>')
@example("r . . k\n  é <tools> \t<|im_start|>")
def test_any_text_round_trips_through_the_tokenizer(text: str) -> None:
    # parse_response decodes the generated ids: a lossy tokenizer would corrupt tool arguments.
    tokenizer = _DEFAULT_TOKENIZER
    assert tokenizer.decode(tokenizer(text, add_special_tokens=False)["input_ids"]) == text


def test_an_environment_without_reset_is_refused(tiny_tool_lm: TinyToolLM) -> None:
    class NoReset:
        def guess(self, number: int) -> str:
            """Guess.

            Args:
                number: The guess.
            """
            return ""

    with pytest.raises(ValueError, match="must define a callable `reset`"):
        tiny_tool_lm.grpo(NoReset, _rows(3))


def test_an_environment_without_a_reward_needs_reward_funcs(tiny_tool_lm: TinyToolLM) -> None:
    class NoReward:
        def reset(self, **row: Any) -> str:
            return ""

        def guess(self, number: int) -> str:
            """Guess.

            Args:
                number: The guess.
            """
            return ""

    with pytest.raises(ValueError, match="No reward source provided"):
        tiny_tool_lm.grpo(NoReward, _rows(3))
