"""The hooks that need the config (``pytest_runtest_logreport`` gets none):
registered per session, like xdist's and syrupy's session plugins. Each hands
its work on: :mod:`.startup` (the checks), :mod:`.items` (a claim never
started), :mod:`.results` (the results in reports), :mod:`.xdist` (the workers'
counts), :mod:`.finish` (the end). Light until a citecheck session exists
(``--citecheck``, or the fixture used here or on a worker)."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from pytest_citecheck.plugin.finish import gate_status
from pytest_citecheck.plugin.items import claim_items, stop_if_never_started
from pytest_citecheck.plugin.options import SETTINGS_KEY
from pytest_citecheck.plugin.results import take_results
from pytest_citecheck.plugin.state import citecheck_session, running_session
from pytest_citecheck.plugin.xdist import SelectionCounts

if TYPE_CHECKING:
    from pytest_citecheck.plugin.session import CitecheckSession


class SessionHooks:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        # The test running now: an assertion about a result shows that test's results.
        self._running: pytest.Item | None = None
        # Claim items deselected and selected (the gate's part of the claims).
        self.counts = SelectionCounts()
        # When the run started (the report's run block).
        self.started = datetime.now(UTC)

    @property
    def session(self) -> CitecheckSession | None:
        return running_session(self.config)

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self.counts.deselect(len(claim_items(items)))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """xdist: each worker collects (and deselects) every item; their count is kept once."""
        self.counts.from_worker(node)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        """A claim never started: the session stops before its item (not run or reported)."""
        citecheck = self.session
        return None if citecheck is None else stop_if_never_started(citecheck, item)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        self._running = item
        try:
            return (yield)
        finally:
            self._running = None

    def pytest_assertrepr_compare(
        self, config: pytest.Config, op: str, left: object, right: object
    ) -> list[str] | None:
        """``assert result.label == "supported"`` failing shows the claim's citations."""
        if self._running is None or self.session is None or op not in ("==", "!="):
            return None
        return explain_label(self._running, left, op, right)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from pytest_citecheck.plugin.startup import check_at_start

        self.started = datetime.now(UTC)
        check_at_start(self.config)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from pytest_citecheck.plugin.startup import check_collected

        self.counts.collected(session.config, [i.nodeid for i in claim_items(session.items)])
        check_collected(session)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        """``--citecheck-dry-run``: print what recording would do; run nothing."""
        from pytest_citecheck.plugin.startup import dry_run

        return dry_run(session)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        take_results(self.config, report)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        if self.config.stash[SETTINGS_KEY].enabled:
            citecheck_session(self.config).add_crashed(crashitem)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Before JUnit XML is written and the terminal's last line: the run's end."""
        from pytest_citecheck.plugin.finish import end_session

        if (citecheck := self.session) is not None:
            counts = self.counts
            end_session(citecheck, session, exitstatus, self.started, *counts.both())

    def pytest_report_teststatus(
        self, report: pytest.TestReport
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        return gate_status(report)


def explain_label(item: pytest.Item, left: object, op: str, right: object) -> list[str] | None:
    """A failed comparison with a label: the running test's citations -- label,
    reason, quote, detail, and the command that records the test again."""
    from pytest_citecheck.claims.labels import Label
    from pytest_citecheck.plugin.session import RESULTS_KEY

    if not any(isinstance(side, Label) for side in (left, right)):
        return None
    results = item.stash.get(RESULTS_KEY, None)
    if not results:
        return None
    from pytest_citecheck.plugin.terms import PLUGIN_TERMS
    from pytest_citecheck.reports import per_claim

    rerecord = PLUGIN_TERMS.record_command(item.nodeid, "rewrite")
    return per_claim.explain_label(results, left, op, right, rerecord)
