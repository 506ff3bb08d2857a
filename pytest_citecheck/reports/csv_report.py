"""The CSV report (``--citecheck-csv``, ``citecheck batch --out``): one row per citation."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.reports.figures import ReportFigures
from pytest_citecheck.reports.outputs import write_report

CSV_COLUMNS = [
    "nodeid",
    "claim_id",
    "claim",
    "claim_label",
    "url",
    "label",
    "reason",
    "confidence",
    "review",
    "evidence_quote",
    "final_url",
    "original_status",
    "rid",
    "section",
    "page",
    "credits",
    "input_tokens",
    "output_tokens",
    "detail",
]
# Added after the others when the run verified imported answers.
ANSWER_CSV_COLUMNS = ["answer", "answer_support"]


class ReportCsv(ReportFigures):
    """The run as CSV rows."""

    def csv_columns(self) -> list[str]:
        """:data:`CSV_COLUMNS`, plus four columns a panel member when a panel judged."""
        members = max((len(p) for p in self.panels()), default=0)
        extra = [
            f"member_{i}_{field}"
            for i in range(1, members + 1)
            for field in ("judge", "label", "confidence", "quote")
        ]
        return CSV_COLUMNS + extra + (ANSWER_CSV_COLUMNS if self.answers() else [])

    def csv_rows(self) -> list[dict[str, Any]]:
        rows = []
        support = {(a.origin, a.id): a.support for _, a in self.answers()}
        panel_columns = len(self.csv_columns()) > len(CSV_COLUMNS)
        for nodeid, result in self.ordered():
            extra: dict[str, Any] = {}
            if support:
                answer = result.answer
                extra = {
                    "answer": answer.id if answer else "",
                    "answer_support": "" if answer is None else _csv_fraction(support[answer.key]),
                }
            for v in result.verdicts:
                members: dict[str, Any] = {}
                for i, m in enumerate(v.panel or [], start=1):
                    members |= {
                        f"member_{i}_judge": m.judge,
                        f"member_{i}_label": m.label.value,
                        f"member_{i}_confidence": "" if m.confidence is None else m.confidence,
                        f"member_{i}_quote": m.evidence_quote or "",
                    }
                if not panel_columns:
                    members = {}
                rows.append(
                    {
                        **members,
                        "nodeid": nodeid,
                        "claim_id": result.id,
                        "claim": result.claim,
                        "claim_label": result.label.value,
                        "url": v.url,
                        "label": v.label.value,
                        "reason": v.reason or "",
                        "confidence": "" if v.confidence is None else v.confidence,
                        "review": v.review,
                        "evidence_quote": v.evidence_quote or "",
                        "final_url": v.final_url or "",
                        "original_status": v.original_status or "",
                        "rid": v.rid or "",
                        "section": v.section or "",
                        "page": "" if v.page is None else v.page,
                        "credits": v.credits,
                        "input_tokens": v.usage.input_tokens if v.usage else "",
                        "output_tokens": v.usage.output_tokens if v.usage else "",
                        "detail": v.detail or "",
                        **extra,
                    }
                )
        return rows

    def write_csv(self, path: Path) -> None:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=self.csv_columns(), restval="")
        writer.writeheader()
        writer.writerows(self.csv_rows())
        write_report(path, scrub(buffer.getvalue()))


def _csv_fraction(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"
