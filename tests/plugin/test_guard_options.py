"""--citecheck-quote-match / --citecheck-quote-similarity and their ini options, end to end
with in-process fakes: what a user sees in the verdicts and in the JSON report."""

from __future__ import annotations

import json

import pytest

from tests.plugin.fakes import stage_hooks

CONFTEST = """
import pytest
from pytest_citecheck.stages.fetch_rules import FetchResult
from pytest_citecheck.claims.results import JudgeReply

PAGE = "Water boils at 100 degrees Celsius at sea level, where the air presses down."
QUOTES = {
    "Water boils at 100 C.": "water boils at 100 degrees celsius at sea level.",
    "Water boils at 90 C.": "water boils at 90 degrees celsius at sea level.",
}


class Fetcher:
    def fetch(self, url):
        return FetchResult(url=url, text=PAGE, final_url=url, original_status=200)


class Judge:
    name = "fake:judge"
    prompt_version = "fake-1"

    def judge(self, claim, passages):
        return JudgeReply(label="supported", quote=QUOTES[claim], confidence=0.95)


class Ranker:
    def rank(self, claim, passages, k):
        return [(0, 1.0)]
""" + stage_hooks("Fetcher", "Judge", "Ranker")

CLAIMS = """\
claims:
  - id: edited
    claim: Water boils at 100 C.
    citations: [https://example.com/boiling]
  - id: number-changed
    claim: Water boils at 90 C.
    citations: [https://example.com/boiling]
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=CLAIMS)
    return pytester


def run(
    suite: pytest.Pytester, *args: str
) -> tuple[pytest.RunResult, dict[str, dict[str, object]]]:
    result = suite.runpytest(
        "--citecheck", "--citecheck-record=all", "--citecheck-report=report.json", *args
    )
    report = json.loads((suite.path / "report.json").read_text())
    verdicts = {c["id"]: c["verdicts"][0] for c in report["claims"]}
    # The quote policy's part of the run block (which also says who ran what, when).
    policy = {k: v for k, v in report["run"].items() if k.startswith("quote_")}
    return result, {"run": policy, **verdicts}


def test_exact_is_the_default(suite: pytest.Pytester) -> None:
    _, out = run(suite)
    assert out["run"] == {"quote_match": "exact"}
    assert out["edited"]["label"] == "not_found"
    assert out["edited"]["reason"] == "evidence_quote_not_in_source"
    assert out["edited"]["judge_quote"] is None


@pytest.mark.parametrize(
    ("args", "ini"),
    [
        (["--citecheck-quote-match=fuzzy"], ""),
        ([], "citecheck_quote_match = fuzzy\n"),
        (["--citecheck-quote-match=fuzzy", "--citecheck-quote-similarity=0.95"], ""),
        ([], "citecheck_quote_match = fuzzy\ncitecheck_quote_similarity = 0.95\n"),
    ],
)
def test_fuzzy_reports_the_page_span_and_the_judge_quote(
    suite: pytest.Pytester, args: list[str], ini: str
) -> None:
    if ini:
        suite.makeini("[pytest]\n" + ini)
    result, out = run(suite, *args)
    similarity = 0.95 if "0.95" in " ".join(args) + ini else 0.9
    assert out["run"] == {"quote_match": "fuzzy", "quote_similarity": similarity}
    edited = out["edited"]
    assert edited["label"] == "supported"
    assert edited["evidence_quote"] == "Water boils at 100 degrees Celsius at sea level"
    assert edited["judge_quote"] == "water boils at 100 degrees celsius at sea level."
    assert edited["quote_similarity"] == 1.0
    # A changed number is never a light edit.
    changed = out["number-changed"]
    assert changed["label"] == "not_found"
    assert changed["reason"] == "evidence_quote_not_in_source"
    assert "differs in a number" in changed["detail"]
    result.stdout.fnmatch_lines(["*citation precision 0.5000 (1/2)*"])


def test_the_flag_wins_over_the_ini(suite: pytest.Pytester) -> None:
    suite.makeini("[pytest]\ncitecheck_quote_match = fuzzy\n")
    _, out = run(suite, "--citecheck-quote-match=exact")
    assert out["run"] == {"quote_match": "exact"}
    assert out["edited"]["label"] == "not_found"


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--citecheck-quote-match=loose"], "", "*invalid choice: 'loose'*"),
        (["--citecheck-quote-similarity=1.5"], "", "*'1.5' is not between 0 and 1*"),
        ([], "citecheck_quote_match = loose\n", "*citecheck_quote_match: 'loose' is not one of*"),
        ([], "citecheck_quote_similarity = high\n", "*citecheck_quote_similarity*"),
    ],
)
def test_bad_values_are_usage_errors(
    suite: pytest.Pytester, args: list[str], ini: str, message: str
) -> None:
    if ini:
        suite.makeini("[pytest]\n" + ini)
    result = suite.runpytest("--citecheck", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
