"""The run loop: the one place a run starts threads and executors.

Every front end hands its claims to the engine, which runs them here, whatever their
source: all at once and in judge-batch rounds (:class:`ClaimPool`, through
:meth:`~pytest_citecheck.engine.core.Engine.verify_claims_sync`), as a Crawler job's
deliveries arrive (:func:`run_as_ready`, driven by a :class:`ReadySource`), or a
recheck's set (:func:`each_in_order`). The workers a run needs beside its claims (the
Crawler's push threads, the judge batch's sender) are started through
:func:`start_worker`. No other module of the package starts a thread or an executor
(``tests/unit/test_threads.py`` holds it), but the service's server (its own).

Many claims at once: a thread per claim in flight, at most ``concurrency``.
Network calls of different claims overlap; each claim records into or replays from
its own cassette (:mod:`pytest_citecheck.recording.transport` serves each thread's
HTTP), so no state is shared between claims but the engine's stages. A claim checks
the :class:`~pytest_citecheck.engine.stopping.StopSignal` as it starts.
"""

from __future__ import annotations

import importlib
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TypeVar

from pytest_citecheck.claims.models import Claim
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.engine.progress import Progress
from pytest_citecheck.engine.stopping import ClaimNotStarted, StopSignal

# Verifies one claim in the calling thread: (claim, cassette, nodeid) -> result.
VerifyOne = Callable[[Claim, Path | None, str | None], ClaimResult]

# The modules every verification imports at its first use of them (function-level
# imports keep them off the paths that verify nothing). They are imported once, in
# the thread that starts the pool, before any claim runs: the first claims would
# otherwise import them in several threads at once, and CPython 3.11 can fail
# compiling modules concurrently (SystemError "AST constructor recursion depth
# mismatch") when no bytecode is cached, which fails a claim as an internal error.
USED_WHILE_VERIFYING = tuple(
    f"pytest_citecheck.{name}"
    for name in (
        "core.retry",
        "core.secrets",
        "engine.panel",
        "engine.pipeline",
        "recording.cassette",
        "recording.lock",
        "recording.recorder",
        "recording.transport",
        "stages.confirm",
        "stages.documents",
        "stages.evidence",
        "stages.fetch",
        "stages.fetch_rules",
        "stages.fragments",
        "stages.guard",
        "stages.injection",
        "stages.judges.compat",
        "stages.judges.http",
        "stages.judges.prompt",
        "stages.numbers",
        "stages.passages",
        "stages.relevance",
        "stages.rendered",
    )
)


class ClaimPool:
    """Runs :data:`VerifyOne` on a thread pool built on first use."""

    def __init__(
        self, verify: VerifyOne, concurrency: int, progress: Progress, stop: StopSignal
    ) -> None:
        self._verify = verify
        self._concurrency = concurrency
        self._progress = progress
        self._stop = stop
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def submit(
        self, claim: Claim, cassette: Path | None = None, nodeid: str | None = None
    ) -> Future[ClaimResult]:
        """Verify one claim on the pool; once stopped, the future raises
        :class:`ClaimNotStarted`."""
        self._progress.add(1)
        return self._executor().submit(self._start, claim, cassette, nodeid)

    def close(self) -> None:
        """Cancel the claims not started; wait for those in flight."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                for name in USED_WHILE_VERIFYING:
                    importlib.import_module(name)
                self._pool = ThreadPoolExecutor(
                    max_workers=self._concurrency, thread_name_prefix="citecheck"
                )
            return self._pool

    def _start(self, claim: Claim, cassette: Path | None, nodeid: str | None) -> ClaimResult:
        if self._stop.is_set:
            self._progress.skipped()
            raise ClaimNotStarted(claim.id)
        return self._verify(claim, cassette, nodeid)


T = TypeVar("T")
U = TypeVar("U")
Item = TypeVar("Item")
Out = TypeVar("Out")


@contextmanager
def claim_executor(concurrency: int, name: str) -> Iterator[ThreadPoolExecutor]:
    """A pool of ``concurrency`` threads named ``name-N`` for one run's claims; on
    exit it waits for the claims in flight."""
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=name) as pool:
        yield pool


def each_in_order(
    work: Callable[[T], U], items: Iterable[T], concurrency: int, name: str
) -> list[U]:
    """``work`` of every item on ``concurrency`` threads; the results in input order."""
    with claim_executor(concurrency, name) as pool:
        return list(pool.map(work, items))


def start_worker(target: Callable[[], object], name: str) -> threading.Thread:
    """Start a run's worker beside its claims (a daemon thread: a stopped run never
    waits for one it has no more use for); the caller joins it when it must."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


class ReadySource(Protocol[Item, Out]):
    """Claims that become ready over time (a Crawler job's, as their pages are
    delivered), run by :func:`run_as_ready`."""

    concurrency: int
    # How long one look waits for a claim to finish before looking again.
    poll: float
    # A run in which nothing moved for this long (seconds) ends.
    idle_timeout: float
    # The threads' names: ``name-N``.
    name: str

    def clock(self) -> float:
        """Monotonic seconds."""
        ...

    def waiting(self) -> bool:
        """Some claim has not run yet, or waits to run again."""
        ...

    def look(self) -> tuple[object, list[Item]]:
        """What the source looks like now (the run is idle while it stays equal), and
        the claims ready now; raises what stops the run (a dead worker)."""
        ...

    def run(self, item: Item) -> Out:
        """Run one claim (on the pool)."""
        ...

    def settle(self, item: Item, future: Future[Out]) -> list[Item]:
        """A claim finished (its future is done): the claims to run again now."""
        ...

    def tick(self, running: bool) -> list[Item]:
        """After each look (``running``: some claim runs): the claims to run again."""
        ...

    def busy(self) -> bool:
        """Something outside the claims is awaited (an idle run does not end)."""
        ...


def run_as_ready(source: ReadySource[Item, Out]) -> None:
    """Run each claim of ``source`` once it is ready, at most ``concurrency`` at a
    time; returns when none waits and none runs, or when nothing moved for
    ``idle_timeout`` seconds with none running and the source not busy. Ctrl-C (or
    what the source raises) starts no more claims and returns once the claims in
    flight have finished."""
    running: dict[Future[Out], Item] = {}
    finished: queue.Queue[Future[Out]] = queue.Queue()
    last_change, last_look = source.clock(), None
    with claim_executor(source.concurrency, source.name) as pool:

        def start(item: Item) -> None:
            future = pool.submit(source.run, item)
            running[future] = item
            future.add_done_callback(finished.put)

        while source.waiting() or running:
            looked, ready = source.look()
            for item in ready:
                start(item)
            done = _drain(finished, source.poll)
            for future in done:
                for again in source.settle(running.pop(future), future):
                    start(again)
            for item in source.tick(bool(running)):
                start(item)
            if done or looked != last_look:
                last_change, last_look = source.clock(), looked
            elif (
                not running
                and not source.busy()
                and source.clock() - last_change >= source.idle_timeout
            ):
                return


def _drain(finished: queue.Queue[Future[Out]], timeout: float) -> list[Future[Out]]:
    """The futures done so far, waiting up to ``timeout`` for the first."""
    out: list[Future[Out]] = []
    try:
        out.append(finished.get(timeout=timeout))
        while True:
            out.append(finished.get_nowait())
    except queue.Empty:
        return out
