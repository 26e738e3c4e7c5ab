"""Tables of user text for the leaderboards both env families write, in Markdown and in HTML.

- ``Table``: a header and rows of plain-text cells; the first ``text_columns`` columns hold names
  and labels, the others numbers already formatted.
- ``markdown_text`` and ``markdown_table``: a cell's text as literal Markdown, and a whole table.
- ``html_escape``, ``html_table`` and ``html_page``: the same for one self-contained HTML page
  (inline CSS, ``TABLE_CSS`` for the tables; no script, no external resource).

Cells hold user text (player specs such as ``openai:m?x=<b>``, world names), so every text is
escaped for where it goes: Markdown's special characters and line breaks, or HTML's.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

__all__ = [
    "TABLE_CSS",
    "Table",
    "html_escape",
    "html_page",
    "html_table",
    "markdown_table",
    "markdown_text",
]

TABLE_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.name, th.name { max-width: 24em; overflow-wrap: anywhere; }
"""


@dataclass(frozen=True)
class Table:
    """Plain-text cells: the first ``text_columns`` columns hold names and labels (escaped as
    text, left-aligned), the others numbers formatted by the caller (right-aligned)."""

    header: list[str]
    rows: list[list[str]]
    text_columns: int = 1


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")
_BREAKS = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")


def markdown_text(text: str) -> str:
    """``text`` as literal Markdown inside one table cell (or one paragraph).

    Example:
        >>> print(markdown_text("openai:gpt?x=<script>|*b*"))
        openai:gpt?x=\\<script\\>\\|\\*b\\*
    """
    return _MARKDOWN_SPECIAL.sub(r"\\\1", _BREAKS.sub(" ", text))


def markdown_table(table: Table) -> str:
    """A GitHub-flavoured Markdown table; the text columns escaped, the numbers as they are.

    Example:
        >>> print(markdown_table(Table(["Player", "Score"], [["a|b", "1.5"]])))
        | Player | Score |
        | :--- | ---: |
        | a\\|b | 1.5 |
    """
    rules = [":---" if index < table.text_columns else "---:" for index in range(len(table.header))]
    header = [markdown_text(cell) for cell in table.header]
    rows = [
        [
            markdown_text(cell) if index < table.text_columns else cell
            for index, cell in enumerate(row)
        ]
        for row in table.rows
    ]
    return "\n".join(f"| {' | '.join(line)} |" for line in [header, rules, *rows])


def html_escape(text: str) -> str:
    """``text`` safe inside an HTML element or a quoted attribute.

    Example:
        >>> html_escape('<b>&"')
        '&lt;b&gt;&amp;&quot;'
    """
    return html.escape(text, quote=True)


def html_table(table: Table, css_class: str) -> str:
    """A ``<table>`` with every cell escaped; text cells class ``name``, numbers ``num``.

    Example:
        >>> print(html_table(Table(["Player"], [["<b>"]]), "players"))
        <table class="players">
        <thead><tr><th class="name">Player</th></tr></thead>
        <tbody>
        <tr><td class="name">&lt;b&gt;</td></tr>
        </tbody>
        </table>
    """

    def cells(row: list[str], tag: str) -> str:
        return "".join(
            f'<{tag} class="{"name" if index < table.text_columns else "num"}">'
            f"{html_escape(cell)}</{tag}>"
            for index, cell in enumerate(row)
        )

    body = "".join(f"<tr>{cells(row, 'td')}</tr>\n" for row in table.rows)
    return (
        f'<table class="{html_escape(css_class)}">\n'
        f"<thead><tr>{cells(table.header, 'th')}</tr></thead>\n"
        f"<tbody>\n{body}</tbody>\n</table>"
    )


def html_page(title: str, body: str, css: str = TABLE_CSS) -> str:
    """One HTML5 page around ``body`` (already HTML): ``title`` escaped, ``css`` inline.

    Example:
        >>> page = html_page("A & B", "<p>hi</p>")
        >>> "<title>A &amp; B</title>" in page, "<script" in page
        (True, False)
    """
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html_escape(title)}</title>\n<style>{css}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )
