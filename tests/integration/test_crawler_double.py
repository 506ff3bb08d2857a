"""The loopback Crawler double speaks what crawlbase.com/docs/crawler documents: pushes
answer a rid, deliveries are gzip POSTs with the documented headers and the echoed
callback headers, failed deliveries are retried (and counted as charged)."""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import httpx
import pytest

from tests.doubles import LoopbackServer, QuietHandler
from tests.doubles.crawlbase import Page
from tests.doubles.crawler import MONITOR_AGENT, CrawlerDouble

URL = "https://example.com/a"


class Webhook(LoopbackServer):
    """Records every POST (headers, decompressed body) and answers ``status``."""

    def __init__(self, status: int = 204) -> None:
        super().__init__()
        self.status = status
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def handler(self) -> type[BaseHTTPRequestHandler]:
        hook = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with hook.lock:
                    hook.received.append((dict(self.headers.items()), gzip.decompress(raw)))
                self.reply(hook.status, [], b"")

        return Handler


@pytest.fixture
def hook() -> Iterator[Webhook]:
    with Webhook() as server:
        yield server


def push(double: CrawlerDouble, **params: str) -> httpx.Response:
    query = {"token": double.tokens["normal"], "url": URL, "callback": "true", "crawler": "c"}
    return httpx.get(double.base_url, params=query | params, timeout=5)


@pytest.mark.parametrize("fmt", ["html", "json"])
def test_a_push_answers_a_rid_and_the_page_is_delivered_as_documented(
    hook: Webhook, fmt: str
) -> None:
    with CrawlerDouble({"c": hook.url}) as crawler:
        crawler.add(URL, Page(markdown="# Short", full_markdown="# Full", original_status=203))
        reply = push(crawler, format=fmt, callback_headers="MY-ID:1234|some-other:4321")
        assert crawler.wait_idle(timeout=10)
    rid = reply.json()["rid"]
    [(headers, body)] = hook.received
    assert headers["Content-Encoding"] == "gzip"
    assert headers["MY-ID"] == "1234" and headers["some-other"] == "4321"
    if fmt == "json":
        assert headers["Content-Type"] == "gzip/json"
        assert json.loads(body) == {
            "pc_status": 200,
            "original_status": 203,
            "rid": rid,
            "url": URL,
            "body": "# Full",
        }
    else:
        assert headers["Content-Type"] == "text/plain" and body == b"# Full"
        assert (headers["rid"], headers["url"]) == (rid, URL)
        assert (headers["Original-Status"], headers["PC-Status"]) == ("203", "200")
    assert crawler.credits == 1 and crawler.retries == 0


@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_pushes_beyond_the_limit_per_second_are_429_and_not_crawled(hook: Webhook) -> None:
    # The clock stands still: all five pushes fall in the same second.
    with CrawlerDouble({"c": hook.url}, pushes_per_second=3, clock=lambda: 100.0) as crawler:
        statuses = [push(crawler).status_code for _ in range(5)]
        assert crawler.wait_idle(timeout=10)
    assert statuses == [200, 200, 200, 429, 429]
    assert len({p.rid for p in crawler.pushes_for(URL)}) == 3
    assert len(hook.received) == 3  # an unknown URL is still delivered: a failed crawl
    assert all(body == b"" and h["PC-Status"] == "520" for h, body in hook.received)


@pytest.mark.parametrize(
    ("params", "status"),
    [({"token": "wrong"}, 401), ({"crawler": "nope"}, 404), ({"callback": "false"}, 400)],
    ids=["unknown token", "unknown crawler", "not a push"],
)
def test_bad_pushes_are_refused(hook: Webhook, params: dict[str, str], status: int) -> None:
    with CrawlerDouble({"c": hook.url}) as crawler:
        reply = push(crawler, **params)
    assert reply.status_code == status and "error" in reply.json()
    assert crawler.credits == 0 and hook.received == []


def test_a_webhook_that_is_down_is_retried_then_given_up() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        down = f"http://127.0.0.1:{sock.getsockname()[1]}/hook"
        with CrawlerDouble({"c": down}, retry_wait=0.01, max_retries=3) as crawler:
            rid = push(crawler).json()["rid"]
            assert crawler.wait_idle(timeout=10)
    assert [a.status for a in crawler.deliveries] == [None] * 4
    assert crawler.retries == 3 and crawler.credits == 4
    assert crawler.given_up == [rid]


def test_the_monitor_bot_posts_json_with_its_user_agent(hook: Webhook) -> None:
    hook.status = 503
    with CrawlerDouble({"c": hook.url}) as crawler:
        assert crawler.monitor() == [503]
        assert crawler.paused
    [(headers, body)] = hook.received
    assert headers["User-Agent"] == MONITOR_AGENT
    assert isinstance(json.loads(body), dict)


def test_the_monitor_bot_calls_on_its_own_every_interval(hook: Webhook) -> None:
    with CrawlerDouble({"c": hook.url}, monitor_every=60.0, scale=0.001) as crawler:
        deadline = time.monotonic() + 10
        while len(hook.received) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(hook.received) >= 3
    assert all(a.monitor and a.status == 204 for a in crawler.attempts)
    assert crawler.credits == 0
