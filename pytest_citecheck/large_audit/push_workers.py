"""A Crawler job's push threads: what is queued in the job store, pushed at the
Crawler's push rate (see :mod:`~pytest_citecheck.large_audit.crawler_job`, step 3).

A push certainly not queued at Crawlbase goes back to the queue, one that may be
queued stays ``pushing`` and waits for its delivery -- never for a second push. The
threads are started through the engine's run loop
(:func:`~pytest_citecheck.engine.run_loop.start_worker`).
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field

from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.engine.run_loop import WorkerErrors, start_worker
from pytest_citecheck.large_audit.job_store import (
    CITATION_HEADER,
    JOB_HEADER,
    JobStore,
    is_js_citation,
)
from pytest_citecheck.large_audit.pusher import CrawlerPusher, PushRate, PushResult

# A push refused as "not queued" (429, 503, no connection) this many times fails.
MAX_PUSH_TRIES = 5


@dataclass(eq=False)
class PushWorkers:
    """Up to ``threads`` push threads for one run of a job; a dead one stops them all
    and :meth:`raise_errors` raises why (the job's state stays as it was)."""

    store: JobStore
    pusher: CrawlerPusher
    js_pusher: CrawlerPusher | None
    rate: PushRate
    threads: int
    retry_pause: float
    stopped: threading.Event = field(default_factory=threading.Event, init=False)
    # Pushes accepted or possibly queued at Crawlbase.
    pushed: int = field(default=0, init=False)
    _threads: list[threading.Thread] = field(default_factory=list, init=False)
    _errors: WorkerErrors = field(default_factory=WorkerErrors, init=False)
    _tries: dict[str, int] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def start(self) -> None:
        """Push threads up to ``threads`` (each ends when the queue is empty; a
        JavaScript push queued later starts them again)."""
        self._threads = [thread for thread in self._threads if thread.is_alive()]
        while len(self._threads) < self.threads and not self.stopped.is_set():
            name = f"citecheck-push-{len(self._threads)}"
            self._threads.append(start_worker(self._push_loop, name))

    def stop(self) -> None:
        """Stop pushing; returns when every push thread has ended."""
        self.stopped.set()
        for thread in self._threads:
            thread.join()

    def raise_errors(self) -> None:
        self._errors.raise_first()

    def _push_loop(self) -> None:
        # Without a JavaScript Crawler a JavaScript push an earlier run queued waits.
        kinds = None if self.js_pusher is not None else False
        try:
            while not self.stopped.is_set():
                taken = self.store.take_for_push(1, javascript=kinds)
                if not taken:
                    return
                cid, url = taken[0]
                pusher = self.pusher
                if is_js_citation(cid) and self.js_pusher is not None:
                    pusher = self.js_pusher
                self.rate.wait()
                echo = {JOB_HEADER: self.store.job, CITATION_HEADER: cid}
                sending = functools.partial(self.store.mark_sending, cid)
                self._settle(cid, pusher.push(url, echo, about_to_send=sending))
        except BaseException as exc:  # a dead pusher stops the run; the state stays
            self._errors.add(exc)
            self.stopped.set()

    def _settle(self, cid: str, result: PushResult) -> None:
        if result.outcome == "accepted" and result.rid is not None:
            self.store.mark_pushed(cid, result.rid)
            with self._lock:
                self.pushed += 1
            return
        if result.outcome == "ambiguous":
            # It may be queued at Crawlbase: its delivery binds by the echoed id.
            with self._lock:
                self.pushed += 1
            return
        if result.fatal:
            self.store.requeue(cid, result.detail)
            raise ConfigurationError(result.detail)
        if not result.retry:
            self.store.mark_failed(cid, f"push refused: {result.detail}")
            return
        with self._lock:
            tries = self._tries[cid] = self._tries.get(cid, 0) + 1
        if tries >= MAX_PUSH_TRIES:
            self.store.mark_failed(cid, f"push not queued after {tries} tries: {result.detail}")
            return
        self.store.requeue(cid, result.detail)
        self.stopped.wait(self.retry_pause)
