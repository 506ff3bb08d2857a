"""The adaptive per-service limit: halves on 429/503, pauses for Retry-After, grows back."""

from __future__ import annotations

import threading

import pytest

from pytest_citecheck.core.limits import CRAWLING_API_CAP, AdaptiveLimit, cap_for


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_crawling_api_gets_its_documented_twenty_and_judges_their_own() -> None:
    assert cap_for("crawlbase") == CRAWLING_API_CAP == 20
    assert cap_for("ollama") < cap_for("openai")
    assert cap_for("some-new-provider") >= 1


def test_an_overload_halves_the_limit_once_per_round_and_successes_grow_it_back() -> None:
    clock = Clock()
    limit = AdaptiveLimit("crawlbase", 20, clock=clock)
    for _ in range(20):
        limit.acquire()
    assert limit.in_flight == 20
    # Several answers to requests already in flight say 429: one cut, not five.
    for _ in range(5):
        limit.release(429)
    assert int(limit.limit) == 10 and limit.overloads == 5
    for _ in range(15):
        limit.release(200)
    assert 10 < limit.limit < 12
    for _ in range(200):
        limit.acquire()
        limit.release(200)
    assert limit.limit == 20  # never above the cap


def test_retry_after_pauses_every_new_request_to_the_service() -> None:
    limit = AdaptiveLimit("crawlbase", 4)
    limit.acquire()
    limit.release(429, retry_after=0.3)
    assert limit.backing_off() > 0.2
    assert "backing off" in limit.status() and "1 x 429/503" in limit.status()
    started = threading.Event()

    def request() -> None:
        limit.acquire()
        started.set()
        limit.release(200)

    thread = threading.Thread(target=request)
    thread.start()
    assert not started.wait(0.15)  # still paused
    assert started.wait(2.0)
    thread.join()


def test_no_more_than_the_limit_is_ever_in_flight() -> None:
    limit = AdaptiveLimit("judge", 3)
    peak = 0
    lock = threading.Lock()
    inside = 0

    def request() -> None:
        nonlocal peak, inside
        limit.acquire()
        with lock:
            inside += 1
            peak = max(peak, inside)
        with lock:
            inside -= 1
        limit.release(200)

    threads = [threading.Thread(target=request) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak <= 3 and limit.in_flight == 0


def test_a_cap_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        AdaptiveLimit("x", 0)
