"""Auditing a real deep-research report end to end: `citecheck import` of the saved
markdown, a pytest run against in-process doubles of the fetcher and the judge, and the
report's three rates in the terminal, the JSON, the markdown summary and the HTML, with a
floor on one of them failing the gate."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from pytest_citecheck.frontends.cli import main
from tests.plugin.fakes import stage_hooks

REPORT = (
    Path(__file__).parent.parent
    / "data/deep_research/open_deep_research__deepseekv4flash_task_016_v1.md"
)
# Two of the report's sources: one gone (404), one a deep link the site sends to its
# homepage. Every other page says the two facts below.
GONE = "https://rooster663.rssing.com/chan-71842862/all_p8.html"
HOMEPAGE = (
    "https://www.facebook.com/AustralianMillennials/posts/before-red-rooster-turned-into-one-of-"
    "australias-most-recognisable-fast-food-cha/1346171050884304"
)
PAGE = (
    "Red Rooster was founded in 1972 in Kelmscott, a suburb of Perth, Western Australia.\n\n"
    "The $5.50 Quarter Chicken and Chips deal is available daily from 9:00am until 4:00pm."
)
# A claim holding the key is supported by the quote; every other claim is not_found.
SCRIPT = {
    "1972": "Red Rooster was founded in 1972 in Kelmscott",
    "9:00am": "available daily from 9:00am until 4:00pm",
}

CONFTEST = f"""
import pytest
from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import JudgeReply, Usage
from pytest_citecheck.stages.fetch_rules import FetchResult

GONE = {GONE!r}
HOMEPAGE = {HOMEPAGE!r}
PAGE = {PAGE!r}
SCRIPT = {SCRIPT!r}


class ReportPages:
    def fetch(self, url):
        if url.rstrip("/") == GONE:
            return FetchResult(url=url, label=Label.UNREACHABLE, reason="http_404",
                               original_status=404)
        if url.rstrip("/") == HOMEPAGE:
            return FetchResult(url=url, label=Label.NOT_FOUND, reason="redirected_to_homepage",
                               final_url="https://www.facebook.com/", original_status=200)
        return FetchResult(url=url, text=PAGE, final_url=url, original_status=200)


class ScriptedJudge:
    name = "fake:judge"
    prompt_version = "fake-1"

    def judge(self, claim, passages):
        for key, quote in SCRIPT.items():
            if key in claim:
                return JudgeReply(label="supported", quote=quote, confidence=0.95,
                                  usage=Usage(input_tokens=10, output_tokens=2))
        return JudgeReply(label="not_found", quote=None, confidence=0.9,
                          usage=Usage(input_tokens=10, output_tokens=2))


class FirstPassages:
    def rank(self, claim, passages, k):
        return [(i, 1.0 - i / 10) for i in range(min(k, len(passages)))]
""" + stage_hooks("ReportPages", "ScriptedJudge", "FirstPassages")


def expected(claim_file: Path) -> tuple[int, int, int, int]:
    """(rated, link works, relevant, fact check) from the imported claim file and the
    doubles' script, counted here apart from the plugin's rule."""
    claims = yaml.safe_load(claim_file.read_text(encoding="utf-8"))["claims"]
    rated = works = decided = 0
    for claim in claims:
        for citation in claim["citations"]:
            url = (citation if isinstance(citation, str) else citation["url"]).rstrip("/")
            rated += 1
            if url in (GONE, HOMEPAGE):
                continue
            works += 1
            decided += any(key in claim["claim"] for key in SCRIPT)
    return rated, works, decided, decided


def test_a_real_reports_rates_in_every_format_and_a_floor_that_fails(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makeconftest(CONFTEST)
    shutil.copy(REPORT, pytester.path / "red-rooster.md")
    cwd = os.getcwd()
    os.chdir(pytester.path)
    try:
        assert main(["import", "red-rooster.md", "-o", "citecheck_report.yaml"]) == 0
    finally:
        os.chdir(cwd)
    capsys.readouterr()
    rated, works, relevant, fact = expected(pytester.path / "citecheck_report.yaml")
    assert (rated, works, relevant, fact) == (23, 20, 8, 8)  # the doubles' script, counted
    result = pytester.runpytest(
        "--citecheck",
        "--citecheck-record=once",
        "--citecheck-min-fact-check=0.5",
        "--citecheck-report=report.json",
        "--citecheck-md=summary.md",
        "--citecheck-html=report.html",
    )
    run = (
        f"link works {works / rated:.4f} ({works}/{rated}), relevant {relevant / rated:.4f} "
        f"({relevant}/{rated}), fact check {fact / rated:.4f} ({fact}/{rated})"
    )
    result.stdout.fnmatch_lines(
        [
            f"deep-research rates: {run}",
            f"  red-rooster: {run}",
            f"citecheck gate FAILED: fact check rate {fact / rated:.4f} ({fact}/{rated} "
            f"citations) is below citecheck_min_fact_check 0.5000 (short by "
            f"{0.5 - fact / rated:.4f})",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    data = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    for rates in (data["totals"]["rates"], data["answers"][0]["rates"]):
        counts = [rates[k] for k in ("rated", "link_works_count", "relevant_count")]
        assert [*counts, rates["fact_check_count"]] == [rated, works, relevant, fact]
    summary = (pytester.path / "summary.md").read_text(encoding="utf-8")
    assert f"| red-rooster | {works / rated:.4f} ({works}/{rated}) |" in summary
    assert f"Deep-research rates: link works **{works / rated:.4f}** ({works}/{rated})" in summary
    page = (pytester.path / "report.html").read_text(encoding="utf-8")
    shown = re.search(r'id="rates"[^>]*>(.*?)</div>', page, re.S)
    assert shown is not None
    assert f"fact check {fact / rated:.4f} ({fact}/{rated})" in " ".join(
        re.sub(r"<[^>]+>", " ", shown.group(1)).split()
    )
