"""The hooks that show results: ``-v`` labels, the terminal summary, the annotations.

Registered next to the session hooks (``plugin.pytest_configure``). Everything
here reads the :class:`~pytest_citecheck.plugin.session.CitecheckSession` and its
:class:`~pytest_citecheck.reports.report.Report`, finished by the session (the
report files are written there); nothing here decides pass or fail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_citecheck.plugin.options import Settings
    from pytest_citecheck.plugin.session import CitecheckSession
    from pytest_citecheck.reports.report import Report

# The attribute of a TestReport that carries a claim's results (set by plugin).
REPORT_ATTR = "citecheck_results"
# The key of an xdist worker's ``workeroutput`` that carries its unverified claim files.
UNVERIFIED_FILES_KEY = "citecheck_unverified_files"


def is_worker(config: pytest.Config) -> bool:
    """A pytest-xdist worker (the controller aggregates and reports)."""
    return hasattr(config, "workerinput")


# A panel member's vote in the compact ``-v`` form: ``[supported panel ssn]``.
_VOTE_LETTERS = {"supported": "s", "contradicted": "c", "not_found": "n", "error": "e"}


def _labels(payload: Any) -> str:
    """The claim labels a report carries: JSON from an xdist worker, or the result
    objects in this process, as reports show them (``shown_label``). A citation a
    judge panel decided adds its votes, one letter a member in panel order (s, c, n, e)."""
    from pytest_citecheck.claims.labels import Label
    from pytest_citecheck.engine.aggregate import shown_label

    results = json.loads(payload) if isinstance(payload, str) else payload
    shown = []
    for r in results:
        data = r if isinstance(r, dict) else r.model_dump(mode="json")
        # A claim only a made-up quote decided reads as such: [fabricated].
        cited = [Label(v["label"]) for v in data.get("verdicts", [])]
        text = shown_label(Label(data["label"]), cited).value
        panels = [v["panel"] for v in data.get("verdicts", []) if v.get("panel")]
        if panels:
            votes = (
                "".join(_VOTE_LETTERS.get(str(m["label"]), "?") for m in panel) for panel in panels
            )
            text += " panel " + " ".join(votes)
        shown.append(text)
    return ", ".join(shown)


class ReportHooks:
    """Light until a citecheck session exists: without ``--citecheck`` it only
    counts claim files for the hint."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.unverified_files = 0
        self.labels: dict[str, str] = {}

    @property
    def session(self) -> CitecheckSession | None:
        from pytest_citecheck.plugin.state import running_session

        return running_session(self.config)

    # -- start: a warning and a hint about how citecheck was asked to run --------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        config = session.config
        settings = self.settings
        if is_worker(config) or not settings.enabled or settings.baseline is not None:
            return
        if config.option.citecheck_max_drop is not None or config.getini("citecheck_max_drop"):
            _config_warning(
                config,
                "citecheck_max_drop is set but no --citecheck-baseline is given: "
                "there is nothing to compare with, so it has no effect",
                *_where_set(config, "--citecheck-max-drop", "citecheck_max_drop"),
            )

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> None:
        settings = self.settings
        if not settings.enabled and settings.is_claim_file(file_path.name):
            self.unverified_files += 1

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """An xdist worker hands its count to the controller, which collects nothing."""
        if is_worker(session.config):
            output: dict[str, Any] = session.config.workeroutput  # type: ignore[attr-defined]
            output[UNVERIFIED_FILES_KEY] = self.unverified_files

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """Every worker collects every file, so each reports the same count: kept once."""
        count = getattr(node, "workeroutput", {}).get(UNVERIFIED_FILES_KEY)
        if isinstance(count, int):
            self.unverified_files = max(self.unverified_files, count)

    # -- per item ------------------------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, REPORT_ATTR, None)
        if report.when == "call" and payload is not None:
            # Kept as one short string: the session drops the payload from the report,
            # and pytest's short summary asks for the status again at the end.
            self.labels[report.nodeid] = _labels(payload)

    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        """``-v`` shows the claim label: ``PASSED [supported]``."""
        if report.when != "call" or hasattr(report, "wasxfail"):
            return None
        payload = getattr(report, REPORT_ATTR, None)
        labels = self.labels.get(report.nodeid) if payload is None else _labels(payload)
        if labels is None:
            return None
        if report.passed:
            return "passed", ".", (f"PASSED [{labels}]", {"green": True})
        if report.failed:
            return "failed", "F", (f"FAILED [{labels}]", {"red": True})
        return None

    # -- end: the session's report (CitecheckSession.finish), shown ----------------

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        tr = terminalreporter
        if is_worker(self.config):
            return
        citecheck = self.session
        report = None if citecheck is None else citecheck.report
        stopped = None if citecheck is None else citecheck.not_started_line()
        if report is None:
            if stopped is not None:
                tr.write_line(stopped, yellow=True, bold=True)
            if self.unverified_files:
                n = self.unverified_files
                tr.write_line(
                    f"citecheck: {n} claim file{'s' if n != 1 else ''} found but not verified; "
                    "add --citecheck to check their citations",
                    yellow=True,
                )
            return
        from pytest_citecheck.engine.gate import GATE_NOT_DECIDED, GATE_PASSED, NOT_DECIDED_WHY

        tr.write_sep("=", "citecheck")
        verbose = self.config.get_verbosity() > 0
        for line in report.lines(verbose=verbose):
            tr.write_line(line.text, **line.markup)
        missing = report.missing_line(verbose=verbose)
        if missing is not None:
            tr.write_line(missing, yellow=True, bold=True)
        stopped = report.not_started_line()  # the claim items pytest never ran too
        if stopped is not None:
            tr.write_line(stopped, yellow=True, bold=True)
        for failure in report.gate_failures:
            tr.write_line(f"citecheck gate FAILED: {failure}", red=True, bold=True)
        if not report.gate_failures and report.output_errors:
            # The exit code is 1: the last line must not say all is well.
            tr.write_line(report.unwritten_line(), red=True, bold=True)
        elif report.gate_verdict == GATE_NOT_DECIDED:
            # A part of the claims passed; the run as a whole was not judged.
            tr.write_line(f"citecheck gate {GATE_NOT_DECIDED}: {NOT_DECIDED_WHY}", yellow=True)
        elif report.gate_verdict == GATE_PASSED:
            tr.write_line("citecheck gate passed", green=True)
        for what, path in report.written:
            # As pytest-html does: where to click.
            tr.write_line(f"citecheck {what}: {path.resolve().as_uri()}")
        self._annotate(tr, report)

    def _annotate(self, tr: pytest.TerminalReporter, report: Report) -> None:
        """Inside GitHub Actions: workflow commands that annotate the claim lines."""
        import os

        from pytest_citecheck.reports import github
        from pytest_citecheck.reports.finish import workspace

        if not github.enabled(os.environ):
            return
        checkout = workspace(self.config.invocation_params.dir)
        for annotation in github.annotate(
            report, self.config.rootpath, checkout, per_step=github.PER_STEP
        ):
            tr.write_line(annotation.command())


def _where_set(config: pytest.Config, flag: str, ini: str) -> tuple[str, int]:
    """Where an option was set, as a warning's location: the flag, else the ini line."""
    if getattr(config.option, flag.lstrip("-").replace("-", "_"), None) is not None:
        return f"command line option {flag}", 0
    path = config.inipath
    if path is None:
        return f"ini option {ini}", 0
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return str(path), 0
    number = next((i for i, line in enumerate(lines, 1) if line.lstrip().startswith(ini)), 0)
    return str(path), number


def _config_warning(config: pytest.Config, message: str, filename: str, lineno: int) -> None:
    """A ``PytestConfigWarning`` located where the user set the option, not at this
    plugin's source line (``Config.issue_config_time_warning`` takes the caller's
    frame). Warning filters (``-W``, ``filterwarnings``) apply as there."""
    import warnings

    if config.pluginmanager.is_blocked("warnings"):
        return
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always", pytest.PytestConfigWarning)
        try:
            from _pytest.config import apply_warning_filters
        except ImportError:  # pragma: no cover -- a pytest without it: no filters
            pass
        else:
            apply_warning_filters(
                config.getini("filterwarnings"), config.known_args_namespace.pythonwarnings or []
            )
        warnings.warn_explicit(
            pytest.PytestConfigWarning(message),
            pytest.PytestConfigWarning,
            filename,
            lineno,
            module="pytest_citecheck",
        )
    if records:
        config.hook.pytest_warning_recorded.call_historic(
            kwargs={
                "warning_message": records[0],
                "when": "config",
                "nodeid": "",
                "location": (filename, lineno, ""),
            }
        )
