"""All citecheck state of one pytest session, in one object (stored in ``config.stash``).

Hooks in ``plugin`` stay thin and call into this. The stages are built by the
pytest-free :class:`~pytest_citecheck.engine.core.Engine` (one place for the plugin,
the batch CLI and the service); this object maps pytest's options and hooks
onto it, holds the run of claims (:class:`~.ahead.AheadRun`: verified ahead
of their items in a record mode), collects results (from this process or from
xdist workers' reports) and ends the run on the controller. The start-up checks
are :mod:`.startup`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.claims.models import Claim
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.plugin.adapters import engine_settings, gate_settings
from pytest_citecheck.plugin.ahead import AheadRun
from pytest_citecheck.plugin.options import Settings
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.reports.figures import ItemInfo
from pytest_citecheck.reports.report import Report

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
        # The claims' run: verified ahead of their items, and the run's stop.
        self.ahead = AheadRun(self)

    @property
    def replaying(self) -> bool:
        return self.settings.record_mode.replay_only

    @property
    def stopped_by(self) -> str | None:
        """Why the engine was stopped ("interrupted", "-x/--maxfail"); None: it was not."""
        return self.ahead.stopped_by

    @stopped_by.setter
    def stopped_by(self, why: str | None) -> None:
        self.ahead.stopped_by = why

    @property
    def pytest_session(self) -> pytest.Session | None:
        """pytest's session, set when a claim item runs (its stop stops the engine)."""
        return self.ahead.pytest_session

    @pytest_session.setter
    def pytest_session(self, session: pytest.Session | None) -> None:
        self.ahead.pytest_session = session

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
            self._engine.should_stop = self.ahead.pytest_stopping
        return self._engine

    @property
    def built_engine(self) -> Engine | None:
        """The engine if it was built (and not closed yet); never builds one."""
        return self._engine

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
        self.ahead.close()
        if self._engine is not None:
            self._engine.close()
            self.ahead.engine_closed(self._engine.progress.not_started)
            self._engine = None

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
        """Record: verify ``items``' claims concurrently now (:meth:`AheadRun.verify_ahead`)."""
        self.ahead.verify_ahead(items, terminal)

    def result_for(self, item: Any) -> ClaimResult:
        """The item's claim result: verified ahead, or now (:meth:`AheadRun.result_for`)."""
        return self.ahead.result_for(item)

    def not_started_line(self) -> str | None:
        """``citecheck: 3 claims were not started (interrupted); nothing was billed...``"""
        from pytest_citecheck.engine.stopping import not_started_line

        count = self.ahead.not_started
        if not count:
            return None
        return not_started_line(count, self.stopped_by or "the run stopped")

    def unverified(self, selected: set[str] | None) -> int | None:
        """Selected claims that never got a result: claims submitted ahead and never
        started, and, when the run stopped early (Ctrl-C, ``-x``, a failing test), the
        claim items pytest never ran. ``selected``: the node ids of the claim items
        selected (None: not known, an xdist controller whose workers did not say).
        None: the run stopped and how many is not known."""
        not_started = self.ahead.not_started
        if self.stopped_by is None:
            return not_started
        if selected is None:
            return not_started or None
        return max(not_started, len(selected - self.results.keys()))

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
