"""Results travel in reports (xdist-safe): a claim item's results go onto its
call report, as JSON from an xdist worker or as the objects in this process, and
join the session when the report is logged. Light: pytest only until a citecheck
session exists."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_citecheck.plugin.items import CLAIM_DOMAIN, ClaimItem
from pytest_citecheck.plugin.options import SETTINGS_KEY
from pytest_citecheck.plugin.report_hooks import REPORT_ATTR, is_worker
from pytest_citecheck.plugin.state import citecheck_session


def carry_results(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> None:
    """The item's results onto its call report (popped from the item: from here on
    the report carries them, each held once)."""
    from pytest_citecheck.plugin.session import RESULTS_KEY

    results = item.stash.get(RESULTS_KEY, None)
    if results is not None:
        del item.stash[RESULTS_KEY]
    if results is None and isinstance(item, ClaimItem):
        # The run blew up before a result existed: its citations are errors,
        # never silently missing from the totals.
        detail = f"{call.excinfo.typename}: {call.excinfo.value}" if call.excinfo else "no result"
        from pytest_citecheck.claims.labels import Reason
        from pytest_citecheck.core.secrets import scrub
        from pytest_citecheck.plugin.session import error_result

        results = [error_result(item.claim, Reason.INTERNAL, scrub(detail))]
    if isinstance(item, ClaimItem) and item.config.stash[SETTINGS_KEY].recheck:
        from pytest_citecheck.plugin.recheck import attach

        attach(item, report)
    if results:
        # Across processes (xdist) as JSON; in this process the objects themselves.
        payload: Any = results
        if is_worker(item.config):
            payload = json.dumps([r.dump_with_answer() for r in results])
        setattr(report, REPORT_ATTR, payload)


def take_results(config: pytest.Config, report: pytest.TestReport) -> None:
    """A call report's results join the session (this process's, or a worker's)."""
    payload = getattr(report, REPORT_ATTR, None)
    if payload is not None and report.when == "call":
        from pytest_citecheck.reports.figures import ItemInfo

        item = ItemInfo(report.outcome, report.location[1], report.location[0])
        citecheck_session(config).add_report_results(report.nodeid, payload, item)
        if not is_worker(config):
            # The session holds the results now; the report pytest keeps does not.
            # (On a worker the attribute still has to travel to the controller.)
            delattr(report, REPORT_ATTR)
    forget_quiet_phase(config, report)


def forget_quiet_phase(config: pytest.Config, report: pytest.TestReport) -> None:
    """Keep a claim's failure report compact.

    The terminal keeps every passed setup/teardown report and, for each failure,
    scans all of them for teardown output: quadratic, minutes for 10,000 failing
    claims. A claim item's quiet setup/teardown has nothing to show: drop it
    once the terminal has counted it (it is the last one it stored).
    """
    if report.when == "call" or not report.passed or report.sections:
        return
    if not str(report.location[2]).startswith(CLAIM_DOMAIN):
        return
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    quiet = getattr(terminal, "stats", {}).get("")
    if quiet and quiet[-1] is report:
        quiet.pop()
