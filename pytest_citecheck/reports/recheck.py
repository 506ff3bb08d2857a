"""The recheck report: the terminal table, JSON, markdown and HTML of a recheck run.

Computed once from the :class:`~pytest_citecheck.engine.recheck.ClaimRecheck`
results, like :class:`~pytest_citecheck.reports.report.Report`: ``lines()`` is
what the terminal prints, ``to_json()`` what every file is made from. Every text
that leaves here is scrubbed of secrets.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_citecheck.core.defaults import RecheckStatus
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.core.text import plural, truncate
from pytest_citecheck.engine.recheck import CitationRecheck, ClaimRecheck
from pytest_citecheck.reports.audit import audit_page_command
from pytest_citecheck.reports.outputs import write_report
from pytest_citecheck.reports.terminal import Line

RECHECK_FORMAT = 1
STATUS_ORDER = list(RecheckStatus)
# Shown in red: what usually fails the gate.
_BAD = frozenset({RecheckStatus.EVIDENCE_GONE, RecheckStatus.PAGE_GONE, RecheckStatus.ERROR})
_WARN = frozenset({RecheckStatus.MOVED, RecheckStatus.BLOCKED, RecheckStatus.CHANGED})


def label_change(check: CitationRecheck) -> str | None:
    """``supported -> not_found`` when the judge was asked again, else None."""
    if check.new is None:
        return None
    return f"{check.recorded.label.value} -> {check.new.label.value}"


@dataclass
class RecheckReport:
    """Everything one recheck run found, in input order."""

    claims: list[ClaimRecheck]
    fail_on: Sequence[RecheckStatus] = ()
    gate_failures: list[str] = field(default_factory=list)
    update: bool = False

    def citations(self) -> list[tuple[ClaimRecheck, CitationRecheck]]:
        return [(claim, check) for claim in self.claims for check in claim.citations]

    def counts(self) -> dict[RecheckStatus, int]:
        counts = dict.fromkeys(STATUS_ORDER, 0)
        for _, check in self.citations():
            counts[check.status] += 1
        return counts

    def failing(self) -> dict[RecheckStatus, int]:
        """The statuses that fail the gate, with how many citations have each."""
        counts = self.counts()
        return {s: counts[s] for s in STATUS_ORDER if s in self.fail_on and counts[s]}

    @property
    def credits(self) -> float:
        return sum(check.credits for _, check in self.citations())

    def tokens(self) -> tuple[int, int, int]:
        """Judge input tokens, output tokens, and how many answers were new."""
        asked = [c.new for _, c in self.citations() if c.new is not None and c.new.usage]
        return (
            sum(v.usage.input_tokens for v in asked if v.usage),
            sum(v.usage.output_tokens for v in asked if v.usage),
            len(asked),
        )

    # -- terminal ------------------------------------------------------------------

    def lines(self) -> list[Line]:
        return [Line(scrub(line.text), line.markup) for line in self._lines()]

    def _lines(self) -> list[Line]:
        counts = self.counts()
        claims = sum(1 for c in self.claims if c.citations)
        out = [
            Line(
                f"recheck: {plural(claims, 'claim')}, {plural(len(self.citations()), 'cited page')}"
            ),
            Line(" | ".join(f"{s.value} {counts[s]}" for s in STATUS_ORDER)),
        ]
        tokens_in, tokens_out, _ = self.tokens()
        out.append(
            Line(
                f"crawling API credits {self.credits:g}, judge tokens {tokens_in} in / "
                f"{tokens_out} out"
            )
        )
        rows = [("status", "claim", "url", "verdict")]
        markups: list[dict[str, bool]] = [{"bold": True}]
        for claim, check in self.citations():
            change = label_change(check) or check.recorded.label.value
            rows.append((check.status.value, claim.nodeid, check.url, change))
            markups.append(
                {"red": True}
                if check.status in _BAD
                else {"yellow": True}
                if check.status in _WARN
                else {}
            )
        if len(rows) > 1:
            widths = [max(len(row[c]) for row in rows) for c in range(3)]
            for row, markup in zip(rows, markups, strict=True):
                cells = [row[c].ljust(widths[c]) for c in range(3)]
                out.append(Line("  " + "  ".join([*cells, row[3]]).rstrip(), markup))
        same = RecheckStatus.SAME
        details = [(claim, c) for claim, c in self.citations() if c.status is not same]
        if details:
            out.append(Line("what changed:", {"bold": True}))
            for claim, check in details:
                out.append(Line(f"  {check.status.value:<14}{claim.nodeid}  {check.url}"))
                if check.detail:
                    out.append(Line(f"      {truncate(check.detail, 300, flatten=True)}"))
                if check.new is not None:
                    quote = check.new.evidence_quote
                    said = f': "{truncate(quote, 100, flatten=True)}"' if quote else ""
                    out.append(Line(f"      judge now: {check.new.label.value}{said}"))
                if check.stored_rid:
                    then = audit_page_command(check.stored_rid, check.stored_with)
                    out.append(Line(f"      then: {then}"))
        updated = [c for c in self.claims if c.updated]
        if updated:
            out.append(Line(f"updated {plural(len(updated), 'cassette')}:", {"bold": True}))
            out.extend(Line(f"  {c.cassette}") for c in updated)
        elif self.update:
            out.append(Line("updated no cassette (every page is as recorded)"))
        return out

    # -- files -----------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        tokens_in, tokens_out, asked = self.tokens()
        data = {
            "citecheck_recheck": RECHECK_FORMAT,
            "totals": {
                "claims": sum(1 for c in self.claims if c.citations),
                "citations": len(self.citations()),
                "by_status": {s.value: n for s, n in self.counts().items()},
                "credits": self.credits,
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "judge_answers": asked,
            },
            "gate": {
                "passed": not self.gate_failures,
                "failures": self.gate_failures,
                "fail_on": [s.value for s in self.fail_on],
            },
            "update": self.update,
            "claims": [c.model_dump(mode="json") for c in self.claims],
        }
        scrubbed: dict[str, Any] = json.loads(scrub(json.dumps(data, ensure_ascii=False)))
        return scrubbed

    def write_json(self, path: Path) -> None:
        write_report(path, json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n")

    def write_markdown(self, path: Path, *, append: bool = False) -> None:
        write_report(path, render_markdown(self.to_json()), append=append)

    def write_html(self, path: Path) -> None:
        from pytest_citecheck.reports.html import render_recheck_html

        write_report(path, render_recheck_html(self.to_json()))


def _cell(text: object, width: int = 160) -> str:
    from pytest_citecheck.reports.markdown import cell

    return cell(text, width)


def render_markdown(data: dict[str, Any]) -> str:
    """The recheck summary for a job page (``$GITHUB_STEP_SUMMARY``)."""
    gate = data["gate"]
    t = data["totals"]
    head = "passed ✅" if gate["passed"] else "FAILED ❌"
    out = [
        f"## citecheck recheck: {head}",
        "",
        f"**{t['claims']} claims, {t['citations']} cited pages** rechecked live; "
        f"crawling API credits {t['credits']:g}, judge tokens {t['input_tokens']} in / "
        f"{t['output_tokens']} out",
        "",
        "| " + " | ".join(s.value for s in STATUS_ORDER) + " |",
        "|" + "---:|" * len(STATUS_ORDER),
        "| " + " | ".join(str(t["by_status"].get(s.value, 0)) for s in STATUS_ORDER) + " |",
        "",
    ]
    out.extend(f"- {_cell(failure)}" for failure in gate["failures"])
    if gate["failures"]:
        out.append("")
    rows = [
        (claim, check)
        for claim in data["claims"]
        for check in claim["citations"]
        if check["status"] != RecheckStatus.SAME.value
    ]
    if rows:
        out += ["| status | claim | page | verdict then → now | detail |", "|---|---|---|---|---|"]
        for claim, check in rows:
            then = check["recorded"]["label"]
            now = check["new"]["label"] if check.get("new") else "–"
            detail = _cell(check.get("detail") or "", 300)
            rid = check.get("stored_rid")
            if rid:
                read_back = audit_page_command(_cell(rid, 80), check.get("stored_with"))
                detail += f" (then: `{read_back}`)"
            out.append(
                f"| {check['status']} | {_cell(claim['nodeid'])} | {_cell(check['url'])} | "
                f"{then} → {now} | {detail} |"
            )
        out.append("")
    updated = [c for c in data["claims"] if c.get("updated")]
    if updated:
        out.append("Updated cassettes (review the diff before committing):")
        out.extend(f"- `{c['cassette']}`" for c in updated)
        out.append("")
    return "\n".join(out) + "\n"
