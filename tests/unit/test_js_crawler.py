"""A Crawler job's pages that need JavaScript: the delivery transport never answers a
JavaScript-token request with the normal delivery, the job's store keeps JavaScript
pushes apart, and a JavaScript pusher pushes with the JavaScript token."""

from __future__ import annotations

import gzip
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from pytest_citecheck.core.errors import ConfigurationError, CrawlDeferred, StageFailed
from pytest_citecheck.core.secrets import TOKEN_PLACEHOLDERS
from pytest_citecheck.large_audit.delivery_transport import DeliveryTransport
from pytest_citecheck.large_audit.job_store import (
    Delivery,
    DeliveryOutcome,
    JobState,
    JobStore,
    is_js_citation,
    js_citation_id,
)
from pytest_citecheck.large_audit.pusher import CrawlerPusher
from pytest_citecheck.stages.fetch import CRAWLER_RID_HEADER

API = "https://api.test/"
URL = "https://example.com/app"
NORMAL = "normal-token-0123456789"
JS = "javascript-token-0123456789"


def delivery(rid: str, text: str) -> Delivery:
    return Delivery(rid, URL, 200, 200, gzip.compress(text.encode()), time.time())


def crawl(transport: DeliveryTransport, token: str) -> httpx.Response:
    request = httpx.Request("GET", API, params={"token": token, "format": "md", "url": URL})
    return transport.handle_request(request)


NORMAL_PAGE = delivery("rid-normal", "Loading...")
RENDERED = delivery("rid-js", "# The article, rendered")


def test_without_a_js_crawler_a_javascript_request_is_a_configuration_error_never_the_page() -> (
    None
):
    transport = DeliveryTransport(API, js_tokens=[JS])
    with transport.serving({URL: NORMAL_PAGE}) as serving:
        assert crawl(transport, NORMAL).text == "Loading..."
        for token in (JS, TOKEN_PLACEHOLDERS["javascript"]):
            with pytest.raises(ConfigurationError, match="--js-crawler NAME"):
                crawl(transport, token)
    assert serving.needs_javascript == [URL, URL]


def test_with_a_js_crawler_the_request_waits_for_and_then_reads_the_javascript_delivery() -> None:
    transport = DeliveryTransport(API, js_tokens=[JS], js_crawler=True)
    with transport.serving({URL: NORMAL_PAGE}):
        with pytest.raises(CrawlDeferred) as deferred:
            crawl(transport, JS)
        assert deferred.value.url == URL
    with transport.serving({URL: NORMAL_PAGE}, {URL: RENDERED}) as serving:
        normal = crawl(transport, NORMAL)
        rendered = crawl(transport, TOKEN_PLACEHOLDERS["javascript"])
    assert (normal.text, normal.headers[CRAWLER_RID_HEADER]) == ("Loading...", "rid-normal")
    assert (rendered.text, rendered.headers[CRAWLER_RID_HEADER]) == (
        "# The article, rendered",
        "rid-js",
    )
    assert serving.needs_javascript == []
    refused = transport.serving({URL: NORMAL_PAGE}, {URL: "push refused: HTTP 422"})
    with refused, pytest.raises(StageFailed, match="never received this page: push refused"):
        crawl(transport, JS)


def test_the_store_keeps_javascript_pushes_apart_and_counts_the_pages_that_needed_one(
    tmp_path: Path,
) -> None:
    store = JobStore.create(tmp_path, "job")
    js = js_citation_id("o.c1#2")
    assert is_js_citation(js) and not is_js_citation("o.c1#2")
    store.add([("o.c1#1", URL), ("o.c1#2", URL)])
    store.note_needs_javascript([("o.c1#2", URL), ("o.c1#2", URL)])
    assert store.needs_javascript() == 1
    store.add([(js, URL)])
    assert store.needs_javascript() == 0  # its JavaScript push is queued now
    assert store.take_for_push(5, javascript=False) == [("o.c1#1", URL), ("o.c1#2", URL)]
    assert store.take_for_push(5, javascript=False) == []
    assert store.take_for_push(5, javascript=True) == [(js, URL)]
    store.mark_sending(js)
    # Its push answer was lost: the delivery binds by the echoed JavaScript citation id.
    assert store.record_delivery(RENDERED, js) is DeliveryOutcome.ACCEPTED
    assert store.delivery(js) == RENDERED
    pushes = store.javascript_pushes()
    assert pushes[JobState.DELIVERED] == 1 and sum(pushes.values()) == 1
    assert store.counts()[JobState.PUSHING] == 2  # the two normal pushes, not the JS one


def test_a_javascript_pusher_pushes_with_the_javascript_token_and_names_it() -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(401) if len(sent) > 1 else httpx.Response(200, json={"rid": "r1"})

    env = {"CRAWLBASE_TOKEN": NORMAL, "CRAWLBASE_JS_TOKEN": JS}
    client = httpx.Client(transport=httpx.MockTransport(answer))
    pusher = CrawlerPusher.from_env("js-audit", env, kind="javascript", client=client)
    assert pusher.push(URL, {"Citecheck-Job": "j"}).rid == "r1"
    query = parse_qs(urlsplit(str(sent[0].url)).query)
    assert (query["token"], query["crawler"]) == ([JS], ["js-audit"])
    refused = pusher.push(URL, {"Citecheck-Job": "j"})
    assert refused.fatal and "CRAWLBASE_JS_TOKEN" in refused.detail and JS not in refused.detail
    with pytest.raises(ValueError, match="CRAWLBASE_JS_TOKEN is not set"):
        CrawlerPusher.from_env("js-audit", {"CRAWLBASE_TOKEN": NORMAL}, kind="javascript")
