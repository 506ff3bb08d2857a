"""The HTML report's pictures and charts in a real browser:
a contradicted verdict's page picture, taken through the loopback Crawling API and
replayed offline, drawn next to its quote; the three rates and each answer's label mix
as inline SVG. Debian's chromium driven by Playwright, as tests/e2e/test_html_browser.py
does (its fixtures are used here); nothing is loaded but the file itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.reports.html import render_html
from pytest_citecheck.reports.report import Report
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import LLMDouble
from tests.e2e import test_html_browser as in_browser
from tests.e2e.test_html_browser import Page
from tests.integration.test_screenshots import KEY, PICTURE, TOKENS, env, judge, pages, run

# The browser and its pages, and the example answers' report, as the browser tests use them.
browser, tab, answers_report = in_browser.browser, in_browser.tab, in_browser.answers_report


@pytest.fixture(scope="module")
def pictured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of a recording made with citecheck_screenshots, replayed offline."""
    root = tmp_path_factory.mktemp("pictured")
    with CrawlbaseDouble(tokens=TOKENS) as api, LLMDouble(judge, api_key=KEY) as llm:
        pages(api)
        address = env(api, llm)
        run(root, address, "once", shots=True)
    offline = {k: v for k, v in address.items() if not k.endswith(("TOKEN", "KEY"))}
    replayed = run(root, offline, "none", shots=True)
    report = Report(results={f"citecheck_report.yaml::{r.id}": r for r in replayed})
    path = root / "report.html"
    path.write_text(render_html(report.scrubbed_json()), encoding="utf-8")
    return path


def test_a_contradicted_verdicts_picture_appears_next_to_its_quote(
    tab: Page, pictured: Path
) -> None:
    page = tab.open(pictured)
    row = page.locator("tbody.claim", has=page.locator("button.toggle", has_text="wrong"))
    row.locator("button.toggle").click()
    citation = row.locator("details.citation").first
    image = citation.locator("figure.picture img")
    assert image.is_visible()
    # The browser decoded the picture the double took (6 x 4 pixels), from the file itself.
    size = image.evaluate("i => [i.complete, i.naturalWidth, i.naturalHeight]")
    assert size == [True, 6, 4]
    assert citation.locator("mark").first.is_visible()  # the quote, beside it
    # Its colour is the picture's: the page shows what the Crawling API's browser saw.
    pixel = image.evaluate(
        """i => { const c = document.createElement('canvas'); c.width = 1; c.height = 1;
        const x = c.getContext('2d'); x.drawImage(i, 0, 0); return Array.from(
        x.getImageData(0, 0, 1, 1).data); }"""
    )
    assert pixel == [*PICTURE_RGB, 255]
    # The supported claim has no picture: nobody must look at it.
    right = page.locator("tbody.claim", has=page.locator("button.toggle", has_text="right"))
    right.locator("button.toggle").click()
    assert right.locator("figure.picture").count() == 0
    assert tab.errors == []
    assert tab.requests == [pictured.as_uri()]


PICTURE_RGB = [220, 20, 60]
assert PICTURE  # the PNG tests.integration.test_screenshots plants, of that colour


def test_the_rates_are_drawn_as_bars_their_length_the_rate(tab: Page, pictured: Path) -> None:
    page = tab.open(pictured)
    chart = page.locator("#rates-chart svg.rates-chart")
    assert chart.is_visible()
    bars = chart.locator("g.rate-bar")
    assert bars.count() == 3
    names = [bars.nth(i).get_attribute("data-rate") for i in range(3)]
    assert names == ["link_works", "relevant", "fact_check"]
    widths = [bars.nth(i).locator("rect.fill").bounding_box() for i in range(3)]
    assert all(w is not None for w in widths)
    # Both links work and are relevant, one of two is supported: 160, 160 and 80 pixels.
    assert [round(w["width"]) for w in widths if w is not None] == [160, 160, 80]
    assert [bars.nth(i).get_attribute("data-value") for i in range(3)] == [
        "1.0000",
        "1.0000",
        "0.5000",
    ]
    assert tab.errors == []


def test_each_answer_draws_its_label_mix_and_rates(
    tab: Page, answers_report: tuple[Path, dict[str, Any]]
) -> None:
    path, data = answers_report
    page = tab.open(path)
    articles = page.locator("#answers article.answer")
    assert articles.count() == len(data["answers"])
    for i, answer in enumerate(data["answers"]):
        charts = articles.nth(i).locator("div.answer-charts")
        assert charts.locator("svg.rates-chart").is_visible()
        segments = charts.locator("svg.label-mix rect.seg")
        drawn = {
            segments.nth(j).get_attribute("data-label"): int(
                segments.nth(j).get_attribute("data-count") or 0
            )
            for j in range(segments.count())
        }
        labels = {s["claim_id"]: s["label"] for s in answer["text"] if s["claim_id"]}
        expected: dict[str, int] = {}
        for label in labels.values():
            expected[label or "not run"] = expected.get(label or "not run", 0) + 1
        assert drawn == expected
        # The segments fill the bar: their widths add up to the chart's.
        total = sum(
            (segments.nth(j).bounding_box() or {"width": 0.0})["width"]
            for j in range(segments.count())
        )
        assert round(total) == 320
    assert tab.errors == []
    assert tab.requests == [path.as_uri()]
