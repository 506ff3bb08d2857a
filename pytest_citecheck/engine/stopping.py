"""Stopping a run: no new claim starts, the ones in flight finish.

A stop comes from :meth:`StopSignal.set` (Ctrl-C, ``-x``) or from the front end's
``should_stop`` asked before each claim starts. A claim submitted but not started
then never starts (no crawl, no judge call, no cassette): its future raises
:class:`ClaimNotStarted`. The run loop (:meth:`~pytest_citecheck.engine.run_loop.RunLoop.run`)
stops every source this way on Ctrl-C; the engine then raises :class:`Interrupted`
with the results that finished, so every cassette on disk is a complete one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError, Future

from pytest_citecheck.claims.results import ClaimResult


class ClaimNotStarted(Exception):
    """The engine was stopped before this claim started: no request was made for it."""

    def __init__(self, claim_id: str) -> None:
        super().__init__(f"claim {claim_id} was not started: the run was stopped")
        self.claim_id = claim_id


class Interrupted(Exception):
    """Ctrl-C stopped :meth:`Engine.verify_claims_sync`: the claims in flight finished,
    no other claim started. ``results`` maps an input index to its result; ``waiting``
    claims had stopped to wait for a judge batch."""

    def __init__(
        self, results: Mapping[int, ClaimResult], not_started: int, waiting: int = 0
    ) -> None:
        super().__init__(f"interrupted: {not_started} claim(s) not started")
        self.results = dict(results)
        self.not_started = not_started
        # Claims that had started and were waiting for a judge batch (their pages
        # were fetched; nothing of them was recorded).
        self.waiting = waiting


class StopSignal:
    """Whether claims may still start: set once, never cleared."""

    def __init__(self, should_stop: Callable[[], bool] | None = None) -> None:
        # Asked before each claim starts: True sets the signal.
        self.should_stop = should_stop
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    @property
    def is_set(self) -> bool:
        """Whether :meth:`set` was called, or ``should_stop`` now says so."""
        if not self._event.is_set() and self.should_stop is not None and self.should_stop():
            self._event.set()
        return self._event.is_set()


def not_started_line(count: int | None, why: str) -> str:
    """What a stopped run says about the claims it never started (None: how many
    is not known)."""
    if count is None:
        return f"citecheck: the run stopped early ({why}); claims that never ran are not counted"
    claims = "claim was" if count == 1 else "claims were"
    return f"citecheck: {count} {claims} not started ({why}); nothing was billed for them"


def outcome(future: Future[ClaimResult]) -> ClaimResult | None:
    """A finished claim future's result; None when the claim was never started
    (the engine was stopped, or closed with the claim still queued)."""
    try:
        return future.result()
    except (ClaimNotStarted, CancelledError):
        return None
