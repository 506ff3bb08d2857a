"""The Crawling API answered from Crawler deliveries, as the fetcher reads a crawl."""

from __future__ import annotations

import gzip
import threading

import httpx
import pytest

from pytest_citecheck.large_audit.delivery_transport import DeliveryTransport, NoDelivery
from pytest_citecheck.large_audit.job_store import Delivery
from pytest_citecheck.stages.fetch import CRAWLER_RID_HEADER, CrawlbaseFetcher

API = "https://api.crawlbase.test/"
PAGE = "# Boiling\n\n" + "Water boils at 100 degrees Celsius at sea level. " * 10


def delivered(url: str, text: str = PAGE, original: int = 200, pc: int = 200) -> Delivery:
    return Delivery("rid-42", url, original, pc, gzip.compress(text.encode()), 0.0)


class Elsewhere(httpx.BaseTransport):
    """The network, for what is not a crawl (a judge call)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(str(request.url))
        return httpx.Response(200, json={"ok": True})


def fetcher(transport: DeliveryTransport) -> CrawlbaseFetcher:
    client = httpx.Client(transport=transport)
    return CrawlbaseFetcher(token="t" * 20, js_token="j" * 20, base_url=API, client=client)


def test_the_fetcher_reads_a_delivered_page_like_a_synchronous_crawl() -> None:
    network = Elsewhere()
    transport = DeliveryTransport(API, network)
    url = "https://example.com/boiling"
    with transport.serving({url: delivered(url)}):
        result = fetcher(transport).fetch(url)
    assert result.text == PAGE
    assert (result.original_status, result.final_url) == (200, url)
    assert len(result.fetches) == 1  # one request: the readable page needed no other
    assert network.seen == []


def test_a_reply_carries_the_statuses_and_the_crawler_rid() -> None:
    transport = DeliveryTransport(API, Elsewhere())
    url = "https://example.com/gone"
    request = httpx.Request("GET", API, params={"token": "x", "url": url})
    with transport.serving({url: delivered(url, "Not Found", original=404)}):
        reply = transport.handle_request(request)
    assert reply.status_code == 200
    assert reply.headers["original_status"] == "404"
    assert reply.headers["pc_status"] == "200"
    assert reply.headers["url"] == url
    assert reply.headers[CRAWLER_RID_HEADER] == "rid-42"
    assert reply.read() == b"Not Found"


def test_other_requests_go_to_the_network() -> None:
    network = Elsewhere()
    transport = DeliveryTransport(API, network)
    judge = httpx.Request("POST", "https://api.openai.test/v1/chat/completions", json={})
    storage = httpx.Request("GET", API + "storage", params={"rid": "x"})
    with transport.serving({}):
        assert transport.handle_request(judge).status_code == 200
        assert transport.handle_request(storage).status_code == 200
    assert network.seen == [str(judge.url), str(storage.url)]


def test_a_page_with_no_delivery_is_never_fetched_live() -> None:
    network = Elsewhere()
    transport = DeliveryTransport(API, network)
    request = httpx.Request("GET", API, params={"url": "https://example.com/other"})
    with pytest.raises(NoDelivery):
        transport.handle_request(request)  # outside any claim
    with transport.serving({}), pytest.raises(NoDelivery):
        transport.handle_request(request)
    assert network.seen == []


def test_claims_verified_in_parallel_each_see_their_own_deliveries() -> None:
    transport = DeliveryTransport(API, Elsewhere())
    url = "https://example.com/same"
    seen: dict[str, str] = {}
    barrier = threading.Barrier(2)

    def claim(name: str) -> None:
        with transport.serving({url: delivered(url, f"page of {name}")}):
            barrier.wait()
            request = httpx.Request("GET", API, params={"url": url})
            seen[name] = transport.handle_request(request).read().decode()

    threads = [threading.Thread(target=claim, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": "page of a", "b": "page of b"}


def test_a_delivered_page_is_billed_once_without_storage_however_often_it_is_asked() -> None:
    transport = DeliveryTransport(API, Elsewhere())
    url = "https://example.com/thin"
    with transport.serving({url: delivered(url, "# Thin\n\nA short page.")}):
        result = fetcher(transport).fetch(url)
    # A thin page is asked again (without readability, then with JavaScript): the same
    # delivery answers, and only the first answer costs the Crawler's one crawl.
    assert len(result.fetches) > 1
    assert [f.credits for f in result.fetches] == [1.0] + [0.0] * (len(result.fetches) - 1)
