"""The run loop's one stop: a front end's ``should_stop`` (``-x``, the look-ahead's
stop) reaches every kind of source the same way -- the claims in flight finish, no
other claim starts, and the source is told of each it kept from starting."""

from __future__ import annotations

import functools
import threading
import time
from concurrent.futures import Future

import pytest

from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.core.errors import JudgeDeferred
from pytest_citecheck.engine.run_loop import RunLoop
from pytest_citecheck.engine.sources import BatchRounds, ClaimSet
from pytest_citecheck.engine.stopping import StopSignal, outcome


class Started:
    """Which claims started, and a stop asked for once ``after`` of them finished."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.names: list[str] = []
        self.finished = 0
        self._lock = threading.Lock()

    def should_stop(self) -> bool:
        with self._lock:
            return self.finished >= self.after

    def run(self, name: str) -> str:
        with self._lock:
            self.names.append(name)
        time.sleep(0.01)
        with self._lock:
            self.finished += 1
        return name.upper()


def test_a_stop_reaches_a_set_run_all_at_once() -> None:
    started = Started(after=1)
    loop = RunLoop(1, StopSignal(started.should_stop))
    names = ["a", "b", "c", "d"]
    source = ClaimSet(lambda i: started.run(names[i]), names)
    try:
        assert loop.run(source) is False  # not Ctrl-C: the front end's stop
    finally:
        loop.close()
    assert started.names == ["a"]
    assert source.results == {0: "A"}
    assert source.not_started == 3
    assert source.end(False) is None  # stopped: no result list


class Batch:
    """A judge batch double: what the rounds ask of it, in order."""

    def __init__(self, stop: StopSignal) -> None:
        self.stop = stop
        self.seen: list[str] = []

    def start_round(self) -> None:
        self.seen.append("start_round")

    def send_pending(self) -> None:
        self.seen.append("send_pending")
        self.stop.set()  # the stop comes while the batch is answered

    def forget(self, nodeid: str) -> None:
        self.seen.append(f"forget {nodeid}")


def test_a_stop_between_judge_batch_rounds_starts_no_claim_of_the_next_round() -> None:
    stop = StopSignal()
    batch = Batch(stop)
    ran: list[int] = []

    def work(index: int) -> ClaimResult:
        ran.append(index)
        raise JudgeDeferred(f"q{index}")

    loop = RunLoop(2, stop)
    source = BatchRounds([], work, ["n0", "n1"], batch, 3)  # type: ignore[arg-type]  # a double
    try:
        loop.run(source)
    finally:
        loop.close()
    assert sorted(ran) == [0, 1]  # the first round only
    assert batch.seen == ["start_round", "send_pending", "start_round"]
    assert source.not_started == 2 and source.results == {}
    assert source.end(False) is None


class AsReady:
    """Claims that become ready one a look, and a source that would wait forever (a
    Crawler job whose pages keep coming)."""

    poll = 0.01
    idle_timeout = 3600.0

    def __init__(self, started: Started) -> None:
        self.started = started
        self.next = 0
        self.results: dict[str, str] = {}
        self.skipped_names: list[str] = []

    def clock(self) -> float:
        return time.monotonic()

    def waiting(self) -> bool:
        return True

    def look(self) -> tuple[object, list[str]]:
        self.next += 1
        return self.next, [f"c{self.next}"]

    def name(self, item: str) -> str:
        return item

    def run(self, item: str) -> str:
        return self.started.run(item)

    def settle(self, item: str, future: Future[str]) -> list[str]:
        self.results[item] = future.result()
        return []

    def skipped(self, item: str) -> None:
        self.skipped_names.append(item)

    def tick(self, running: bool) -> list[str]:
        return []

    def busy(self) -> bool:
        return True

    def interrupted(self) -> None:
        raise AssertionError("not Ctrl-C")


def test_a_stop_ends_a_source_that_would_wait_forever() -> None:
    started = Started(after=2)
    loop = RunLoop(1, StopSignal(started.should_stop))
    source = AsReady(started)
    began = time.monotonic()
    try:
        loop.run(source)
    finally:
        loop.close()
    assert time.monotonic() - began < 30  # it ended: the source never stops waiting
    assert len(source.results) >= 2
    # Every claim it took in either finished or was told it never started.
    assert set(source.results) | set(source.skipped_names) == {
        f"c{n}" for n in range(1, len(source.results) + len(source.skipped_names) + 1)
    }
    assert set(started.names) == set(source.results)


class DiesWhileAClaimRuns(AsReady):
    """A source whose worker dies (its next look raises) while its one claim is still
    being verified: the claim ends ``release_after`` seconds after the death."""

    release_after = 0.3

    def __init__(self) -> None:
        super().__init__(Started(after=99))
        self.claim_started = threading.Event()
        self.release = threading.Event()
        self.claim_finished = threading.Event()

    def look(self) -> tuple[object, list[str]]:
        self.next += 1
        if self.next == 1:
            return self.next, ["c1"]
        assert self.claim_started.wait(5)
        threading.Timer(self.release_after, self.release.set).start()
        raise RuntimeError("a push thread died")

    def run(self, item: str) -> str:
        self.claim_started.set()
        assert self.release.wait(5)
        self.claim_finished.set()
        return item


def test_a_dead_worker_is_raised_once_the_claims_in_flight_have_finished() -> None:
    """Before, the run raised at once: a Crawler batch then closed the transport the
    claim's judge was reading its answer from, and the judge sent the question again
    (billed twice; tests/integration/test_crawler_javascript.py's kill test)."""
    loop = RunLoop(2)
    source = DiesWhileAClaimRuns()
    try:
        with pytest.raises(RuntimeError, match="a push thread died"):
            loop.run(source)
        finished_when_raised = source.claim_finished.is_set()
    finally:
        loop.close()
    assert finished_when_raised


class StopBetweenTwoChecks:
    """Two workers free at once take claims "c2" and "c3"; the stop comes after the
    worker holding c3 checked it and before the one holding c2 did (a Ctrl-C landing
    between the two checks, which a loaded machine's scheduling makes happen).

    The worker that ran "c0" asks :meth:`should_stop` for its next claim, c2: it lets
    "c1" finish, waits (up to ``wait``) for c3 to start on the other worker, then says
    stop. The other worker's check for c3 says go on; any later check says stop."""

    def __init__(self, wait: float = 1.0) -> None:
        self.wait = wait
        self.ran: list[str] = []
        self.release = {name: threading.Event() for name in ("c0", "c1")}
        self.c3_started = threading.Event()
        self._c0_thread: int | None = None
        self._lock = threading.Lock()

    def should_stop(self) -> bool:
        if threading.get_ident() != self._c0_thread:
            return self.c3_started.is_set()  # go on for c3, stop from then on
        self.release["c1"].set()
        self.c3_started.wait(self.wait)
        return True

    def work(self, name: str) -> str:
        with self._lock:
            self.ran.append(name)
        if name == "c0":
            self._c0_thread = threading.get_ident()
        if name == "c3":
            self.c3_started.set()
        if name in self.release:
            assert self.release[name].wait(10)
        return name.upper()


def test_a_stop_between_two_workers_checks_never_starts_a_claim_after_one_it_kept_back() -> None:
    """Before, c3 started (crawled, billed) and c2 was kept back: the plugin stops
    the session before c2's item, so c3's result was never reported and the summary
    counted it among the claims "not started; nothing was billed for them"."""
    race = StopBetweenTwoChecks()
    loop = RunLoop(2, StopSignal(race.should_stop))
    names = [f"c{n}" for n in range(6)]
    futures = [loop.submit(functools.partial(race.work, name), name) for name in names]
    race.release["c0"].set()
    try:
        outcomes = [outcome(f) for f in futures]  # type: ignore[arg-type]  # str, not a result
    finally:
        loop.close()
    started = [name for name, got in zip(names, outcomes, strict=True) if got is not None]
    assert sorted(race.ran) == started  # a claim's future has a result iff it ran
    # The claims that started are the first ones, in submission order: the session
    # stops before the first claim never started, and every claim before it reports.
    assert started == names[: len(started)], started
    assert len(started) < len(names)
