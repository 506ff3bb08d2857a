"""The run loop: the one place a run starts threads and executors.

Every front end hands its claims to the engine, which runs them here, whatever their
source, through one entry point, :meth:`RunLoop.run` of a :class:`Source`: all at once
(pytest, batch, the service: :class:`~pytest_citecheck.engine.sources.ClaimSet`), in
judge-batch rounds (:class:`~pytest_citecheck.engine.sources.BatchRounds`), as a
Crawler job's deliveries arrive
(:class:`~pytest_citecheck.large_audit.job_source.DeliverySource`), or a recheck's set
(:class:`~pytest_citecheck.engine.sources.InOrder`). The loop owns the pool, the stop
(:class:`~pytest_citecheck.engine.stopping.StopSignal`: Ctrl-C, ``-x``, a front end's
``should_stop``; a claim checks it as it starts, so a stopped run starts no claim in
any source) and the end (none waits and none runs, or the source idled). The workers a
run needs beside its claims (the Crawler's push threads, the judge batch's sender) are
started through :func:`start_worker`. No other module of the package starts a thread
or an executor (``tests/unit/test_threads.py`` holds it), but the service's server
(its own).

Many claims at once: a thread per claim in flight, at most ``concurrency``.
Network calls of different claims overlap; each claim records into or replays from
its own cassette (:mod:`pytest_citecheck.recording.transport` serves each thread's
HTTP), so no state is shared between claims but the engine's stages. A claim checks
the :class:`~pytest_citecheck.engine.stopping.StopSignal` as it starts; the claims that
start are always the first ones submitted (a stop keeps back no claim before one that
started), so a front end that stops at the first claim never started reports every
claim that ran.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import queue
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor, wait
from typing import Protocol, TypeVar

from pytest_citecheck.engine.stopping import ClaimNotStarted, StopSignal

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


T = TypeVar("T")
Item = TypeVar("Item")
Out = TypeVar("Out")


def start_worker(target: Callable[[], object], name: str) -> threading.Thread:
    """Start a run's worker beside its claims (a daemon thread: a stopped run never
    waits for one it has no more use for); the caller joins it when it must."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


class WorkerErrors:
    """What a run's workers (:func:`start_worker`) died of, kept for the run's own
    thread, which raises the first: a dead worker stops its run, never silently."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._errors: list[BaseException] = []

    def add(self, exc: BaseException) -> None:
        with self._lock:
            self._errors.append(exc)

    def raise_first(self) -> None:
        with self._lock:
            first = self._errors[0] if self._errors else None
        if first is not None:
            raise first


class Source(Protocol[Item, Out]):
    """Claims for :meth:`RunLoop.run`: the ready ones at each look, each run on the
    loop's pool, each settled in the loop's thread as it finishes."""

    # How long one look waits for a claim to finish before looking again.
    poll: float
    # A run in which nothing moved for this long (seconds) ends.
    idle_timeout: float

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

    def name(self, item: Item) -> str:
        """The claim's name (in :class:`ClaimNotStarted`)."""
        ...

    def run(self, item: Item) -> Out:
        """Run one claim (on the pool)."""
        ...

    def settle(self, item: Item, future: Future[Out]) -> list[Item]:
        """A claim finished (its future is done): the claims to run again now."""
        ...

    def skipped(self, item: Item) -> None:
        """A claim the stop kept from starting (nothing of it ran)."""
        ...

    def tick(self, running: bool) -> list[Item]:
        """After each look (``running``: some claim runs): the claims to run again."""
        ...

    def busy(self) -> bool:
        """Something outside the claims is awaited (an idle run does not end)."""
        ...

    def interrupted(self) -> None:
        """Ctrl-C was seen: no claim starts any more (told once, in the loop's thread)."""
        ...


class RunLoop:
    """One engine's pool (built on first use, at most ``concurrency`` threads named
    ``name_N``) and its stop: :meth:`run` runs a :class:`Source`, :meth:`submit` one
    call (the service's requests, the plugin's look-ahead)."""

    def __init__(self, concurrency: int, stop: StopSignal | None = None, name: str = "citecheck"):
        self.concurrency = concurrency
        self.stop = stop or StopSignal()
        self.name = name
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        # Each call's place in submission order, and the latest place that started:
        # a stop keeps back only the calls after every one started (see _start).
        self._submitted = itertools.count()
        self._admit = threading.Lock()
        self._last_started = -1

    def submit(
        self, work: Callable[[], T], name: str, skipped: Callable[[], None] | None = None
    ) -> Future[T]:
        """``work()`` on the pool; once stopped, the future raises
        :class:`ClaimNotStarted` for ``name`` (``skipped`` is told) instead."""
        pool = self._executor()
        with self._admit:  # places in the order the pool's queue holds the calls
            return pool.submit(self._start, next(self._submitted), work, name, skipped)

    def run(self, source: Source[Item, Out]) -> bool:
        """Run each claim of ``source`` once it is ready; returns when none waits and
        none runs, or when nothing moved for ``idle_timeout`` seconds with none running
        and the source not busy. A stop (Ctrl-C, or the stop signal set) starts no more
        claims (the source is told of each it kept from starting) and returns once the
        claims in flight have settled; a second Ctrl-C while they finish propagates.
        What stops the run otherwise (a dead worker the source raises) is raised once
        the claims in flight have finished. Returns whether Ctrl-C stopped the run."""
        running: dict[Future[Out], tuple[int, Item]] = {}
        finished: queue.Queue[Future[Out]] = queue.Queue()
        last_change, last_look = source.clock(), None
        interrupted = False
        sequence = 0

        def start(item: Item) -> None:
            nonlocal sequence
            future = self.submit(functools.partial(source.run, item), source.name(item))
            running[future] = (sequence, item)
            sequence += 1
            future.add_done_callback(finished.put)

        ready: list[Item]
        while running or (not self.stop.is_set and source.waiting()):
            try:
                if self.stop.is_set:
                    looked, ready = last_look, []
                else:
                    looked, ready = source.look()
                for item in ready:
                    start(item)
                done = _drain(finished, source.poll)
                for future in sorted(done, key=lambda f: running[f][0]):
                    item = running.pop(future)[1]
                    if _never_started(future):
                        source.skipped(item)
                        continue
                    for again in source.settle(item, future):
                        start(again)
                if not self.stop.is_set:
                    for item in source.tick(bool(running)):
                        start(item)
                if done or looked != last_look:
                    last_change, last_look = source.clock(), looked
                elif (
                    not running
                    and not source.busy()
                    and source.clock() - last_change >= source.idle_timeout
                ):
                    break
            except KeyboardInterrupt:  # wherever it lands, no finished claim is lost
                if interrupted:
                    raise
                interrupted = True
                self.stop.set()
                source.interrupted()
            except BaseException:
                # What stops the run (a dead worker) is raised once the claims in flight
                # have finished: its caller then closes what they use (a transport)
                # without cutting a request mid-answer, which would send it twice.
                _finish(running)
                raise
        return interrupted

    def close(self) -> None:
        """Cancel the calls not started; wait for those in flight."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                for module in USED_WHILE_VERIFYING:
                    importlib.import_module(module)
                self._pool = ThreadPoolExecutor(
                    max_workers=self.concurrency, thread_name_prefix=self.name
                )
            return self._pool

    def _start(
        self, place: int, work: Callable[[], T], name: str, skipped: Callable[[], None] | None
    ) -> T:
        """Start the call at ``place`` (submission order) unless stopped. Two workers
        can check in either order: a stop landing between their checks would keep an
        earlier call back while a later one runs (billed, yet after the first claim
        never started, so never reported). So the stop keeps back only a call after
        every one started: the calls that start are always the first ones."""
        with self._admit:
            if self.stop.is_set and place > self._last_started:
                refused = True
            else:
                refused = False
                self._last_started = max(self._last_started, place)
        if refused:
            if skipped is not None:
                skipped()
            raise ClaimNotStarted(name)
        return work()


def _never_started(future: Future[Out]) -> bool:
    """The stop kept the call from starting (or the pool was closed with it queued)."""
    if future.cancelled():
        return True
    try:
        return isinstance(future.exception(), ClaimNotStarted)
    except CancelledError:
        return True


def _finish(running: Mapping[Future[Out], object]) -> None:
    """Cancel the calls of ``running`` not started; wait for those in flight."""
    for future in running:
        future.cancel()
    wait(running)


def _drain(finished: queue.Queue[Future[Out]], timeout: float) -> list[Future[Out]]:
    """The futures done so far, waiting up to ``timeout`` for the first."""
    out: list[Future[Out]] = []
    try:
        out.append(finished.get(timeout=timeout))
        while True:
            out.append(finished.get_nowait())
    except queue.Empty:
        return out
