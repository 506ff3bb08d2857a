"""--citecheck-recheck: a scheduled pytest run that fetches the recorded pages live again.

Recorded against the loopback doubles with ``--citecheck-record=once``; then the
Crawling API double serves one page unchanged, one with its evidence rewritten and
one gone, and ``pytest --citecheck --citecheck-recheck`` must fail exactly the
claims whose evidence or page is gone, leave the cassettes alone, and say why.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble

TOKENS = {"normal": "recheck-normal-token-5f3a9c", "javascript": "recheck-js-token-8d2b6e"}
KEY = "sk-recheck-openai-key-3c7e9a"


def page(first: str) -> str:
    return (
        f"# Bridges\n\n{first} It was two years late and over budget.\n\n"
        + "The council debated the cost for months before the vote. " * 5
    )


THEN = "The Harbour Bridge opened to traffic on 3 May 2021."
CLAIMS = """\
claims:
  - id: unchanged
    claim: The Harbour Bridge opened in May 2021.
    citations:
      - https://example.com/bridges/unchanged
  - id: rewritten
    claim: The Harbour Bridge opened in May 2021.
    citations:
      - https://example.com/bridges/rewritten
  - id: gone
    claim: The Harbour Bridge opened in May 2021.
    citations:
      - https://example.com/bridges/gone
"""
CONFTEST = """
import pytest

class FirstPassages:
    def rank(self, claim, passages, k):
        return [(i, 1.0) for i in range(min(k, len(passages)))]

@pytest.hookimpl(optionalhook=True)
def pytest_citecheck_make_ranker(config):
    return FirstPassages()
"""


@pytest.fixture
def doubles(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    with CrawlbaseDouble(tokens=TOKENS) as api, LLMDouble(api_key=KEY) as llm:
        for case in ("unchanged", "rewritten", "gone"):
            api.add(f"https://example.com/bridges/{case}", Page(markdown=page(THEN)))
        monkeypatch.setenv("CRAWLBASE_TOKEN", TOKENS["normal"])
        monkeypatch.setenv("CRAWLBASE_JS_TOKEN", TOKENS["javascript"])
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("CITECHECK_CRAWLBASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url("openai"))
        yield api, llm


@pytest.fixture
def recorded(
    pytester: pytest.Pytester, doubles: tuple[CrawlbaseDouble, LLMDouble]
) -> pytest.Pytester:
    api, llm = doubles
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_bridges=CLAIMS)
    result = pytester.runpytest_subprocess("--citecheck", "--citecheck-record=once")
    result.assert_outcomes(passed=3)
    api.add("https://example.com/bridges/rewritten", Page(markdown=page("The bridge opened.")))
    api.add("https://example.com/bridges/gone", Page(markdown="# Not Found", original_status=404))
    api.reset()
    llm.calls.clear()
    return pytester


def cassettes(root: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes() for p in (root / "cassettes" / "citecheck_bridges").glob("*.yaml")
    }


@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_recheck_fails_the_claims_whose_evidence_or_page_is_gone(
    recorded: pytest.Pytester, doubles: tuple[CrawlbaseDouble, LLMDouble]
) -> None:
    api, llm = doubles
    before = cassettes(recorded.path)

    result = recorded.runpytest_subprocess("--citecheck", "--citecheck-recheck", "-rf")

    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "citecheck: recheck: evidence_gone https://example.com/bridges/rewritten "
            "(the evidence quote is no longer on the page)",
            "citecheck: recheck: page_gone https://example.com/bridges/gone "
            "(The page answered HTTP 404.)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*= citecheck recheck =*",
            "recheck: 3 claims, 3 cited pages",
            "same 1 | changed 0 | evidence_gone 1 | page_gone 1 | moved 0 | blocked 0 | error 0",
            "*citecheck recheck FAILED: 1 evidence_gone, 1 page_gone "
            "(citecheck_recheck_fail_on evidence_gone,page_gone,error)",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # Every page was fetched live once; the judge was asked once, about the rewritten page.
    assert sorted(c.url or "" for c in api.api_calls) == sorted(
        f"https://example.com/bridges/{case}" for case in ("unchanged", "rewritten", "gone")
    )
    assert len(llm.calls) == 1
    assert cassettes(recorded.path) == before
    assert TOKENS["normal"] not in result.stdout.str() and KEY not in result.stdout.str()


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_recheck_fail_on_none_passes_and_still_reports(
    recorded: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    step = recorded.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = recorded.runpytest_subprocess(
        "--citecheck", "--citecheck-recheck", "--citecheck-recheck-fail-on=none"
    )

    # The job page gets the replay's summary, then the recheck's.
    text = step.read_text(encoding="utf-8")
    assert "## citecheck: gate passed" in text
    assert text.index("## citecheck: gate passed") < text.index("## citecheck recheck: passed")
    assert "| evidence_gone | citecheck_bridges.yaml::rewritten |" in text

    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        ["*evidence_gone*citecheck_bridges.yaml::rewritten*", "citecheck recheck passed"]
    )


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_recheck_under_xdist_reports_the_same(
    recorded: pytest.Pytester, doubles: tuple[CrawlbaseDouble, LLMDouble]
) -> None:
    pytest.importorskip("xdist")
    result = recorded.runpytest_subprocess("--citecheck", "--citecheck-recheck", "-n", "2")

    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "same 1 | changed 0 | evidence_gone 1 | page_gone 1 | moved 0 | blocked 0 | error 0",
            "*citecheck recheck FAILED: 1 evidence_gone, 1 page_gone*",
        ]
    )


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_recheck_replays_so_a_record_mode_is_a_usage_error(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest_subprocess(
        "--citecheck", "--citecheck-recheck", "--citecheck-record=once"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--citecheck-recheck compares the live pages with the recordings*"]
    )


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_recheck_needs_the_crawling_api_token(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CRAWLBASE_TOKEN")
    result = recorded.runpytest_subprocess("--citecheck", "--citecheck-recheck")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--citecheck-recheck: CRAWLBASE_TOKEN is not set*"])


def test_a_bad_fail_on_is_a_usage_error_at_parse_time(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--citecheck", "--citecheck-recheck", "--citecheck-recheck-fail-on=gone"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'gone' is not a list of recheck statuses*"])
