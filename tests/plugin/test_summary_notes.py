"""What a run prints beside its verdicts: no third-party DEBUG lines under a failing item
(bm25s sets its own logger to DEBUG on import, and its "Building index" lines filled the
report of every failing claim recorded with the BM25 ranker), and this run's spend apart
from what replayed recordings hold."""

from __future__ import annotations

import pytest

from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import LLMDouble
from tests.plugin.test_recording import SECRETS, doubles, record  # noqa: F401

FAILING = """\
claims:
  - id: boiling
    claim: Water boils at 100 degrees Celsius at sea level.
    expect: contradicted
    citations:
      - https://example.com/science/boiling
"""


def test_a_failing_item_shows_no_bm25s_debug_lines(
    pytester: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("bm25s")
    pytester.makeini("[pytest]\ncitecheck_ranker = bm25\n")
    pytester.makefile(".yaml", citecheck_water=FAILING)
    for name in (*SECRETS, "CITECHECK_CRAWLBASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    result = record(pytester, doubles, monkeypatch, "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "boiling" in out and "FAILED" in out
    assert "Building index" not in out
    assert "DEBUG" not in out


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_a_run_that_records_one_claim_tells_its_spend_from_the_replayed_ones(
    pytester: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    from tests.plugin.test_recording import CLAIMS, RANKER_CONFTEST

    pytester.makeconftest(RANKER_CONFTEST)
    pytester.makefile(".yaml", citecheck_water=CLAIMS)
    for name in (*SECRETS, "CITECHECK_CRAWLBASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    first = record(pytester, doubles, monkeypatch, "--citecheck-report=first.json")
    first.assert_outcomes(passed=3)
    # Every claim went to the network: one line, as always.
    first.stdout.fnmatch_lines(["crawling API credits *, judge tokens * in / * out"])
    assert "this run:" not in first.stdout.str()
    (pytester.path / "cassettes" / "citecheck_water" / "pasta.yaml").unlink()
    again = record(pytester, doubles, monkeypatch, "--citecheck-report=again.json")
    again.assert_outcomes(passed=3)
    claims = {c["id"]: c for c in json.loads((pytester.path / "first.json").read_text())["claims"]}

    def spent(ids: list[str]) -> str:
        verdicts = [v for i in ids for v in claims[i]["verdicts"]]
        credits = sum(v["credits"] for v in verdicts)
        tin = sum((v["usage"] or {}).get("input_tokens", 0) for v in verdicts)
        tout = sum((v["usage"] or {}).get("output_tokens", 0) for v in verdicts)
        return f"crawling API credits {credits:g}, judge tokens {tin} in / {tout} out"

    again.stdout.fnmatch_lines(
        [
            f"this run: {spent(['pasta'])}; recorded (2 claims replayed, not billed): "
            f"{spent(['boiling', 'boiling-again'])}"
        ]
    )
