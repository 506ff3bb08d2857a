"""The report of a run, computed once, printed or written by every front end.

The same :class:`Report` feeds the terminal summary (:mod:`.terminal`),
``--citecheck-report`` (also the ``--citecheck-baseline`` format) and the files
made from it, ``--citecheck-md`` / ``$GITHUB_STEP_SUMMARY`` (:mod:`.markdown`) and
``--citecheck-html`` (:mod:`.html`) (:mod:`.json_report`), and ``--citecheck-csv``
(:mod:`.csv_report`). Its parts, each a module: the figures (:mod:`.figures`:
totals, precision, costs, usage), the listings (:mod:`.listings`: what failed,
review, label changes, missing recordings, hints) and the renderings above. What
is shown of one claim (its failure table, JUnit properties) is in :mod:`.per_claim`;
where the files go, :mod:`.outputs`.

Every text that leaves here is scrubbed of secrets: a judge that echoes an API
key in its quote must not put it in any report. These modules import nothing
heavy (no jinja2): the HTML renderer is loaded only when asked for a page.
"""

from __future__ import annotations

from pytest_citecheck.reports.csv_report import ReportCsv
from pytest_citecheck.reports.json_report import ReportJson
from pytest_citecheck.reports.terminal import TerminalSummary


class Report(TerminalSummary, ReportJson, ReportCsv):
    """Everything one session verified, keyed by pytest node id: its figures,
    listings, terminal summary, JSON and CSV (the fields are
    :class:`~pytest_citecheck.reports.figures.ReportFigures`')."""
