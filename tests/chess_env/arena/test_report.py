"""leaderboard.md and leaderboard.html: every player's numbers, "unknown" where an endpoint said
nothing, a page that needs nothing else, and hostile names shown, never run."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from chess_env.arena.report import leaderboard_html, leaderboard_markdown, write_reports
from chess_env.arena.results import (
    ArenaConfig,
    ArenaResult,
    ColorRecord,
    ConditionCard,
    HeadToHead,
    LLMCard,
    PlayerCard,
    QualityCard,
    TextCard,
)

ANCHOR = "stockfish?elo=1800"
ENGINE = "alphabeta:2"
LLM = "openai:gpt?x=<script>alert(1)</script>|b"
UNRATED = "random"


def card(name: str, kind: str, **fields: object) -> PlayerCard:
    defaults: dict[str, object] = {
        "rating": None,
        "rating_low": None,
        "rating_high": None,
        "games": 0,
        "points": 0.0,
        "score": None,
        "score_low": None,
        "score_high": None,
        "white": ColorRecord(),
        "black": ColorRecord(),
        "endings": {},
        "mean_seconds_per_move": None,
    }
    return PlayerCard(name=name, kind=kind, **{**defaults, **fields})  # type: ignore[arg-type]


def quality(acpl: float, blunders: int, accuracy: float) -> QualityCard:
    return QualityCard(
        depth=8,
        moves=40,
        acpl=acpl,
        blunders=blunders,
        mistakes=1,
        inaccuracies=2,
        accuracy=accuracy,
    )


def result(conditions: bool = True) -> ArenaResult:
    players = [
        card(
            ANCHOR,
            "stockfish",
            anchor=1800.0,
            rating=1800.0,
            rating_low=1800.0,
            rating_high=1800.0,
            games=4,
            points=3.5,
            score=0.875,
            score_low=0.5291,
            score_high=0.9777,
            white=ColorRecord(wins=2),
            black=ColorRecord(wins=1, draws=1),
            endings={"checkmate": 3, "max_plies": 1},
            mean_seconds_per_move=0.05,
            quality=quality(12.4, 0, 96.25),
        ),
        card(
            ENGINE,
            "alphabeta",
            rating=1652.6,
            rating_low=1580.2,
            rating_high=1720.9,
            games=4,
            points=2.5,
            score=0.625,
            score_low=0.3057,
            score_high=0.8632,
            white=ColorRecord(wins=1, draws=1),
            black=ColorRecord(wins=1, losses=1),
            endings={"checkmate": 2, "illegal_move": 1, "max_plies": 1},
            mean_seconds_per_move=0.4,
            quality=quality(48.0, 2, 81.5),
        ),
        card(
            LLM,
            "openai",
            condition="fen+legal",
            rating=1398.0,
            rating_low=1290.0,
            rating_high=1490.0,
            games=4,
            points=0.0,
            score=0.0,
            score_low=0.0,
            score_high=0.4899,
            white=ColorRecord(losses=2),
            black=ColorRecord(losses=2),
            endings={"checkmate": 3, "illegal_move": 1},
            mean_seconds_per_move=2.5,
            quality=quality(210.0, 7, 40.0),
            text=TextCard(
                moves=60,
                illegal_attempts=9,
                illegal_per_1000_moves=150.0,
                retries_used=8,
                reasons={"illegal": 7, "unreadable": 2},
                forfeits=1,
            ),
            llm=LLMCard(
                requests=69,
                tokens_in=None,
                tokens_out=None,
                tokens_in_per_move=None,
                tokens_out_per_move=None,
                tokens_in_per_game=None,
                tokens_out_per_game=None,
                latency_p50=2.1,
                latency_p95=6.75,
                cost_per_game=None,
                endpoint_retries=2,
                endpoint_failures=1,
            ),
        ),
        card(UNRATED, "random"),
    ]
    head_to_head = [
        HeadToHead(player=ANCHOR, opponent=ENGINE, points=1.5, games=2),
        HeadToHead(player=ANCHOR, opponent=LLM, points=2.0, games=2),
        HeadToHead(player=ENGINE, opponent=ANCHOR, points=0.5, games=2),
        HeadToHead(player=ENGINE, opponent=LLM, points=2.0, games=2),
        HeadToHead(player=LLM, opponent=ANCHOR, points=0.0, games=2),
        HeadToHead(player=LLM, opponent=ENGINE, points=0.0, games=2),
    ]
    condition_cards = [
        ConditionCard(
            condition="fen+legal",
            players=[LLM],
            games=4,
            points=0.0,
            score=0.0,
            illegal_per_1000_moves=150.0,
        )
    ]
    config = ArenaConfig(
        players=[ENGINE, LLM, UNRATED],
        anchors=[ANCHOR],
        anchor_ratings={ANCHOR: 1800.0},
        games_per_pair=2,
        openings="default",
        openings_digest="abc",
        opening_ids=["e4", "d4", "c4"],
        seed=7,
        max_plies=300,
    )
    return ArenaResult(
        config=config,
        players=players,
        head_to_head=head_to_head,
        conditions=condition_cards if conditions else [],
        games=6,
        endpoint_failures=1,
        rating_method="Bradley-Terry on the Elo scale, see https://example.org/bt",
        analyse_depth=8,
        wall_seconds=123.4,
        machine="8 cores, Python 3.11",
    )


# -- Markdown ---------------------------------------------------------------------------------


def table_rows(markdown: str, first_header: str) -> list[list[str]]:
    """The rows of the table whose header starts with ``first_header``, split into cells."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def test_markdown_has_a_row_per_player_with_its_numbers() -> None:
    header, rule, *rows = table_rows(leaderboard_markdown(result()), "#")
    assert len(header) == len(rule) == 15 and rule[:3] == [":---", ":---", "---:"]
    assert len(rows) == 4
    by_name = {row[1]: dict(zip(header, row, strict=True)) for row in rows}
    anchor = by_name["stockfish?elo=1800"]
    assert anchor["#"] == "1" and anchor["Rating (95%)"] == "1800 anchor"
    assert anchor["White W/D/L"] == "2/0/0" and anchor["Black W/D/L"] == "1/1/0"
    assert anchor["Score (95%)"] == "3.5/4 = 87.5% [52.9, 97.8]"
    assert (anchor["ACPL"], anchor["Blunders"], anchor["Accuracy %"]) == ("12", "0", "96.2")
    engine = by_name["alphabeta:2"]
    assert engine["#"] == "2" and engine["Rating (95%)"] == "1653 [1580, 1721]"
    assert engine["Games"] == "4" and engine["Score (95%)"] == "2.5/4 = 62.5% [30.6, 86.3]"
    unrated = by_name["random"]
    assert unrated["#"] == "-" and unrated["Rating (95%)"] == "unrated"
    assert unrated["Score (95%)"] == "-" and unrated["Cost / game"] == "-"


def test_markdown_says_unknown_where_the_llm_endpoint_did_not_report() -> None:
    rows = table_rows(leaderboard_markdown(result()), "#")
    header, llm = rows[0], rows[4]
    cells = dict(zip(header, llm, strict=True))
    assert cells["#"] == "3" and cells["Rating (95%)"] == "1398 [1290, 1490]"
    assert cells["Tokens / move in / out"] == "unknown / unknown"
    assert cells["Latency p50 / p95 s"] == "2.10 / 6.75"
    assert cells["Cost / game"] == "unknown"
    assert cells["Illegal / 1000 moves"] == "150.0" and cells["Forfeits"] == "1"
    engine = dict(zip(header, rows[3], strict=True))  # not an LLM, not a text player
    assert engine["Tokens / move in / out"] == engine["Forfeits"] == "-"


def test_markdown_escapes_names_so_the_table_and_the_page_hold() -> None:
    markdown = leaderboard_markdown(result())
    assert "<script>" not in markdown and "|b" not in markdown.replace("\\|b", "")
    assert r"openai:gpt?x=\<script\>alert(1)\</script\>\|b" in markdown
    for first in ("#", "Player", "Condition"):
        rows = table_rows(markdown, first)
        assert len({len(row) for row in rows}) == 1, first


def test_markdown_sections_config_matrix_endings_conditions_and_method() -> None:
    markdown = leaderboard_markdown(result())
    assert markdown.startswith("# Arena leaderboard\n")
    assert "round-robin, 2 games per pair, openings default (3), seed 7, at most 300 plies" in (
        markdown
    )
    header, _, *matrix = table_rows(markdown, "Player")
    assert len(header) == 5 and len(matrix) == 4
    assert matrix[0][1:] == ["-", "1.5/2", "2/2", "-"]
    assert matrix[2][1:] == ["0/2", "0/2", "-", "-"]
    endings_start = markdown.index("## Endings")
    endings_header, _, *ending_rows = table_rows(markdown[endings_start:], "Player")
    assert endings_header == ["Player", "checkmate", "max\\_plies", "illegal\\_move"]
    assert ending_rows[1][1:] == ["2", "1", "1"] and ending_rows[3][1:] == ["0", "0", "0"]
    _, _, condition = table_rows(markdown, "Condition")
    assert condition[0] == "fen+legal" and condition[2:] == ["4", "0", "0.0", "150.0"]
    assert "6 rated games, 1 stopped by an endpoint outage" in markdown
    assert "Stockfish at depth 8" in markdown and "Machine: 8 cores, Python 3.11." in markdown
    assert markdown.endswith("\n")


def test_markdown_leaves_out_the_conditions_and_empty_card_columns() -> None:
    bare = result(conditions=False)
    bare = bare.model_copy(
        update={
            "players": [
                card.model_copy(update={"quality": None, "text": None, "llm": None})
                for card in bare.players
            ]
        }
    )
    markdown = leaderboard_markdown(bare)
    assert "## Prompt conditions" not in markdown
    header, *_ = table_rows(markdown, "#")
    assert header[-1] == "Score (95%)" and "ACPL" not in markdown and "unknown" not in markdown


# -- HTML -------------------------------------------------------------------------------------


class StrictHTML(HTMLParser):
    """Fails on what html.parser lets pass: unclosed or mismatched tags, a missing doctype."""

    VOID = frozenset({"meta", "br", "hr", "img", "input", "link", "wbr", "col", "source"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.errors: list[str] = []
        self.doctype = ""
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.open[-1:] or 'nothing'}")
        else:
            self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(page: str) -> StrictHTML:
    parser = StrictHTML()
    parser.feed(page)
    parser.close()
    assert parser.doctype == "DOCTYPE html" and not parser.errors and not parser.open
    return parser


def test_html_parses_as_one_closed_html5_document() -> None:
    parser = parsed(leaderboard_html(result()))
    tags = [tag for tag, _ in parser.elements]
    assert tags[:2] == ["html", "head"] and tags.count("body") == 1
    assert tags.count("table") == 4 and tags.count("svg") == 1


def test_html_needs_no_external_resource_and_no_script() -> None:
    page = leaderboard_html(result())
    parser = parsed(page)
    assert all(tag != "script" for tag, _ in parser.elements)
    for tag, attrs in parser.elements:
        assert not {"src", "href", "xmlns"} & attrs.keys(), tag
        assert not any(re.search("https?://", value or "") for value in attrs.values()), tag
    style = page[page.index("<style>") : page.index("</style>")]
    assert "url(" not in style and "@import" not in style
    assert "https://example.org/bt" in "".join(parser.text)  # plain text may name a URL


def test_html_escapes_a_hostile_name_everywhere() -> None:
    page = leaderboard_html(result())
    assert "<script" not in page.lower()
    assert "openai:gpt?x=&lt;script&gt;alert(1)&lt;/script&gt;|b" in page
    assert LLM in "".join(parsed(page).text)


def test_html_plot_has_one_error_bar_per_rated_player_anchors_apart() -> None:
    parser = parsed(leaderboard_html(result()))
    bars = [attrs for tag, attrs in parser.elements if tag == "line" and attrs["class"] == "bar"]
    dots = [attrs for tag, attrs in parser.elements if tag == "circle"]
    assert len(bars) == len(dots) == 3  # "random" is unrated
    rows = [attrs["class"] for tag, attrs in parser.elements if tag == "g"]
    assert rows == ["row anchor", "row", "row"]
    anchor, engine, llm = bars
    assert anchor["x1"] == anchor["x2"]  # pinned: no interval
    assert float(llm["x1"]) < float(llm["x2"]) < float(engine["x1"]) < float(engine["x2"])
    assert all(
        float(bar["x1"]) <= float(dot["cx"]) <= float(bar["x2"])
        for bar, dot in zip(bars, dots, strict=True)
    )
    ticks = [text for text in parser.text if text.isdigit()]
    assert "1400" in ticks and "1800" in ticks


def test_html_heat_map_colours_cells_by_the_row_players_score() -> None:
    page = leaderboard_html(result())
    matrix = page[
        page.index('<table class="matrix">') : page.index(
            "</table>", page.index('<table class="matrix">')
        )
    ]
    cells = re.findall(
        r'<td class="num"( style="background: (#[0-9a-f]{6})")?>([^<]*)</td>', matrix
    )
    assert len(cells) == 16
    coloured = {text: colour for _, colour, text in cells if colour}
    assert coloured == {"1.5/2": "#aedcba", "2/2": "#5cb874", "0/2": "#e8685a", "0.5/2": "#f4b4ac"}
    assert sum(text == "-" and not colour for _, colour, text in cells) == 10


def test_html_shows_the_conditions_only_when_there_are_some() -> None:
    assert "<h2>Prompt conditions</h2>" in leaderboard_html(result())
    assert "Prompt conditions" not in leaderboard_html(result(conditions=False))


def test_write_reports_writes_both_files(tmp_path: Path) -> None:
    markdown, page = write_reports(result(), tmp_path / "out")
    assert markdown == tmp_path / "out" / "leaderboard.md"
    assert page == tmp_path / "out" / "leaderboard.html"
    assert markdown.read_text(encoding="utf-8") == leaderboard_markdown(result())
    assert page.read_text(encoding="utf-8") == leaderboard_html(result())


@pytest.mark.parametrize("name", ["a\nb", "x|y", "`code`", "[link](javascript:x)"])
def test_markdown_keeps_one_row_per_player_whatever_the_name(name: str) -> None:
    renamed = result().model_copy(
        update={"players": [result().players[0].model_copy(update={"name": name})]}
    )
    rows = table_rows(leaderboard_markdown(renamed), "#")
    assert len(rows) == 3 and len(rows[2]) == len(rows[0])
