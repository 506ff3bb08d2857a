"""``pytest --citecheck --citecheck-recheck``: the recheck as a scheduled test run.

Each claim item replays its recording as usual (so the citecheck summary and gate
are the replay's) and, through :class:`~pytest_citecheck.engine.recheck.Rechecker`,
fetches its cited pages live again; a claim with a citation whose status is in
``citecheck_recheck_fail_on`` fails, naming the status and what changed. The
recheck summary follows the citecheck one. xdist-safe: each process rechecks its
own items; results travel to the controller in the test reports.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_citecheck.plugin.report_hooks import is_worker

if TYPE_CHECKING:
    from pytest_citecheck.claims.results import ClaimResult
    from pytest_citecheck.engine.recheck import ClaimRecheck, Rechecker
    from pytest_citecheck.plugin.options import Settings
    from pytest_citecheck.plugin.session import CitecheckSession
    from pytest_citecheck.reports.recheck import RecheckReport

RECHECK_ATTR = "citecheck_recheck"
CHECKS_KEY = pytest.StashKey["ClaimRecheck"]()
_RECHECKER_KEY = pytest.StashKey["Rechecker"]()


def rechecker(config: pytest.Config, session: CitecheckSession) -> Rechecker:
    """This process's rechecker, built on first use from the session's settings."""
    built = config.stash.get(_RECHECKER_KEY, None)
    if built is None:
        from pytest_citecheck.engine.recheck import Rechecker

        built = Rechecker(session.engine_settings(), hooks=session.stage_hooks())
        config.stash[_RECHECKER_KEY] = built
    return built


def recheck_item(item: Any, session: CitecheckSession) -> tuple[ClaimResult, list[str]]:
    """Recheck one claim item: its replayed result, and why it fails the recheck."""
    checks = rechecker(item.config, session).recheck(item.claim, item.cassette, item.nodeid)
    item.stash[CHECKS_KEY] = checks
    result = checks.result if checks.result is not None else session.result_for(item)
    fail_on = session.settings.recheck_fail_on
    problems = [
        f"recheck: {c.status.value} {c.url}" + (f" ({c.detail})" if c.detail else "")
        for c in checks.citations
        if c.status.value in fail_on
    ]
    return result, problems


def attach(item: pytest.Item, report: pytest.TestReport) -> None:
    """Put the item's recheck on its report (as JSON from an xdist worker)."""
    checks = item.stash.get(CHECKS_KEY, None)
    if checks is None:
        return
    del item.stash[CHECKS_KEY]
    payload: Any = checks.model_dump_json() if is_worker(item.config) else checks
    setattr(report, RECHECK_ATTR, payload)


class RecheckHooks:
    """Collects every item's recheck and prints the recheck summary (controller)."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.checks: list[ClaimRecheck] = []

    def pytest_sessionstart(self, session: pytest.Session) -> None:

        if not self.settings.record_mode.replay_only:
            raise pytest.UsageError(
                "--citecheck-recheck compares the live pages with the recordings, which it "
                "replays: drop --citecheck-record (or use --citecheck-record=none)"
            )
        if is_worker(session.config):
            return
        from pytest_citecheck.core.errors import ConfigurationError
        from pytest_citecheck.plugin.session import SESSION_KEY

        try:
            rechecker(self.config, self.config.stash[SESSION_KEY]).preflight()
        except ConfigurationError as exc:
            raise pytest.UsageError(f"--citecheck-recheck: {exc}") from None

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, RECHECK_ATTR, None)
        if payload is None or report.when != "call":
            return
        if not is_worker(self.config):
            delattr(report, RECHECK_ATTR)
        if isinstance(payload, str):
            from pytest_citecheck.engine.recheck import ClaimRecheck

            payload = ClaimRecheck.model_validate(json.loads(payload))
        self.checks.append(payload)

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        # Outside the report hooks' (innermost) wrapper: the job page gets the
        # replay's summary first, then the recheck's.
        yield
        built = self.config.stash.get(_RECHECKER_KEY, None)
        if built is not None:
            built.close()
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary and not is_worker(self.config):
            self.report(Path(step_summary))

    def report(self, step_summary: Path | None = None) -> RecheckReport:
        """The recheck's report (its markdown appended to ``step_summary``)."""
        from pytest_citecheck.core.defaults import RecheckStatus
        from pytest_citecheck.reports.finish import finish_recheck
        from pytest_citecheck.reports.outputs import Outputs

        names = ",".join(self.settings.recheck_fail_on)

        def gate_line(failing: dict[RecheckStatus, int]) -> str:
            counts = ", ".join(f"{n} {status.value}" for status, n in failing.items())
            return f"{counts} (citecheck_recheck_fail_on {names})"

        return finish_recheck(
            sorted(self.checks, key=lambda c: c.nodeid),
            [RecheckStatus(name) for name in self.settings.recheck_fail_on],
            gate_line,
            Outputs(step_summary=step_summary),
        )

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if is_worker(self.config):
            return
        report = self.report()
        terminalreporter.write_sep("=", "citecheck recheck")
        for line in report.lines():
            terminalreporter.write_line(line.text, **line.markup)
        for failure in report.gate_failures:
            terminalreporter.write_line(f"citecheck recheck FAILED: {failure}", red=True, bold=True)
        if not report.gate_failures:
            terminalreporter.write_line("citecheck recheck passed", green=True)
