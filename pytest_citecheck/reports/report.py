"""Reports computed once, printed or written by the plugin.

The same :class:`Report` feeds the terminal summary, ``--citecheck-report``
(also the ``--citecheck-baseline`` format), ``--citecheck-csv``,
``--citecheck-md`` / ``$GITHUB_STEP_SUMMARY`` (:mod:`.report_md`) and
``--citecheck-html`` (:mod:`.report_html`); the per-claim failure table and
JUnit properties come from the helpers at the end.

Every text that leaves here is scrubbed of secrets: a judge that echoes an API
key in its quote must not put it in any report. This module imports nothing
heavy (no jinja2): the HTML renderer loads it only when asked for a page.
"""

from __future__ import annotations

import csv
import io
import json
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_citecheck import __version__
from pytest_citecheck.claims.labels import BAD_LABELS, LABEL_ORDER, Label, Reason
from pytest_citecheck.claims.results import ClaimResult, PanelVote, Verdict
from pytest_citecheck.core.files import append_text, write_atomic
from pytest_citecheck.core.prices import Prices, spend_text
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.core.text import plural, ratio, terminal_safe, truncate
from pytest_citecheck.engine.aggregate import (
    REVIEW_HEADING,
    AnswerFigures,
    AnswerTotals,
    Totals,
    alce_line,
    answer_figures,
    answer_totals,
    provider_quote_line,
    review_why,
    totals,
)

if TYPE_CHECKING:
    pass


# Additive changes keep the format number: a report of any 0.x version loads as
# a baseline (only ``totals.citation_precision`` and ``claims[].nodeid/label``
# are read back).
REPORT_FORMAT = 1
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
# Added after the others when the run verified imported answers.
ANSWER_CSV_COLUMNS = ["answer", "answer_support"]


def file_of(nodeid: str) -> str:
    """The claim file (or test module) part of a node id."""
    return nodeid.split("::", 1)[0]


@dataclass
class Line:
    text: str
    markup: dict[str, bool] = field(default_factory=dict)


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


@dataclass(frozen=True)
class LabelChange:
    nodeid: str
    before: str
    after: str

    @property
    def new_contradiction(self) -> bool:
        bad = {label.value for label in BAD_LABELS}
        return self.after in bad and self.before not in bad

    @property
    def lost_support(self) -> bool:
        return self.before == Label.SUPPORTED.value and self.after != Label.SUPPORTED.value


@dataclass
class Report:
    """Everything one session verified, keyed by pytest node id."""

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

    def unwritten_line(self) -> str:
        """The last line when the gate passed but a report file could not be written."""
        n = len(self.output_errors)
        files = "report file" if n == 1 else "report files"
        return f"citecheck gate passed, but {n} {files} could not be written: the run fails"

    # The files written, as (what, where): each is named in the terminal summary.
    written: list[tuple[str, Path]] = field(default_factory=list)
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

    @property
    def gate_verdict(self) -> str:
        """passed, FAILED or not decided (:func:`~pytest_citecheck.engine.gate.gate_verdict`)."""
        from pytest_citecheck.engine.gate import gate_verdict

        return gate_verdict(self.gate_failures, self.not_started)

    def not_started_line(self) -> str | None:
        """``citecheck: 3 claims were not started (interrupted); nothing was billed
        for them``, or None when every claim started."""
        from pytest_citecheck.engine.stopping import not_started_line

        if self.not_started == 0:
            return None
        return not_started_line(self.not_started, self.stopped_by or "the run stopped")

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

    def label_changes(self) -> list[LabelChange]:
        """Claims whose label differs from the baseline's: new contradictions
        first, then claims that lost their support, then the rest."""
        if not self.baseline_labels:
            return []
        changes = [
            LabelChange(nodeid, self.baseline_labels[nodeid], result.label.value)
            for nodeid, result in self.ordered()
            if nodeid in self.baseline_labels and self.baseline_labels[nodeid] != result.label.value
        ]
        return sorted(changes, key=lambda c: (not c.new_contradiction, not c.lost_support))

    def _flagged(self, predicate: Callable[[Verdict], bool]) -> list[tuple[str, Verdict]]:
        return [
            (nodeid, verdict)
            for nodeid, result in self.ordered()
            for verdict in result.verdicts
            if predicate(verdict)
        ]

    def _listing(
        self,
        title: str,
        predicate: Callable[[Verdict], bool],
        row: Callable[[str, Verdict], str],
        colour: str,
        more: Callable[[Verdict], str | None] = lambda v: None,
    ) -> list[Line]:
        """The summary's list of the citations ``predicate`` picks: ``title``, then a
        ``row`` each in ``colour`` with the line ``more`` adds under it (if any)."""
        flagged = self._flagged(predicate)
        out = [Line(title, {"bold": True})] if flagged else []
        for nodeid, verdict in flagged:
            out.append(Line(row(nodeid, verdict), {colour: True}))
            under = more(verdict)
            if under:
                out.append(Line(under))
        return out

    # -- terminal ------------------------------------------------------------------

    def missing_recordings(self) -> list[tuple[str, Verdict]]:
        """The citations that failed because their claim has no recording yet."""
        return self._flagged(missing_recording)

    def missing_line(self, command: str, needs: str, *, verbose: bool = True) -> str | None:
        """One line for every citation with no recording: how many, the one
        ``command`` that records them and what recording ``needs`` (None: none).
        Not ``verbose``: it says that ``-v`` lists each."""
        missing = self.missing_recordings()
        if not missing:
            return None
        claims = len({nodeid for nodeid, _ in missing})
        return (
            f"citecheck: {plural(len(missing), 'citation')} in {plural(claims, 'claim')} "
            f"{'has' if len(missing) == 1 else 'have'} no recording; record "
            f"{'it' if len(missing) == 1 else 'them'} with: {command} (recording needs "
            f"{needs})" + ("" if verbose else "; -v lists each")
        )

    def lines(self, *, verbose: bool = True) -> list[Line]:
        """The terminal summary, scrubbed, without control sequences (a page's or a
        claim's ``ESC[2J`` is not the terminal's business). Not ``verbose``: the
        citations with no recording are left out of the error list (one line,
        :meth:`missing_line`, stands for them)."""
        return [
            Line(terminal_safe(scrub(line.text)), line.markup)
            for line in self._lines(verbose=verbose)
        ]

    def _lines(self, *, verbose: bool = True) -> list[Line]:
        t = self.totals
        out = [
            Line(
                f"{plural(t.claims, 'claim')}, {plural(t.citations, 'citation')}: citation "
                f"precision {ratio(t.citation_precision)} ({t.supported}/{t.citations}), reachable "
                f"precision {ratio(t.reachable_precision)} ({t.supported}/{t.reachable})"
            ),
            Line(" | ".join(f"{label.value} {t.count(label)}" for label in LABEL_ORDER)),
        ]
        if t.provider_quote_not_on_page:
            out.append(Line(provider_quote_line(t.provider_quote_not_on_page), {"yellow": True}))
        answers = self.answer_totals
        if answers is not None:
            out.append(
                Line(
                    f"{plural(answers.answers, 'answer')}, "
                    f"{plural(answers.sentences, 'sentence')}, {answers.uncited} uncited: "
                    f"answer support {ratio(answers.support)} "
                    f"({answers.supported}/{answers.claims} claims)"
                )
            )
            recall, precision = answers.citation_recall, answers.citation_precision
            out.append(Line(alce_line(recall, precision, answers.answers)))
        if self.deselected:
            out.append(
                Line(
                    f"gate over {t.claims} of {t.claims + self.deselected} claims "
                    f"({self.deselected} deselected)",
                    {"yellow": True},
                )
            )
        elif self.subset:
            out.append(
                Line(
                    f"gate over the {plural(t.claims, 'claim')} of the files named "
                    "(a part of the suite)",
                    {"yellow": True},
                )
            )
        out.extend(Line(f"  {floor}", {"yellow": True}) for floor in self.floors_not_applied)
        if self.baseline_precision is not None and t.citation_precision is not None:
            delta = t.citation_precision - self.baseline_precision
            scope = f" (the baseline over the same {plural(t.claims, 'claim')})"
            out.append(
                Line(
                    f"baseline precision {self.baseline_precision:.4f} -> "
                    f"{t.citation_precision:.4f} ({delta:+.4f})"
                    + (scope if self.baseline_over_same_claims else "")
                )
            )
        if t.credits or t.input_tokens or t.output_tokens:
            out.append(Line(self._spend_line(t) + spend_text(self.spend())))
        out += self._panel_lines(t)
        out += [Line(text, {"yellow": True}) for text in self.judge_warnings()]
        out += self._confirmation_lines()
        files = self.files()
        if len(files) > 1:
            out.append(Line("per file:", {"bold": True}))
            width = max(len(name) for name in files)
            for name, ft in files.items():
                failed = self.failed_in(name)
                out.append(
                    Line(
                        f"  {name:<{width}}  {plural(ft.claims, 'claim')}, "
                        f"{plural(ft.citations, 'citation')}, "
                        f"precision {ratio(ft.citation_precision)} ({ft.supported}/{ft.citations})"
                        + (f", {failed} failed" if failed else "")
                    )
                )
        changes = self.label_changes()
        if changes:
            out.append(
                Line(f"label changes against the baseline ({len(changes)}):", {"bold": True})
            )
            for c in changes:
                markup = {"red": True} if c.new_contradiction or c.lost_support else {}
                out.append(Line(f"  {c.nodeid}  {c.before} -> {c.after}", markup))
        out += self._listing(
            "contradicted and fabricated:",
            lambda v: v.label in BAD_LABELS,
            lambda nodeid, v: f"  {v.label.value.upper():<12} {nodeid}  {v.url}",
            "red",
            lambda v: (
                f'      "{truncate(v.evidence_quote, 110, flatten=True)}"'
                if v.evidence_quote
                else None
            ),
        )
        out += self._listing(
            "errors:",
            lambda v: v.label is Label.ERROR and (verbose or not missing_recording(v)),
            lambda nodeid, v: f"  ERROR        {nodeid}  {v.url}  [{v.reason}]",
            "red",
            lambda v: f"      {truncate(v.detail, 400, flatten=True)}" if v.detail else None,
        )
        out += self._listing(
            f"{Reason.PROVIDER_QUOTE_NOT_ON_PAGE}:",
            lambda v: v.provider_quote_not_on_page,
            lambda nodeid, v: f"  {v.label.value:<12} {nodeid}  {v.url}",
            "yellow",
        )
        out += self._listing(
            f"{REVIEW_HEADING}:",
            lambda v: v.review,
            lambda nodeid, v: (
                f"  {v.label.value:<12} {_confidence(v)}  {nodeid}  {v.url}  [{review_why(v)}]"
            ),
            "yellow",
        )
        out.extend(Line(f"could not write {e}", {"red": True}) for e in self.output_errors)
        return out

    def judge_warnings(self) -> list[str]:
        """What the judges' replies ask a user to know, once per judge: a server asked
        again without a feature it refused (with the setting that skips the first
        try), and a confidence outside [0, 1] (which values, how many answers, what
        was done with them)."""
        from pytest_citecheck.engine.panel import judge_of

        found: dict[str, list[float]] = {}
        asked_again: dict[tuple[str, str], None] = {}
        for _, result in self.ordered():
            for v in result.verdicts:
                said = [
                    (judge_of(m.judge), m.confidence_raw, m.judge_fallback) for m in v.panel or ()
                ]
                own = (v.judge or "the judge", v.confidence_raw, v.judge_fallback)
                for judge, raw, fallback in [*said, own]:
                    if raw is not None:
                        found.setdefault(judge, []).append(raw)
                    if fallback is not None:
                        _note_fallback(asked_again, judge, fallback)
        return [f"judge {judge}: {fallback}" for judge, fallback in asked_again] + [
            f"judge {judge} answered confidence on another scale than 0 to 1 "
            f"({', '.join(f'{r:g}' for r in dict.fromkeys(raws))}) in "
            f"{plural(len(raws), 'answer')}: labels kept, confidence read as "
            "unknown, sent to review"
            for judge, raws in found.items()
        ]

    def _spend_line(self, t: Totals) -> str:
        """Credits and judge tokens; when some claims were replayed and others went to
        the network, what this run spent apart from what the replayed recordings hold
        (a replay costs nothing)."""

        def spent(s: Totals) -> str:
            cut = (
                f" (with {s.unanswered} billed, unanswered "
                f"{'try' if s.unanswered == 1 else 'tries'}: received by the judge's server, "
                "the connection cut before its answer, sent again)"
                if s.unanswered
                else ""
            )
            return (
                f"crawling API credits {s.credits:g}, judge tokens {s.input_tokens} in / "
                f"{s.output_tokens} out{cut}"
            )

        replayed = [r for r in self.results.values() if r.replayed]
        if not replayed or len(replayed) == len(self.results):
            return spent(t)
        live = totals(r for r in self.results.values() if not r.replayed)
        return (
            f"this run: {spent(live)}; recorded ({plural(len(replayed), 'claim')} replayed, "
            f"not billed): {spent(totals(replayed))}"
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

    def _confirmation_lines(self) -> list[Line]:
        figures = self.confirmation_json()
        if figures is None:
            return []
        out = []
        if figures["calls"]:
            out.append(
                Line(
                    f"confirmation: {plural(figures['calls'], 'judge call')} on the quote "
                    f"alone, tokens {figures['input_tokens']} in / {figures['output_tokens']} "
                    f"out (besides the judge tokens above), {figures['unconfirmed']} unconfirmed"
                )
            )
        if figures["not_recorded"]:
            out.append(
                Line(
                    f"not confirmed: {plural(figures['not_recorded'], 'verdict')} replayed from "
                    "recordings made without the confirmation (listed for review; "
                    f"{self._record_again('new_episodes')})",
                    {"yellow": True},
                )
            )
        return out

    def _record_again(self, mode: str) -> str:
        """How to record the unconfirmed claims again, in the front end's words (the
        first one's command: the review list names them all)."""
        first = next(
            (
                nodeid
                for nodeid, result in self.ordered()
                for v in result.verdicts
                if any(c.status == "not_recorded" for c in v.confirmations())
            ),
            None,
        )
        command = None if first is None else self.terms.record_command(first, mode)
        if command is None:
            return f"record it with {self.terms.setting('record_mode', mode)}"
        return f"record it with: {command}"

    def _panel_lines(self, t: Totals) -> list[Line]:
        from pytest_citecheck.engine.panel import failure_text

        panel = self.panel_json()
        if panel is None:
            return []
        out = [
            Line(
                f"judge panel: {plural(panel['citations'], 'citation')}, {panel['unanimous']} "
                f"unanimous (agreement {ratio(panel['unanimous_share'])})"
            )
        ]
        for pair, share in panel["pairwise_agreement"].items():
            out.append(Line(f"  pairwise {pair}: {share:.4f}"))
        for failure in panel["failed_members"]:
            out.append(Line(f"  {failure_text(failure)}", {"red": True}))
        if panel["not_recorded"]:
            out.append(
                Line(
                    f"  not recorded: {plural(panel['not_recorded'], 'claim')} whose panel "
                    "lacked votes; rerun them to record once every member answers",
                    {"red": True},
                )
            )
        return out

    # -- files -----------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        t = self.totals
        data = self._to_json(t)
        answers = self.answers()
        if answers:
            totals_ = answer_totals(a for _, a in answers)
            data["answer_totals"] = {
                "answers": totals_.answers,
                "sentences": totals_.sentences,
                "uncited": totals_.uncited,
                "claims": totals_.claims,
                "supported": totals_.supported,
                "answer_support": totals_.support,
                **_alce_json(totals_),
            }
            data["answers"] = [_answer_json(file, a) for file, a in answers]
        return data

    def _to_json(self, t: Totals) -> dict[str, Any]:
        panel = self.panel_json()
        claims = [
            {
                "nodeid": nodeid,
                "passed": self.passed(nodeid),
                **_claim_json(result),
                **({"answer": result.answer.id} if result.answer is not None else {}),
            }
            for nodeid, result in self.ordered()
        ]
        return {
            "citecheck_report": REPORT_FORMAT,
            "run": self.run,
            "totals": _totals_json(t),
            "files": {
                name: {**_totals_json(ft), "failed": self.failed_in(name)}
                for name, ft in self.files().items()
            },
            **({"spend": spent} if (spent := self.spend()) is not None else {}),
            **(
                {"confirmation": confirmed}
                if (confirmed := self.confirmation_json()) is not None
                else {}
            ),
            "gate": self._gate_json(),
            "selection": {
                "claims": t.claims,
                "deselected": self.deselected,
                "subset": self.subset,
                "floors_not_applied": self.floors_not_applied,
                "baseline_over_same_claims": self.baseline_over_same_claims,
            },
            "baseline_precision": self.baseline_precision,
            "label_changes": [
                {"nodeid": c.nodeid, "before": c.before, "after": c.after}
                for c in self.label_changes()
            ],
            **({"panel": panel} if panel is not None else {}),
            "claims": claims,
        }

    def _gate_json(self) -> dict[str, Any]:
        from pytest_citecheck.engine.gate import GATE_NOT_DECIDED, GATE_PASSED

        verdict = self.gate_verdict
        return {
            "passed": verdict == GATE_PASSED,
            "decided": verdict != GATE_NOT_DECIDED,
            "failures": self.gate_failures,
            # Claims never started (no request, no cassette, no verdict), and why.
            "not_started": self.not_started,
            "stopped_by": (
                (self.stopped_by or "the run stopped") if self.not_started != 0 else None
            ),
        }

    def scrubbed_json(self) -> dict[str, Any]:
        """:meth:`to_json` with every string scrubbed: what every file is made from."""
        data: dict[str, Any] = json.loads(scrub(json.dumps(self.to_json(), ensure_ascii=False)))
        return data

    def write_json(self, path: Path) -> None:
        write_report(path, json.dumps(self.scrubbed_json(), indent=2, ensure_ascii=False) + "\n")

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

    def write_markdown(self, path: Path, *, append: bool = False) -> None:
        from pytest_citecheck.reports.markdown import render_markdown

        write_report(path, render_markdown(self.scrubbed_json(), self.report_url), append=append)

    def write_html(self, path: Path) -> None:
        from pytest_citecheck.reports.html import render_html

        write_report(path, render_html(self.scrubbed_json()))


def _confidence(verdict: Verdict) -> str:
    return "n/a" if verdict.confidence is None else f"{verdict.confidence:.2f}"


def _csv_fraction(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def _answer_json(file: str, a: AnswerFigures) -> dict[str, Any]:
    return {
        "id": a.id,
        "file": file,
        "format": a.format,
        "sentences": len(a.sentences),
        "cited": a.cited,
        "uncited": a.uncited,
        "claims": a.claims,
        "supported": a.supported,
        "answer_support": a.support,
        **_alce_json(a),
        "text": [
            {
                "text": s.text,
                "claim_id": s.claim_id,
                "label": s.label.value if s.label else None,
                # ALCE: whether its citations support it (None: its claim did not run).
                "supported_by_citations": s.supported_by_citations if s.counted else None,
            }
            for s in a.sentences
        ],
    }


def _alce_json(figures: AnswerFigures | AnswerTotals) -> dict[str, Any]:
    """ALCE's citation recall and precision (a run's: the means over its answers) and
    the counts they come from."""
    return {
        "citation_recall": figures.citation_recall,
        "citation_precision": figures.citation_precision,
        "sentences_counted": figures.counted_sentences,
        "sentences_supported": figures.sentences_supported,
        "citations": figures.citations,
        "citations_supporting": figures.citations_supporting,
    }


# Verdict fields that are null unless a panel or an overruling guard set them: left out
# of the JSON report then, so a run without either writes what it always did.
_UNLESS_SET = (
    "judge_label",
    "judge_confidence",
    "panel",
    "confidence_raw",
    "judge_fallback",
    "confirmation",
)
# ... and the marker of a provider quote the page did not have, unless it is set.
_UNLESS_TRUE = ("provider_quote_not_on_page",)


def _claim_json(result: ClaimResult) -> dict[str, Any]:
    data = result.model_dump(mode="json")
    for verdict in data["verdicts"]:
        for name in _UNLESS_SET:
            if verdict.get(name) is None:
                verdict.pop(name, None)
        for name in _UNLESS_TRUE:
            if not verdict.get(name):
                verdict.pop(name, None)
        for member in verdict.get("panel") or ():
            for name in ("confidence_raw", "judge_fallback"):
                if member.get(name) is None:
                    member.pop(name, None)
    return data


def _totals_json(t: Totals) -> dict[str, Any]:
    data: dict[str, Any] = {
        "claims": t.claims,
        "citations": t.citations,
        "citation_precision": t.citation_precision,
        "reachable_precision": t.reachable_precision,
        "by_label": t.by_label,
        "review": t.review,
        "credits": t.credits,
        "input_tokens": t.input_tokens,
        "output_tokens": t.output_tokens,
    }
    if t.unanswered:
        # Only when there is one: judge tries billed, unanswered (in the tokens above).
        data["billed_unanswered"] = t.unanswered
    if t.provider_quote_not_on_page:
        # Only when there is one: a run without writes the totals it always did.
        data["provider_quote_not_on_page"] = t.provider_quote_not_on_page
    return data


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


# -- per item --------------------------------------------------------------------


def missing_recording(verdict: Verdict) -> bool:
    """The citation failed only because its claim has no recording yet."""
    return verdict.reason == Reason.NO_RECORDING


def citation_table(result: ClaimResult, *, verbose: bool = True) -> list[str]:
    """The failure report of one claim: a row per citation (scrubbed, printable).
    Not ``verbose``: a missing recording's detail (the record command, said once
    for the run) is left to the row's reason."""
    head = _hang(f"claim {result.id!r}: {result.claim}")
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
                v.reason
                or (Reason.PROVIDER_QUOTE_NOT_ON_PAGE if v.provider_quote_not_on_page else "-"),
                conf,
                truncate(scrub(v.final_url or v.url), 60, flatten=True),
                truncate(scrub(v.evidence_quote or ""), 70, flatten=True),
            )
        )
    widths = [max(len(row[c]) for row in rows) for c in range(5)]
    for row in rows:
        cells = [row[c].ljust(widths[c]) for c in range(5)]
        lines.append("  ".join([*cells, row[5]]).rstrip())
    details = [
        (i, v)
        for i, v in enumerate(result.verdicts, 1)
        if v.detail and (verbose or not missing_recording(v))
    ]
    if details:
        lines.append("")
        lines.extend(_hang(f"[{i}] {v.url}: {v.detail}") for i, v in details)
    return [terminal_safe(scrub(line)) for line in lines]


def explain_label(
    results: Sequence[ClaimResult], left: object, op: str, right: object, rerecord: str | None
) -> list[str]:
    """A failed comparison of a claim label, explained by the test's claim results
    (those whose label is compared; all of them if none is): each citation's label,
    reason and quote, then the details (once each) and ``rerecord``, the command that
    records the test again. Compact: pytest shows 8 lines of it unless ``-vv``."""
    compared = [r for r in results if r.label in (left, right)]
    lines = [f"{str(left)!r} {op} {str(right)!r}"]
    details: list[str] = []
    for result in compared or results:
        expected = f", expected {result.expect.value}" if result.expect else ""
        claim = truncate(result.claim, 60, flatten=True)
        lines.append(f"claim {result.id!r} is {result.label.value}{expected}: {claim}")
        for i, v in enumerate(result.verdicts, 1):
            reason = f" [{v.reason}]" if v.reason else ""
            conf = "" if v.confidence is None else f" ({v.confidence:.2f})"
            said = truncate(v.evidence_quote, 80, flatten=True)
            quote = f': "{said}"' if v.evidence_quote else ""
            lines.append(f"  {i}. {v.label.value}{reason}{conf} {v.url}{quote}")
            if v.detail and v.detail not in details:
                details.append(v.detail)
    lines.extend(truncate(d, 400, flatten=True) for d in details)
    recorded = any("record it with:" in d or "record it again with:" in d for d in details)
    if rerecord is not None and not recorded:
        lines.append(f"if the sources changed, record the test again: {rerecord}")
    return [scrub(line) for line in lines]


def _hang(text: str) -> str:
    """Continuation lines indented: no line of claim or page text starts a line of
    output (where CI would read ``::error::...`` as a workflow command)."""
    return "\n    ".join(text.splitlines())


def junit_properties(result: ClaimResult) -> Sequence[tuple[str, object]]:
    """Per-citation properties for ``--junitxml`` (values scrubbed)."""
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
    return [(name, scrub(str(value))) for name, value in props]


def _note_fallback(seen: dict[tuple[str, str], None], judge: str, fallback: str) -> None:
    """Keep ``judge``'s ``fallback`` unless one already kept says it (a server's
    response format is learnt once per run: later calls say only the rest)."""
    for kept_judge, kept in list(seen):
        if kept_judge != judge:
            continue
        if fallback in kept:
            return
        if kept in fallback:
            del seen[(kept_judge, kept)]
    seen[(judge, fallback)] = None
