"""All citecheck state of one pytest session, in one object (stored in ``config.stash``).

Hooks in ``plugin`` stay thin and call into this. The stages are built by the
pytest-free :class:`~pytest_citecheck.engine.core.Engine` (one place for the plugin,
the batch CLI and the service); this object maps pytest's options and hooks
onto it, decides when claims are verified -- in a record mode, concurrently
ahead of the items that report them -- collects results (from this
process or from xdist workers' reports) and evaluates the gate on the
controller.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.claims.models import Claim
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.plugin.adapters import engine_settings, gate_settings
from pytest_citecheck.plugin.options import Settings
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.reports.report import ItemInfo, Report

if TYPE_CHECKING:
    # Only types: the engine and its stages load when the first claim runs.
    from datetime import datetime

    from pytest_citecheck.engine.core import Engine
    from pytest_citecheck.engine.gate import Baseline, BaselineError
    from pytest_citecheck.engine.settings import EngineSettings, StageHooks
    from pytest_citecheck.recording.recorder import Recording
    from pytest_citecheck.stages.judges.base import Judge

SESSION_KEY = pytest.StashKey["CitecheckSession"]()
RESULTS_KEY = pytest.StashKey[list[ClaimResult]]()

# How often the recording progress line is refreshed (a TTY) or printed (a log).
_TTY_REFRESH = 0.5
_LOG_EVERY = 10.0


class CitecheckSession:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.results: dict[str, ClaimResult] = {}
        # What pytest said about each claim's test item (outcome, where it is).
        self.items: dict[str, ItemInfo] = {}
        # The baseline, read once by the start-up checks (plugin.options.check_paths).
        self.baseline: Baseline | None = None
        self.report: Report | None = None
        self._engine: Engine | None = None
        # Claims verified ahead of their items (record modes): nodeid -> result,
        # until the item reports it. ``_submitted`` remembers every claim ever
        # submitted, so a later item's call never verifies a reported claim again.
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

    @property
    def replaying(self) -> bool:
        return self.settings.record_mode.replay_only

    # -- the engine, built once ---------------------------------------------------

    def engine_settings(self) -> EngineSettings:
        """The engine's settings, mapped from the options (the recheck shares them)."""
        return engine_settings(
            self.settings, cache_dir=self._cache_dir(), run_id=_xdist_run_id(self.config)
        )

    def stage_hooks(self) -> StageHooks:
        """The ``pytest_citecheck_make_*`` hooks as the engine's stage factories."""
        from pytest_citecheck.engine.settings import StageHooks

        hook = self.config.hook
        config = self.config
        return StageHooks(
            make_fetcher=lambda: hook.pytest_citecheck_make_fetcher(config=config),
            make_judge=lambda spec: hook.pytest_citecheck_make_judge(config=config, spec=spec),
            make_ranker=lambda: hook.pytest_citecheck_make_ranker(config=config),
        )

    def engine(self) -> Engine:
        if self._engine is None:
            from pytest_citecheck.engine.core import Engine

            self._engine = Engine.from_settings(self.engine_settings(), self.stage_hooks())
            self._engine.should_stop = self._pytest_stopping
        return self._engine

    def _pytest_stopping(self) -> bool:
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
        engine = self._engine
        skipped = self._closed_not_started if engine is None else engine.progress.not_started
        return skipped + sum(f.cancelled() for f in self._ahead.values())

    def _cache_dir(self) -> Path | None:
        """--citecheck-cache-dir, else pytest's cache directory; a read-only one or
        ``-p no:cacheprovider`` means no cache, never an error."""
        if self.settings.cache_dir is not None or self.replaying:
            return self.settings.cache_dir
        cache = getattr(self.config, "cache", None)
        if cache is None:
            return None
        try:
            path: Path = cache.mkdir("citecheck")
        except OSError:
            return None
        return path

    def judge(self, spec: str) -> Judge:
        return self.engine().judge(spec)

    def close(self) -> None:
        """Stop the engine's pool and close its HTTP clients."""
        self._release_ctrl_c()
        if self._announce:
            self._say_interrupted(None)
        if self._engine is not None:
            self._engine.close()
            self._closed_not_started = self._engine.progress.not_started
            self._engine = None

    # -- start-up checks -------------------------------------------------------------

    def preflight(self, items: Sequence[Any]) -> None:
        """Every key and token the selected claims need, checked once;
        raises ``pytest.UsageError`` naming the variables."""
        from pytest_citecheck.core.errors import ConfigurationError

        claims = {id(i.claim): i for i in items}
        try:
            self.engine().preflight(
                [i.claim for i in items], cassette_for=lambda c: claims[id(c)].cassette
            )
        except ConfigurationError as exc:
            raise pytest.UsageError(f"citecheck cannot record:\n{exc}") from None
        if self.settings.recheck:
            # The recheck records the live pages beside each cassette it replays.
            from pytest_citecheck.engine.recheck import recheck_folder_problems
            from pytest_citecheck.plugin.terms import PLUGIN_TERMS

            problems = recheck_folder_problems([i.cassette for i in items], PLUGIN_TERMS)
            if problems:
                listed = "\n".join(f"  - {p}" for p in problems)
                raise pytest.UsageError(f"--citecheck-recheck cannot save:\n{listed}")

    def preflight_claim(self, claim: Claim, cassette: Path) -> None:
        """The check of :meth:`preflight` for one claim of the ``citecheck`` fixture
        (known only when its test runs): a missing key stops the session with the
        same usage error, before any request is made."""
        from pytest_citecheck.core.errors import ConfigurationError

        if self.replaying:
            return
        try:
            self.engine().preflight([claim], cassette_for=lambda _: cassette)
        except ConfigurationError as exc:
            message = f"citecheck cannot record:\n{exc}"
        else:
            return
        if hasattr(self.config, "workerinput"):
            # An xdist worker cannot end the session: the test fails with the message.
            pytest.fail(message, pytrace=False)
        pytest.exit(message, returncode=pytest.ExitCode.USAGE_ERROR)

    def preflight_files(self) -> None:
        """The xdist controller collects nothing, so it reads the claim files under
        the run's paths itself; workers then skip the check."""
        from pytest_citecheck.claims.loader import ClaimFileError, load_claim_file
        from pytest_citecheck.recording.recorder import cassette_path

        class _Item:
            def __init__(self, claim: Claim, cassette: Path) -> None:
                self.claim, self.cassette = claim, cassette

        items = []
        for path in _claim_files(self.config, self.settings.patterns):
            try:
                claims = load_claim_file(
                    path, max_claim_chars=self.settings.max_claim_chars, answers_apart=True
                ).claims
            except (ClaimFileError, OSError, RecursionError):
                continue  # reported as an invalid claim file by the worker
            items += [_Item(c, cassette_path(path, c.id)) for c in claims]
        if items:
            self.preflight(items)

    def dry_run_lines(self, items: Sequence[Any]) -> list[str]:
        """What recording ``items``' claims would do (``--citecheck-dry-run``); no request."""
        claims = {id(i.claim): i for i in items}
        plan = self.engine().plan(
            [i.claim for i in items],
            cassette_for=lambda c: claims[id(c)].cassette,
            name_for=lambda c: claims[id(c)].nodeid,
        )
        from pytest_citecheck.engine.estimate import LISTED

        verbose = self.config.get_verbosity() > 0
        return plan.lines(
            self.settings.prices, PLUGIN_TERMS, listed=None if verbose else LISTED, list_all="-v"
        )

    # -- verification ------------------------------------------------------------------

    @contextmanager
    def recording(self, cassette: Path, nodeid: str, judge: Judge) -> Iterator[Recording]:
        """One cassette for a test's ``citecheck`` fixture calls (a corrupt one fails
        the test with the file and the fix, no traceback)."""
        from pytest_citecheck.recording.recorder import CorruptRecording, corrupt_detail

        with ExitStack() as stack:
            try:
                recording = stack.enter_context(self.engine().recording(cassette, nodeid, judge))
            except CorruptRecording as exc:
                pytest.fail(corrupt_detail(cassette, nodeid, exc.why, PLUGIN_TERMS), pytrace=False)
            yield recording

    def verify(self, claim: Claim, recording: Recording, judge: Judge) -> ClaimResult:
        return self.engine().verify_in(recording, claim)

    def verify_ahead(self, items: Sequence[Any], terminal: Any | None = None) -> None:
        """Record: verify ``items``' claims concurrently now, showing progress on
        ``terminal`` (None: quiet); each item then reports its own result.

        Claims start in item order, and stop starting (:meth:`Engine.stop`) once
        ``--maxfail`` failing claims have finished, or on Ctrl-C: then the claims in
        flight finish and the items already verified report, and the session stops
        before the first item whose claim never started."""
        engine = self.engine()
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

        maxfail = int(getattr(self.config.option, "maxfail", 0) or 0)
        result = outcome(future)
        if maxfail <= 0 or result is None or not self.problems(result):
            return
        failed_before = self.pytest_session.testsfailed if self.pytest_session else 0
        with self._failing_lock:
            self._failing += 1
            reached = failed_before + self._failing >= maxfail
        if reached and self._engine is not None and not self._engine.stopped:
            self.stopped_by = "-x/--maxfail reached"
            self._engine.stop()

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
        if self._engine is not None:
            self._engine.stop()

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
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        if reporter is None:
            return
        from contextlib import nullcontext

        with capture.global_and_fixture_disabled() if capture is not None else nullcontext():
            reporter.ensure_newline()
            reporter.write_line(message)

    def result_for(self, item: Any) -> ClaimResult:
        """The item's claim result: verified ahead, or now (replay). A claim that was
        never started (the run was stopped) stops the session here."""
        future = self._ahead.pop(item.nodeid, None)
        if future is None:
            self._submitted.add(item.nodeid)
            return self.engine().verify(item.claim, item.cassette, item.nodeid)
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
        if future is None or self._engine is None or not self._engine.stopped:
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

    def not_started_line(self) -> str | None:
        """``citecheck: 3 claims were not started (interrupted); nothing was billed...``"""
        from pytest_citecheck.engine.stopping import not_started_line

        count = self.not_started
        if not count:
            return None
        return not_started_line(count, self.stopped_by or "the run stopped")

    def unverified(self, selected: set[str] | None) -> int | None:
        """Selected claims that never got a result: claims submitted ahead and never
        started, and, when the run stopped early (Ctrl-C, ``-x``, a failing test), the
        claim items pytest never ran. ``selected``: the node ids of the claim items
        selected (None: not known, an xdist controller whose workers did not say).
        None: the run stopped and how many is not known."""
        if self.stopped_by is None:
            return self.not_started
        if selected is None:
            return self.not_started or None
        return max(self.not_started, len(selected - self.results.keys()))

    def problems(self, result: ClaimResult) -> list[str]:
        """Why this claim's test item fails (the one policy: ``gate.claim_problems``)."""
        from pytest_citecheck.engine.gate import claim_problems

        return claim_problems(result, gate_settings(self.settings))

    # -- results from reports (this process or xdist workers) -------------------

    def add_report_results(
        self, nodeid: str, payload: str | list[ClaimResult], item: ItemInfo | None = None
    ) -> None:
        """Results of one item: JSON from an xdist worker, or this process's objects;
        ``item``: what pytest said about the item."""
        if item is not None:
            self.items[nodeid] = item
        if isinstance(payload, str):
            results = [ClaimResult.model_validate(r) for r in json.loads(payload)]
        else:
            results = payload
        for i, result in enumerate(results):
            key = nodeid if len(results) == 1 else f"{nodeid}[{i}]"
            self.results[key] = result

    def add_crashed(self, nodeid: str) -> None:
        """A worker died running ``nodeid``: its citations count as errors."""
        if nodeid in self.results:
            return
        self.results[nodeid] = crashed_result(nodeid, self.config.rootpath)

    # -- the run's end -------------------------------------------------------------

    def finish(
        self,
        started: datetime,
        deselected: int = 0,
        selected: set[str] | None = None,
        *,
        subset: bool = False,
    ) -> Report | None:
        """The run's end (:func:`~pytest_citecheck.reports.finish.finish_run`): the
        report, the gate, the audit rows and the files. ``deselected`` claim items
        (``-k``, ``--lf``) make it a partial run, compared with the baseline over the
        same claims (so is a ``subset`` run, files or node ids named), the suite's
        floors held as ``gate_scope`` says; ``selected`` claim items without a
        result, when the run stopped early, were never verified (:meth:`unverified`)."""
        if not self.results:
            return None
        from pytest_citecheck.plugin.adapters import outputs
        from pytest_citecheck.reports.finish import AuditRun, Started, finish_run

        s = self.settings
        audit = None
        if s.audit is not None:
            from pytest_citecheck.reports.audit import AuditIndex

            audit = AuditRun(AuditIndex(s.audit), "pytest")
        self.report = finish_run(
            self.results,
            gate_settings(s),
            outputs(s),
            baseline=self._baseline(),
            deselected=deselected,
            subset=subset,
            not_started=self.unverified(selected),
            stopped_by=self.stopped_by,
            prices=s.prices,
            run=s.quote_policy.metadata(),
            started=Started(s.record_mode, started),
            items=self.items,
            audit=audit,
            root=self.config.rootpath,
            invoked_in=self.config.invocation_params.dir,
        )
        return self.report

    def _baseline(self) -> Baseline | BaselineError | None:
        """The baseline read at start-up; read now only when no start-up check ran
        (the ``citecheck`` fixture without ``--citecheck``)."""
        if self.settings.baseline is None or self.baseline is not None:
            return self.baseline
        from pytest_citecheck.engine.gate import BaselineError, read_baseline

        try:
            self.baseline = read_baseline(self.settings.baseline, PLUGIN_TERMS)
        except BaselineError as exc:
            return exc
        return self.baseline


def crashed_result(nodeid: str, rootpath: Path) -> ClaimResult:
    """Error verdicts for every citation of the claim a dead worker was running."""
    path_part, _, claim_id = nodeid.partition("::")
    detail = f"the worker running {nodeid} crashed"
    try:
        from pytest_citecheck.claims.loader import load_claim_file

        claims = {c.id: c for c in load_claim_file(rootpath / path_part, max_claim_chars=0).claims}
        claim: Any = claims.get(claim_id)
    except Exception:
        claim = None
    if claim is None:
        # Its file no longer reads (or it was a fixture test): what is known is the node
        # id, which the claim-id rules need not fit, so the claim is built unvalidated.
        claim = Claim.model_construct(
            id=claim_id or nodeid,
            claim=f"(the claim {nodeid} was running)",
            citations=[],
            expect=None,
            answer=None,
        )
    from pytest_citecheck.engine.verification import error_result

    return error_result(claim, Reason.WORKER_CRASHED, detail)


def error_result(claim: Claim, reason: str, detail: str) -> ClaimResult:
    """Every citation of ``claim`` is ``error`` (:func:`.engine.core.error_result`)."""
    from pytest_citecheck.engine.verification import error_result as build

    return build(claim, reason, detail)


def _xdist_run_id(config: pytest.Config) -> str | None:
    """The id pytest-xdist gives the run, shared by its workers (None: not a worker)."""
    workerinput = getattr(config, "workerinput", None)
    run_id = workerinput.get("testrunuid") if isinstance(workerinput, dict) else None
    return str(run_id) if run_id else None


def _claim_files(config: pytest.Config, patterns: Sequence[str]) -> list[Path]:
    """Claim files under the run's paths (``norecursedirs`` honoured)."""
    return [p for p in _claim_paths(config, patterns) if p.is_file()]


def broken_claim_links(config: pytest.Config, patterns: Sequence[str]) -> list[Path]:
    """Claim file names under the run's paths that are links to nothing: pytest
    does not collect them, so they would be skipped without a word."""
    return [p for p in _claim_paths(config, patterns) if p.is_symlink() and not p.exists()]


def _claim_paths(config: pytest.Config, patterns: Sequence[str]) -> list[Path]:
    from fnmatch import fnmatch

    skip = [str(p) for p in config.getini("norecursedirs")]
    found: list[Path] = []
    for arg in config.args or [str(config.rootpath)]:
        root = Path(config.invocation_params.dir, arg.split("::", 1)[0])
        if root.is_file() or (root.is_symlink() and not root.exists()):
            found.append(root)
            continue
        if not root.is_dir():
            continue
        for path in root.rglob("*"):
            rel = path.relative_to(root).parts[:-1]
            if any(fnmatch(part, pattern) for part in rel for pattern in skip):
                continue
            if any(fnmatch(path.name, p) for p in patterns) and (
                path.is_file() or path.is_symlink()
            ):
                found.append(path)
    return found
