"""The leaderboard a person reads: ``OUT/leaderboard.md`` and ``OUT/leaderboard.html`` of an eval.

- ``leaderboard_markdown(result)`` and ``leaderboard_html(result)``: the same blocks in two forms
  (the HTML page is self-contained: inline CSS, no script, no external resource):
  one table per scenario, condition and background set with the focal specs ranked by focal
  per-capita return; the value of information and noise; the Bradley-Terry ratings; what each
  player's seats did (validity, retries, tokens, latency, cost) and how their episodes ended.

Numbers read ``estimate [low, high]``, the 95% bootstrap interval over seeds. In a cell, "-" means
that the number does not apply (no background seat, no LLM, no price, a normalised score whose
baselines were not played: the notes under the table say why) and "unknown" that an LLM
endpoint did not report it. Player specs and world names are user text, so every text is
escaped (``envkit.tables``).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

from envkit.tables import (
    Table,
    html_escape,
    html_page,
    html_table,
    markdown_table,
    markdown_text,
)
from multiagent.evaluation.records import SEAT_STATUSES
from multiagent.evaluation.result import Estimate, EvalResult, GroupScore, PlayerUsage

__all__ = ["leaderboard_html", "leaderboard_markdown"]

_NOT_APPLICABLE = "-"
_UNKNOWN = "unknown"


@dataclass(frozen=True)
class _Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class _Paragraph:
    text: str


@dataclass(frozen=True)
class _Notes:
    """A bulleted list (the reasons a number is missing)."""

    items: list[str]


_Block = _Heading | _Paragraph | _Notes | Table


# -- cells ------------------------------------------------------------------------------------


def _fixed(value: float, digits: int) -> str:
    """``value`` to ``digits`` decimals, never "-0.0".

    Example:
        >>> _fixed(-0.04, 1), _fixed(12.345, 2)
        ('0.0', '12.35')
    """
    text = f"{value:.{digits}f}"
    return f"{0.0:.{digits}f}" if float(text) == 0 else text


def _estimate(estimate: Estimate | None, digits: int = 1) -> str:
    """``estimate [low, high]``, or "-".

    Example:
        >>> _estimate(Estimate(estimate=12.34, low=10.1, high=14.2, confidence=0.95, n=30))
        '12.3 [10.1, 14.2]'
    """
    if estimate is None:
        return _NOT_APPLICABLE
    values = (estimate.estimate, estimate.low, estimate.high)
    middle, low, high = (_fixed(value, digits) for value in values)
    return f"{middle} [{low}, {high}]"


def _optional(value: float | str | None, digits: int) -> str:
    if value is None:
        return _NOT_APPLICABLE
    return value if isinstance(value, str) else _fixed(value, digits)


def _player(spec: str, baseline: bool) -> str:
    return f"{spec} (baseline)" if baseline else spec


def _counts(counts: dict[str, int]) -> str:
    """Non-zero counts as ``name n``, or "-"."""
    text = ", ".join(f"{name} {count}" for name, count in counts.items() if count)
    return text or _NOT_APPLICABLE


# -- blocks -----------------------------------------------------------------------------------


def _config_line(result: EvalResult) -> str:
    config = result.config
    background = ", ".join(f"{seat}={spec}" for seat, spec in config.background.items())
    return (
        f"World {config.world} ({config.world_hash}); scenarios {', '.join(config.scenarios)}; "
        f"focal {', '.join(config.focal)}; baselines {', '.join(config.baselines) or 'none'}; "
        f"background {background or 'as the scenario says'}"
        f"{f' (held-out set {config.background_set})' if config.background_set else ''}; "
        f"{config.episodes} episodes per group, seed {config.seed}; "
        f"error allowance {config.error_allowance}"
    )


def _group_table(groups: list[GroupScore], collapse: bool) -> Table:
    header = ["#", "Focal player", "Episodes", "Focal return (95%)", "Vs random (95%)"]
    header.append("Normalised (95%)")
    header += ["Background return (95%)", "Welfare (95%)", "Equality (95%)"]
    if collapse:
        header += ["Survival turns (95%)", "Collapsed %"]
    ranked = sorted(groups, key=lambda group: -group.focal_return.estimate)
    rows = []
    for rank, group in enumerate(ranked, start=1):
        row = [str(rank), _player(group.focal, group.baseline), str(group.episodes)]
        row += [_estimate(group.focal_return), _estimate(group.versus_random)]
        row.append(_estimate(group.normalised, 2))
        row += [_estimate(group.background_return), _estimate(group.welfare)]
        row.append(_estimate(group.equality, 2))
        if collapse:
            survival = group.survival
            row.append(_estimate(survival.turns) if survival else _NOT_APPLICABLE)
            row.append(_fixed(100 * survival.collapsed, 0) if survival else _NOT_APPLICABLE)
        rows.append(row)
    return Table(header, rows, text_columns=2)


def _group_blocks(result: EvalResult) -> list[_Block]:
    blocks: list[_Block] = []
    by_table = groupby(result.groups, key=lambda g: (g.scenario, g.condition, g.background_set))
    for (scenario, condition, background_set), rows in by_table:
        groups = list(rows)
        title = f"Scenario {scenario}, condition {condition}, background {background_set}"
        blocks += [_Heading(title, 3), _group_table(groups, result.collapse)]
        notes = [f"{group.focal}: {group.note}" for group in groups if group.note]
        if notes:
            blocks.append(_Notes(notes))
    return blocks


def _effects_table(result: EvalResult) -> Table:
    header = ["Focal player", "Scenario", "Background", "Condition", "Reference"]
    header.append("Difference in focal return (95%)")
    rows = [
        [
            effect.focal,
            effect.scenario,
            effect.background_set,
            effect.condition,
            effect.reference,
            _estimate(effect.difference, 2),
        ]
        for effect in result.condition_effects
    ]
    return Table(header, rows, text_columns=5)


def _ratings_blocks(result: EvalResult) -> list[_Block]:
    table = result.ratings
    if table is None:
        return [_Paragraph("Fewer than two focal players met on a seed: no ratings.")]
    rows = [
        [
            str(rank),
            rating.player,
            f"{_fixed(rating.rating, 0)} anchor"
            if rating.anchor
            else f"{_fixed(rating.rating, 0)} [{_fixed(rating.low, 0)}, {_fixed(rating.high, 0)}]",
        ]
        for rank, rating in enumerate(table.ratings, start=1)
    ]
    scale = "random pinned at 1000" if table.anchored else "centred at 1500 (no random player)"
    how = (
        f"Bradley-Terry over {table.games} games (two focal players on one seed; the higher "
        f"focal return wins, equal returns draw), {table.prior_draws:g} prior draws per pair, "
        f"{table.bootstrap} bootstrap resamples; {scale}."
    )
    blocks: list[_Block] = [Table(["#", "Player", "Rating (95%)"], rows, text_columns=2)]
    blocks.append(_Paragraph(how))
    if table.unanchored:
        blocks.append(_Paragraph(f"Not linked to random: {', '.join(table.unanchored)}."))
    return blocks


def _usage_table(players: list[PlayerUsage]) -> Table:
    header = ["Player", "Seats", "Seat-episodes", "Decisions", "Invalid / 1000"]
    header += ["Fallbacks", "Self-corrections", "Retries", "Requests (cached)"]
    header += ["Tokens in / out", "Latency p50 / p95 s", "Cost USD"]
    rows = [
        [
            usage.player,
            "focal" if usage.focal else "background",
            str(usage.seat_episodes),
            str(usage.decisions),
            _optional(usage.invalid_per_1000, 1),
            str(usage.fallback_actions),
            str(usage.self_corrections),
            str(usage.endpoint_retries),
            f"{usage.requests} ({usage.cached_requests})",
            f"{_optional(usage.tokens_in, 0)} / {_optional(usage.tokens_out, 0)}",
            f"{_optional(usage.latency_p50, 2)} / {_optional(usage.latency_p95, 2)}",
            _optional(usage.cost_usd, 4),
        ]
        for usage in players
    ]
    return Table(header, rows, text_columns=2)


def _status_table(players: list[PlayerUsage]) -> Table:
    rows = [
        [
            usage.player,
            "focal" if usage.focal else "background",
            _counts(usage.invalid_reasons),
            *(str(usage.statuses.get(status, 0)) for status in SEAT_STATUSES),
        ]
        for usage in players
    ]
    return Table(["Player", "Seats", "Refusal reasons", *SEAT_STATUSES], rows, text_columns=3)


def _totals_line(result: EvalResult) -> str:
    totals = result.totals
    return (
        f"{totals.episodes} episodes, {totals.seat_episodes} seat-episodes; "
        f"{totals.cpu_seconds:.1f} s of CPU time, {totals.wall_seconds:.1f} s of wall time; "
        f"{result.confidence:.0%} percentile bootstrap intervals over seeds, "
        f"{result.bootstrap} resamples, seeded from the run's seed"
    )


def _blocks(result: EvalResult) -> list[_Block]:
    """Every block of the page, in order, for both forms."""
    reference = result.reference_condition or _NOT_APPLICABLE
    blocks: list[_Block] = [
        _Heading(f"World evaluation: {result.config.world}", 1),
        _Paragraph(_config_line(result)),
        _Heading("Scores"),
        _Paragraph(
            "Focal players ranked by focal per-capita return; vs random: the paired difference "
            "from random in the same seats on the same seeds; normalised: random = 0, the "
            "scenario's baseline = 1, on the same seeds; equality: 1 - Gini of the seats' returns."
        ),
        *_group_blocks(result),
        _Heading("Value of information and noise"),
        _Paragraph(
            f"Focal per-capita return in each condition minus in {reference}, paired by seed."
        ),
    ]
    if result.condition_effects:
        blocks.append(_effects_table(result))
    else:
        blocks.append(_Paragraph("One condition only: nothing to compare."))
    blocks += [_Heading("Ratings"), *_ratings_blocks(result)]
    blocks += [_Heading("Players"), _usage_table(result.players)]
    blocks += [_Heading("Refusals and end statuses", 3), _status_table(result.players)]
    blocks += [_Heading("How"), _Paragraph(f"{_totals_line(result)}.")]
    return blocks


# -- the two forms ----------------------------------------------------------------------------


def _markdown_block(block: _Block) -> str:
    if isinstance(block, _Heading):
        return f"{'#' * block.level} {markdown_text(block.text)}"
    if isinstance(block, _Paragraph):
        return markdown_text(block.text)
    if isinstance(block, _Notes):
        return "\n".join(f"- {markdown_text(item)}" for item in block.items)
    return markdown_table(block)


def _html_block(block: _Block) -> str:
    if isinstance(block, _Heading):
        return f"<h{block.level}>{html_escape(block.text)}</h{block.level}>"
    if isinstance(block, _Paragraph):
        return f"<p>{html_escape(block.text)}</p>"
    if isinstance(block, _Notes):
        items = "".join(f"<li>{html_escape(item)}</li>" for item in block.items)
        return f'<ul class="notes">{items}</ul>'
    return html_table(block, "scores")


def leaderboard_markdown(result: EvalResult) -> str:
    """The leaderboard as Markdown (see the module docstring for what it holds).

    Example:
        >>> from multiagent.evaluation.records import EvalConfig
        >>> from multiagent.evaluation.result import score
        >>> from multiagent.worlds import load_world
        >>> config = EvalConfig(world="forage", world_hash="0", scenarios=["s"], focal=["noop"],
        ...     episodes=1, seed=0, observability=["configured"], noise_scales=[1.0],
        ...     error_allowance=3)
        >>> text = leaderboard_markdown(score(config, [], world=load_world("forage")))
        >>> print(text.splitlines()[0])
        # World evaluation: forage
    """
    return "\n\n".join(_markdown_block(block) for block in _blocks(result)) + "\n"


def leaderboard_html(result: EvalResult) -> str:
    """The leaderboard as one HTML5 page that needs nothing else (see the module docstring)."""
    body = "\n".join(_html_block(block) for block in _blocks(result))
    return html_page(f"World evaluation: {result.config.world}", body)
