"""The eval leaderboard: what each table shows, and user text escaped in Markdown and HTML."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from multiagent.evaluation.leaderboard import leaderboard_html, leaderboard_markdown
from multiagent.evaluation.result import EvalResult, score

NASTY = 'scripted:x?name=<b>&"'


def run_result(build) -> EvalResult:
    """random 1, the nasty spec 3, the strong baseline 5 on both seeds, in two conditions; an
    LLM whose usage is partly unknown in the configured condition."""
    episodes = []
    for condition, shift in (("configured", 0.0), ("full", 1.0)):
        for spec, value in ((NASTY, 3.0), ("random", 1.0), (build.strong, 5.0)):
            for index in range(2):
                rewards = (value - 1 + shift, value + 1 + shift, 2.0)
                episodes.append(build.episode(spec, index, rewards, condition=condition))
    llm_seats = [
        build.seat("Forager_1", True, build.llm, 0.0, requests=2, tokens_in=None, tokens_out=4,
                   status="endpoint_failure", invalid_actions=1, invalid_reasons={"bad_enum": 1}),
        build.seat("Forager_2", True, build.llm, 0.0, requests=2, tokens_in=10, tokens_out=4),
        build.seat("Forager_3", False, "noop", 2.0),
    ]  # fmt: skip
    episodes.append(build.episode(build.llm, 0, (0, 0, 0), seats=llm_seats))
    config = build.config(focal=[NASTY, build.llm])
    return score(config, episodes, world=build.world(), bootstrap=50, timings=False)


class Tags(HTMLParser):
    """Every start tag of a page, to check no script or external resource slipped in."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += attrs


def test_html_is_self_contained_and_escapes_user_text(build):
    page = leaderboard_html(run_result(build))
    assert "<script" not in page.lower()
    assert "&lt;b&gt;&amp;&quot;" in page and "<b>" not in page
    parser = Tags()
    parser.feed(page)
    assert "script" not in parser.tags and "link" not in parser.tags and "img" not in parser.tags
    assert {name for name, _ in parser.attributes} <= {
        "lang",
        "charset",
        "name",
        "content",
        "class",
    }
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page


def test_markdown_escapes_user_text(build):
    text = leaderboard_markdown(run_result(build))
    assert r"scripted:x?name=\<b\>&" in text and "<b>" not in text


def table_rows(text: str, after: str) -> list[list[str]]:
    """The rows of the first Markdown table after the line ``after``, split into cells."""
    lines = text[text.index(after) :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def test_scores_table_ranks_focal_specs_with_intervals(build):
    text = leaderboard_markdown(run_result(build))
    rows = table_rows(text, "### Scenario duel, condition configured, background default")
    assert [row[1] for row in rows] == [
        r"scripted:forage\_strong (baseline)",
        r"scripted:x?name=\<b\>&\"".replace('\\"', '"'),
        "random (baseline)",
        r"openai:tiny-model?base\_url=http://localhost:1/v1",
    ]
    strong, nasty, random, llm = rows
    assert strong[:6] == ["1", strong[1], "2", "5.0 [5.0, 5.0]", "4.0 [4.0, 4.0]",
                          "1.00 [1.00, 1.00]"]  # fmt: skip
    assert nasty[3:6] == ["3.0 [3.0, 3.0]", "2.0 [2.0, 2.0]", "0.50 [0.50, 0.50]"]
    assert random[4:6] == ["-", "0.00 [0.00, 0.00]"]  # random against itself: not applicable
    assert llm[4:6] == ["-1.0 [-1.0, -1.0]", "-0.25 [-0.25, -0.25]"]  # paired on episode 0
    assert nasty[6] == "2.0 [2.0, 2.0]"  # background
    assert nasty[7] == "8.0 [8.0, 8.0]"  # welfare 2 + 4 + 2
    # equality of [2, 4, 2]: Gini = 8 / (2 * 9 * 8/3) = 1/6
    assert nasty[8] == "0.83 [0.83, 0.83]"
    assert nasty[9:] == ["10.0 [10.0, 10.0]", "0"]  # survival turns, collapsed %


def test_value_of_information_ratings_and_players_tables(build):
    result = run_result(build)
    text = leaderboard_markdown(result)
    effects = table_rows(text, "## Value of information and noise")
    assert effects[0][3:] == ["full", "configured", "1.00 [1.00, 1.00]"]
    ratings = table_rows(text, "## Ratings")
    assert [row[1] for row in ratings][::3] == [
        r"scripted:forage\_strong",
        "openai:tiny-model?base\\_url=http://localhost:1/v1",
    ]
    assert {row[1]: row[2] for row in ratings}["random"] == "1000 anchor"
    players = {(row[0], row[1]): row for row in table_rows(text, "## Players")}
    llm = players[(r"openai:tiny-model?base\_url=http://localhost:1/v1", "focal")]
    assert llm[4] == "50.0"  # 1 invalid in 20 decisions
    assert llm[9] == "unknown / 8" and llm[11] == "-"  # no price given
    statuses = {(row[0], row[1]): row[2:] for row in table_rows(text, "### Refusals and")}
    assert statuses[(llm[0], "focal")] == ["bad\\_enum 1", "0", "1", "0", "1", "0"]


def test_one_condition_and_one_spec_say_so(build):
    episodes = [build.episode(build.focal, 0, (1, 1, 1))]
    result = score(build.config(), episodes, world=build.world(), bootstrap=10)
    text = leaderboard_markdown(result)
    assert "One condition only" in text and "no ratings" in text
    assert "add them to the baselines" in text  # the note under the scores table
