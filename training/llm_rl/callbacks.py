"""``ArenaEvalCallback``: rate each checkpoint of an LLM's training in the chess arena.

A transformers ``TrainerCallback`` (TRL's trainers are transformers trainers): when the trainer
saves a checkpoint, the checkpoint plays the arena's anchors as ``hf:CHECKPOINT`` (a local model
through the text env, ``chess_env.text.llm_player.hf_opponent``; by default through the ``move``
tool that ``ChessToolEnv`` trains, parsed as in training) and its rating with its 95%
interval is logged as ``arena/rating``, ``arena/rating_low`` and ``arena/rating_high`` (and so
reaches TensorBoard, W&B or whatever ``report_to`` names). Each checkpoint's tournament is kept in
``OUT/checkpoint-STEP`` (``result.json``, the games, the leaderboards).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from chess_env.arena.runner import prepare

__all__ = ["ArenaEvalCallback"]


class ArenaEvalCallback(TrainerCallback):
    """Plays every saved checkpoint against ``anchors`` in a gauntlet and logs its rating.

    Args:
        out: where each checkpoint's tournament goes.
        anchors: the ladder (arena specs; ``SPEC@RATING`` pins a rating). The default, random at
            1000 and greedy, needs no engine; Stockfish anchors (``stockfish?elo=1350``) put the
            rating on the Stockfish scale.
        games: games per anchor (even: both colours).
        tool_calling: the checkpoint moves through the ``move`` tool, as it learnt with
            ``ChessToolEnv`` (default); False: it answers in text, in square brackets.
        player_options: more of the ``hf:`` spec's options (e.g.
            ``"max_tokens=16&prompt=game_arena"``).
        max_plies: a longer game is a draw.
        seed: seeds the openings and the games.

    Example:
        >>> callback = ArenaEvalCallback("runs/arena", games=2)
        >>> callback.spec("runs/grpo/checkpoint-10")
        'hf:runs/grpo/checkpoint-10?tool_calling=yes'
    """

    def __init__(
        self,
        out: str | os.PathLike[str],
        *,
        anchors: Sequence[str] = ("random@1000", "greedy"),
        games: int = 4,
        tool_calling: bool = True,
        player_options: str = "",
        max_plies: int = 200,
        seed: int = 0,
    ) -> None:
        if games < 2 or games % 2:
            raise ValueError(f"games must be even and at least 2 (both colours), got {games}")
        self.out, self.anchors, self.games = Path(out), list(anchors), games
        options = ["tool_calling=yes"] if tool_calling else []
        self.player_options = "&".join([*options, *filter(None, [player_options])])
        self.max_plies, self.seed = max_plies, seed
        self.ratings: dict[int, tuple[float | None, float | None, float | None]] = {}

    def spec(self, checkpoint: str | os.PathLike[str]) -> str:
        """The player spec of ``checkpoint``."""
        options = f"?{self.player_options}" if self.player_options else ""
        return f"hf:{os.fspath(checkpoint)}{options}"

    def on_save(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        **kwargs: Any,
    ) -> TrainerControl:
        checkpoint = Path(str(args.output_dir)) / f"checkpoint-{state.global_step}"
        rating, low, high = self.rate(checkpoint, state.global_step)
        logged = {"arena/rating": rating, "arena/rating_low": low, "arena/rating_high": high}
        entry: dict[str, Any] = {"step": state.global_step, **logged}
        state.log_history.append(entry)
        return control

    def rate(
        self, checkpoint: str | os.PathLike[str], step: int
    ) -> tuple[float | None, float | None, float | None]:
        """The checkpoint's rating and interval ends (None: it played no rated game)."""
        spec = self.spec(checkpoint)
        tournament = prepare(
            [spec],
            anchors=self.anchors,
            format="gauntlet",
            games_per_pair=self.games,
            openings="startpos",
            seed=self.seed,
            out=self.out / f"checkpoint-{step}",
            fresh=True,
            max_plies=self.max_plies,
            progress=False,
        )
        card = next(card for card in tournament.play().players if card.name == spec)
        self.ratings[step] = (card.rating, card.rating_low, card.rating_high)
        return self.ratings[step]
