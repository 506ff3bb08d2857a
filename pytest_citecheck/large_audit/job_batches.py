"""A Crawler job's judge batch (``--judge-batch --via-crawler``): no rounds over
every claim; each claim runs as its pages arrive, one that stops on a judge request
is parked here, the requests go out as batches (each sent from a worker the engine's
run loop starts), and the claim runs again once its answer is in
(:mod:`~pytest_citecheck.engine.judge_batch` answers the requests).
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from pytest_citecheck.engine.judge_batch import MAX_ROUNDS, JudgeBatch
from pytest_citecheck.engine.run_loop import WorkerErrors, start_worker
from pytest_citecheck.stages.judges.batch import Submitted

log = logging.getLogger("pytest_citecheck")

T = TypeVar("T")

# A Crawler job sends the judge requests waiting as one batch once this many have
# gathered, once none has joined them for JOB_BATCH_QUIET seconds (the pages stopped
# coming), once the oldest has waited JOB_BATCH_AGE seconds (pages trickling in), or at
# once when no claim is left to run. A batch's answer takes minutes to 24 h whatever
# its size: a few large batches, not one per page.
JOB_BATCH_SIZE = 5_000
JOB_BATCH_QUIET = 300.0
JOB_BATCH_AGE = 3600.0
# The job's meta entry that lists the batches it sent (endpoint, id, requests): a
# runner started again waits for them instead of asking their questions twice.
SAVED_BATCHES = "judge_batches"


class JobBatches(Generic[T]):
    """A Crawler job's judge batch: claims (``T``) run as their pages arrive; one that
    stops on a judge request waits here (:meth:`park`), the requests go out as batches
    (:meth:`send_if_due`, in a thread of its own each: the job keeps verifying while a
    batch runs), and a claim is given back (:meth:`ready`) once its request has an
    answer, to run again; the confirmation's question parks it once more.

    Each batch sent is saved through ``save`` (a JSON list, read back as ``saved``):
    a job's next run waits for those batches again rather than asking anew."""

    def __init__(
        self,
        batch: JudgeBatch,
        saved: str | None,
        save: Callable[[str], None],
        *,
        size: int = JOB_BATCH_SIZE,
        quiet: float = JOB_BATCH_QUIET,
        age: float = JOB_BATCH_AGE,
    ) -> None:
        self.batch = batch
        self.size, self.quiet, self.age = size, quiet, age
        self._save = save
        self._saved: list[dict[str, Any]] = saved_batches(saved)
        self._parked: dict[str, tuple[T, str]] = {}  # claim key -> (claim, its request)
        self._runs: dict[str, int] = {}
        self._again: list[T] = []
        self._errors = WorkerErrors()
        self._answered = threading.Event()
        self._lock = threading.Lock()
        for entry in self._saved:
            submitted = batch.resumed(entry["endpoint"], entry["batch_id"], entry["ids"])
            if submitted is not None:
                log.info("judge batch %s: waited for again", submitted.batch_id)
                self._start(functools.partial(batch.wait_resumed, submitted))

    def park(self, claim: T, key: str, cid: str) -> None:
        """``claim`` (named ``key``) stopped on the request ``cid``: it waits for the
        answer; after :data:`MAX_ROUNDS` runs it runs once more, and a question still
        unanswered is then its error."""
        runs = self._runs[key] = self._runs.get(key, 0) + 1
        if runs >= MAX_ROUNDS:
            self.batch.give_up(key)
            self._again.append(claim)
        elif self.batch.waits_for(cid):
            self._parked[key] = (claim, cid)
        else:  # answered while it stopped
            self._again.append(claim)

    def ready(self) -> list[T]:
        """The claims to run again: their request has its answer (or is to be asked
        again: a resumed batch did not give it)."""
        out, self._again = self._again, []
        if self._answered.is_set():
            self._answered.clear()
            for key, (claim, cid) in list(self._parked.items()):
                if not self.batch.waits_for(cid):
                    del self._parked[key]
                    out.append(claim)
        return out

    def send_if_due(self, nothing_else: bool) -> None:
        """Send the waiting requests as a batch when ``size`` gathered, none joined for
        ``quiet`` seconds, the oldest waited ``age`` seconds, or ``nothing_else`` runs
        (every other claim is parked or done)."""
        waiting = self.batch.pending
        if not waiting:
            return
        now = self.batch.clock()
        quiet = now - self.batch.last_asked >= self.quiet
        old = now - self.batch.first_asked >= self.age
        if nothing_else or waiting >= self.size or quiet or old:
            self.batch.next_round()
            taken = self.batch.take_pending()
            self._start(functools.partial(self.batch.send, taken, self._sent))

    @property
    def busy(self) -> bool:
        """Some claim waits (for a batch out, or for its question to go out). A batch
        no claim waits for (a resumed one whose claims were recorded since) holds
        nothing up."""
        return bool(self._parked or self._again) or self.batch.pending > 0

    def raise_errors(self) -> None:
        self._errors.raise_first()

    def finished(self) -> None:
        """Every claim of the job has its result: no batch is waited for again."""
        if self._saved:
            self._saved = []
            self._save("[]")

    def _sent(self, batches: list[Submitted]) -> None:
        entries = [{"endpoint": b.endpoint, "batch_id": b.batch_id, "ids": b.ids} for b in batches]
        with self._lock:
            self._saved += entries
            text = json.dumps(self._saved)
        self._save(text)

    def _start(self, work: Callable[[], object]) -> None:
        def run() -> None:
            try:
                work()
            except BaseException as exc:  # the job's loop raises it
                self._errors.add(exc)
            finally:
                self._answered.set()

        start_worker(run, "citecheck-judge-batch")


def saved_batches(text: str | None) -> list[dict[str, Any]]:
    """The batches a job's meta lists; an unreadable entry is dropped (its requests
    are asked again)."""
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    if not isinstance(value, list):
        return []
    return [
        e
        for e in value
        if isinstance(e, dict)
        and isinstance(e.get("endpoint"), str)
        and isinstance(e.get("batch_id"), str)
        and isinstance(e.get("ids"), list)
        and all(isinstance(i, str) for i in e["ids"])
    ]
