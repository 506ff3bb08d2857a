"""The adaptive per-service limit: halves on 429/503, grows back, bounds the wait for a slot."""

from __future__ import annotations

import threading
import time

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


def _round_of_429s(limit: AdaptiveLimit, requests: int) -> None:
    """``requests`` requests, each on its own thread as the engine sends them, all
    in flight at once, all answered 429."""
    sent = threading.Barrier(requests)

    def request() -> None:
        assert limit.acquire(timeout=5)
        sent.wait(timeout=5)
        limit.release(429)

    threads = [threading.Thread(target=request) for _ in range(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_retries_sent_under_the_halved_limit_halve_it_again_with_no_success_between() -> None:
    # A service that allows fewer than the halved limit rejects every try of the next
    # round too: those tries were sent under the new limit, so they are a new signal
    # (waiting for a success first kept the limit at 10 while the retries ran out).
    limit = AdaptiveLimit("crawlbase", 20)
    _round_of_429s(limit, 20)
    assert int(limit.limit) == 10 and limit.cuts == 1
    _round_of_429s(limit, 10)
    assert int(limit.limit) == 5 and limit.cuts == 2
    _round_of_429s(limit, 5)
    assert int(limit.limit) == 2 and limit.cuts == 3 and limit.overloads == 35


def test_a_retry_after_pauses_only_the_request_that_got_it() -> None:
    limit = AdaptiveLimit("crawlbase", 4)
    for _ in range(2):
        limit.acquire()
    limit.release(429)  # the limit halves (AIMD) ...
    assert int(limit.limit) == 2
    # ... but the other requests are not frozen for the pause: one slot is free now.
    assert limit.acquire(timeout=0)
    with limit.pausing(30.0):
        assert 29 < limit.backing_off() <= 30
        assert "1 backing off up to 30.0 s" in limit.status()
        assert "1 x 429/503" in limit.status()
    assert limit.backing_off() == 0 and "backing off" not in limit.status()


def test_waiting_for_a_slot_gives_up_after_the_time_given() -> None:
    limit = AdaptiveLimit("judge", 1)
    assert limit.acquire(timeout=0)
    started = time.monotonic()
    assert not limit.acquire(timeout=0.05)
    assert 0.04 < time.monotonic() - started < 1.0
    assert limit.in_flight == 1
    limit.release(200)
    assert limit.acquire(timeout=0)


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
