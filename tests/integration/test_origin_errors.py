"""A server error page instead of the page -- served with HTTP 200 by a proxy, a load
balancer or a CDN, or with the origin's 5xx -- is ``error`` with its reason, never
``not_found`` and never judged."""

from __future__ import annotations

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation
from pytest_citecheck.engine.judging import Judging
from pytest_citecheck.engine.pipeline import Verifier
from pytest_citecheck.stages.fetch import CrawlbaseFetcher
from pytest_citecheck.stages.fetch_rules import FetchResult, fetch_page, server_error_page
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.integration.test_blocked import _Fetcher, _Judge, _Ranker
from tests.integration.test_blocked import api as api  # the fixtures: a Crawling API double
from tests.integration.test_blocked import fetcher as fetcher  # and a fetcher on it

URL = "https://example.com/articles/bridge"
ARTICLE = "# The bridge\n\n" + "The council approved the new bridge on 4 May 2021. " * 20
# What proxies and CDNs answer in place of the page (their bodies as markdown).
ERROR_PAGES = {
    "502 Bad Gateway": "# 502 Bad Gateway\n\n---\n\nnginx/1.18.0 (Ubuntu)",
    "503 Service Unavailable": "# Service Temporarily Unavailable\n\nThe server is "
    "temporarily unable to service your request due to maintenance downtime.",
    "504 Gateway Timeout": "# 504 Gateway Time-out\n\nThe server didn't respond in time.",
    "500 Internal Server Error": "# Internal Server Error\n\nThe server encountered an "
    "internal error and was unable to complete your request.",
    "Cloudflare 5xx error": "# Web server is down Error code 521\n\nVisit cloudflare.com "
    "for more information.",
    "upstream error": "upstream connect error or disconnect/reset before headers. "
    "reset reason: connection failure",
}


@pytest.mark.parametrize("name", ERROR_PAGES)
def test_an_error_page_served_with_200_is_an_error_with_its_reason(
    api: CrawlbaseDouble, fetcher: CrawlbaseFetcher, name: str
) -> None:
    api.add(URL, Page(markdown=ERROR_PAGES[name]))  # HTTP 200, original_status 200
    result = fetch_page(fetcher, URL, None)
    assert (result.label, result.reason) == (Label.ERROR, Reason.ORIGIN_ERROR)
    assert result.text is None
    assert f"({name}) with HTTP 200" in (result.detail or "")


def test_an_origin_5xx_is_an_error_whatever_the_page_says(
    api: CrawlbaseDouble, fetcher: CrawlbaseFetcher
) -> None:
    api.add(URL, Page(markdown=ARTICLE, original_status=503))
    result = fetch_page(fetcher, URL, None)
    assert (result.label, result.reason) == (Label.ERROR, Reason.ORIGIN_ERROR)
    assert "the site answered HTTP 503" in (result.detail or "")


def test_an_article_about_gateways_is_an_article() -> None:
    long = ARTICLE + "Engineers call a failing proxy a bad gateway (HTTP 502). " * 5
    assert server_error_page(long, 200) is None
    assert server_error_page("Our service is unavailable in your country? No.", 200) is None
    assert server_error_page(ARTICLE, 404) is None and server_error_page(None, None) is None


def test_a_custom_fetchers_error_page_is_an_error_and_the_judge_is_not_asked() -> None:
    judge = _Judge()
    page = FetchResult(url=URL, text=ERROR_PAGES["502 Bad Gateway"], original_status=200)
    verifier = Verifier(fetcher=_Fetcher(page), ranker=_Ranker(), judging=Judging(judge=judge))
    verdict = verifier.verify_citation("The bridge was approved.", Citation(url=URL))
    assert (verdict.label, verdict.reason) == (Label.ERROR, Reason.ORIGIN_ERROR)
    assert "502 Bad Gateway" in (verdict.detail or "")
    assert judge.calls == 0
