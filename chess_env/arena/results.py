"""What the arena writes: one game per line of ``games.jsonl`` and the ``ArenaResult``.

- ``ArenaConfig``: what defines a tournament; a rerun with a different one is refused.
- ``MoveRecord`` and ``ArenaGame``: a played game as ``OUT/games.jsonl`` keeps it, move by move
  (time, the LLM's answer, refused answers, tokens).
- ``PlayerCard`` (with ``ColorRecord``, ``QualityCard``, ``TextCard``, ``LLMCard``),
  ``HeadToHead``, ``ConditionCard`` and ``ArenaResult``: the scorecard and the ratings.

Every model is a frozen, versioned pydantic DTO (``envkit.dto.FrozenDTO``), so ``result.json``
and each line of ``games.jsonl`` read back into the same objects.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from envkit.dto import FrozenDTO

__all__ = [
    "ENDINGS",
    "ArenaConfig",
    "ArenaGame",
    "ArenaResult",
    "ColorRecord",
    "ConditionCard",
    "HeadToHead",
    "LLMCard",
    "MoveRecord",
    "PlayerCard",
    "QualityCard",
    "TextCard",
]

Ending = Literal[
    "checkmate",
    "stalemate",
    "insufficient_material",
    "seventyfive_moves",
    "fivefold_repetition",
    "fifty_moves",
    "threefold_repetition",
    "max_plies",
    "illegal_move",
    "player_failed",
    "endpoint_failure",
]
ENDINGS: tuple[str, ...] = get_args(Ending)
"""How a game can end: python-chess's terminations, the ply cap (a draw), a text player out of
retries or a player that could not move (a loss), and an endpoint outage (no chess result)."""

Format = Literal["round-robin", "gauntlet"]


class ArenaConfig(FrozenDTO):
    """A tournament's definition: the players, the schedule and the rules of its games.

    The settings that do not change a game's result (workers, concurrency, analysis depth,
    prices) are not part of it, so a rerun may change them.
    """

    players: list[str] = Field(min_length=1, description="Player specs as given (candidates)")
    anchors: list[str] = Field(
        default_factory=list, description="Anchor specs as given; the gauntlet's ladder"
    )
    anchor_ratings: dict[str, float] = Field(
        default_factory=dict, description="Pinned ratings of the anchors that have one"
    )
    format: Format = Field("round-robin", description="round-robin or gauntlet")
    games_per_pair: int = Field(ge=2, description="Games each pairing plays (even: both colours)")
    openings: str = Field(description="default, startpos or the suite's file as given")
    openings_digest: str = Field(description="sha256 of the suite, so a changed file is noticed")
    opening_ids: list[str] = Field(description="The openings played, each with both colours")
    seed: int = Field(0, description="Seeds the opening pick and every game")
    max_plies: int = Field(ge=1, description="A game still going after this many plies is a draw")


class MoveRecord(FrozenDTO):
    """One move as played, with what it cost."""

    uci: str = Field(description="The move in UCI")
    san: str = Field(description="The move in SAN")
    seconds: float = Field(ge=0, description="Wall time the player took (seconds)")
    comment: str = Field("", description="An LLM's answer, excerpted (empty for other players)")
    rejected: list[str] = Field(
        default_factory=list, description="Reason codes of the answers refused before this move"
    )
    requests: int | None = Field(None, ge=0, description="Chat requests sent (LLMs only)")
    tokens_in: int | None = Field(None, ge=0, description="Prompt tokens (None: not reported)")
    tokens_out: int | None = Field(None, ge=0, description="Completion tokens (None: unknown)")
    endpoint_retries: int = Field(0, ge=0, description="429/5xx/connection retries this move")


class ArenaGame(FrozenDTO):
    """A finished game, as one line of ``games.jsonl``.

    ``result`` is None only for ``ending == "endpoint_failure"``: the endpoint failed, not the
    player, so the game is not rated and a rerun plays it again.
    """

    game_id: str = Field(description="Stable id from the schedule: pairing, opening and colours")
    index: int = Field(ge=0, description="Position in the schedule")
    white: str = Field(description="White's spec as given")
    black: str = Field(description="Black's spec as given")
    opening_id: str = Field(description="The opening's id in its suite")
    opening_name: str = Field(description="The opening's name")
    root_fen: str = Field(description="Where the opening's moves start (usually the start)")
    opening_moves: list[str] = Field(description="The opening's moves in UCI, before the game")
    seed: int = Field(description="The game's seed (white's; black gets seed + 1)")
    moves: list[MoveRecord] = Field(description="The moves played after the opening")
    unplayed: MoveRecord | None = Field(
        None,
        description="The failing side's last attempt, never played (uci and san empty): its "
        "refused answers and tokens still count",
    )
    result: Literal["1-0", "0-1", "1/2-1/2"] | None = Field(description="None: endpoint failure")
    ending: Ending = Field(description="How the game ended (see ENDINGS)")
    failed_side: Literal["white", "black"] | None = Field(
        None, description="The side that lost by failing (illegal moves, a crash, an outage)"
    )
    failure: str = Field("", description="What the failing side did, in words")
    conditions: dict[str, str] = Field(
        default_factory=dict, description="Colour -> prompt condition label, for text players"
    )
    wall_seconds: float = Field(ge=0, description="Wall time of the whole game (seconds)")

    @property
    def rated(self) -> bool:
        """Whether the game has a chess result (an endpoint outage has none)."""
        return self.result is not None


class ColorRecord(FrozenDTO):
    """Wins, draws and losses with one colour."""

    wins: int = Field(0, ge=0)
    draws: int = Field(0, ge=0)
    losses: int = Field(0, ge=0)


class QualityCard(FrozenDTO):
    """Move quality by Stockfish at ``depth`` (``--analyse-depth``)."""

    depth: int = Field(ge=1, description="Stockfish depth of every evaluation")
    moves: int = Field(ge=0, description="Moves analysed")
    acpl: float | None = Field(description="Average centipawn loss (evaluations capped at 1000)")
    blunders: int = Field(ge=0, description="Moves losing >= 200 cp")
    mistakes: int = Field(ge=0, description="Moves losing >= 100 and < 200 cp")
    inaccuracies: int = Field(ge=0, description="Moves losing >= 50 and < 100 cp")
    accuracy: float | None = Field(description="Mean per-move accuracy % (lichess's formula)")


class TextCard(FrozenDTO):
    """How a text player (an LLM) handled the rules."""

    moves: int = Field(ge=0, description="Legal moves played")
    illegal_attempts: int = Field(ge=0, description="Answers refused")
    illegal_per_1000_moves: float | None = Field(description="Refused answers per 1000 moves")
    retries_used: int = Field(ge=0, description="Further attempts after a refused answer")
    reasons: dict[str, int] = Field(description="Refusals by the text env's reason code")
    forfeits: int = Field(ge=0, description="Games lost by running out of retries")


class LLMCard(FrozenDTO):
    """What an LLM player's games cost; None wherever the endpoint did not report it."""

    requests: int = Field(ge=0, description="Chat requests sent")
    tokens_in: int | None = Field(description="Prompt tokens over all games (None: unknown)")
    tokens_out: int | None = Field(description="Completion tokens over all games")
    tokens_in_per_move: float | None = Field(description="Prompt tokens per move played")
    tokens_out_per_move: float | None = Field(description="Completion tokens per move played")
    tokens_in_per_game: float | None = Field(description="Prompt tokens per game")
    tokens_out_per_game: float | None = Field(description="Completion tokens per game")
    latency_p50: float | None = Field(description="Median seconds per move")
    latency_p95: float | None = Field(description="95th percentile of seconds per move")
    cost_per_game: float | None = Field(description="From the price table given (None: no price)")
    endpoint_retries: int = Field(ge=0, description="429/5xx/connection retries")
    endpoint_failures: int = Field(ge=0, description="Games stopped by an endpoint outage")


class PlayerCard(FrozenDTO):
    """One player's line in the leaderboard."""

    name: str = Field(description="The spec as given")
    kind: str = Field(description="The registry kind (random, stockfish, model, openai, ...)")
    anchor: float | None = Field(None, description="The pinned rating, for an anchor")
    condition: str | None = Field(None, description="Prompt condition label, for text players")
    rating: float | None = Field(description="Elo on the anchors' scale (None: no rated game)")
    rating_low: float | None = Field(description="Lower end of the 95% bootstrap interval")
    rating_high: float | None = Field(description="Upper end of the 95% bootstrap interval")
    games: int = Field(ge=0, description="Rated games")
    points: float = Field(ge=0, description="Wins plus half the draws")
    score: float | None = Field(description="points / games")
    score_low: float | None = Field(description="Lower end of the score's 95% Wilson interval")
    score_high: float | None = Field(description="Upper end of the Wilson interval")
    white: ColorRecord = Field(description="Results with white")
    black: ColorRecord = Field(description="Results with black")
    endings: dict[str, int] = Field(description="Games by how they ended")
    mean_seconds_per_move: float | None = Field(description="Thinking time per move")
    quality: QualityCard | None = Field(None, description="With --analyse-depth")
    text: TextCard | None = Field(None, description="For text players")
    llm: LLMCard | None = Field(None, description="For LLM players")


class HeadToHead(FrozenDTO):
    """One cell of the score matrix: ``player``'s points against ``opponent``."""

    player: str
    opponent: str
    points: float = Field(ge=0)
    games: int = Field(ge=0)


class ConditionCard(FrozenDTO):
    """Text players grouped by what they were shown."""

    condition: str = Field(description="The prompt condition label")
    players: list[str] = Field(description="Players with this condition")
    games: int = Field(ge=0)
    points: float = Field(ge=0)
    score: float | None
    illegal_per_1000_moves: float | None


class ArenaResult(FrozenDTO):
    """A tournament's result: the leaderboard, the score matrix and how it was computed."""

    config: ArenaConfig
    players: list[PlayerCard] = Field(description="Best rated first; unrated players last")
    head_to_head: list[HeadToHead] = Field(description="The score matrix, cell by cell")
    conditions: list[ConditionCard] = Field(description="Per prompt condition (text players)")
    games: int = Field(ge=0, description="Rated games")
    endpoint_failures: int = Field(ge=0, description="Games stopped by an endpoint outage")
    rating_method: str = Field(description="The fit, its prior and its intervals, in words")
    analyse_depth: int | None = Field(None, description="Stockfish depth of the move quality")
    wall_seconds: float = Field(ge=0, description="Wall time of this run (seconds)")
    cpu_seconds: float = Field(
        0.0, ge=0, description="CPU time of this run: its worker processes and engines included"
    )
    machine: str = Field(description="CPU, cores and Python of the machine that ran it")
