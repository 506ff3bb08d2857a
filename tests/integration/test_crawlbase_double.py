"""The Crawling API double speaks the API's reply format (what its recordings hold)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.doubles.crawlbase import RATE_LIMIT_BODY, CrawlbaseDouble, Page

URL = "https://example.com/docs/page"


@pytest.fixture
def api() -> Iterator[CrawlbaseDouble]:
    with CrawlbaseDouble() as double:
        yield double


def get(api: CrawlbaseDouble, token: str | None = None, **params: str) -> httpx.Response:
    query = {"token": token or api.tokens["normal"], "format": "md", **params}
    return httpx.get(api.base_url, params=query)


def test_success_carries_status_headers_and_markdown(api):
    api.add(URL, Page(markdown="# Page\n", full_markdown="# Page\n\nnav", final_url=URL + "/"))

    reply = get(api, url=URL, md_readability="true")

    assert reply.status_code == 200
    assert reply.headers["content-type"] == "text/markdown; charset=utf-8"
    assert reply.headers["original_status"] == "200"
    assert reply.headers["pc_status"] == reply.headers["cb_status"] == "200"
    assert reply.headers["url"] == URL + "/"
    assert reply.text == "# Page\n"
    assert "storage_url" not in reply.headers  # only with store=true
    assert get(api, url=URL).text == "# Page\n\nnav"


def test_store_adds_rid_and_a_storage_url_bearing_the_sent_token(api):
    api.add(URL, Page(markdown="# Stored\n", rid="abc123rid"))

    reply = get(api, api.tokens["javascript"], url=URL, store="true")

    assert reply.headers["rid"] == "abc123rid"
    storage_url = httpx.URL(reply.headers["storage_url"])
    assert storage_url.params["token"] == api.tokens["javascript"]
    assert storage_url.params["rid"] == "abc123rid"
    stored = httpx.get(
        api.base_url + "storage", params={"token": api.tokens["normal"], "rid": "abc123rid"}
    )
    assert stored.text == "# Stored\n"
    assert stored.headers["rid"] == "abc123rid"


def test_calls_are_logged_with_the_token_kind(api):
    api.add(URL, Page(markdown="x", js=Page(markdown="rendered")))

    assert get(api, api.tokens["javascript"], url=URL).text == "rendered"
    assert get(api, "not-a-token", url=URL).status_code == 401

    [js, bad] = api.calls
    assert (js.kind, js.token, js.url, js.format, js.status) == (
        "javascript",
        api.tokens["javascript"],
        URL,
        "md",
        200,
    )
    assert (bad.kind, bad.status) == (None, 401)


def test_transient_statuses_come_first_per_token_kind(api):
    api.add(URL, Page(markdown="ok", transient=(429, 503)))

    first = get(api, url=URL)
    assert first.status_code == 429
    assert first.headers["retry-after"] == "0"
    assert first.json() == RATE_LIMIT_BODY
    second = get(api, url=URL)
    assert (second.status_code, second.text) == (503, "")
    assert get(api, url=URL).text == "ok"
    assert get(api, api.tokens["javascript"], url=URL).status_code == 429

    api.reset()
    assert api.calls == []
    assert get(api, url=URL).status_code == 429


def test_failed_crawl_and_unknown_url(api):
    api.add(URL, Page(http_status=520))

    failed = get(api, url=URL)
    assert (failed.status_code, failed.text) == (520, "")
    assert "pc_status" not in failed.headers
    unknown = get(api, url="https://example.com/unregistered")
    assert unknown.status_code == 404
    assert "https://example.com/unregistered" in unknown.json()["error"]
    assert get(api).status_code == 422  # no url


@pytest.mark.parametrize("status", [520, 525])
def test_failed_crawl_inside_a_200(api, status):
    # The other reading of Crawlbase's status docs: HTTP 200, the crawl's failure in the headers.
    api.add(URL, Page(markdown="never sent", pc_status=status))

    failed = get(api, url=URL)
    assert (failed.status_code, failed.text) == (200, "")
    assert failed.headers["pc_status"] == failed.headers["cb_status"] == str(status)


def test_cb_status_can_differ_from_pc_status(api):
    api.add(URL, Page(markdown="", pc_status=200, cb_status=525))

    reply = get(api, url=URL)
    assert (reply.headers["pc_status"], reply.headers["cb_status"]) == ("200", "525")
