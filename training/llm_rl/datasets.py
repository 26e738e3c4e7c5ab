"""Training rows for TRL's ``GRPOTrainer`` from the chess task set (``training.llm_rl.tasks``).

- ``seed_dataset(n, ...)``: a ``datasets.Dataset`` of ``n`` tasks, one row each, with the columns
  ``prompt``, ``fen``, ``answers``, ``kind``, ``task_id`` and ``seed``.

How a GRPO group shares its position: the trainer's ``RepeatSampler`` hands each row to
``num_generations`` rollouts in a row, and with ``environment_factory`` it calls each rollout's
``reset(**row)`` with every column of that row, so all members of a group reset to the same
``fen`` with the same ``seed`` and are graded against the same ``answers``. ``group_size`` repeats
each row itself, for loops that draw one completion per row.

The ``prompt`` is conversational (``[{"role": "user", "content": ...}]``). With an environment, it
states the task and the environment's ``reset`` shows the position: TRL appends the string
``reset`` returns to the last user message, so the task text ends with a blank line. Without one
(``prompt_condition`` given), the prompt shows the position too, as the text env renders it under
that condition, for training with a reward function such as one built on ``check_answer``.
"""

from __future__ import annotations

import chess
import datasets  # type: ignore[import-untyped]
import numpy as np

from chess_env.text.env import position_prompt
from chess_env.text.prompt_conditions import PRESETS, PromptCondition
from training.llm_rl.tasks import TASK_KINDS, ChessTask, load_tasks

__all__ = ["TASK_STATEMENTS", "seed_dataset"]

TASK_STATEMENTS: dict[str, str] = {
    "mate_in_1": "Find the move that checkmates at once.",
    "mate_in_2": "Find the first move of a forced mate in two.",
    "win_material": "Find the move that wins material: at least a knight's or a bishop's worth.",
    "avoid_blunder": "Most moves here lose material or worse. Find a move that does not.",
}


def seed_dataset(
    n: int,
    *,
    kinds: str | list[str] | tuple[str, ...] | None = None,
    seed: int = 0,
    prompt_condition: str | PromptCondition | None = None,
    group_size: int | None = None,
) -> datasets.Dataset:
    """``n`` shipped tasks drawn by ``seed`` (numpy's seeded Generator: the same seed gives the same
    rows in every process), as rows for ``GRPOTrainer``.

    Args:
        n: positions (distinct while the chosen kinds have that many tasks, then drawn again).
        kinds: one kind or several of ``TASK_KINDS``; all when None.
        seed: draws the tasks and each row's ``seed`` (the env's seed for that rollout).
        prompt_condition: None (default) for training with ``environment_factory``, whose
            ``reset`` shows the position; a preset of ``chess_env.text.prompt_conditions.PRESETS``
            or a ``PromptCondition`` to show the position in the prompt itself.
        group_size: when set, each row appears that many times in a row (``n * group_size`` rows).

    Example:
        >>> rows = seed_dataset(4, kinds="mate_in_1", seed=3)
        >>> rows.column_names
        ['prompt', 'fen', 'answers', 'kind', 'task_id', 'seed']
        >>> rows[0]["prompt"][0]["role"], set(rows["kind"])
        ('user', {'mate_in_1'})
        >>> rows["task_id"] == seed_dataset(4, kinds="mate_in_1", seed=3)["task_id"]
        True
        >>> len(seed_dataset(2, group_size=3))
        6
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if group_size is not None and (
        isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1
    ):
        raise ValueError(f"group_size must be a positive integer or None, got {group_size!r}")
    condition = _condition(prompt_condition)
    pool = _pool(kinds)
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(len(pool)) for _ in range(-(-n // len(pool)))])[:n]
    row_seeds = rng.integers(0, 2**31 - 1, size=n)
    rows = [
        _row(pool[int(index)], int(row_seed), condition)
        for index, row_seed in zip(order, row_seeds, strict=True)
    ]
    repeated = [row for row in rows for _ in range(group_size or 1)]
    return datasets.Dataset.from_list(repeated)


def _pool(kinds: str | list[str] | tuple[str, ...] | None) -> list[ChessTask]:
    chosen = TASK_KINDS if kinds is None else (kinds,) if isinstance(kinds, str) else tuple(kinds)
    for kind in chosen:
        if kind not in TASK_KINDS:
            raise ValueError(f"kinds: {kind!r} is not one of {', '.join(TASK_KINDS)}")
    if not chosen:
        raise ValueError("kinds: name at least one kind")
    return [task for task in load_tasks() if task.kind in chosen]


def _condition(prompt_condition: str | PromptCondition | None) -> PromptCondition | None:
    if prompt_condition is None or isinstance(prompt_condition, PromptCondition):
        return prompt_condition
    if prompt_condition not in PRESETS:
        raise ValueError(
            f"prompt_condition: {prompt_condition!r} is not one of {', '.join(PRESETS)}"
        )
    return PRESETS[prompt_condition]


def _row(task: ChessTask, row_seed: int, condition: PromptCondition | None) -> dict[str, object]:
    board = task.board()
    side = chess.COLOR_NAMES[board.turn].capitalize()
    statement = f"{side} to move. {TASK_STATEMENTS[task.kind]}"
    if condition is None:
        content = f"{statement}\n\n"
    else:
        legal = sorted(move.uci() for move in board.legal_moves)
        content = f"{statement}\n\n{position_prompt(board, board.turn, legal, condition=condition)}"
    return {
        "prompt": [{"role": "user", "content": content}],
        "fen": task.fen,
        "answers": list(task.answers),
        "kind": task.kind,
        "task_id": task.task_id,
        "seed": row_seed,
    }
