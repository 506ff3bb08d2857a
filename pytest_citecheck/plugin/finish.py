"""The session's end: why the run stopped, the run's end on the controller
(:meth:`~.session.CitecheckSession.finish`: report, gate, audit rows, report
files) and a failed gate as a failing ``citecheck::gate`` test case."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_citecheck.plugin.report_hooks import is_worker

if TYPE_CHECKING:
    from datetime import datetime

    from pytest_citecheck.plugin.session import CitecheckSession

GATE_NODEID = "citecheck::gate"
GATE_CATEGORY = "citecheck gate failed"


def end_session(
    citecheck: CitecheckSession,
    session: pytest.Session,
    exitstatus: int,
    started: datetime,
    deselected: int,
    selected: set[str] | None,
) -> None:
    """Before JUnit XML is written and the terminal's last line: close the engine,
    say why the run stopped, and end the run (controller only)."""
    citecheck.close()
    if citecheck.stopped_by is None:
        # Stopped outside citecheck's own waits: a Ctrl-C in pytest's code, -x or
        # --maxfail after a failing test, a test that asked the session to stop.
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            citecheck.stopped_by = "interrupted"
        elif session.shouldfail:
            citecheck.stopped_by = "-x/--maxfail reached"
        elif session.shouldstop:
            citecheck.stopped_by = "the run stopped"
    if is_worker(session.config):
        return
    config = session.config
    report = citecheck.finish(started, deselected, selected, subset=names_a_part(config))
    if report is None:
        return
    if (report.gate_failures or report.output_errors) and session.exitstatus == 0:
        # A report file that cannot be written fails the run instead of vanishing.
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if report.gate_failures:
        session.testscollected += 1  # the progress counter counts the gate case too
        config.hook.pytest_runtest_logreport(report=gate_report(report.gate_failures))


def names_a_part(config: pytest.Config) -> bool:
    """The command line names claim files, test files or node ids rather than
    folders: the run covers a part of the suite (as ``-k`` does)."""
    here = config.invocation_params.dir
    return any("::" in arg or (here / arg).is_file() for arg in config.args)


def gate_report(failures: list[str]) -> pytest.TestReport:
    """The gate as a test case: JUnit counts it as a failure and shows its lines."""
    text = "\n".join(f"citecheck gate FAILED: {failure}" for failure in failures)
    return pytest.TestReport(
        nodeid=GATE_NODEID,
        location=("citecheck", None, "gate"),
        keywords={"citecheck": 1},
        outcome="failed",
        longrepr=text,
        when="call",
        sections=[],
        duration=0.0,
        user_properties=[(f"citecheck.gate.{i}", f) for i, f in enumerate(failures, 1)],
    )


def gate_status(report: pytest.TestReport) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    """The failed gate case's status: no progress letter (it would trail the last
    line's "[100%]")."""
    if report.nodeid == GATE_NODEID and report.failed:
        return GATE_CATEGORY, "", ("GATE FAILED", {"red": True, "bold": True})
    return None
