"""An evaluation's scores against ground truth: ``score(config, episodes, world=...)``.

What it holds:

- ``EvalResult``: the frozen, versioned result (``result.json``), made of
  ``GroupScore`` (one per condition, scenario, background set and focal spec, the baselines
  included), ``ConditionEffect`` (value of information and noise: a condition against the
  reference one), ``RatingTable`` (Bradley-Terry ratings of the focal specs), ``PlayerUsage``
  (what each spec's seats did and cost) and ``Totals``; every interval is an ``Estimate``.
- ``score``: that result, a pure function of its inputs.

How it scores, per episode: focal per-capita return is the mean of the focal seats' returns,
background per-capita the mean of the others', welfare the sum over every seat, equality
``1 - gini`` of the seats' returns (GovSim's), survival the turns played. A group's numbers are
means over its episodes with 95% percentile bootstrap intervals over episodes, i.e. over seeds
(``envkit.stats``). Episode ``i`` of every group with the same condition, scenario and background
set was played on the same seed, so comparisons pair episodes by index: the normalised score
``(focal - random) / (strong - random)`` (Melting Pot's, random = 0 and the scenario's
``baseline`` = 1), the difference between conditions, and the Bradley-Terry games (Concordia's:
on one seed, the spec with the higher focal per-capita return wins; equal returns draw).

The bootstrap is seeded from ``config.seed`` and episodes are read in key order, so the same
inputs give an equal result whatever order the episodes were recorded in, timings aside: CPU and
wall seconds and decision latencies change from run to run; ``timings=False`` leaves them out
(zero seconds, no latencies), so two runs of one configuration give equal results.

Tokens are what the endpoint reported in ``usage``: a spec's total is ``"unknown"`` as soon as one
of its seat-episodes made requests without reporting them; it is never estimated.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import combinations
from typing import Literal

import numpy as np
from pydantic import Field

from envkit.dto import FrozenDTO
from envkit.errors import PlayerSpecError
from envkit.player_spec import parse_spec
from envkit.ratings import GameScore, fit_ratings
from envkit.stats import Interval, bootstrap_mean, bootstrap_statistic, gini, paired_bootstrap
from multiagent.config import SimulationConfig
from multiagent.evaluation.conditions import condition_label
from multiagent.evaluation.records import SEAT_STATUSES, EpisodeRecord, EvalConfig, SeatRecord

__all__ = [
    "CONFIDENCE",
    "RANDOM",
    "RANDOM_RATING",
    "REFERENCE_CONDITION",
    "ConditionEffect",
    "Estimate",
    "EvalResult",
    "GroupScore",
    "PlayerUsage",
    "Rating",
    "RatingTable",
    "Survival",
    "Totals",
    "focal_return",
    "model_of",
    "score",
    "token_cost",
]

CONFIDENCE = 0.95
RANDOM = "random"
"""The spec that pins the normalised score at 0 and the ratings at ``RANDOM_RATING``."""
RANDOM_RATING = 1000.0
REFERENCE_CONDITION = "configured"
"""The condition others are compared with: the world's own matrix at its own noise (else the
first condition played, in the configuration's order)."""

Unknown = Literal["unknown"]
_UNKNOWN: Unknown = "unknown"


class Estimate(FrozenDTO):
    """A mean (or a statistic of means) over episodes with its bootstrap interval.

    Example:
        >>> estimate = Estimate.of(bootstrap_mean([1.0, 3.0], resamples=10))
        >>> estimate.estimate, estimate.n, estimate.low <= 2.0 <= estimate.high
        (2.0, 2, True)
    """

    estimate: float = Field(description="The statistic of the episodes themselves")
    low: float = Field(description="The interval's lower bound")
    high: float = Field(description="The interval's upper bound")
    confidence: float = Field(gt=0, lt=1, description="The interval's nominal coverage")
    n: int = Field(ge=1, description="Episodes (seeds) it rests on")

    @classmethod
    def of(cls, interval: Interval) -> Estimate:
        """The DTO of an ``envkit.stats.Interval`` (a negative zero, e.g. random's normalised
        score, reads as 0)."""
        return cls(
            estimate=interval.estimate + 0.0,
            low=interval.low + 0.0,
            high=interval.high + 0.0,
            confidence=interval.confidence,
            n=interval.n,
        )


class Survival(FrozenDTO):
    """How long episodes lasted in a world that declares a collapse condition."""

    turns: Estimate = Field(description="Turns played per episode")
    collapsed: float = Field(ge=0, le=1, description="Fraction of episodes the collapse ended")


class GroupScore(FrozenDTO):
    """One condition, scenario, background set and focal spec: its episodes' numbers."""

    condition: str = Field(description="The observability and noise label")
    scenario: str = Field(description="The scenario's name")
    background_set: str = Field(description="'default' or a held-out set's name")
    focal: str = Field(description="The spec in the focal seats")
    baseline: bool = Field(description="Whether the spec was played as a baseline only")
    episodes: int = Field(ge=1, description="Episodes played")
    focal_return: Estimate = Field(description="Focal per-capita return")
    background_return: Estimate | None = Field(
        description="Background per-capita return (None: the scenario has no background seat)"
    )
    welfare: Estimate = Field(description="Total return over every seat")
    equality: Estimate | None = Field(
        description="1 - Gini of the seats' returns per episode (None: see note)"
    )
    survival: Survival | None = Field(
        description="Turns played and collapses (None: the world declares no collapse)"
    )
    versus_random: Estimate | None = Field(
        None,
        description="Mean paired difference of focal per-capita return against random in the "
        "same seats, over the episodes both played (None: random not played, or this is random)",
    )
    normalised: Estimate | None = Field(
        description="(focal - random) / (strong - random) on paired episodes (None: see note)"
    )
    note: str = Field("", description="Why a number is None, when one is")


class ConditionEffect(FrozenDTO):
    """Value of information (or of noise): a condition's focal return minus the reference's."""

    focal: str = Field(description="The spec in the focal seats")
    scenario: str = Field(description="The scenario's name")
    background_set: str = Field(description="'default' or a held-out set's name")
    condition: str = Field(description="The condition compared")
    reference: str = Field(description="The condition it is compared with")
    difference: Estimate = Field(
        description="Mean over paired episodes of focal per-capita return, condition - reference"
    )


class Rating(FrozenDTO):
    """One focal spec's Bradley-Terry rating, in Elo."""

    player: str = Field(description="The focal spec")
    rating: float = Field(description="The maximum-likelihood rating (with the prior draws)")
    low: float = Field(description="The bootstrap interval's lower bound")
    high: float = Field(description="The bootstrap interval's upper bound")
    anchor: bool = Field(description="Whether the rating is pinned (random at 1000)")


class RatingTable(FrozenDTO):
    """Focal specs on one scale, from games over paired episodes, best first."""

    ratings: list[Rating] = Field(description="Best first")
    games: int = Field(ge=0, description="Pairs of focal specs compared on one seat")
    bootstrap: int = Field(ge=0, description="Bootstrap resamples of the games")
    prior_draws: float = Field(ge=0, description="Virtual draws added to every pair that met")
    anchored: bool = Field(
        description="Whether random is pinned at 1000 (else the ratings are centred at 1500)"
    )
    unanchored: list[str] = Field(description="Specs with no game path to the anchor")


class PlayerUsage(FrozenDTO):
    """What one spec did in one kind of seat (focal or background), over all its seat-episodes."""

    player: str = Field(description="The spec")
    focal: bool = Field(description="Whether these are focal seats")
    seat_episodes: int = Field(ge=1, description="Seats filled, summed over episodes")
    decisions: int = Field(ge=0, description="Actions asked for")
    invalid_actions: int = Field(ge=0, description="Actions the world refused")
    invalid_per_1000: float | None = Field(
        description="Refused actions per 1,000 decisions (None: no decision)"
    )
    invalid_reasons: dict[str, int] = Field(description="Reason code -> count, summed")
    fallback_actions: int = Field(ge=0, description="Turns the fallback action was played")
    self_corrections: int = Field(ge=0, description="Invalid replies sent back to the model")
    endpoint_retries: int = Field(ge=0, description="429/5xx/connection retries")
    requests: int = Field(ge=0, description="Chat requests")
    cached_requests: int = Field(ge=0, description="Requests answered by the replay cache")
    leaks: int = Field(
        0, ge=0, description="Messages that carried a value the recipient may not see"
    )
    statuses: dict[str, int] = Field(description="Seat-episodes per end status, every status")
    tokens_in: int | Unknown | None = Field(
        description="Prompt tokens ('unknown': a reply did not report them; None: no request)"
    )
    tokens_out: int | Unknown | None = Field(description="Completion tokens (as tokens_in)")
    latency_p50: float | None = Field(description="Median seconds per LLM decision (None: none)")
    latency_p95: float | None = Field(description="95th percentile of the same")
    cost_usd: float | Unknown | None = Field(
        description="From the given prices ('unknown': tokens unknown; None: no price or no LLM)"
    )


class Totals(FrozenDTO):
    """The size and the cost in time of the run."""

    episodes: int = Field(ge=0, description="Episodes scored")
    seat_episodes: int = Field(ge=0, description="Seats summed over episodes")
    cpu_seconds: float = Field(ge=0, description="Process CPU time (0 with timings=False)")
    wall_seconds: float = Field(ge=0, description="Wall time (0 with timings=False)")


class EvalResult(FrozenDTO):
    """What ``python -m multiagent eval`` writes to ``result.json``."""

    config: EvalConfig = Field(description="The run's definition")
    bootstrap: int = Field(ge=1, description="Bootstrap resamples per interval")
    confidence: float = Field(gt=0, lt=1, description="Every interval's nominal coverage")
    collapse: bool = Field(description="Whether the world declares a collapse condition")
    reference_condition: str | None = Field(
        description="The condition the others are compared with (None: no episode)"
    )
    groups: list[GroupScore] = Field(description="By condition, scenario, set and focal spec")
    condition_effects: list[ConditionEffect] = Field(
        description="Each condition against the reference, per focal spec and scenario"
    )
    ratings: RatingTable | None = Field(description="None: fewer than two focal specs played")
    players: list[PlayerUsage] = Field(description="Focal seats first, in spec order")
    totals: Totals = Field(description="Episodes, seats and time")


_GroupKey = tuple[str, str, str, str]  # condition, scenario, background set, focal spec


def score(
    config: EvalConfig,
    episodes: Sequence[EpisodeRecord],
    *,
    world: SimulationConfig,
    prices: Mapping[str, tuple[float, float]] | None = None,
    bootstrap: int = 2000,
    timings: bool = True,
) -> EvalResult:
    """Score ``episodes`` of the run ``config`` of ``world`` (see the module docstring).

    Args:
        config: the run's definition (its ``seed`` seeds every bootstrap).
        episodes: the records, in any order; each key at most once.
        world: the world played (its scenarios' ``baseline`` and its ``collapse``).
        prices: model -> (USD per million prompt tokens, per million completion tokens).
        bootstrap: resamples per interval and per rating fit (at least 1).
        timings: False leaves the run's times out, so equal runs give equal results.

    Raises:
        ValueError: naming the field: a repeated episode key, an episode without a focal seat,
            a price that is negative, or ``bootstrap`` below 1.

    Example:
        >>> from multiagent.worlds import load_world
        >>> from multiagent.evaluation.records import SeatRecord
        >>> config = EvalConfig(world="forage", world_hash="0", scenarios=["s"], focal=["noop"],
        ...     episodes=1, seed=0, observability=["configured"], noise_scales=[1.0],
        ...     error_allowance=3)
        >>> seat = SeatRecord(seat="A", role=None, focal=True, player="noop", reward=2.0,
        ...     status="completed", decisions=4, invalid_actions=0)
        >>> episode = EpisodeRecord(key="k", condition="configured", scenario="s", focal="noop",
        ...     background_set="default", episode=0, seed=0, length=4, turns=4, end="truncated",
        ...     seats=[seat], cpu_seconds=0.1, wall_seconds=0.1)
        >>> result = score(config, [episode], world=load_world("forage"), bootstrap=10)
        >>> result.groups[0].focal_return.estimate, result.groups[0].note
        (2.0, "normalised: scenario 's' is not in the world")
    """
    prices = dict(prices or {})
    _check_arguments(episodes, prices, bootstrap)
    order = _Order(config, episodes)
    groups = _grouped(episodes, order)
    seed = config.seed
    reference = order.reference
    return EvalResult(
        config=config,
        bootstrap=bootstrap,
        confidence=CONFIDENCE,
        collapse=world.collapse is not None,
        reference_condition=reference,
        groups=[
            _group_score(key, rows, groups, config, world, bootstrap, seed)
            for key, rows in groups.items()
        ],
        condition_effects=_condition_effects(groups, order, bootstrap, seed),
        ratings=_ratings(groups, order, bootstrap, seed),
        players=_players(episodes, order, prices, timings),
        totals=Totals(
            episodes=len(episodes),
            seat_episodes=sum(len(episode.seats) for episode in episodes),
            cpu_seconds=sum(episode.cpu_seconds for episode in episodes) if timings else 0.0,
            wall_seconds=sum(episode.wall_seconds for episode in episodes) if timings else 0.0,
        ),
    )


def _check_arguments(
    episodes: Sequence[EpisodeRecord], prices: Mapping[str, tuple[float, float]], bootstrap: int
) -> None:
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 1:
        raise ValueError(f"bootstrap must be an integer >= 1, got {bootstrap!r}")
    seen: dict[tuple[str, str, str, str, int], int] = {}
    for index, episode in enumerate(episodes):
        key = (*_key(episode), episode.episode)
        if key in seen:
            raise ValueError(
                f"episodes[{index}]: episode {episode.episode} of {'/'.join(key[:4])} is "
                f"already episodes[{seen[key]}]"
            )
        seen[key] = index
        if not any(seat.focal for seat in episode.seats):
            raise ValueError(f"episodes[{index}].seats: no focal seat in episode {episode.key!r}")
    for model, pair in prices.items():
        if len(pair) != 2 or any(not np.isfinite(price) or price < 0 for price in pair):
            raise ValueError(
                f"prices[{model!r}]: expected (USD per million in, per million out), "
                f"each finite and >= 0, got {pair!r}"
            )


def _key(episode: EpisodeRecord) -> _GroupKey:
    return episode.condition, episode.scenario, episode.background_set, episode.focal


class _Order:
    """Where each label sorts: the configuration's order first, then by name, so a result
    does not depend on the order episodes were recorded in."""

    def __init__(self, config: EvalConfig, episodes: Sequence[EpisodeRecord]) -> None:
        planned = [
            condition_label(observability, scale)
            for observability in config.observability
            for scale in config.noise_scales
        ]
        self.conditions = _ranks(planned, (episode.condition for episode in episodes))
        played = sorted({e.condition for e in episodes}, key=self.conditions.__getitem__)
        self.reference = (
            REFERENCE_CONDITION
            if REFERENCE_CONDITION in played
            else (played[0] if played else None)
        )
        self.scenarios = _ranks(config.scenarios, (e.scenario for e in episodes))
        self.sets = _ranks(["default"], (e.background_set for e in episodes))
        self.specs = _ranks(
            [*config.focal, *config.baselines],
            (seat.player for episode in episodes for seat in episode.seats),
        )

    def group(self, key: _GroupKey) -> tuple[int, int, int, int]:
        condition, scenario, background_set, focal = key
        return (
            self.conditions[condition],
            self.scenarios[scenario],
            self.sets[background_set],
            self.specs[focal],
        )


def _ranks(first: Iterable[str], seen: Iterable[str]) -> dict[str, int]:
    names = list(dict.fromkeys(first))
    names += sorted(set(seen) - set(names))
    return {name: rank for rank, name in enumerate(names)}


def _grouped(
    episodes: Sequence[EpisodeRecord], order: _Order
) -> dict[_GroupKey, list[EpisodeRecord]]:
    """Episodes per group, groups in ``order`` and each group's episodes by index."""
    groups: defaultdict[_GroupKey, list[EpisodeRecord]] = defaultdict(list)
    for episode in episodes:
        groups[_key(episode)].append(episode)
    return {
        key: sorted(groups[key], key=lambda episode: episode.episode)
        for key in sorted(groups, key=order.group)
    }


# -- per group --------------------------------------------------------------------------------


def focal_return(episode: EpisodeRecord) -> float:
    """The mean return of the focal seats (the players under test).

    Example:
        >>> from multiagent.evaluation.records import SeatRecord
        >>> seats = [SeatRecord(seat=name, role=None, focal=focal, player="p", reward=reward,
        ...          status="completed", decisions=1, invalid_actions=0)
        ...          for name, focal, reward in [("A", True, 3.0), ("B", True, 5.0),
        ...                                      ("C", False, 10.0)]]
        >>> episode = EpisodeRecord(key="k", condition="c", scenario="s", focal="p",
        ...     background_set="default", episode=0, seed=0, length=1, turns=1,
        ...     end="truncated", seats=seats, cpu_seconds=0, wall_seconds=0)
        >>> focal_return(episode)
        4.0
    """
    return float(np.mean([seat.reward for seat in episode.seats if seat.focal]))


def _background_return(episode: EpisodeRecord) -> float | None:
    rewards = [seat.reward for seat in episode.seats if not seat.focal]
    return float(np.mean(rewards)) if rewards else None


def _group_score(
    key: _GroupKey,
    rows: list[EpisodeRecord],
    groups: Mapping[_GroupKey, list[EpisodeRecord]],
    config: EvalConfig,
    world: SimulationConfig,
    bootstrap: int,
    seed: int,
) -> GroupScore:
    condition, scenario, background_set, focal = key

    def mean(values: Sequence[float]) -> Estimate:
        return Estimate.of(bootstrap_mean(values, resamples=bootstrap, seed=seed))

    notes: list[str] = []
    background = [_background_return(episode) for episode in rows]
    equality = _equality(rows, mean, notes)
    normalised = _normalised(key, groups, world, bootstrap, seed, notes)
    survival = None
    if world.collapse is not None:
        survival = Survival(
            turns=mean([episode.turns for episode in rows]),
            collapsed=sum(episode.collapsed for episode in rows) / len(rows),
        )
    return GroupScore(
        condition=condition,
        scenario=scenario,
        background_set=background_set,
        focal=focal,
        baseline=focal in set(config.baselines) - set(config.focal),
        episodes=len(rows),
        focal_return=mean([focal_return(episode) for episode in rows]),
        background_return=None
        if any(value is None for value in background)
        else mean([value for value in background if value is not None]),
        welfare=mean([sum(seat.reward for seat in episode.seats) for episode in rows]),
        equality=equality,
        survival=survival,
        versus_random=_versus_random(key, rows, groups, bootstrap, seed),
        normalised=normalised,
        note="; ".join(notes),
    )


def _versus_random(
    key: _GroupKey,
    rows: list[EpisodeRecord],
    groups: Mapping[_GroupKey, list[EpisodeRecord]],
    bootstrap: int,
    seed: int,
) -> Estimate | None:
    """Focal minus random per-capita return, paired by episode (the same seeds)."""
    random = groups.get((*key[:3], RANDOM))
    if key[3] == RANDOM or not random:
        return None
    focal, baseline = _paired([rows, random], focal_return)
    if not focal:
        return None
    return Estimate.of(paired_bootstrap(focal, baseline, resamples=bootstrap, seed=seed))


def _equality(
    rows: list[EpisodeRecord], mean: Callable[[Sequence[float]], Estimate], notes: list[str]
) -> Estimate | None:
    """1 - Gini per episode, averaged; the Gini coefficient has no meaning for negative returns."""
    for episode in rows:
        negative = [seat.seat for seat in episode.seats if seat.reward < 0]
        if negative:
            notes.append(
                f"equality: episode {episode.episode} has negative returns "
                f"({', '.join(negative)}); 1 - Gini needs returns >= 0"
            )
            return None
    return mean([1.0 - gini([seat.reward for seat in episode.seats]) for episode in rows])


def _normalised(
    key: _GroupKey,
    groups: Mapping[_GroupKey, list[EpisodeRecord]],
    world: SimulationConfig,
    bootstrap: int,
    seed: int,
    notes: list[str],
) -> Estimate | None:
    """(focal - random) / (strong - random) over the episode indices all three groups played."""
    condition, scenario, background_set, _ = key
    if scenario not in world.scenarios:
        notes.append(f"normalised: scenario {scenario!r} is not in the world")
        return None
    strong = world.scenarios[scenario].baseline
    if strong is None:
        notes.append(f"normalised: scenario {scenario!r} names no baseline")
        return None
    keys = [key, (condition, scenario, background_set, RANDOM)]
    keys.append((condition, scenario, background_set, strong))
    missing = [spec for *_, spec in keys[1:] if (*key[:3], spec) not in groups]
    if missing:
        notes.append(
            f"normalised: no episodes with {' or '.join(repr(spec) for spec in missing)} "
            "in the focal seats (add them to the baselines)"
        )
        return None
    samples = _paired([groups[k] for k in keys], focal_return)
    if not samples[0]:
        notes.append("normalised: the baselines played none of the focal spec's episodes")
        return None
    focal, random, best = (np.asarray(sample) for sample in samples)
    if best.mean() == random.mean():
        notes.append(f"normalised: {strong!r} scores the same as random on average")
        return None
    try:
        interval = bootstrap_statistic(
            [focal, random, best], _normalised_score, resamples=bootstrap, seed=seed
        )
    except ValueError:
        notes.append(
            f"normalised: {strong!r} ties random on some resamples of the "
            f"{len(focal)} episodes, so the interval is undefined (play more episodes)"
        )
        return None
    return Estimate.of(interval)


def _normalised_score(focal: np.ndarray, random: np.ndarray, strong: np.ndarray) -> np.ndarray:
    random_mean = random.mean(-1)
    with np.errstate(divide="ignore", invalid="ignore"):  # a tie is refused by its caller
        return (focal.mean(-1) - random_mean) / (strong.mean(-1) - random_mean)


def _paired(
    groups: Sequence[list[EpisodeRecord]], value: Callable[[EpisodeRecord], float]
) -> list[list[float]]:
    """``value`` of each group's episodes at the indices every group played, index by index."""
    by_index = [{episode.episode: episode for episode in rows} for rows in groups]
    shared = sorted(set.intersection(*(set(indices) for indices in by_index)))
    return [[value(indices[i]) for i in shared] for indices in by_index]


# -- across groups ----------------------------------------------------------------------------


def _condition_effects(
    groups: Mapping[_GroupKey, list[EpisodeRecord]], order: _Order, bootstrap: int, seed: int
) -> list[ConditionEffect]:
    effects = []
    for key in groups:
        condition, scenario, background_set, focal = key
        reference_key = (order.reference or condition, scenario, background_set, focal)
        if condition == order.reference or reference_key not in groups:
            continue
        mine, reference = _paired([groups[key], groups[reference_key]], focal_return)
        if not mine:
            continue
        difference = paired_bootstrap(mine, reference, resamples=bootstrap, seed=seed)
        effects.append(
            ConditionEffect(
                focal=focal,
                scenario=scenario,
                background_set=background_set,
                condition=condition,
                reference=reference_key[0],
                difference=Estimate.of(difference),
            )
        )
    return sorted(
        effects,
        key=lambda e: (
            order.specs[e.focal],
            order.scenarios[e.scenario],
            order.sets[e.background_set],
            order.conditions[e.condition],
        ),
    )


def _ratings(
    groups: Mapping[_GroupKey, list[EpisodeRecord]], order: _Order, bootstrap: int, seed: int
) -> RatingTable | None:
    """Bradley-Terry over every pair of focal specs that played one seed (Concordia's)."""
    specs = sorted({key[3] for key in groups}, key=order.specs.__getitem__)
    if len(specs) < 2:
        return None
    seeds: defaultdict[tuple[str, str, str, int], dict[str, float]] = defaultdict(dict)
    for (condition, scenario, background_set, focal), rows in groups.items():
        for episode in rows:
            seeds[condition, scenario, background_set, episode.episode][focal] = focal_return(
                episode
            )
    games = [
        GameScore(first, second, _points(returns[first], returns[second]))
        for returns in seeds.values()
        for first, second in combinations(sorted(returns, key=order.specs.__getitem__), 2)
    ]
    if not games:
        return None
    anchors = {RANDOM: RANDOM_RATING} if RANDOM in specs else {}
    fit = fit_ratings(games, specs, anchors, bootstrap=bootstrap, seed=seed)
    ratings = [
        Rating(
            player=spec,
            rating=fit.ratings[spec],
            low=fit.low[spec],
            high=fit.high[spec],
            anchor=spec in anchors,
        )
        for spec in fit.ratings
    ]
    ratings.sort(key=lambda rating: (-rating.rating, order.specs[rating.player]))
    return RatingTable(
        ratings=ratings,
        games=fit.games,
        bootstrap=fit.bootstrap,
        prior_draws=fit.prior_draws,
        anchored=bool(anchors),
        unanchored=list(fit.unanchored) if anchors else [],
    )


def _points(first: float, second: float) -> float:
    return 1.0 if first > second else 0.0 if first < second else 0.5


# -- per player -------------------------------------------------------------------------------


def _players(
    episodes: Sequence[EpisodeRecord],
    order: _Order,
    prices: Mapping[str, tuple[float, float]],
    timings: bool,
) -> list[PlayerUsage]:
    seats: defaultdict[tuple[str, bool], list[SeatRecord]] = defaultdict(list)
    for episode in sorted(episodes, key=lambda e: (order.group(_key(e)), e.episode)):
        for seat in episode.seats:
            seats[seat.player, seat.focal].append(seat)
    keys = sorted(seats, key=lambda key: (not key[1], order.specs[key[0]]))
    return [_usage(player, focal, seats[player, focal], prices, timings) for player, focal in keys]


def _usage(
    player: str,
    focal: bool,
    seats: list[SeatRecord],
    prices: Mapping[str, tuple[float, float]],
    timings: bool,
) -> PlayerUsage:
    decisions = sum(seat.decisions for seat in seats)
    invalid = sum(seat.invalid_actions for seat in seats)
    reasons: Counter[str] = Counter()
    for seat in seats:
        reasons.update(seat.invalid_reasons)
    statuses: Counter[str] = Counter(seat.status for seat in seats)
    latencies = [latency for seat in seats for latency in seat.latencies] if timings else []
    p50, p95 = np.percentile(latencies, [50, 95]) if latencies else (None, None)
    tokens_in = _tokens(seats, lambda seat: seat.tokens_in)
    tokens_out = _tokens(seats, lambda seat: seat.tokens_out)
    return PlayerUsage(
        player=player,
        focal=focal,
        seat_episodes=len(seats),
        decisions=decisions,
        invalid_actions=invalid,
        invalid_per_1000=1000 * invalid / decisions if decisions else None,
        invalid_reasons=dict(sorted(reasons.items())),
        fallback_actions=sum(seat.fallback_actions for seat in seats),
        self_corrections=sum(seat.self_corrections for seat in seats),
        endpoint_retries=sum(seat.endpoint_retries for seat in seats),
        requests=sum(seat.requests for seat in seats),
        cached_requests=sum(seat.cached_requests for seat in seats),
        leaks=sum(seat.leaks for seat in seats),
        statuses={status: statuses[status] for status in SEAT_STATUSES},
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        latency_p50=None if p50 is None else float(p50),
        latency_p95=None if p95 is None else float(p95),
        cost_usd=token_cost(player, tokens_in, tokens_out, prices),
    )


def _tokens(
    seats: list[SeatRecord], count: Callable[[SeatRecord], int | None]
) -> int | Unknown | None:
    """The sum over seats that made requests; unknown if one of them did not report it."""
    asked = [count(seat) for seat in seats if seat.requests]
    if not asked:
        return None
    if any(tokens is None for tokens in asked):
        return _UNKNOWN
    return sum(tokens for tokens in asked if tokens is not None)


def model_of(player: str) -> str | None:
    """The model of an ``openai:MODEL?...`` spec, the key of its price; None for other kinds.

    Example:
        >>> model_of("openai:gpt-4o-mini?base_url=http://localhost:8000/v1"), model_of("random")
        ('gpt-4o-mini', None)
    """
    try:
        spec = parse_spec(player, ["openai"])
    except PlayerSpecError:
        return None
    return spec.argument


def token_cost(
    player: str,
    tokens_in: int | Unknown | None,
    tokens_out: int | Unknown | None,
    prices: Mapping[str, tuple[float, float]],
) -> float | Unknown | None:
    """USD for ``player``'s tokens at ``prices[model]`` (per million in, out): None without a
    price or tokens, ``"unknown"`` when the tokens are.

    Example:
        >>> token_cost("openai:m?base_url=http://x", 2_000_000, 1_000_000, {"m": (0.5, 2.0)})
        3.0
    """
    model = model_of(player)
    if model is None or model not in prices or tokens_in is None or tokens_out is None:
        return None
    if tokens_in == _UNKNOWN or tokens_out == _UNKNOWN:
        return _UNKNOWN
    price_in, price_out = prices[model]
    return (int(tokens_in) * price_in + int(tokens_out) * price_out) / 1_000_000
