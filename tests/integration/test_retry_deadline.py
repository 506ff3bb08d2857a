"""The retry loop keeps every wait -- for a slot, for a Retry-After -- inside the deadline."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.core.errors import StageFailed
from pytest_citecheck.core.limits import AdaptiveLimit
from pytest_citecheck.core.retry import DeadlineExceeded, GaveUp, RetryPolicy, send
from pytest_citecheck.stages.fetch import CrawlbaseFetcher
from pytest_citecheck.stages.fetch_rules import fetch_page
from pytest_citecheck.stages.judges import make_judge
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble

URL = "http://127.0.0.1:9/v1/chat"


def client_answering(*replies: httpx.Response) -> tuple[httpx.Client, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(replies)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return httpx.Client(transport=httpx.MockTransport(handler)), seen


def test_a_retry_after_beyond_the_deadline_fails_the_request_at_once() -> None:
    slept: list[float] = []
    limit = AdaptiveLimit("openai", 4)
    client, seen = client_answering(httpx.Response(429, headers={"retry-after": "30"}))
    policy = RetryPolicy(sleep=slept.append, deadline=20.0, limiter=limit)
    started = time.monotonic()
    sent = send(client, httpx.Request("POST", URL), policy)
    assert time.monotonic() - started < 1.0
    assert sent.response.status_code == 429 and sent.attempts == 1 and len(seen) == 1
    assert sent.stopped is not None
    assert sent.stopped.startswith("rate limited: retry after 30 s, beyond the 20 s deadline")
    assert slept == []  # nobody waited the 30 s out
    # The limit was lowered (AIMD) and the slot given back.
    assert int(limit.limit) == 2 and limit.in_flight == 0


def test_a_retry_after_that_fits_pauses_this_request_and_retries() -> None:
    limit = AdaptiveLimit("openai", 4)
    during: list[float] = []

    def sleep(seconds: float) -> None:
        during.append(limit.backing_off())
        # Another request to the same service is not held up meanwhile.
        assert limit.acquire(timeout=0)
        limit.release(200)

    client, seen = client_answering(
        httpx.Response(429, headers={"retry-after": "3"}), httpx.Response(200, json={})
    )
    policy = RetryPolicy(sleep=sleep, deadline=20.0, limiter=limit)
    sent = send(client, httpx.Request("POST", URL), policy)
    assert sent.response.status_code == 200 and sent.attempts == 2 and sent.stopped is None
    assert len(seen) == 2
    assert len(during) == 1 and 2 < during[0] <= 3
    assert limit.backing_off() == 0


def test_a_retry_after_over_the_most_citecheck_waits_says_so() -> None:
    client, _ = client_answering(httpx.Response(503, headers={"retry-after": "90"}))
    sent = send(client, httpx.Request("POST", URL), RetryPolicy(sleep=lambda s: None))
    expected = "rate limited: retry after 90 s, more than the 60 s citecheck waits at most"
    assert sent.stopped == expected


def test_waiting_for_a_slot_counts_against_the_deadline() -> None:
    limit = AdaptiveLimit("crawlbase", 1)
    limit.acquire()  # another claim's request holds the only slot
    client, seen = client_answering(httpx.Response(200))
    started = time.monotonic()
    with pytest.raises(GaveUp) as caught:
        send(client, httpx.Request("GET", URL), RetryPolicy(deadline=0.2, limiter=limit))
    assert time.monotonic() - started < 1.0
    assert seen == [] and caught.value.attempts == 0
    assert isinstance(caught.value.error, DeadlineExceeded)
    assert str(caught.value.error) == (
        "no free slot within the 0.2 s deadline (the timeout): "
        "1 request in flight to crawlbase at most"
    )


def test_a_crawl_that_never_got_a_slot_says_it_was_not_sent() -> None:
    limit = AdaptiveLimit("crawlbase", 1)
    limit.acquire()
    with CrawlbaseDouble() as api:
        api.add("https://example.com/a", Page(markdown="# A\n\n" + "Text. " * 100))
        policy = RetryPolicy(deadline=0.2, limiter=limit)
        with CrawlbaseFetcher(
            token=api.tokens["normal"], js_token=None, base_url=api.base_url, retry=policy
        ) as fetcher:
            result = fetch_page(fetcher, "https://example.com/a", None)
        assert api.calls == []
    assert (result.label, result.reason) == (Label.ERROR, Reason.CRAWL_FAILED)
    assert "not sent: no free slot within the 0.2 s deadline" in (result.detail or "")
    assert "after 0 tries" not in (result.detail or "")


def test_a_judge_call_that_never_got_a_slot_says_it_was_not_asked() -> None:
    limit = AdaptiveLimit("openai", 1)
    limit.acquire()
    with LLMDouble(api_key="sk-planted-slot-key") as llm:
        judge = make_judge(
            "openai:gpt-4o-mini",
            environ={"OPENAI_API_KEY": "sk-planted-slot-key"},
            base_url=llm.base_url("openai"),
            retry=RetryPolicy(deadline=0.2, limiter=limit),
        )
        with judge, pytest.raises(StageFailed) as caught:
            judge.judge("Water boils at 100 C.", ["Water boils at 100 C at sea level."])
        assert llm.calls == []
    assert caught.value.reason == Reason.JUDGE_UNAVAILABLE
    assert caught.value.detail.startswith(
        "the openai:gpt-4o-mini judge was not asked: no free slot within the 0.2 s deadline"
    )


class DrippingServer:
    """A loopback server that answers every request a byte every 50 ms: headers that
    never end (``part="headers"``) or a body that takes 50 s (``part="body"``)."""

    def __init__(self, part: str) -> None:
        self.part = part
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(5)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1/chat"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> DrippingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.listener.close()

    def _serve(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        with conn:
            conn.recv(65536)
            if self.part == "headers":
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Drip: ")
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
            for _ in range(1000):  # 50 s at most, but the client hangs up long before
                if self.stop.wait(0.05):
                    return
                try:
                    conn.sendall(b"a")
                except OSError:
                    return


@pytest.mark.parametrize("part", ["headers", "body"])
def test_a_server_that_drips_its_answer_is_cut_off_at_the_deadline(part: str) -> None:
    with DrippingServer(part) as server, httpx.Client() as client:
        started = time.monotonic()
        with pytest.raises(GaveUp) as caught:
            send(client, httpx.Request("GET", server.url), RetryPolicy(deadline=0.5, attempts=1))
        took = time.monotonic() - started
    assert isinstance(caught.value.error, DeadlineExceeded)
    assert "0.5 s deadline" in str(caught.value.error)
    assert took < 1.0  # the deadline, and not the 5 s connect timeout, let alone 50 s
