"""Where a run's report files go, and the one function that writes each of them.

Every report file (JSON, CSV, markdown, HTML, SARIF, the recheck's) is written by
:func:`write_report`: scrubbed of secrets, replaced whole or appended.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_citecheck.core.files import append_text, write_atomic
from pytest_citecheck.core.secrets import scrub


def write_report(path: Path, text: str, *, append: bool = False) -> None:
    """Every report file is written here: scrubbed, replaced whole (a temporary
    file and a rename), or appended (a CI step summary)."""
    if append:
        append_text(path, scrub(text))
    else:
        write_atomic(path, scrub(text))


# The HTML report's URL when no option names it (set in a CI workflow, say).
REPORT_URL_ENV = "CITECHECK_REPORT_URL"


@dataclass(frozen=True)
class Outputs:
    """The files a session writes at its end (each optional)."""

    json: Path | None = None
    csv: Path | None = None
    markdown: Path | None = None
    html: Path | None = None
    # $GITHUB_STEP_SUMMARY: the markdown summary is appended to it.
    step_summary: Path | None = None
    # The GitHub annotations as a SARIF 2.1.0 log (code scanning).
    sarif: Path | None = None
    # Where the HTML report is served: the step summary and annotations link there.
    report_url: str | None = None
    # OpenTelemetry: one gen_ai.evaluation.result event per citation, sent to this
    # collector (OTLP/HTTP) and/or written to this OTLP JSON file (reports/otel.py).
    otel_endpoint: str | None = None
    otel_file: Path | None = None
