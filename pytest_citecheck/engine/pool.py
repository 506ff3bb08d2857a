"""Many claims at once: a thread per claim in flight, at most ``concurrency``.

Network calls of different claims overlap; each claim records into or replays from
its own cassette (:mod:`pytest_citecheck.recording.transport` serves each thread's
HTTP), so no state is shared between claims but the engine's stages. A claim checks
the :class:`~pytest_citecheck.engine.stopping.StopSignal` as it starts.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

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
