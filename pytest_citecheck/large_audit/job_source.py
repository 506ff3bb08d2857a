"""A Crawler job as a source of ready claims for the engine's run loop
(:meth:`~pytest_citecheck.engine.run_loop.RunLoop.run`): a claim is ready once every
web citation of it has been delivered (or failed); a claim that stops to wait (for a
JavaScript crawl, for the judge batch) waits again, and is ready again once its
answer is in. See :mod:`~pytest_citecheck.large_audit.crawler_job`, steps 4 and 5.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from pytest_citecheck.core.errors import JudgeDeferred
from pytest_citecheck.large_audit.job_store import JobState, JobStore

if TYPE_CHECKING:
    from pytest_citecheck.large_audit.job_batches import JobBatches
    from pytest_citecheck.large_audit.push_workers import PushWorkers

# States a citation leaves only when its page arrives.
_WAITING = frozenset({JobState.QUEUED, JobState.PUSHING, JobState.PUSHED})
_DONE = frozenset({JobState.JUDGED, JobState.FAILED})
# How far back a look at the job's changes reaches before the previous look: a
# change is stamped inside its transaction, so one committed just after a look
# may carry a stamp from just before it.
_CLOCK_MARGIN = 5.0

R = TypeVar("R")


class Keyed(Protocol):
    """A claim of the job (a :class:`~pytest_citecheck.large_audit.crawler_job.JobClaim`):
    its name, unique in the job."""

    @property
    def key(self) -> str: ...


C = TypeVar("C", bound=Keyed)
R_co = TypeVar("R_co", covariant=True)


@dataclass(frozen=True)
class Deferred:
    """A claim that waits for the JavaScript crawls of ``urls``."""

    urls: tuple[str, ...]


class Job(Protocol[C, R_co]):
    """What the source asks of the job it runs (a
    :class:`~pytest_citecheck.large_audit.crawler_job.CrawlerJob`)."""

    store: JobStore
    pushing: PushWorkers
    poll: float
    idle_timeout: float

    def clock(self) -> float: ...

    def claim(self, jc: C, pushed: list[tuple[str, str]], before: bool) -> R_co | Deferred: ...

    def defer(
        self, jc: C, pushed: list[tuple[str, str]], wait: Deferred, ready: Readiness[C]
    ) -> list[C]: ...


class DeliverySource(Generic[C, R]):
    """One run of ``job`` over ``claims`` as the run loop's source: the claims ready
    as their pages are delivered, their results put in ``results`` (and told to
    ``on_result``) as they finish. A ready claim comes with whether an earlier run
    finished it (every citation judged or failed when it became ready)."""

    def __init__(
        self,
        job: Job[C, R],
        claims: Sequence[C],
        wanted: dict[str, list[tuple[str, str]]],
        results: dict[str, R],
        on_result: Callable[[str, R], None] | None,
        parked: JobBatches[C] | None,
    ) -> None:
        self.job = job
        self.poll = job.poll
        self.idle_timeout = job.idle_timeout
        self.clock = job.clock
        self.claims = claims
        self.wanted = wanted
        self.results = results
        self.on_result = on_result
        self.parked = parked
        self.ready = Readiness(claims, wanted)
        self._scanned: dict[JobState, int] | None = None
        self._since: float | None = None  # None: every citation's state is read once

    def waiting(self) -> bool:
        return bool(self.ready.pending) or self.busy()

    def busy(self) -> bool:
        return self.parked is not None and self.parked.busy

    def look(self) -> tuple[object, list[tuple[C, bool]]]:
        self.job.pushing.raise_errors()
        store = self.job.store
        counts = store.counts()
        found: list[tuple[C, bool]] = []
        if self.ready.pending and counts != self._scanned:
            # A claim becomes ready only when a citation leaves the waiting states,
            # which changes the counts: nothing is read while none moves, and then
            # only the rows changed since the last look.
            self._scanned = counts
            asked = time.time()
            states = store.states() if self._since is None else store.changed_since(self._since)
            self._since = asked - _CLOCK_MARGIN
            found = self.ready.update(states)
        return counts, found

    def name(self, item: tuple[C, bool]) -> str:
        return item[0].key

    def skipped(self, item: tuple[C, bool]) -> None:
        """The stop kept it from starting: it has no result (the job resumes it)."""

    def interrupted(self) -> None:
        """Ctrl-C: the job's state is in its store (running it again resumes it)."""

    def run(self, item: tuple[C, bool]) -> R | Deferred:
        jc, before = item
        return self.job.claim(jc, self.wanted[jc.key], before)

    def settle(self, item: tuple[C, bool], future: Future[R | Deferred]) -> list[tuple[C, bool]]:
        jc = item[0]
        try:
            result = future.result()  # a verifier's death ends the run
        except JudgeDeferred as waits:
            if self.parked is None:
                raise
            # Its citations stay delivered (not judged) until it has a verdict.
            self.parked.park(jc, jc.key, waits.custom_id)
            return []
        if isinstance(result, Deferred):
            again = self.job.defer(jc, self.wanted[jc.key], result, self.ready)
            return [(claim, False) for claim in again]
        self.results[jc.key] = result
        if self.on_result is not None:
            self.on_result(jc.key, result)
        return []

    def tick(self, running: bool) -> list[tuple[C, bool]]:
        parked = self.parked
        if parked is None:
            return []
        parked.raise_errors()
        again = [(jc, False) for jc in parked.ready()]
        parked.send_if_due(nothing_else=not self.ready.pending and not running and not again)
        if len(self.results) == len(self.claims):
            parked.finished()
        return again


class Readiness(Generic[C]):
    """Which claims have every web citation out of the waiting states, told one
    batch of changed states at a time (each change costs its own citation, not a
    pass over the job: a job of 100,000 citations is read whole once)."""

    def __init__(self, claims: Sequence[C], wanted: Mapping[str, list[tuple[str, str]]]) -> None:
        self.pending: dict[str, C] = {jc.key: jc for jc in claims}
        self._order = {jc.key: i for i, jc in enumerate(claims)}
        self._cids = {jc.key: [cid for cid, _ in wanted[jc.key]] for jc in claims}
        self._waiting = {key: set(cids) for key, cids in self._cids.items()}
        self._claims_of: dict[str, list[str]] = {}
        for key, cids in self._cids.items():
            for cid in cids:
                self._claims_of.setdefault(cid, []).append(key)
        self._state: dict[str, JobState] = {}
        self._first = True

    def wait_for(self, jc: C, states: Mapping[str, JobState | None]) -> list[C]:
        """``jc``, which ran, waits again: for the citations of ``states`` too (each
        in its state now). Returns ``[jc]`` when it is ready at once (none waits)."""
        key = jc.key
        for cid, state in states.items():
            if cid not in self._cids[key]:
                self._cids[key].append(cid)
                self._claims_of.setdefault(cid, []).append(key)
            if state is None or state in _WAITING:
                self._waiting[key].add(cid)
            else:
                self._state[cid] = state
        if self._waiting[key]:
            self.pending[key] = jc
            return []
        return [jc]

    def update(self, states: Mapping[str, JobState]) -> list[tuple[C, bool]]:
        """The claims ready now, each with whether every one of its citations was
        already done (judged or failed) when it became ready: an earlier run's."""
        candidates: set[str] = set()
        if self._first:
            # The first look reads every row: a citation the store does not hold
            # waits for nothing, and a claim with no web citation is ready at once.
            self._first = False
            for cids in self._waiting.values():
                cids.intersection_update(states)
            candidates.update(self.pending)
        for cid, state in states.items():
            if state in _WAITING or cid not in self._claims_of:
                continue
            self._state[cid] = state
            for key in self._claims_of[cid]:
                self._waiting[key].discard(cid)
                candidates.add(key)
        out: list[tuple[C, bool]] = []
        for key in sorted(candidates, key=self._order.__getitem__):  # in the claims' order
            if key not in self.pending or self._waiting[key]:
                continue
            found = [self._state.get(cid) for cid in self._cids[key]]
            out.append((self.pending.pop(key), bool(found) and all(s in _DONE for s in found)))
        return out
