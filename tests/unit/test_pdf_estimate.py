"""The dry run and the budget count a cited PDF as the Crawling API bills it: one crawl of
the file (1 credit + 0.5 for store=true), nothing when it is downloaded directly."""

from __future__ import annotations

from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.engine.estimate import WORST_CRAWLS, estimate_claim

PAGE = "https://example.com/article"
PDF = "https://example.com/paper.pdf"


def _claim() -> Claim:
    return Claim(
        id="c", claim="The paper says so.", citations=[Citation(url=PDF), Citation(url=PAGE)]
    )


def test_a_pdf_is_one_billed_crawl_and_reaches_the_judge() -> None:
    estimate = estimate_claim(_claim(), "openai:gpt-4o-mini")
    assert (estimate.crawls, estimate.credits, estimate.judge_calls) == (2, 3.0, 2)
    # Worst: the page's four crawls, and the PDF's file before a page's four.
    assert estimate.worst_crawls == WORST_CRAWLS + 1 + WORST_CRAWLS
    assert estimate.worst_credits == 8.0 + 1.5 + 8.0


def test_a_direct_download_costs_no_credits() -> None:
    estimate = estimate_claim(_claim(), "openai:gpt-4o-mini", pdf_fetch="direct")
    assert (estimate.crawls, estimate.credits, estimate.judge_calls) == (1, 1.5, 2)


def test_with_screenshots_the_worst_case_pictures_the_pdf_too() -> None:
    # A PDF's verdict a person must look at (pdf_no_text, review) is pictured as a page's.
    plain = estimate_claim(_claim(), "openai:gpt-4o-mini")
    pictured = estimate_claim(_claim(), "openai:gpt-4o-mini", screenshots=True)
    assert pictured.credits == plain.credits  # a picture is the worst case only
    # One JavaScript-token crawl (2 credits, not stored) for each of the two URLs.
    assert pictured.worst_credits == plain.worst_credits + 2 * 2.0
