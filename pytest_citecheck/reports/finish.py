"""The end of a run, one function for every front end.

:func:`finish_run` takes what a front end knows when its claims are done (the
results, the gate's settings, the baseline it loaded at start-up, the files to
write) and does the rest once: it builds the :class:`~.report.Report`, evaluates
the gate, appends the audit rows and writes every report file. The plugin, ``citecheck
batch`` and ``citecheck serve`` (its audit rows, :class:`AuditRun`) share it; each front
end only prints the result in its own words, which it takes from its ``Terms``. A
recheck's run (``citecheck recheck``, ``pytest --citecheck-recheck``) ends in
:func:`finish_recheck`, the same way for both.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_citecheck import __version__
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.core.defaults import RecheckStatus
from pytest_citecheck.core.prices import Prices
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.engine.gate import (
    Baseline,
    BaselineError,
    GateSettings,
    budget_failures,
    evaluate,
    floors_shown,
)
from pytest_citecheck.engine.recheck import ClaimRecheck
from pytest_citecheck.reports.audit import AuditError, AuditIndex, new_run_id
from pytest_citecheck.reports.figures import ItemInfo, RunInfo
from pytest_citecheck.reports.outputs import Outputs
from pytest_citecheck.reports.recheck import RecheckReport
from pytest_citecheck.reports.report import Report


@dataclass
class AuditRun:
    """One run's rows in the audit index: the index, the run's id, who wrote them
    (``pytest``, ``batch``, ``service``)."""

    index: AuditIndex
    source: str
    run_id: str = field(default_factory=new_run_id)

    def record(self, results: Mapping[str, ClaimResult]) -> str | None:
        """Append one row per citation of ``results``; why they could not be
        written, else None (a failed write never loses the results or the reports)."""
        try:
            self.index.record(results, self.run_id, self.source)
        except (AuditError, OSError, sqlite3.Error) as exc:
            return str(exc)
        return None


@dataclass(frozen=True)
class Started:
    """When a run started and in which record mode: the report's ``run`` block."""

    record_mode: str
    at: datetime


def finish_run(
    results: dict[str, ClaimResult],
    gate: GateSettings,
    outputs: Outputs,
    *,
    baseline: Baseline | BaselineError | None = None,
    deselected: int = 0,
    subset: bool = False,
    not_started: int | None = 0,
    stopped_by: str | None = None,
    prices: Prices | None = None,
    run: Mapping[str, Any] | None = None,
    started: Started | None = None,
    items: Mapping[str, ItemInfo] | None = None,
    problems: Sequence[str] = (),
    audit: AuditRun | None = None,
    root: Path | None = None,
    invoked_in: Path | None = None,
) -> Report:
    """The report of a finished run, its gate evaluated and its files written.

    ``baseline``: the baseline the front end loaded at start-up (a
    :class:`BaselineError` fails the gate with its message); with ``deselected``
    claims, or a ``subset`` run (claim files or node ids named: a part of the
    suite), it is compared over this run's claims only, and the suite's floors are
    held as the gate's ``gate_scope`` says. ``not_started`` claims (None:
    the run stopped early, how many is not known) and ``stopped_by`` leave the gate
    not decided. ``run``: how the run judged (the quote policy), merged under
    ``started``'s figures. ``problems``: the front end's own reasons the run fails
    (unreadable records, audit rows it could not write as claims finished).
    ``audit``: the rows are appended here, once, before the files are written.
    ``root``: where node ids' paths start, ``invoked_in``: where the run was started
    (the SARIF log's paths; both default to the current folder)."""
    subset = subset or deselected > 0
    precision, same_claims, failures = _compare(baseline, results, subset)
    report = Report(
        results=results,
        baseline_precision=precision,
        baseline_labels=None if baseline is None else _labels(baseline),
        run=dict(run or {}),
        items=dict(items or {}),
        prices=prices,
        deselected=deselected,
        subset=subset,
        baseline_over_same_claims=same_claims,
        not_started=not_started,
        stopped_by=stopped_by,
        report_url=outputs.report_url,
        terms=gate.terms,
    )
    if started is not None:
        report.run = {**run_info(results, started).to_json(), **report.run}
    failures += evaluate(report.totals, gate, precision, report.answer_totals, subset)
    report.floors_not_applied = floors_shown(report.totals, gate, report.answer_totals, subset)
    failures += budget_failures(results.values(), gate.terms)
    failures += problems
    if audit is not None:
        problem = audit.record(results)
        if problem is not None:
            failures.append(f"{gate.terms.option('audit')}: {problem}")
    report.gate_failures = failures
    here = Path.cwd()
    write_outputs(report, outputs, root or here, workspace(invoked_in or here))
    return report


def finish_recheck(
    checks: Sequence[ClaimRecheck],
    fail_on: Sequence[RecheckStatus],
    gate_line: Callable[[dict[RecheckStatus, int]], str],
    outputs: Outputs | None = None,
    *,
    update: bool = False,
    problems: Sequence[str] = (),
) -> RecheckReport:
    """The report of a finished recheck, its gate evaluated and its files written.

    ``gate_line`` words the failure of the statuses in ``fail_on`` found (each with
    how many citations), in the front end's words; ``problems``: the front end's own
    reasons the run fails (unreadable records). ``outputs``: the files a run writes, of
    which a recheck has its JSON, markdown, step summary and HTML (no CSV, no SARIF, no
    report to link: a ValueError); None: none written."""
    outputs = outputs or Outputs()
    if outputs.csv or outputs.sarif or outputs.report_url:
        raise ValueError("a recheck writes no CSV or SARIF and links no served report")
    if outputs.otel_endpoint or outputs.otel_file:
        raise ValueError("a recheck sends or writes no OpenTelemetry events")
    report = RecheckReport(claims=list(checks), fail_on=list(fail_on), update=update)
    failing = report.failing()
    report.gate_failures = [gate_line(failing)] if failing else []
    report.gate_failures += problems
    files: list[tuple[Path | None, Callable[[Path], None]]] = [
        (outputs.json, report.write_json),
        (outputs.markdown, report.write_markdown),
        (outputs.step_summary, lambda p: report.write_markdown(p, append=True)),
        (outputs.html, report.write_html),
    ]
    for path, write in files:
        if path is not None:
            write(path)
    return report


def _compare(
    baseline: Baseline | BaselineError | None, results: dict[str, ClaimResult], subset: bool
) -> tuple[float | None, bool, list[str]]:
    """The baseline's precision to compare with, whether it is over this run's claims
    only (a partial run), and the failure of a baseline that could not be read."""
    if isinstance(baseline, BaselineError):
        return None, False, [str(baseline)]
    if baseline is None:
        return None, False, []
    over = baseline.precision_over(results) if subset else None
    if over is not None:
        return over, True, []
    return baseline.precision, False, []


def _labels(baseline: Baseline | BaselineError) -> dict[str, str]:
    """The baseline's claim labels (none when it could not be read: no diff)."""
    return {} if isinstance(baseline, BaselineError) else baseline.labels


def run_info(results: Mapping[str, ClaimResult], started: Started) -> RunInfo:
    """Who judged the run, with which prompt, when (ends now)."""
    from pytest_citecheck.core.providers import PROVIDERS
    from pytest_citecheck.engine.panel import judge_of
    from pytest_citecheck.reports.listings import missing_recording

    # A citation with no recording names the judge that would record it; none judged it.
    judges = sorted(
        {
            judge
            for r in results.values()
            for v in r.verdicts
            if not missing_recording(v)
            for judge in ([judge_of(m.judge) for m in v.panel] if v.panel else [v.judge])
            if judge
        }
    )
    prompt_version = None
    if judges and all(j.partition(":")[0] in PROVIDERS for j in judges):
        # Every built-in provider sends the one versioned prompt.
        from pytest_citecheck.stages.judges.prompt import PROMPT_VERSION

        prompt_version = PROMPT_VERSION
    return RunInfo(
        judges=judges,
        prompt_version=prompt_version,
        record_mode=started.record_mode,
        started=started.at,
        finished=datetime.now(UTC),
    )


def workspace(default: Path) -> Path:
    """The repository checkout annotations are relative to: ``$GITHUB_WORKSPACE``
    in GitHub Actions, else ``default`` (where the run was started)."""
    return Path(os.environ.get("GITHUB_WORKSPACE") or default)


def write_outputs(report: Report, outputs: Outputs, root: Path, checkout: Path) -> None:
    """Write every requested file; a file that cannot be written is recorded in
    ``report.output_errors`` (and printed) instead of losing the summary."""
    jobs: list[tuple[str, Path | None, Callable[[Path], None]]] = [
        ("JSON report", outputs.json, report.write_json),
        ("CSV report", outputs.csv, report.write_csv),
        ("markdown summary", outputs.markdown, report.write_markdown),
        ("HTML report", outputs.html, report.write_html),
        (
            "markdown summary appended to $GITHUB_STEP_SUMMARY",
            outputs.step_summary,
            lambda p: report.write_markdown(p, append=True),
        ),
        ("SARIF log", outputs.sarif, lambda p: _write_sarif(report, p, root, checkout)),
        ("OpenTelemetry events (OTLP JSON)", outputs.otel_file, lambda p: _write_otel(report, p)),
    ]
    if outputs.otel_endpoint:
        _send_otel(report, outputs.otel_endpoint)
    for what, path, write in jobs:
        if path is None:
            continue
        try:
            write(path)
        except OSError as exc:
            report.output_errors.append(scrub(f"{path}: {exc.strerror or exc}"))
        else:
            report.written.append((what, path))


def _write_sarif(report: Report, path: Path, root: Path, checkout: Path) -> None:
    from pytest_citecheck.reports import github

    log = github.sarif(github.annotate(report, root, checkout), __version__)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(log, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _write_otel(report: Report, path: Path) -> None:
    from pytest_citecheck.core.errors import ConfigurationError
    from pytest_citecheck.reports import otel

    try:
        otel.write_otlp_json(otel.evaluation_events(report.results.values()), path)
    except ConfigurationError as exc:  # the SDK is not installed: the file is not written
        raise OSError(str(exc)) from None


def _send_otel(report: Report, endpoint: str) -> None:
    """The events sent to the collector; one it refuses is a file not written (the run
    fails, the summary says why)."""
    from pytest_citecheck.core.errors import ConfigurationError
    from pytest_citecheck.reports import otel

    events = otel.evaluation_events(report.results.values())
    try:
        otel.export_endpoint(events, endpoint)
    except (OSError, ConfigurationError) as exc:
        report.output_errors.append(scrub(f"OpenTelemetry events: {exc}"))
    else:
        url = scrub(otel.shown_url(otel.logs_url(endpoint)))
        report.sent.append(f"OpenTelemetry events: {len(events)} sent to {url}")
