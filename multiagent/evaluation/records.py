"""What an evaluation writes: its configuration, one record per episode, and per-seat tallies.

- ``EvalConfig``: what defines a run. A rerun with another one is refused unless ``--fresh``; the
  settings that do not change an episode (concurrency, prices, the cost cap, the replay cache,
  where logs go) are not part of it.
- ``SeatRecord``: one seat of one episode: who filled it, its return, how the episode ended for
  it (``SEAT_STATUSES``) and what its decisions cost.
- ``EpisodeRecord``: one line of ``episodes.jsonl``.

Every model is a frozen, versioned DTO, so each line reads back into the same object.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from envkit.dto import FrozenDTO

__all__ = [
    "EPISODE_ENDS",
    "SEAT_STATUSES",
    "EpisodeRecord",
    "EvalConfig",
    "SeatRecord",
]

SeatStatus = Literal["completed", "truncated", "forfeit", "endpoint_failure", "context_limit"]
SEAT_STATUSES: tuple[str, ...] = get_args(SeatStatus)
"""How an episode ended for a seat, as AgentBench reports it: the world ended it (``completed``:
a terminal state or a collapse), the length limit did (``truncated``), or the seat stopped
playing: too many refused actions (``forfeit``), its endpoint failed after its retries
(``endpoint_failure``) or its prompt outgrew the model (``context_limit``). A seat that stopped
plays the world's fallback action until the episode ends, so the others are not held up."""

EpisodeEnd = Literal["completed", "truncated"]
EPISODE_ENDS: tuple[str, ...] = get_args(EpisodeEnd)

Observability = Literal["configured", "full", "none"]


class EvalConfig(FrozenDTO):
    """A run's definition: the world, what is played in it and how often, and the seeds."""

    world: str = Field(description="The world as given: a built-in name or a YAML path")
    world_hash: str = Field(description="The loaded world's config_hash, so an edit is noticed")
    scenarios: list[str] = Field(min_length=1, description="Scenario names, in order")
    focal: list[str] = Field(min_length=1, description="Focal player specs as given")
    baselines: list[str] = Field(
        default_factory=list,
        description="Specs also played in the focal seats to pin the normalised score "
        "(random = 0, each scenario's strong baseline = 1)",
    )
    background: dict[str, str] = Field(
        default_factory=dict,
        description="Background overrides: seat or role -> spec ('*' for every background seat)",
    )
    background_set: str | None = Field(
        None, description="A held-out background set's name (None: the scenario's background)"
    )
    episodes: int = Field(ge=1, description="Episodes per scenario, focal player and condition")
    seed: int = Field(ge=0, description="Every episode's seed derives from it and the episode")
    observability: list[Observability] = Field(
        min_length=1, description="Conditions: the configured matrix, full, or none"
    )
    noise_scales: list[float] = Field(
        min_length=1, description="Conditions: the matrix's noise multiplied by each"
    )
    error_allowance: int = Field(
        ge=0, description="Refused actions a seat may make per episode before it forfeits"
    )


class SeatRecord(FrozenDTO):
    """One seat of one episode."""

    seat: str = Field(description="The agent's name")
    role: str | None = Field(description="The agent's type in the world")
    focal: bool = Field(description="Whether the player under test filled it")
    player: str = Field(description="The spec that filled it")
    reward: float = Field(description="The seat's return over the episode")
    status: SeatStatus = Field(description="How the episode ended for the seat")
    decisions: int = Field(ge=0, description="Turns the player was asked for an action")
    invalid_actions: int = Field(ge=0, description="Actions the world refused")
    invalid_reasons: dict[str, int] = Field(
        default_factory=dict,
        description="Reason code -> count, over refused actions and refused LLM replies",
    )
    fallback_actions: int = Field(
        0, ge=0, description="Turns the world's fallback action was played for the seat"
    )
    requests: int = Field(0, ge=0, description="Chat requests (self-corrections included)")
    self_corrections: int = Field(0, ge=0, description="Invalid replies sent back to the model")
    endpoint_retries: int = Field(0, ge=0, description="429/5xx/connection retries")
    cached_requests: int = Field(0, ge=0, description="Requests answered by the replay cache")
    tokens_in: int | None = Field(
        None, ge=0, description="Prompt tokens (None: a reply reported none, or no LLM)"
    )
    tokens_out: int | None = Field(None, ge=0, description="Completion tokens (None: unknown)")
    latencies: list[float] = Field(
        default_factory=list, description="Seconds per LLM decision (timings)"
    )
    leaks: int = Field(
        0,
        ge=0,
        description="Message deliveries by the seat that carried the exact value of a variable "
        "the recipient may not see (multiagent.leaks)",
    )
    failure: str = Field("", description="What stopped the seat, in words")


class EpisodeRecord(FrozenDTO):
    """One episode, as a line of ``episodes.jsonl``: its key, its seed and its seats."""

    key: str = Field(description="condition/scenario/background set/focal/episode")
    condition: str = Field(description="The observability and noise label, e.g. configured")
    scenario: str = Field(description="The scenario's name")
    focal: str = Field(description="The spec in the focal seats")
    background_set: str = Field(description="'default' or a held-out set's name")
    episode: int = Field(ge=0, description="The episode's index in its group (pairs across groups)")
    seed: int = Field(ge=0, description="The world's seed, from the run's seed and the episode")
    length: int = Field(ge=1, description="The turn limit drawn for the episode")
    turns: int = Field(ge=0, description="Turns played")
    end: EpisodeEnd = Field(description="completed (the world ended it) or truncated")
    collapsed: bool = Field(False, description="Whether the world's collapse condition ended it")
    seats: list[SeatRecord] = Field(description="Every seat, in the world's order")
    log: str | None = Field(None, description="The episode log's path, relative to the run")
    cpu_seconds: float = Field(ge=0, description="Process CPU time of the episode (timing)")
    wall_seconds: float = Field(ge=0, description="Wall time of the episode (timing)")
