"""The ``scenarios`` and ``collapse`` sections of a world: what an evaluation plays and scores.

A scenario, as in Melting Pot, is the world plus which seats are focal (the players under test
fill them) and who fills the others (background players, named by seat or by role, the agent's
``type``). Tags say what the scenario tests: ``resident`` (focal players are the majority) and
``visitor`` (a minority) are checked against the seat counts; any other tag is free. Held-out
background sets are further named populations the focal players never trained against
(generalisation); ``python -m multiagent eval --background-set NAME`` picks one.

``baseline`` names the strong baseline (a player spec): the normalised score puts focal seats
filled by it at 1 and filled by ``random`` at 0, as Melting Pot normalises between the worst and the
best baseline populations.

``episode_length`` is one number or ``[min, max]``: each episode's length is drawn in that range
from the episode's seed, so a player cannot count back from a known end.

``collapse`` names a numeric global variable and a threshold: when the dynamics leave it below the
threshold, every agent terminates and its info says ``collapsed: true`` (a commons that is
exhausted). Evaluations report survival (the turns played) for worlds that declare it.

Example:
    >>> scenario = ScenarioConfig.model_validate(
    ...     {"focal": ["A", "B"], "background": {"trader": "random"}, "tags": ["resident"],
    ...      "episode_length": [20, 30]})
    >>> scenario.length_range(100), scenario.held_out
    ((20, 30), {})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "CollapseCondition",
    "ScenarioConfig",
    "background_spec",
    "check_collapse",
    "check_scenarios",
]

_STRICT = ConfigDict(extra="forbid", frozen=True)
SIZE_TAGS = ("resident", "visitor")


class CollapseCondition(BaseModel):
    """The ``collapse`` section: the episode ends for everyone once ``variable < below``.

    Example:
        >>> CollapseCondition(variable="stock", below=5).below
        5.0
    """

    model_config = _STRICT
    variable: str = Field(min_length=1, description="A global int or float variable")
    below: float = Field(allow_inf_nan=False, description="Collapse when the value is below it")


class ScenarioConfig(BaseModel):
    """One entry of ``scenarios``: focal seats, background players, tags and episode length."""

    model_config = _STRICT
    description: str = Field("", description="What the scenario tests, for the leaderboard")
    focal: list[str] = Field(min_length=1, description="The seats the players under test fill")
    background: dict[str, str] = Field(
        default_factory=dict,
        description="Player spec per seat name or role (agent type) for the other seats; "
        "a seat's own entry wins over its role's",
    )
    held_out: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Named background populations kept for generalisation (same form)",
    )
    tags: list[str] = Field(default_factory=list, description="resident, visitor or free labels")
    baseline: str | None = Field(
        None,
        description="The strong baseline's player spec: focal seats filled by it score 1 on the "
        "normalised scale, filled by random players 0 (None: no normalised score)",
    )
    episode_length: int | tuple[int, int] | None = Field(
        None, description="Turns per episode, or [min, max] drawn per episode; None: max_turns"
    )

    @field_validator("episode_length")
    @classmethod
    def _ordered(cls, length: int | tuple[int, int] | None) -> int | tuple[int, int] | None:
        low, high = (length, length) if isinstance(length, int) else length or (1, 1)
        if low < 1:
            raise ValueError(f"episode_length must be at least 1, got {low}")
        if high < low:
            raise ValueError(f"episode_length is [min, max] with min <= max, got [{low}, {high}]")
        return length

    def length_range(self, max_turns: int) -> tuple[int, int]:
        """The inclusive range episode lengths are drawn from."""
        length = self.episode_length
        if length is None:
            return max_turns, max_turns
        return (length, length) if isinstance(length, int) else length


def background_spec(background: Mapping[str, str], seat: str, role: str | None) -> str | None:
    """The spec filling ``seat``: its own entry, else its role's, else None.

    Example:
        >>> background_spec({"trader": "random", "B": "noop"}, "B", "trader")
        'noop'
    """
    if seat in background:
        return background[seat]
    return background.get(role) if role is not None else None


def check_scenarios(
    scenarios: Mapping[str, ScenarioConfig],
    seats: Sequence[tuple[str, str | None]],
    max_turns: int,
) -> list[str]:
    """Problems of the ``scenarios`` section, each naming its field path.

    ``seats`` are the world's ``(name, type)`` pairs, in order.
    """
    problems: list[str] = []
    names = [name for name, _ in seats]
    roles = {role for _, role in seats if role is not None}
    for scenario_name, scenario in scenarios.items():
        path = f"scenarios.{scenario_name}"
        problems += _check_focal(path, scenario, names)
        populations = {"background": scenario.background} | {
            f"held_out.{name}": population for name, population in scenario.held_out.items()
        }
        for field, population in populations.items():
            problems += _check_population(f"{path}.{field}", population, scenario, seats, roles)
        _, high = scenario.length_range(max_turns)
        if high > max_turns:
            problems.append(
                f"{path}.episode_length: {high} turns exceeds simulation.max_turns ({max_turns})"
            )
    return problems


def _check_focal(path: str, scenario: ScenarioConfig, names: list[str]) -> list[str]:
    problems = [f"{path}.focal: unknown seat {seat!r} (the seats: {', '.join(names)})"
                for seat in scenario.focal if seat not in names]  # fmt: skip
    duplicates = sorted({seat for seat in scenario.focal if scenario.focal.count(seat) > 1})
    problems += [f"{path}.focal: seat {seat!r} is listed twice" for seat in duplicates]
    focal, total = len(set(scenario.focal)), len(names)
    if "resident" in scenario.tags and not focal * 2 > total:
        problems.append(
            f"{path}.tags: 'resident' means the focal seats are the majority, "
            f"but {focal} of {total} are focal"
        )
    if "visitor" in scenario.tags and not focal * 2 < total:
        problems.append(
            f"{path}.tags: 'visitor' means the focal seats are a minority, "
            f"but {focal} of {total} are focal"
        )
    return problems


def _check_population(
    path: str,
    population: Mapping[str, str],
    scenario: ScenarioConfig,
    seats: Sequence[tuple[str, str | None]],
    roles: set[str],
) -> list[str]:
    names = {name for name, _ in seats}
    problems = [
        f"{path}.{key}: neither a seat nor a role (seats: {', '.join(sorted(names))}; "
        f"roles: {', '.join(sorted(roles)) or 'none'})"
        for key in population
        if key not in names and key not in roles
    ]
    problems += [f"{path}.{key}: seat {key!r} is focal, so background players do not fill it"
                 for key in population if key in scenario.focal]  # fmt: skip
    for seat, role in seats:
        if seat not in scenario.focal and background_spec(population, seat, role) is None:
            by_role = f" or its role {role!r}" if role else ""
            problems.append(
                f"{path}: no player for the background seat {seat!r} (name it{by_role})"
            )
    return problems


def check_collapse(collapse: CollapseCondition, global_types: Mapping[str, str]) -> list[str]:
    """Problems of the ``collapse`` section: it must name a numeric global variable."""
    kind = global_types.get(collapse.variable)
    if kind is None:
        known = ", ".join(global_types) or "none"
        return [f"collapse.variable: no global variable {collapse.variable!r} (globals: {known})"]
    if kind not in ("int", "float"):
        return [f"collapse.variable: {collapse.variable!r} is {kind}; collapse needs int or float"]
    return []
