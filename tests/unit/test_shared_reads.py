"""The run's memory of its reads (recording/shared_reads.py): one fetch per key, a failed
or unshareable fetch never handed on, a bounded memory."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from pytest_citecheck.recording.shared_reads import SharedReads


def sizes(reply: str) -> int | None:
    return None if reply.startswith("error") else len(reply)


def counted(reply: str, sent: list[str]) -> Callable[[], str]:
    def fetch() -> str:
        sent.append(reply)
        return reply

    return fetch


def test_a_second_claim_gets_the_first_ones_reply_without_a_request() -> None:
    reads: SharedReads[str] = SharedReads(sizes)
    sent: list[str] = []
    assert reads.read("k", counted("page", sent)) == "page"
    assert reads.read("k", counted("page again", sent)) == "page"
    assert sent == ["page"]
    assert reads.read("other", counted("other page", sent)) == "other page"  # another key
    assert sent == ["page", "other page"]


def test_an_unshareable_reply_is_fetched_again_by_the_next_claim() -> None:
    reads: SharedReads[str] = SharedReads(sizes)
    assert reads.read("k", lambda: "error 500") == "error 500"
    assert reads.read("k", lambda: "page") == "page"


def test_a_claim_waiting_on_a_fetch_that_raised_fetches_for_itself() -> None:
    reads: SharedReads[str] = SharedReads(sizes)
    started, release = threading.Event(), threading.Event()
    got: list[str] = []

    def failing() -> str:
        started.set()
        release.wait(5)
        raise ConnectionError("reset")

    def first() -> None:
        with pytest.raises(ConnectionError):
            reads.read("k", failing)

    thread = threading.Thread(target=first)
    thread.start()
    assert started.wait(5)
    waiter = threading.Thread(target=lambda: got.append(reads.read("k", lambda: "own")))
    waiter.start()
    release.set()
    thread.join(5)
    waiter.join(5)
    assert got == ["own"]


def test_a_fetch_in_flight_is_waited_for_only_as_long_as_the_request_may_take() -> None:
    reads: SharedReads[str] = SharedReads(sizes)
    release = threading.Event()
    slow = threading.Thread(
        target=lambda: reads.read("k", lambda: "page" if release.wait(5) else "")
    )
    slow.start()
    try:
        while not reads._in_flight:  # the first request is under way
            threading.Event().wait(0.005)
        assert reads.read("k", lambda: "own", wait=0.05) == "own"
    finally:
        release.set()
        slow.join(5)


def test_the_memory_forgets_the_oldest_replies_beyond_its_size() -> None:
    reads: SharedReads[str] = SharedReads(sizes, max_bytes=10)
    reads.read("a", lambda: "aaaa")
    reads.read("b", lambda: "bbbb")
    reads.read("c", lambda: "cccc")  # 12 bytes: "a" is forgotten
    assert reads.read("a", lambda: "fresh") == "fresh"
    assert reads.read("c", lambda: "x") == "cccc"
    assert reads.read("huge", lambda: "h" * 11) == "h" * 11
    assert reads.read("huge", lambda: "again") == "again"  # never kept
