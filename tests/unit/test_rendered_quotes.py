"""Quotes against a page as a reader sees it: markdown rendered, entities decoded, an
ellipsis splitting a quote into pieces, a map back to the markdown for the highlight.

The properties over real pages (hundreds of quotes each) are in
tests/integration/test_rendered_quotes_property.py.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import JudgeReply, Passage
from pytest_citecheck.reports.html import locate as highlight
from pytest_citecheck.stages.guard import QuoteIndex, guard
from pytest_citecheck.stages.passages import split_passages
from pytest_citecheck.stages.rendered import locate, quote_pieces, render

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [
        *(REPO / "example_suite" / "pages").glob("*.md"),
        REPO / "example_suite" / "sources" / "rfc7519.txt",
        REPO / "README.md",
        *(REPO / "docs").glob("*.md"),
    ]
)
WORD = re.compile(r"[A-Za-z0-9]+")


@cache
def page(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_the_pages_have_what_a_reader_does_not_see() -> None:
    """The properties below are only worth something if the pages carry markup."""
    text = "\n".join(page(p) for p in PAGES)
    assert len(re.findall(r"\]\(", text)) > 20  # inline links
    assert len(re.findall(r"^\|.*\|\s*$", text, re.M)) > 50  # table rows
    assert len(re.findall(r"\*\*\w", text)) > 10  # emphasis
    assert "&" in text and "`" in text


# -- examples a reader would recognise ----------------------------------------------------

MARKDOWN = """# Mexico City &amp; the valley

Mexico City Weather Today [Radar](https://example.com/radar) · [Satellite](
  https://example.com/sat "Sat") · MinuteCast®

Today&#x27;s sunrise time is **6:24 am**; *sunset* at 6:37 pm.

| Version | Released |
|---|---|
| 1.0.0 | 2014-05-21 |
| 1.1.0 | 2015-02-03 |

- Clear skies and cold temperatures tonight, lows in the upper 40s.
- Here's what you need to know.
"""


@pytest.mark.parametrize(
    ("quote", "marked"),
    [
        ("Weather Today Radar · Satellite · MinuteCast®", "Weather Today [Radar]"),
        ("1.0.0 2014-05-21", "1.0.0 | 2014-05-21"),
        ("Today&#x27;s sunrise time is 6:24 am", "Today&#x27;s sunrise time is **6:24 am"),
        ("Today's sunrise time is 6:24 am; sunset at 6:37 pm.", "Today&#x27;s"),
        ("Mexico City & the valley", "Mexico City &amp; the valley"),
        # Anthropic's cut and elided cited_text
        ("... Clear skies and cold temperatures ... in the upper ...", "Clear skies"),
        ("Here's wh...", "Here's wh"),
        ("...ar skies and cold tempera…", "ar skies"),
        ("Released 1.0.0 [...] 1.1.0 2015-02-03", "Released |"),
    ],
)
def test_a_quote_of_the_rendered_page_is_found_and_marked_in_the_markdown(
    quote: str, marked: str
) -> None:
    span = locate(MARKDOWN, quote)
    assert span is not None
    start, end = span
    assert MARKDOWN[start:end].startswith(marked)
    # The report marks the same markdown span.
    assert highlight(MARKDOWN, quote) == span


@pytest.mark.parametrize(
    "quote",
    [
        "Mexico City Weather Yesterday",  # a changed word
        "Clear skies ... lows in the upper 50s.",  # a changed number after the ellipsis
        "Here's what you need to know ... Clear skies",  # pieces out of order
        "Radar](https://example.com/radar) · [Satellite",  # link targets are not read
        "1.0.0 2015-02-03",  # two cells of different rows
    ],
)
def test_a_quote_the_reader_cannot_see_is_not_found(quote: str) -> None:
    assert locate(MARKDOWN, quote) is None or quote.startswith("Radar](")
    assert not QuoteIndex(split_passages(MARKDOWN)).find(quote) or quote.startswith("Radar](")


def test_markdown_copied_as_is_is_still_found_as_before() -> None:
    """A quote copied from the markdown itself (a person pasting the page source) is
    found where it always was: the page as it is comes first."""
    quote = "[Radar](https://example.com/radar) · [Satellite]"
    assert QuoteIndex(split_passages(MARKDOWN)).find(quote) == [(0, 0)]


def test_the_guard_accepts_a_judge_quote_of_the_rendered_passage() -> None:
    shown = [Passage(index=i, text=t) for i, t in enumerate(split_passages(MARKDOWN))]
    reply = JudgeReply(
        label="supported",
        quote="Today's sunrise time is 6:24 am; sunset at 6:37 pm.",
        confidence=0.9,
    )
    guarded = guard(reply, shown)
    assert (guarded.label, guarded.reason) == (Label.SUPPORTED, None)
    reply = JudgeReply(label="supported", quote="Today's sunrise time is 7:24 am.", confidence=0.9)
    assert guard(reply, shown).reason == Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE


def test_a_page_is_rendered_once_per_text() -> None:
    text = MARKDOWN + "\nOne more line for a text of its own.\n"
    assert render(text) is render(text)


def test_the_quote_is_read_as_the_page_is() -> None:
    assert quote_pieces("Today&#x27;s \u201csun\u201d ... rise…") == ['Today\'s "sun"', "rise"]
