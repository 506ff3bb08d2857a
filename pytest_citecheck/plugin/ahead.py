"""The session's run of claims through the engine: in a record mode the claims are
verified concurrently, ahead of the items that report them, on the engine's pool;
and the run's stop -- ``-x``/``--maxfail``, a Ctrl-C, pytest's own stop -- with
the progress line while claims are in flight. In replay each item verifies its
own claim (:meth:`AheadRun.result_for`)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from pytest_citecheck.plugin.terminal import write_between_items

if TYPE_CHECKING:
    from pytest_citecheck.claims.results import ClaimResult
    from pytest_citecheck.engine.core import Engine

# How often the recording progress line is refreshed (a TTY) or printed (a log).
_TTY_REFRESH = 0.5
_LOG_EVERY = 10.0


class Owner(Protocol):
    """What the run needs of the session: its engine and its failure policy."""

    @property
    def config(self) -> pytest.Config: ...

    @property
    def built_engine(self) -> Engine | None: ...

    def engine(self) -> Engine: ...

    def problems(self, result: ClaimResult) -> list[str]: ...


class AheadRun:
    """Claims verified ahead of their items (record modes) on the engine's pool, and
    the run's stop: ``-x``/``--maxfail``, a Ctrl-C, pytest's own stop."""

    def __init__(self, session: Owner) -> None:
        self._session = session
        self._config = session.config
        # nodeid -> result, until the item reports it. ``_submitted`` remembers every
        # claim ever submitted, so a later item's call never verifies a reported claim
        # again.
        self._ahead: dict[str, Future[ClaimResult]] = {}
        self._submitted: set[str] = set()
        # pytest's session (set when a claim item runs): its shouldstop/shouldfail stop
        # the engine, so -x, --maxfail and a Ctrl-C start no new claim.
        self.pytest_session: pytest.Session | None = None
        # Why the engine was stopped ("interrupted", "-x/--maxfail"); None: it was not.
        self.stopped_by: str | None = None
        # Failing claims verified ahead, counted as they finish (for --maxfail).
        self._failing = 0
        self._failing_lock = threading.Lock()
        self._closed_not_started = 0
        # The SIGINT handler replaced while claims are in flight (_catch_ctrl_c), and
        # whether a Ctrl-C it caught is still to be said on the terminal.
        self._sigint: Any = None
        self._announce = False

    def pytest_stopping(self) -> bool:
        """pytest is stopping (``-x``/``--maxfail`` reached, an interrupt): no new claim."""
        session = self.pytest_session
        if session is None or not (session.shouldstop or session.shouldfail):
            return False
        if self.stopped_by is None:
            self.stopped_by = "-x/--maxfail reached" if session.shouldfail else "the run stopped"
        return True

    @property
    def not_started(self) -> int:
        """Claims submitted ahead that were never started (no request, no cassette):
        stopped before they started, or still queued when the session ended."""
        engine = self._session.built_engine
        skipped = self._closed_not_started if engine is None else engine.progress.not_started
        return skipped + sum(f.cancelled() for f in self._ahead.values())

    def close(self) -> None:
        """Restore the SIGINT handler, say a pending interrupt; then the session
        closes the engine (:meth:`engine_closed`)."""
        self._release_ctrl_c()
        if self._announce:
            self._say_interrupted(None)

    def engine_closed(self, not_started: int) -> None:
        self._closed_not_started = not_started

    def verify_ahead(self, items: Sequence[Any], terminal: Any | None = None) -> None:
        """Record: verify ``items``' claims concurrently now, showing progress on
        ``terminal`` (None: quiet); each item then reports its own result.

        Claims start in item order, and stop starting (:meth:`Engine.stop`) once
        ``--maxfail`` failing claims have finished, or on Ctrl-C: then the claims in
        flight finish and the items already verified report, and the session stops
        before the first item whose claim never started."""
        engine = self._session.engine()
        started = False
        for item in items:
            if item.nodeid not in self._submitted:
                self._submitted.add(item.nodeid)
                future = engine.submit(item.claim, item.cassette, item.nodeid)
                future.add_done_callback(self._count_failure)
                self._ahead[item.nodeid] = future
                started = True
        pending = {f for f in self._ahead.values() if not f.done()}
        if pending:
            self._catch_ctrl_c()
        # Claims this call started show their progress line even when they all
        # finished before this check (a fast machine, or a slow one's scheduling).
        if terminal is None or not (pending or started):
            return
        tty = bool(getattr(terminal, "isatty", False))
        terminal.start()
        last = 0.0
        while pending:
            try:
                _, pending = wait(pending, timeout=_TTY_REFRESH, return_when=FIRST_COMPLETED)
                if self._announce:
                    self._say_interrupted(terminal)
                line = engine.progress.line()
                if tty:
                    terminal.rewrite(line, erase=True)
                elif pending and engine.progress.elapsed() - last >= _LOG_EVERY:
                    last = engine.progress.elapsed()
                    terminal.write_line(line)
            except KeyboardInterrupt:
                self._interrupt(terminal)
        # The last figures stay on their line; the item's line starts below it.
        if tty:
            terminal.rewrite(engine.progress.line(), erase=True)
        else:
            terminal.write(engine.progress.line())
        terminal.done()

    def _count_failure(self, future: Future[ClaimResult]) -> None:
        """A claim finished (on the engine's thread, before it starts another): once
        ``--maxfail`` claims fail, pytest will stop at them, so start no other."""
        from pytest_citecheck.engine.stopping import outcome

        maxfail = int(getattr(self._config.option, "maxfail", 0) or 0)
        result = outcome(future)
        if maxfail <= 0 or result is None or not self._session.problems(result):
            return
        failed_before = self.pytest_session.testsfailed if self.pytest_session else 0
        with self._failing_lock:
            self._failing += 1
            reached = failed_before + self._failing >= maxfail
        engine = self._session.built_engine
        if reached and engine is not None and not engine.stopped:
            self.stopped_by = "-x/--maxfail reached"
            engine.stop()

    def _catch_ctrl_c(self) -> None:
        """While claims recorded ahead are in flight, the first Ctrl-C stops starting
        claims wherever the main thread is -- waiting for a claim, or in pytest's own
        reporting between two items -- not only while it waits (a KeyboardInterrupt
        there would end the session before the verified items report). Installed from
        the main thread over Python's default handler only; restored by :meth:`close`."""
        import signal

        if threading.current_thread() is not threading.main_thread():
            return
        if self._sigint is not None or signal.getsignal(signal.SIGINT) is not (
            signal.default_int_handler
        ):
            return  # already ours, or someone else's: left alone

        def first_ctrl_c(signum: int, frame: Any) -> None:
            in_flight = any(not f.done() for f in self._ahead.values())
            if self.stopped_by == "interrupted" or not in_flight:
                raise KeyboardInterrupt  # as without citecheck
            self._stop_for_ctrl_c()
            self._announce = True  # said at the next wait: not from inside a handler

        self._sigint = signal.default_int_handler
        signal.signal(signal.SIGINT, first_ctrl_c)

    def _release_ctrl_c(self) -> None:
        import signal

        if self._sigint is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self._sigint)
            self._sigint = None

    def _stop_for_ctrl_c(self) -> None:
        self.stopped_by = "interrupted"
        engine = self._session.built_engine
        if engine is not None:
            engine.stop()

    def _interrupt(self, terminal: Any | None) -> None:
        """The first Ctrl-C: start no new claim, let the ones in flight finish (a
        second Ctrl-C propagates to pytest)."""
        if self.stopped_by == "interrupted":
            raise KeyboardInterrupt
        self._stop_for_ctrl_c()
        self._say_interrupted(terminal)

    def _say_interrupted(self, terminal: Any | None) -> None:
        self._announce = False
        message = (
            "citecheck: interrupted: no new claim starts; "
            "waiting for the claims in flight to finish"
        )
        if terminal is not None:
            terminal.write_line("")
            terminal.write_line(message)
            return
        # Quiet (-q) or between items: the terminal, with output capture suspended.
        write_between_items(self._config, message)

    def result_for(self, item: Any) -> ClaimResult:
        """The item's claim result: verified ahead, or now (replay). A claim that was
        never started (the run was stopped) stops the session here."""
        future = self._ahead.pop(item.nodeid, None)
        if future is None:
            self._submitted.add(item.nodeid)
            return self._session.engine().verify(item.claim, item.cassette, item.nodeid)
        from pytest_citecheck.engine.stopping import outcome

        self._wait_out(future)
        result = outcome(future)
        if result is None:
            self.stop_before(item)
            pytest.skip(self.stop_reason())
        return result

    def never_started(self, item: Any) -> bool:
        """Whether ``item``'s claim was submitted ahead and then never started."""
        from pytest_citecheck.engine.stopping import outcome

        future = self._ahead.get(getattr(item, "nodeid", ""))
        engine = self._session.built_engine
        if future is None or engine is None or not engine.stopped:
            return False
        self._wait_out(future)  # queued: it is about to say it never started
        return outcome(future) is None

    def _wait_out(self, future: Future[ClaimResult]) -> None:
        """Wait for one claim; a first Ctrl-C meanwhile stops starting new ones."""
        if self._announce:
            self._say_interrupted(None)
        while not future.done():
            try:
                wait([future], timeout=_TTY_REFRESH)
            except KeyboardInterrupt:
                self._interrupt(None)

    def stop_reason(self) -> str:
        why = self.stopped_by or "the run stopped"
        return f"citecheck: {why}; claims not started from here on"

    def stop_before(self, item: Any) -> None:
        """End the session before ``item``: its claim, and the ones after it, never
        started (pytest then reports ``Interrupted``, the verified items stand)."""
        if self.pytest_session is not None and not self.pytest_session.shouldstop:
            self.pytest_session.shouldstop = self.stop_reason()
