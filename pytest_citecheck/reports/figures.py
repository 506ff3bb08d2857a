"""The figures of a run: what one session verified and what is counted from it.

:class:`ReportFigures` holds a run's claim results with what the front end said
about them (pytest's items, the baseline, the selection, the stop) and computes
the figures every report shows: totals (overall, per file, per imported answer),
the spend in money, the gate's verdict, the judge panel's agreement and the
confirmation calls. The listings (:mod:`.listings`), the terminal summary
(:mod:`.terminal`) and the files (:mod:`.json_report`, :mod:`.csv_report`) are
built on it; :class:`~pytest_citecheck.reports.report.Report` joins them.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_citecheck import __version__
from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.claims.results import ClaimResult, PanelVote
from pytest_citecheck.core.prices import Prices
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.engine.aggregate import (
    AnswerFigures,
    AnswerTotals,
    Totals,
    answer_figures,
    answer_totals,
    conversation_figures,
    totals,
)


def file_of(nodeid: str) -> str:
    """The claim file (or test module) part of a node id."""
    return nodeid.split("::", 1)[0]


@dataclass(frozen=True)
class RunInfo:
    """Who ran what, when: the JSON report's ``run`` block and the HTML header."""

    judges: list[str]
    prompt_version: str | None
    record_mode: str
    started: datetime
    finished: datetime
    plugin_version: str = __version__
    python: str = field(default_factory=platform.python_version)
    platform: str = field(default_factory=lambda: f"{sys.platform} {platform.machine()}")

    def to_json(self) -> dict[str, Any]:
        return {
            "plugin_version": self.plugin_version,
            "judges": self.judges,
            "prompt_version": self.prompt_version,
            "record_mode": self.record_mode,
            "started": self.started.isoformat(timespec="seconds"),
            "finished": self.finished.isoformat(timespec="seconds"),
            "duration_s": round((self.finished - self.started).total_seconds(), 3),
            "python": self.python,
            "platform": self.platform,
        }


@dataclass(frozen=True)
class ItemInfo:
    """What pytest said about the test item that verified a claim."""

    outcome: str  # "passed" / "failed" / "skipped"
    line: int | None = None  # 0-based, as in ``TestReport.location``
    path: str | None = None  # relative to the rootdir, as in ``TestReport.location``


@dataclass
class ReportFigures:
    """Everything one session verified, keyed by pytest node id, and its figures."""

    results: dict[str, ClaimResult]
    gate_failures: list[str] = field(default_factory=list)
    baseline_precision: float | None = None
    # Claim labels of the baseline, by node id (None: no baseline given).
    baseline_labels: dict[str, str] | None = None
    # How the run judged and who ran it (RunInfo.to_json(), the guard's quote policy).
    run: dict[str, Any] = field(default_factory=dict)
    items: dict[str, ItemInfo] = field(default_factory=dict)
    # Output files that could not be written: printed, never lost silently.
    output_errors: list[str] = field(default_factory=list)
    # The user's prices: reports show the spend in money when any is set.
    prices: Prices | None = None
    # Where the HTML report is served (Outputs.report_url): other reports link claims there.
    report_url: str | None = None
    # The front end's words for its options and record command (the gate's).
    terms: Terms = NEUTRAL
    # The files written, as (what, where): each is named in the terminal summary.
    written: list[tuple[str, Path]] = field(default_factory=list)
    # What was sent elsewhere (the OpenTelemetry events to a collector), one line each.
    sent: list[str] = field(default_factory=list)
    # Claim items left out of this run (-k, -m, --lf): the gate judged a part.
    deselected: int = 0
    # The run is a part of the suite (claims deselected, or claim files or node ids
    # named rather than folders).
    subset: bool = False
    # The suite's floors this part misses, shown but not failing the run.
    floors_not_applied: list[str] = field(default_factory=list)
    # The baseline figure is the baseline's over this run's claims (a partial run).
    baseline_over_same_claims: bool = False
    # Claims never started (Ctrl-C, -x) and why: the gate is then not decided. None:
    # the run stopped early and how many never ran is not known.
    not_started: int | None = 0
    stopped_by: str | None = None

    def spend(self) -> dict[str, Any] | None:
        """Credits and judge tokens in money (None: no price is set)."""
        if self.prices is None or not self.prices.any:
            return None
        from pytest_citecheck.engine.estimate import judge_spend

        credits, tokens, batch, batch_calls = judge_spend(self.results.values())
        credit = self.prices.credit
        judges = {}
        for spec, (i, o) in sorted(tokens.items()):
            price = self.prices.judge(spec)
            batched = batch.get(spec, (0, 0))
            judges[spec] = {
                "input_tokens": i,
                "output_tokens": o,
                "cost": None if price is None else self.prices.judge_cost(price, (i, o), batched),
            }
            if spec in batch:
                judges[spec] |= {
                    "batch_input_tokens": batched[0],
                    "batch_output_tokens": batched[1],
                }
        return {
            "credits": credits,
            "credit_cost": None if credit is None else credits * credit,
            "judges": judges,
            "cost": self.prices.cost(credits, tokens, batch),
            "missing": self.prices.missing(credits, [s for s, (i, o) in tokens.items() if i or o]),
            **({"batch_calls": batch_calls} if batch_calls else {}),
        }

    @property
    def gate_verdict(self) -> str:
        """passed, FAILED or not decided (:func:`~pytest_citecheck.engine.gate.gate_verdict`)."""
        from pytest_citecheck.engine.gate import gate_verdict

        return gate_verdict(self.gate_failures, self.not_started)

    @property
    def totals(self) -> Totals:
        return totals(self.results.values())

    def answers(self) -> list[tuple[str, AnswerFigures]]:
        """The imported answers the claims came from, each with its file, in file order."""
        ordered = self.ordered()
        where: dict[tuple[str, str], str] = {}
        for nodeid, result in ordered:
            if result.answer is not None:
                where.setdefault(result.answer.key, file_of(nodeid))
        return [(where[(a.origin, a.id)], a) for a in answer_figures(r for _, r in ordered)]

    def conversations(self) -> list[tuple[str, AnswerFigures]]:
        """Each conversation whose turns the claims came from, its turns pooled as one
        answer (its figures the conversation's), with its file, in file order."""
        answers = self.answers()
        where = {(a.origin, a.conversation): file for file, a in answers}
        return [
            (where[(c.origin, c.conversation)], c)
            for c in conversation_figures(a for _, a in answers)
        ]

    @property
    def answer_totals(self) -> AnswerTotals | None:
        """The imported answers' totals; None when the run had none."""
        answers = [a for _, a in self.answers()]
        return answer_totals(answers) if answers else None

    def item(self, nodeid: str) -> ItemInfo | None:
        # Fixture results of one test are keyed "nodeid[i]".
        return self.items.get(nodeid) or self.items.get(nodeid.rsplit("[", 1)[0])

    def ordered(self) -> list[tuple[str, ClaimResult]]:
        """Claims in file order: by file, then by where the claim starts in it."""

        def key(entry: tuple[str, ClaimResult]) -> tuple[str, float, str]:
            info = self.item(entry[0])
            line = info.line if info is not None and info.line is not None else float("inf")
            return file_of(entry[0]), line, entry[0]

        return sorted(self.results.items(), key=key)

    def passed(self, nodeid: str) -> bool | None:
        info = self.item(nodeid)
        return None if info is None else info.outcome == "passed"

    def files(self) -> dict[str, Totals]:
        """Totals per claim file, in file order."""
        grouped: dict[str, list[ClaimResult]] = {}
        for nodeid, result in self.ordered():
            grouped.setdefault(file_of(nodeid), []).append(result)
        return {name: totals(results) for name, results in grouped.items()}

    def failed_in(self, file: str) -> int:
        return sum(
            1 for nodeid in self.results if file_of(nodeid) == file and self.passed(nodeid) is False
        )

    def panels(self) -> list[list[PanelVote]]:
        """The votes of every citation a judge panel decided, in file order."""
        return [v.panel for _, result in self.ordered() for v in result.verdicts if v.panel]

    def panel_json(self) -> dict[str, Any] | None:
        """The run's agreement figures (None: no panel judged anything)."""
        from pytest_citecheck.engine.panel import agreement, member_failures

        panels = self.panels()
        if not panels:
            return None
        figures = agreement(panels)
        return {
            "citations": figures.citations,
            "unanimous": figures.unanimous,
            "unanimous_share": figures.unanimous_share,
            "pairwise_agreement": figures.pairwise,
            "members": max(len(p) for p in panels),
            "failed_members": member_failures(panels),
            "not_recorded": self.not_recorded(),
        }

    def not_recorded(self) -> int:
        """Claims whose panel lacked votes while recording: nothing of them was saved."""
        from pytest_citecheck.engine.panel import NOT_RECORDED

        return sum(
            1
            for result in self.results.values()
            if any(
                v.reason == Reason.PANEL_INCOMPLETE and NOT_RECORDED in (v.detail or "")
                for v in result.verdicts
            )
        )

    def confirmation_json(self) -> dict[str, Any] | None:
        """The confirmation calls behind the verdicts (stages/confirm.py): how many, what
        they cost, how many did not confirm (None: the run confirmed nothing)."""
        found = [
            c for _, result in self.ordered() for v in result.verdicts for c in v.confirmations()
        ]
        if not found:
            return None
        asked = [c for c in found if c.status != "not_recorded"]
        return {
            "calls": len(asked),
            "input_tokens": sum(c.usage.input_tokens for c in asked if c.usage),
            "output_tokens": sum(c.usage.output_tokens for c in asked if c.usage),
            "unconfirmed": sum(c.status == "unconfirmed" for c in found),
            "not_recorded": sum(c.status == "not_recorded" for c in found),
        }

    def joint_json(self) -> dict[str, Any] | None:
        """The joint judgments of claims whose sources none supports alone
        (engine/joint.py): how many claims, calls and tokens (apart from the first
        readings'), how many it supported (None: the run made none)."""
        found = [result.joint for _, result in self.ordered() if result.joint is not None]
        if not found:
            return None
        usages = [u for j in found for u in j.usages()]
        return {
            "claims": sum(j.status != "not_recorded" for j in found),
            "calls": sum(j.calls for j in found),
            "input_tokens": sum(u.input_tokens for u in usages),
            "output_tokens": sum(u.output_tokens for u in usages),
            "supported": sum(j.status == "supported" for j in found),
            "unconfirmed": sum(j.status == "unconfirmed" for j in found),
            "not_recorded": sum(j.status == "not_recorded" for j in found),
        }
