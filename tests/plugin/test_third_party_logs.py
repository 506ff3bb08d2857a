"""Third-party libraries' DEBUG records stay out of a failing item's captured log: bm25s
sets its own logger to DEBUG on import, and its "Building index" lines filled the report
of every failing claim recorded with the BM25 ranker."""

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
