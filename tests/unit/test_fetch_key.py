"""The fetch key of a cited URL (core/urls.py): its fragment stripped, the same on
every fetch path -- the synchronous fetch, a Crawler push and its delivery's lookup,
the recheck's pushes, a cassette's match."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from pytest_citecheck.claims.schema import parse_claim
from pytest_citecheck.core.urls import fetch_url
from pytest_citecheck.large_audit.crawler_job import JobClaim, unpushed_result
from pytest_citecheck.large_audit.delivery_transport import DeliveryTransport
from pytest_citecheck.large_audit.job_store import Delivery
from pytest_citecheck.large_audit.pusher import CrawlerPusher
from pytest_citecheck.large_audit.recheck_work import RecheckWork
from pytest_citecheck.recording.matching import match_key, token_placeholder
from pytest_citecheck.stages.fetch import CrawlbaseFetcher
from pytest_citecheck.stages.fetch_rules import FetchResult, fetch_page

PAGE = "https://example.com/articles/boiling"
TEXT = "# Boiling\n\n" + "Water boils at 100 degrees Celsius at sea level. " * 10
API = "https://api.crawlbase.test/"
# The same page cited with each kind of fragment.
CITED = [
    PAGE,
    PAGE + "#history",
    PAGE + "#",
    PAGE + "#:~:text=Water%20boils",
    PAGE + "#history:~:text=Water%20boils,sea%20level",
    PAGE + "#:~:text=Water&text=boils",
]


@pytest.mark.parametrize(
    ("url", "key"),
    [
        *((cited, PAGE) for cited in CITED),
        (PAGE + "?q=1#top", PAGE + "?q=1"),
        # A route a page's script reads is kept; a text fragment after it is not.
        ("https://app.example.com/#/docs/intro", "https://app.example.com/#/docs/intro"),
        ("https://app.example.com/#!/docs", "https://app.example.com/#!/docs"),
        ("https://app.example.com/#/docs:~:text=Intro", "https://app.example.com/#/docs"),
    ],
)
def test_the_fetch_key_is_the_cited_url_without_its_fragment(url: str, key: str) -> None:
    assert fetch_url(url) == key
    assert fetch_url(key) == key  # a key is its own key


class Asked:
    """A fetcher that says which URLs it was asked for."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def fetch(self, url: str) -> FetchResult:
        self.urls.append(url)
        return FetchResult(url=url, text=TEXT, final_url=url, original_status=200)


def test_the_synchronous_fetch_asks_for_the_fetch_key() -> None:
    fetcher = Asked()
    texts = {fetch_page(fetcher, url, None).text for url in CITED}
    assert fetcher.urls == [PAGE] * len(CITED)
    assert texts == {TEXT}


def test_a_push_sends_the_fetch_key_never_a_fragment() -> None:
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.extend(parse_qs(urlsplit(str(request.url)).query)["url"])
        return httpx.Response(200, json={"rid": "r1"})

    client = httpx.Client(transport=httpx.MockTransport(answer))
    pusher = CrawlerPusher(token="t" * 20, crawler="audit", base_url=API, client=client)
    for url in CITED:
        assert pusher.push(url, {"Citecheck-Job": "nightly"}).outcome == "accepted"
    assert sent == [PAGE] * len(CITED)


def job_claim(tmp_path: Path, with_cassette: bool = False) -> JobClaim:
    claim = parse_claim({"id": "c", "claim": "Water boils at 100 degrees.", "citations": CITED})
    cassette = tmp_path / "c.yaml"
    if with_cassette:
        cassette.write_text("interactions: []\nversion: 1\n", encoding="utf-8")
    return JobClaim(key="o.jsonl::c", claim=claim, cassette=cassette, ident="o.c")


def test_a_job_pushes_and_a_recheck_pushes_the_fetch_key(tmp_path: Path) -> None:
    jc = job_claim(tmp_path, with_cassette=True)
    expected = [(f"o.c#{n}", PAGE) for n in range(1, len(CITED) + 1)]
    assert jc.pushed_citations("public") == expected
    work = RecheckWork(cast(Any, None))  # pushed_citations reads the claim only
    assert work.pushed_citations(jc) == expected


def test_a_refused_push_is_named_on_every_citation_of_its_page(tmp_path: Path) -> None:
    jc = job_claim(tmp_path)
    result = unpushed_result(jc.claim, {PAGE: "push refused: HTTP 422"})
    assert [v.url for v in result.verdicts] == CITED
    assert {v.detail for v in result.verdicts} == {
        "the Crawler never received this page: push refused: HTTP 422"
    }


def test_a_delivery_is_found_by_the_fetch_key_whatever_fragment_is_asked() -> None:
    transport = DeliveryTransport(API, httpx.MockTransport(lambda r: httpx.Response(599)))
    delivery = Delivery("rid-7", PAGE, 200, 200, gzip.compress(TEXT.encode()), 0.0)
    client = httpx.Client(transport=transport)
    fetcher = CrawlbaseFetcher(token="t" * 20, js_token="j" * 20, base_url=API, client=client)
    with transport.serving({PAGE: delivery}):
        for url in CITED:
            # Asked straight, as a fetcher that did not strip the fragment would.
            assert fetcher.fetch(url).text == TEXT


def test_a_recording_made_with_a_fragment_matches_the_fetch_key() -> None:
    placeholder = token_placeholder({"normal": "t" * 20})
    keys = {
        match_key("GET", str(httpx.URL(API, params={"token": "t" * 20, "url": url})), placeholder)
        for url in CITED
    }
    assert len(keys) == 1
    assert dict(next(iter(keys))[5])["url"] == PAGE
