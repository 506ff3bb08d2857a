"""Recording verifies each claim once per run: failed claims are not sent again by
later items, so the run's report agrees with the cassettes it leaves, and the
progress line counts the real number of claims."""

from __future__ import annotations

import json

import pytest

from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import Fault, JudgeCall, LLMDouble, Scripted
from tests.plugin.test_recording import ARTICLE, RANKER_CONFTEST

TOKENS = {"normal": "once-normal-token-1234", "javascript": "once-js-token-5678"}
KEY = "sk-once-key-0000"

# Four claims, each with its own page and wording; the last one's page cannot be
# crawled with either token (a claim that fails whatever the judge says).
PAGES = {
    "https://example.com/one": ARTICLE,
    "https://example.com/two": ARTICLE.replace("Water", "Fresh water"),
    "https://example.com/three": ARTICLE.replace("Water", "Tap water"),
}
BROKEN = "https://example.com/broken"
CLAIMS = """\
claims:
  - id: one
    claim: Water boils at 100 degrees Celsius at sea level.
    citations: [https://example.com/one]
  - id: two
    claim: Fresh water boils at 100 degrees Celsius at sea level.
    citations: [https://example.com/two]
  - id: three
    claim: Tap water boils at 100 degrees Celsius at sea level.
    citations: [https://example.com/three]
  - id: broken
    claim: Salt raises the boiling point slightly.
    citations: [https://example.com/broken]
"""


def refuse(call: JudgeCall) -> Scripted:
    return Fault("refusal")


@pytest.mark.parametrize("workers", [None, "2"], ids=["no-xdist", "xdist-2"])
def test_each_claim_is_attempted_once_in_a_recording_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: str | None
) -> None:
    pytester.makeconftest(RANKER_CONFTEST)
    pytester.makefile(".yaml", citecheck_once=CLAIMS)
    with CrawlbaseDouble(tokens=TOKENS) as api, LLMDouble(refuse, api_key=KEY) as llm:
        for url, text in PAGES.items():
            api.add(url, Page(markdown=text))
        api.add(BROKEN, Page(http_status=520, js=Page(http_status=520)))
        monkeypatch.setenv("CRAWLBASE_TOKEN", TOKENS["normal"])
        monkeypatch.setenv("CRAWLBASE_JS_TOKEN", TOKENS["javascript"])
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("CITECHECK_CRAWLBASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url("openai"))
        result = pytester.runpytest_subprocess(
            "--citecheck",
            "--citecheck-record=once",
            "--citecheck-report=report.json",
            "-p",
            "no:cacheprovider",
            *(["-n", workers] if workers else []),
        )
        crawls = {url: len(api.calls_for(url)) for url in [*PAGES, BROKEN]}
        judged = [c.claim for c in llm.calls]

    # Every claim fails (the judge refuses, one page is not crawlable): none is saved.
    result.assert_outcomes(failed=4)
    assert not list(pytester.path.rglob("*.cassette.yaml"))
    # Each page crawled once (the broken one once per token), each claim judged once.
    assert crawls == {**dict.fromkeys(PAGES, 1), BROKEN: 2}
    assert sorted(judged) == sorted(
        [
            "Water boils at 100 degrees Celsius at sea level.",
            "Fresh water boils at 100 degrees Celsius at sea level.",
            "Tap water boils at 100 degrees Celsius at sea level.",
        ]
    )
    if workers is None:  # xdist workers print no progress line
        result.stdout.fnmatch_lines(["citecheck: 4/4 claims, 4 citations, *"])
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["totals"]["claims"] == 4
    assert report["totals"]["by_label"]["error"] == 4
