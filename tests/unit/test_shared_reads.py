"""The run's memory of its reads (recording/shared_reads.py): one fetch per key, a failed
or unshareable fetch never handed on, a bounded memory."""

from __future__ import annotations

import threading

import pytest

from pytest_citecheck.recording.shared_reads import SharedReads


def sizes(reply: str) -> int | None:
    return None if reply.startswith("error") else len(reply)


def test_a_second_claim_gets_the_first_ones_reply_and_who_fetched_it() -> None:
    reads: SharedReads[str] = SharedReads(sizes)
    fetched: list[str] = []

    def fetch() -> str:
        fetched.append("sent")
        return "page"

    assert reads.read("k", "a.yaml", fetch) == ("page", None)
    assert reads.read("k", "b.yaml", fetch) == ("page", "a.yaml")
    assert fetched == ["sent"] and reads.shared == 1
    assert reads.read("other", "b.yaml", fetch) == ("page", None)  # another key: sent


def test_an_unshareable_reply_is_fetched_again_by_the_next_claim() -> None:
    reads: SharedReads[str] = SharedReads(sizes)
    assert reads.read("k", "a.yaml", lambda: "error 500") == ("error 500", None)
    assert reads.read("k", "b.yaml", lambda: "page") == ("page", None)


def test_a_claim_waiting_on_a_fetch_that_raised_fetches_for_itself() -> None:
    reads: SharedReads[str] = SharedReads(sizes)
    started, release = threading.Event(), threading.Event()
    got: list[tuple[str, str | None]] = []

    def failing() -> str:
        started.set()
        release.wait(5)
        raise ConnectionError("reset")

    def first() -> None:
        with pytest.raises(ConnectionError):
            reads.read("k", "a.yaml", failing)

    thread = threading.Thread(target=first)
    thread.start()
    assert started.wait(5)
    waiter = threading.Thread(target=lambda: got.append(reads.read("k", "b.yaml", lambda: "own")))
    waiter.start()
    release.set()
    thread.join(5)
    waiter.join(5)
    assert got == [("own", None)]


def test_a_fetch_in_flight_is_waited_for_only_as_long_as_the_request_may_take() -> None:
    reads: SharedReads[str] = SharedReads(sizes)
    release = threading.Event()
    slow = threading.Thread(
        target=lambda: reads.read("k", "a.yaml", lambda: "page" if release.wait(5) else "")
    )
    slow.start()
    try:
        while not reads._in_flight:  # the first request is under way
            threading.Event().wait(0.005)
        assert reads.read("k", "b.yaml", lambda: "own", wait=0.05) == ("own", None)
    finally:
        release.set()
        slow.join(5)


def test_the_memory_forgets_the_oldest_replies_beyond_its_size() -> None:
    reads: SharedReads[str] = SharedReads(sizes, max_bytes=10)
    reads.read("a", "1.yaml", lambda: "aaaa")
    reads.read("b", "1.yaml", lambda: "bbbb")
    reads.read("c", "1.yaml", lambda: "cccc")  # 12 bytes: "a" is forgotten
    assert reads.read("a", "2.yaml", lambda: "fresh") == ("fresh", None)
    assert reads.read("c", "2.yaml", lambda: "x") == ("cccc", "1.yaml")
    assert reads.read("huge", "1.yaml", lambda: "h" * 11) == ("h" * 11, None)
    assert reads.read("huge", "2.yaml", lambda: "again") == ("again", None)  # never kept
