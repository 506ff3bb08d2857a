"""The recording budget stops claims verified with the ``citecheck`` fixture as it
stops a claim file's: against the loopback doubles, nothing past the budget is
crawled or judged, each claim it stopped is an error naming the command that
records it, and the gate fails saying why."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble
from tests.plugin.test_recording import ARTICLE, RANKER_CONFTEST, SECRETS

TESTS = """
def test_first(citecheck):
    result = citecheck.verify(
        "Water boils at 100 degrees Celsius at sea level.",
        ["https://example.com/science/boiling"],
    )
    assert result.label == "supported"


def test_second(citecheck):
    result = citecheck.verify(
        "Salt raises the boiling point slightly.", ["https://example.com/science/salt"]
    )
    print("SECOND", result.label, result.verdicts[0].reason)
    assert result.label == "supported"
"""


@pytest.fixture
def env(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[CrawlbaseDouble]:
    tokens = {"normal": SECRETS["CRAWLBASE_TOKEN"], "javascript": SECRETS["CRAWLBASE_JS_TOKEN"]}
    with CrawlbaseDouble(tokens=tokens) as api, LLMDouble(api_key=SECRETS["OPENAI_API_KEY"]) as llm:
        api.add("https://example.com/science/boiling", Page(markdown=ARTICLE))
        api.add("https://example.com/science/salt", Page(markdown=ARTICLE))
        for name, value in SECRETS.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("CITECHECK_CRAWLBASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url("openai"))
        pytester.makeconftest(RANKER_CONFTEST)
        pytester.makepyfile(test_answers=TESTS)
        yield api


def test_the_budget_stops_fixture_claims_and_fails_the_gate(
    pytester: pytest.Pytester, env: CrawlbaseDouble
) -> None:
    # A URL claim could need up to 8 credits and the first one spends 1.5: with a
    # budget of 9 the second claim does not fit and is never sent.
    result = pytester.runpytest_subprocess(
        "--citecheck-record=once", "--citecheck-max-credits=9", "--citecheck-report=r.json", "-s"
    )
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert [c.url for c in env.api_calls if c.status == 200] == [
        "https://example.com/science/boiling"
    ]
    result.stdout.fnmatch_lines(
        [
            "*SECOND error budget_exhausted",
            "*not recorded: the recording budget (max credits 9) ran out (1.5 of 9 credits; "
            "this claim could need up to 8 credits)*record it with: pytest --citecheck "
            "--citecheck-record=once test_answers.py::test_second*",
        ]
    )
    result.stdout.fnmatch_lines(["*citecheck gate FAILED: 1 claim not recorded: the recording*"])
    report = json.loads((pytester.path / "r.json").read_text())
    labels = sorted((c["label"], c["verdicts"][0].get("reason")) for c in report["claims"])
    assert labels == [("error", "budget_exhausted"), ("supported", None)]
    assert report["totals"]["by_label"].get("supported") == 1
    # The stopped test saved no cassette: recording it again starts from nothing.
    cassettes = pytester.path / "cassettes" / "test_answers"
    assert sorted(p.name for p in cassettes.iterdir()) == ["test_first.yaml"]


def test_without_a_budget_both_fixture_claims_are_recorded(
    pytester: pytest.Pytester, env: CrawlbaseDouble
) -> None:
    result = pytester.runpytest_subprocess("--citecheck-record=once", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*SECOND supported None"])
    assert len([c for c in env.api_calls if c.status == 200]) == 2
