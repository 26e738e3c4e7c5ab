"""The leaderboard a person reads: ``OUT/leaderboard.md`` and ``OUT/leaderboard.html``.

- ``leaderboard_markdown(result)``: the config, the leaderboard table, the head-to-head matrix,
  the endings, the prompt conditions, the rating method and the machine.
- ``leaderboard_html(result)``: the same on one self-contained page (inline CSS and SVG, no
  script, no external resource), with a rating plot and a head-to-head heat map.
- ``write_reports(result, out_dir)``: both files.

In a cell, "-" means that the number does not apply (no analysis was run, the player is not a
text player or not an LLM) and "unknown" that an LLM endpoint did not report it (no ``usage``,
or no price given for the model). Player names are specs as users gave them (``openai:m?x=<b>``),
so every text is escaped: for Markdown (``|``, ``<``, ``*`` and the like) or for HTML.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from chess_env.arena.results import ENDINGS, ArenaResult, ColorRecord, PlayerCard
from envkit.tables import (
    TABLE_CSS,
    Table,
    html_escape,
    html_page,
    html_table,
    markdown_table,
    markdown_text,
)

__all__ = ["leaderboard_html", "leaderboard_markdown", "write_reports"]

_NOT_APPLICABLE = "-"
_UNKNOWN = "unknown"
_TITLE = "Arena leaderboard"


# -- the cells, shared by both pages ----------------------------------------------------------


def _number(value: float | None, spec: str, missing: str = _NOT_APPLICABLE) -> str:
    return missing if value is None else format(value, spec)


def _pair(low: float | None, high: float | None, spec: str, missing: str) -> str:
    return f"{_number(low, spec, missing)} / {_number(high, spec, missing)}"


def _rating(card: PlayerCard) -> str:
    """The rating with its 95% interval, or an anchor's pinned value.

    Example:
        >>> card = PlayerCard(
        ...     name="a", kind="random", rating=1512.4, rating_low=1450.0, rating_high=1580.2,
        ...     games=0, points=0, score=None, score_low=None, score_high=None,
        ...     white=ColorRecord(), black=ColorRecord(), endings={}, mean_seconds_per_move=None,
        ... )
        >>> _rating(card)
        '1512 [1450, 1580]'
    """
    if card.anchor is not None:
        return f"{_elo(card.anchor)} anchor"
    if card.rating is None:
        return "unrated"
    if card.rating_low is None or card.rating_high is None:
        return _elo(card.rating)
    return f"{_elo(card.rating)} [{_elo(card.rating_low)}, {_elo(card.rating_high)}]"


def _elo(rating: float) -> str:
    """A rating to the nearest point, never "-0"."""
    return str(round(rating) + 0)


def _score(card: PlayerCard) -> str:
    if card.score is None:
        return _NOT_APPLICABLE
    text = f"{card.points:g}/{card.games} = {100 * card.score:.1f}%"
    if card.score_low is None or card.score_high is None:
        return text
    return f"{text} [{100 * card.score_low:.1f}, {100 * card.score_high:.1f}]"


def _quality_cells(card: PlayerCard) -> list[str]:
    if card.quality is None:
        return [_NOT_APPLICABLE] * 3
    quality = card.quality
    return [_number(quality.acpl, ".0f"), str(quality.blunders), _number(quality.accuracy, ".1f")]


def _text_cells(card: PlayerCard) -> list[str]:
    if card.text is None:
        return [_NOT_APPLICABLE] * 2
    return [_number(card.text.illegal_per_1000_moves, ".1f"), str(card.text.forfeits)]


def _llm_cells(card: PlayerCard) -> list[str]:
    if card.llm is None:
        return [_NOT_APPLICABLE] * 3
    llm = card.llm
    cost = _UNKNOWN if llm.cost_per_game is None else f"${llm.cost_per_game:.4f}"
    return [
        _pair(llm.tokens_in_per_move, llm.tokens_out_per_move, ".0f", _UNKNOWN),
        _pair(llm.latency_p50, llm.latency_p95, ".2f", _UNKNOWN),
        cost,
    ]


def _wdl(record: ColorRecord) -> str:
    return f"{record.wins}/{record.draws}/{record.losses}"


def _leaderboard(result: ArenaResult) -> Table:
    """One row per player; the quality, text and LLM columns only when some player has them."""
    cards = result.players
    groups: list[tuple[list[str], Callable[[PlayerCard], list[str]]]] = []
    if any(card.quality is not None for card in cards):
        groups.append((["ACPL", "Blunders", "Accuracy %"], _quality_cells))
    if any(card.text is not None for card in cards):
        groups.append((["Illegal / 1000 moves", "Forfeits"], _text_cells))
    if any(card.llm is not None for card in cards):
        groups.append(
            (["Tokens / move in / out", "Latency p50 / p95 s", "Cost / game"], _llm_cells)
        )
    header = ["#", "Player", "Rating (95%)", "Games", "White W/D/L", "Black W/D/L"]
    header += ["Score (95%)", *(name for names, _ in groups for name in names)]
    rows = []
    for rank, card in enumerate(cards, start=1):
        row = [str(rank) if card.rating is not None else _NOT_APPLICABLE, card.name]
        row += [_rating(card), str(card.games), _wdl(card.white), _wdl(card.black)]
        row.append(_score(card))
        for _, cells in groups:
            row += cells(card)
        rows.append(row)
    return Table(header, rows, text_columns=2)


def _matrix(result: ArenaResult) -> dict[tuple[str, str], tuple[float, int]]:
    return {
        (cell.player, cell.opponent): (cell.points, cell.games)
        for cell in result.head_to_head
        if cell.games
    }


def _head_to_head(result: ArenaResult) -> Table:
    names = [card.name for card in result.players]
    matrix = _matrix(result)
    rows = [[row, *(_cell(matrix.get((row, column))) for column in names)] for row in names]
    return Table(["Player", *names], rows)


def _cell(points_games: tuple[float, int] | None) -> str:
    if points_games is None:
        return _NOT_APPLICABLE
    points, games = points_games
    return f"{points:g}/{games}"


def _endings(result: ArenaResult) -> Table:
    seen = {ending for card in result.players for ending in card.endings}
    columns = [ending for ending in ENDINGS if ending in seen] + sorted(seen - set(ENDINGS))
    rows = [
        [card.name, *(str(card.endings.get(ending, 0)) for ending in columns)]
        for card in result.players
    ]
    return Table(["Player", *columns], rows)


def _conditions(result: ArenaResult) -> Table:
    rows = [
        [
            card.condition,
            ", ".join(card.players),
            str(card.games),
            f"{card.points:g}",
            _number(None if card.score is None else 100 * card.score, ".1f"),
            _number(card.illegal_per_1000_moves, ".1f"),
        ]
        for card in result.conditions
    ]
    header = ["Condition", "Players", "Games", "Points", "Score %", "Illegal / 1000 moves"]
    return Table(header, rows, text_columns=2)


def _config_line(result: ArenaResult) -> str:
    config = result.config
    return (
        f"{config.format}, {config.games_per_pair} games per pair, openings {config.openings} "
        f"({len(config.opening_ids)}), seed {config.seed}, at most {config.max_plies} plies"
    )


def _games_line(result: ArenaResult) -> str:
    analysis = (
        "no move analysis"
        if result.analyse_depth is None
        else f"moves analysed by Stockfish at depth {result.analyse_depth}"
    )
    return (
        f"{result.games} rated games, {result.endpoint_failures} stopped by an endpoint outage; "
        f"{analysis}; {result.wall_seconds:.1f} s of wall time, {result.cpu_seconds:.1f} s of CPU "
        "time (worker processes and engines included)"
    )


# -- Markdown ---------------------------------------------------------------------------------


def leaderboard_markdown(result: ArenaResult) -> str:
    """The leaderboard as Markdown (see the module docstring for what it holds).

    Example:
        >>> from chess_env.arena.results import ArenaConfig
        >>> config = ArenaConfig(
        ...     players=["random"], games_per_pair=2, openings="startpos",
        ...     openings_digest="0", opening_ids=["startpos"], max_plies=100,
        ... )
        >>> result = ArenaResult(
        ...     config=config, players=[], head_to_head=[], conditions=[], games=0,
        ...     endpoint_failures=0, rating_method="none", wall_seconds=0, machine="here",
        ... )
        >>> print(leaderboard_markdown(result).splitlines()[2])
        round-robin, 2 games per pair, openings startpos (1), seed 0, at most 100 plies
    """
    sections = [
        f"# {_TITLE}",
        markdown_text(_config_line(result)),
        markdown_table(_leaderboard(result)),
        "## Head to head\n\nThe row player's points / games against the column player.",
        markdown_table(_head_to_head(result)),
        "## Endings",
        markdown_table(_endings(result)),
    ]
    if result.conditions:
        sections += ["## Prompt conditions", markdown_table(_conditions(result))]
    sections += [
        "## How",
        f"{markdown_text(_games_line(result))}.",
        f"Ratings: {markdown_text(result.rating_method)}.",
        f"Machine: {markdown_text(result.machine)}.",
    ]
    return "\n\n".join(sections) + "\n"


# -- HTML -------------------------------------------------------------------------------------

_CSS = (
    TABLE_CSS
    + """svg text { font: 12px system-ui, sans-serif; fill: #222; }
svg .axis { stroke: #888; }
svg .grid { stroke: #e4e4e4; }
svg .bar { stroke: #1f77b4; stroke-width: 2; }
svg .dot { fill: #1f77b4; }
svg .anchor .bar { stroke: #d95f02; }
svg .anchor .dot { fill: #d95f02; }
.key-anchor { color: #d95f02; }
.key-rated { color: #1f77b4; }
"""
)


def _heat(fraction: float) -> str:
    """A background from red (0: every game lost) through white (0.5) to green (1).

    Example:
        >>> _heat(0.0), _heat(0.5), _heat(1.0)
        ('#e8685a', '#ffffff', '#5cb874')
    """
    end = (0xE8, 0x68, 0x5A) if fraction < 0.5 else (0x5C, 0xB8, 0x74)
    weight = min(1.0, abs(fraction - 0.5) * 2)
    red, green, blue = (round(255 + (channel - 255) * weight) for channel in end)
    return f"#{red:02x}{green:02x}{blue:02x}"


def _heat_map(result: ArenaResult) -> str:
    names = [card.name for card in result.players]
    matrix = _matrix(result)
    head = "".join(f'<th class="name">{html_escape(name)}</th>' for name in names)
    rows = []
    for row in names:
        cells = []
        for column in names:
            points_games = matrix.get((row, column))
            style = ""
            if points_games is not None:
                style = f' style="background: {_heat(points_games[0] / points_games[1])}"'
            cells.append(f'<td class="num"{style}>{html_escape(_cell(points_games))}</td>')
        rows.append(f'<tr><th class="name">{html_escape(row)}</th>{"".join(cells)}</tr>\n')
    return (
        f'<table class="matrix">\n<thead><tr><th class="name">Player</th>{head}</tr></thead>\n'
        f"<tbody>\n{''.join(rows)}</tbody>\n</table>"
    )


def _ticks(low: float, high: float, most: int = 8) -> list[float]:
    """Round Elo values between ``low`` and ``high``, at most ``most`` of them.

    Example:
        >>> _ticks(1130, 1920)
        [1200, 1300, 1400, 1500, 1600, 1700, 1800, 1900]
        >>> _ticks(1495, 1530)
        [1495, 1500, 1505, 1510, 1515, 1520, 1525, 1530]
    """
    steps = (base * 10**power for power in range(0, 6) for base in (1, 2, 2.5, 5))
    step = next(step for step in steps if (high - low) / step <= most)
    first = math.ceil(low / step)
    return [
        int(value) if value == int(value) else value
        for value in (k * step for k in range(first, math.floor(high / step) + 1))
    ]


_PLOT_WIDTH, _LABEL_WIDTH, _RIGHT, _ROW, _TOP, _AXIS = 760, 250, 30, 22, 10, 36
_LABEL_CHARS = 36


def _rating_plot(cards: Sequence[PlayerCard]) -> str:
    """An inline SVG: one row per rated player, a dot at the rating and a bar over its interval."""
    rated = [card for card in cards if card.rating is not None]
    if not rated:
        return "<p>No player has a rating yet.</p>"
    ends = [(card.rating_low, card.rating, card.rating_high) for card in rated]
    low = min(min(v for v in end if v is not None) for end in ends)
    high = max(max(v for v in end if v is not None) for end in ends)
    pad = max(25.0, (high - low) * 0.05)
    low, high = low - pad, high + pad
    span = _PLOT_WIDTH - _LABEL_WIDTH - _RIGHT
    height = _TOP + _ROW * len(rated) + _AXIS

    def x(value: float) -> str:
        return f"{_LABEL_WIDTH + span * (value - low) / (high - low):.1f}"

    axis_y = _TOP + _ROW * len(rated)
    parts = [
        f'<svg class="ratings" width="{_PLOT_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_PLOT_WIDTH} {height}" role="img" aria-label="Ratings with 95% intervals">',
    ]
    for tick in _ticks(low, high):
        parts.append(
            f'<line class="grid" x1="{x(tick)}" y1="{_TOP}" x2="{x(tick)}" y2="{axis_y}"/>'
            f'<text x="{x(tick)}" y="{axis_y + 18}" text-anchor="middle">{tick}</text>'
        )
    parts.append(
        f'<line class="axis" x1="{_LABEL_WIDTH}" y1="{axis_y}" '
        f'x2="{_LABEL_WIDTH + span}" y2="{axis_y}"/>'
        f'<text x="{_LABEL_WIDTH + span / 2:.1f}" y="{axis_y + 34}" text-anchor="middle">Elo</text>'
    )
    for index, card in enumerate(rated):
        parts.append(_plot_row(card, _TOP + _ROW * index + _ROW / 2, x))
    parts.append("</svg>")
    return "\n".join(parts)


def _plot_row(card: PlayerCard, y: float, x: Callable[[float], str]) -> str:
    rating = card.rating if card.rating is not None else 0.0
    low = card.rating_low if card.rating_low is not None else rating
    high = card.rating_high if card.rating_high is not None else rating
    label = card.name if len(card.name) <= _LABEL_CHARS else card.name[: _LABEL_CHARS - 1] + "…"
    group_class = "row anchor" if card.anchor is not None else "row"
    return (
        f'<g class="{group_class}">'
        f"<title>{html_escape(card.name)}: {html_escape(_rating(card))}</title>"
        f'<text x="{_LABEL_WIDTH - 8}" y="{y + 4:.1f}" text-anchor="end">'
        f"{html_escape(label)}</text>"
        f'<line class="bar" x1="{x(low)}" y1="{y:.1f}" x2="{x(high)}" y2="{y:.1f}"/>'
        f'<circle class="dot" cx="{x(rating)}" cy="{y:.1f}" r="4"/></g>'
    )


def leaderboard_html(result: ArenaResult) -> str:
    """The leaderboard as one HTML5 page that needs nothing else (see the module docstring)."""
    sections = [
        f"<h1>{_TITLE}</h1>",
        f"<p>{html_escape(_config_line(result))}</p>",
        html_table(_leaderboard(result), "leaderboard"),
        "<h2>Ratings</h2>",
        '<p>Dots at the rating, bars over the 95% interval: <span class="key-rated">players'
        '</span>, <span class="key-anchor">anchors</span>.</p>',
        _rating_plot(result.players),
        "<h2>Head to head</h2>",
        "<p>The row player's points / games against the column player, from red (lost every "
        "game) through white (even) to green (won every game).</p>",
        _heat_map(result),
        "<h2>Endings</h2>",
        html_table(_endings(result), "endings"),
    ]
    if result.conditions:
        sections += ["<h2>Prompt conditions</h2>", html_table(_conditions(result), "conditions")]
    sections += [
        "<h2>How</h2>",
        f"<p>{html_escape(_games_line(result))}.</p>",
        f"<p>Ratings: {html_escape(result.rating_method)}.</p>",
        f"<p>Machine: {html_escape(result.machine)}.</p>",
    ]
    return html_page(_TITLE, "\n".join(sections), _CSS)


def write_reports(result: ArenaResult, out_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write ``leaderboard.md`` and ``leaderboard.html`` into ``out_dir`` (made if missing)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    markdown, page = out / "leaderboard.md", out / "leaderboard.html"
    markdown.write_text(leaderboard_markdown(result), encoding="utf-8")
    page.write_text(leaderboard_html(result), encoding="utf-8")
    return markdown, page
