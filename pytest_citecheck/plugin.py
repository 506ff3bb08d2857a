"""The pytest entry point: thin hooks over :class:`~pytest_citecheck.session.CitecheckSession`.

Nothing heavy is imported here: the loader (yaml), VCR, the judges and the
embedding model are imported when a claim is collected or run, so ``pytest
--help`` and runs without ``--citecheck`` pay nothing.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest

# The fixture lives in its own module; importing it here registers it.
from pytest_citecheck.fixture import citecheck as citecheck
from pytest_citecheck.models import Claim, ClaimResult, Reason
from pytest_citecheck.options import pytest_addoption as pytest_addoption
from pytest_citecheck.options import settings_from_config
from pytest_citecheck.report_hooks import REPORT_ATTR, ReportHooks
from pytest_citecheck.session import (
    RESULTS_KEY,
    SESSION_KEY,
    CitecheckSession,
    error_result,
)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_citecheck import newhooks

    pluginmanager.add_hookspecs(newhooks)


def pytest_configure(config: pytest.Config) -> None:
    session = CitecheckSession(config, settings_from_config(config))
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(SessionHooks(session), "citecheck-session")
    config.pluginmanager.register(ReportHooks(config, session.settings), "citecheck-reports")


def _session(config: pytest.Config) -> CitecheckSession:
    return config.stash[SESSION_KEY]


# -- collection -------------------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    session = _session(parent.config)
    if session.settings.enabled and any(
        fnmatch(file_path.name, pattern) for pattern in session.settings.patterns
    ):
        return ClaimFileCollector.from_parent(parent, path=file_path)
    return None


class ClaimFileCollector(pytest.File):
    """A claim file: one test item per claim."""

    def collect(self) -> Iterator[pytest.Item]:
        from pytest_citecheck.loader import ClaimFileError, load_claim_file

        try:
            claim_file = load_claim_file(self.path)
        except ClaimFileError as exc:
            # Not raised as a collection error: pytest would then stop the whole
            # session, and every other claim file must still run.
            yield InvalidClaimFile.from_parent(self, name="invalid-claim-file", error=exc)
            return
        for claim in claim_file.claims:
            yield ClaimItem.from_parent(self, name=claim.id, claim=claim)


class ClaimFailed(Exception):
    def __init__(self, result: ClaimResult, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.result = result
        self.problems = problems


class ClaimItem(pytest.Item):
    """One claim and its citations, verified in its own cassette."""

    def __init__(self, *, claim: Claim, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.claim = claim

    def runtest(self) -> None:
        from pytest_citecheck.recording import cassette_path

        session = _session(self.config)
        result = session.verify_claim(
            self.claim, cassette_path(self.path, self.claim.id), self.nodeid
        )
        result = result.model_copy(update={"file": self.path.name})
        self.stash[RESULTS_KEY] = [result]
        from pytest_citecheck.report import junit_properties

        self.user_properties.extend(junit_properties(result))
        problems = session.problems(result)
        if problems:
            raise ClaimFailed(result, problems)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        if isinstance(excinfo.value, ClaimFailed):
            from pytest_citecheck.report import citation_table

            return "\n".join(
                [f"citecheck: {p}" for p in excinfo.value.problems]
                + [""]
                + citation_table(excinfo.value.result)
            )
        from pytest_citecheck.secrets import scrub

        default = super().repr_failure(excinfo, style=style)
        text = str(default)
        cleaned = scrub(text)
        return default if cleaned == text else cleaned

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, (self.claim.line or 1) - 1, f"citecheck: {self.claim.id}"


class InvalidClaimFile(pytest.Item):
    """Stands for a claim file that could not be loaded: fails with the fix, alone."""

    def __init__(self, *, error: Exception, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise self.error

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return f"invalid claim file: {self.error}"

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = getattr(self.error, "line", None)
        return self.path, None if line is None else line - 1, f"citecheck: {self.path.name}"


# -- results travel in reports (xdist-safe) -----------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when != "call":
        return report
    results = item.stash.get(RESULTS_KEY, None)
    if results is None and isinstance(item, ClaimItem):
        # The run blew up before a result existed: its citations are errors,
        # never silently missing from the totals.
        detail = f"{call.excinfo.typename}: {call.excinfo.value}" if call.excinfo else "no result"
        from pytest_citecheck.secrets import scrub

        results = [error_result(item.claim, Reason.INTERNAL, scrub(detail))]
    if results:
        setattr(report, REPORT_ATTR, json.dumps([r.model_dump(mode="json") for r in results]))
    return report


class SessionHooks:
    """Hooks that need the session object (``pytest_runtest_logreport`` gets no config):
    registered per session, like xdist's and syrupy's session plugins."""

    def __init__(self, session: CitecheckSession) -> None:
        self.session = session

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """A judge named on the command line or in ini is built up front, so a typo or
        (when recording) a missing key is a usage error, not a failure per claim."""
        settings = self.session.settings
        if settings.enabled and settings.judge and not _is_worker(session.config):
            from pytest_citecheck.errors import ConfigurationError

            try:
                self.session.judge(settings.judge)
            except (ValueError, ConfigurationError) as exc:
                raise pytest.UsageError(f"--citecheck-judge {settings.judge}: {exc}") from None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, REPORT_ATTR, None)
        if payload is not None and report.when == "call":
            self.session.add_report_results(report.nodeid, payload)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        self.session.add_crashed(crashitem)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.session.close()
        if _is_worker(session.config):
            return
        report = self.session.finish()
        if report is not None and report.gate_failures and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")
