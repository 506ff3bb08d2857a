"""Reports computed once, printed or written by the plugin: terminal lines, JSON, CSV.

The same :class:`Report` feeds the terminal summary, ``--citecheck-report``
(also the ``--citecheck-baseline`` format) and ``--citecheck-csv``; the
per-claim failure table and JUnit properties come from the helpers below.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_citecheck.aggregate import Totals, totals
from pytest_citecheck.models import ClaimResult, Label, Verdict
from pytest_citecheck.secrets import scrub

REPORT_FORMAT = 1
LABEL_ORDER = [
    Label.SUPPORTED,
    Label.CONTRADICTED,
    Label.FABRICATED,
    Label.NOT_FOUND,
    Label.UNREACHABLE,
    Label.ERROR,
]
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
    "credits",
    "input_tokens",
    "output_tokens",
    "detail",
]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _short(text: str | None, width: int) -> str:
    if not text:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass
class Line:
    text: str
    markup: dict[str, bool] = field(default_factory=dict)


@dataclass
class Report:
    """Everything one session verified, keyed by pytest node id."""

    results: dict[str, ClaimResult]
    gate_failures: list[str] = field(default_factory=list)
    baseline_precision: float | None = None
    # How the run judged (e.g. the guard's quote_match and quote_similarity).
    run: dict[str, Any] = field(default_factory=dict)

    @property
    def totals(self) -> Totals:
        return totals(self.results.values())

    def _flagged(self, predicate: Any) -> list[tuple[str, Verdict]]:
        return [
            (nodeid, verdict)
            for nodeid, result in sorted(self.results.items())
            for verdict in result.verdicts
            if predicate(verdict)
        ]

    def lines(self) -> list[Line]:
        t = self.totals
        out = [
            Line(
                f"{t.claims} claims, {t.citations} citations: citation precision "
                f"{_fmt(t.citation_precision)} ({t.supported}/{t.citations}), reachable "
                f"precision {_fmt(t.reachable_precision)} ({t.supported}/{t.reachable})"
            ),
            Line(" | ".join(f"{label.value} {t.count(label)}" for label in LABEL_ORDER)),
        ]
        if self.baseline_precision is not None and t.citation_precision is not None:
            delta = t.citation_precision - self.baseline_precision
            out.append(
                Line(
                    f"baseline precision {self.baseline_precision:.4f} -> "
                    f"{t.citation_precision:.4f} ({delta:+.4f})"
                )
            )
        if t.credits or t.input_tokens or t.output_tokens:
            out.append(
                Line(
                    f"crawling API credits {t.credits:g}, judge tokens {t.input_tokens} in / "
                    f"{t.output_tokens} out"
                )
            )
        bad = self._flagged(lambda v: v.label in (Label.CONTRADICTED, Label.FABRICATED))
        if bad:
            out.append(Line("contradicted and fabricated:", {"bold": True}))
            for nodeid, v in bad:
                out.append(Line(f"  {v.label.value.upper():<12} {nodeid}  {v.url}", {"red": True}))
                if v.evidence_quote:
                    out.append(Line(f'      "{_short(v.evidence_quote, 110)}"'))
        errors = self._flagged(lambda v: v.label is Label.ERROR)
        if errors:
            out.append(Line("errors:", {"bold": True}))
            for nodeid, v in errors:
                out.append(Line(f"  ERROR        {nodeid}  {v.url}  [{v.reason}]", {"red": True}))
                if v.detail:
                    out.append(Line(f"      {_short(scrub(v.detail), 400)}"))
        review = self._flagged(lambda v: v.review)
        if review:
            out.append(Line("review (confidence below the gate):", {"bold": True}))
            for nodeid, v in review:
                conf = "n/a" if v.confidence is None else f"{v.confidence:.2f}"
                out.append(
                    Line(f"  {v.label.value:<12} {conf}  {nodeid}  {v.url}", {"yellow": True})
                )
        return out

    # -- files -----------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        t = self.totals
        return {
            "citecheck_report": REPORT_FORMAT,
            "totals": {
                "claims": t.claims,
                "citations": t.citations,
                "citation_precision": t.citation_precision,
                "reachable_precision": t.reachable_precision,
                "by_label": t.by_label,
                "review": t.review,
                "credits": t.credits,
                "input_tokens": t.input_tokens,
                "output_tokens": t.output_tokens,
            },
            "gate": {"passed": not self.gate_failures, "failures": self.gate_failures},
            "baseline_precision": self.baseline_precision,
            "run": self.run,
            "claims": [
                {"nodeid": nodeid, **result.model_dump(mode="json")}
                for nodeid, result in sorted(self.results.items())
            ],
        }

    def write_json(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.to_json(), indent=2, ensure_ascii=False)
        path.write_text(scrub(text) + "\n", encoding="utf-8")

    def csv_rows(self) -> list[dict[str, Any]]:
        rows = []
        for nodeid, result in sorted(self.results.items()):
            for v in result.verdicts:
                rows.append(
                    {
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
                        "credits": v.credits,
                        "input_tokens": v.usage.input_tokens if v.usage else "",
                        "output_tokens": v.usage.output_tokens if v.usage else "",
                        "detail": scrub(v.detail or ""),
                    }
                )
        return rows

    def write_csv(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(self.csv_rows())
        path.write_text(scrub(buffer.getvalue()), encoding="utf-8")


def citation_table(result: ClaimResult) -> list[str]:
    """The failure report of one claim: a row per citation."""
    head = f"claim {result.id!r}: {result.claim}"
    expected = f" (expected {result.expect.value})" if result.expect else ""
    lines = [head, f"claim label: {result.label.value}{expected}", ""]
    rows = [("#", "label", "reason", "conf", "final URL / source", "quote")]
    for i, v in enumerate(result.verdicts, 1):
        conf = "" if v.confidence is None else f"{v.confidence:.2f}"
        label = v.label.value + (" (review)" if v.review else "")
        rows.append(
            (
                str(i),
                label,
                v.reason or "-",
                conf,
                _short(v.final_url or v.url, 60),
                _short(v.evidence_quote, 70),
            )
        )
    widths = [max(len(row[c]) for row in rows) for c in range(5)]
    for row in rows:
        cells = [row[c].ljust(widths[c]) for c in range(5)]
        lines.append("  ".join([*cells, row[5]]).rstrip())
    details = [(i, v) for i, v in enumerate(result.verdicts, 1) if v.detail]
    if details:
        lines.append("")
        lines.extend(f"[{i}] {v.url}: {scrub(v.detail or '')}" for i, v in details)
    return lines


def junit_properties(result: ClaimResult) -> Sequence[tuple[str, object]]:
    """Per-citation properties for ``--junitxml``."""
    props: list[tuple[str, object]] = [("citecheck.claim_label", result.label.value)]
    for i, v in enumerate(result.verdicts, 1):
        prefix = f"citecheck.citation.{i}"
        props.append((f"{prefix}.url", v.url))
        props.append((f"{prefix}.label", v.label.value))
        if v.reason:
            props.append((f"{prefix}.reason", v.reason))
        if v.confidence is not None:
            props.append((f"{prefix}.confidence", f"{v.confidence:.2f}"))
        if v.final_url:
            props.append((f"{prefix}.final_url", v.final_url))
        if v.evidence_quote:
            props.append((f"{prefix}.quote", v.evidence_quote))
    return props
