"""The terminal summary of a run: the lines printed after pytest's (or the CLI's) own.

:class:`TerminalSummary` renders the figures and listings as :class:`Line` s
(text and markup), scrubbed of secrets and of control sequences.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pytest_citecheck.claims.labels import BAD_LABELS, LABEL_ORDER, Label, Reason
from pytest_citecheck.claims.results import Archive, Screenshot, Verdict
from pytest_citecheck.core.prices import spend_text
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.core.text import plural, ratio, terminal_safe, truncate
from pytest_citecheck.core.urls import page_link
from pytest_citecheck.engine.aggregate import (
    REVIEW_HEADING,
    Totals,
    alce_line,
    not_retrieved_line,
    provider_quote_line,
    review_why,
    totals,
)
from pytest_citecheck.engine.rates import rates_line, rates_text
from pytest_citecheck.reports.listings import ReportListings, missing_recording

# Conversations given a summary line each (the JSON report lists them all).
_CONVERSATIONS_SHOWN = 10


@dataclass
class Line:
    text: str
    markup: dict[str, bool] = field(default_factory=dict)


class TerminalSummary(ReportListings):
    """The terminal summary's lines."""

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
            Line(rates_line(t.rates)),
        ]
        if t.provider_quote_not_on_page:
            out.append(Line(provider_quote_line(t.provider_quote_not_on_page), {"yellow": True}))
        if t.url_not_retrieved:
            out.append(Line(not_retrieved_line(t.url_not_retrieved), {"yellow": True}))
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
            out += self._conversation_lines()
            out += [Line(f"  {a.id}: {rates_text(a.rates)}") for _, a in self.answers()]
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
        out += self._joint_lines()
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
            lambda nodeid, v: f"  {v.label.value.upper():<12} {nodeid}  {page_link(v.url, v.page)}",
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
        out += self._looked_up(
            "unreachable, asked of the Wayback Machine:", lambda v: v.archive, 14, archive_more
        )
        out += self._looked_up(
            "pictured (the page as a picture, in the HTML report):",
            lambda v: v.screenshot,
            7,
            shot_more,
        )
        out += self._listing(
            f"{REVIEW_HEADING}:",
            lambda v: v.review,
            lambda nodeid, v: (
                f"  {v.label.value:<12} {_confidence(v)}  {nodeid}  "
                f"{page_link(v.url, v.page)}  [{review_why(v)}]"
            ),
            "yellow",
        )
        out.extend(Line(f"could not write {e}", {"red": True}) for e in self.output_errors)
        out.extend(Line(f"citecheck {s}", {}) for s in self.sent)
        return out

    def _conversation_lines(self) -> list[Line]:
        """One line per imported conversation (its turns pooled), the first few only."""
        conversations = self.conversations()
        answers = [a for _, a in self.answers()]
        out = []
        for _file, c in conversations[:_CONVERSATIONS_SHOWN]:
            # The turns that made claims (a turn citing nothing reaches no result).
            turns = sorted(
                a.turn or 0 for a in answers if (a.origin, a.conversation) == (c.origin, c.id)
            )
            numbers = ", ".join(map(str, turns))
            out.append(
                Line(
                    f"conversation {c.id} (turn{'s' if len(turns) > 1 else ''} {numbers}): "
                    "answer support "
                    f"{ratio(c.support)} ({c.supported}/{c.claims} claims), ALCE citation "
                    f"recall {ratio(c.citation_recall)}, citation precision "
                    f"{ratio(c.citation_precision)}"
                )
            )
        if len(conversations) > _CONVERSATIONS_SHOWN:
            more = len(conversations) - _CONVERSATIONS_SHOWN
            out.append(Line(f"... and {plural(more, 'conversation')} more (the JSON report)"))
        return out

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
                out.extend(Line(part) for part in under.split("\n"))
        return out

    def _looked_up(
        self,
        title: str,
        part: Callable[[Verdict], Archive | Screenshot | None],
        width: int,
        more: Callable[[Verdict], str | None],
    ) -> list[Line]:
        """The citations that have ``part`` (a Wayback lookup, a picture), by its status."""
        return self._listing(
            title,
            lambda v: part(v) is not None,
            lambda nodeid, v: f"  {status_word(part(v)):<{width}} {nodeid}  {v.url}",
            "yellow",
            more,
        )

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

    def _joint_lines(self) -> list[Line]:
        """The joint judgments (engine/joint.py), apart from the first readings, and the
        claims replayed from recordings made without one (in yellow)."""
        f = self.joint_json()
        if f is None:
            return []
        unconfirmed = f", {f['unconfirmed']} unconfirmed" if f["unconfirmed"] else ""
        asked = (
            f"joint judgment: {plural(f['claims'], 'claim')} whose sources none supports "
            f"alone, {plural(f['calls'], 'judge call')}, tokens {f['input_tokens']} in / "
            f"{f['output_tokens']} out (besides the judge tokens above), {f['supported']} "
            f"supported jointly{unconfirmed}"
        )
        missing = (
            f"not judged jointly: {plural(f['not_recorded'], 'claim')} replayed from "
            "recordings made without the joint judgment (their single-source verdicts stand; "
            f"{self._record_again('new_episodes', joint=True)})"
        )
        shown = [(asked, {}, f["claims"]), (missing, {"yellow": True}, f["not_recorded"])]
        return [Line(text, markup) for text, markup, count in shown if count]

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


def status_word(part: Archive | Screenshot | None) -> str:
    """A looked-up part's status in capitals: the Wayback Machine's ``NEVER_ARCHIVED``,
    ``ROTTED`` or ``UNKNOWN``; the picture's ``TAKEN`` or ``MISSING``."""
    return part.status.upper() if part is not None else ""


def shot_more(verdict: Verdict) -> str | None:
    """Where the picture is kept, or why there is none."""
    shot = verdict.screenshot
    if shot is None:
        return None
    if shot.status == "taken":
        return f"      {shot.file}"
    return f"      {truncate(shot.detail, 400, flatten=True)}" if shot.detail else None


def archive_more(verdict: Verdict) -> str | None:
    """The line under a looked-up citation: the snapshot, or what is known."""
    archive = verdict.archive
    if archive is None:
        return None
    if archive.status == "rotted":
        when = archive.snapshot_time or "at an unknown time"
        line = f"      archived {when}: {archive.snapshot_url}"
        found = archive.verdict
        if found is not None:
            confidence = f" {found.confidence:.2f}" if found.confidence is not None else ""
            quote = f' "{truncate(found.evidence_quote, 110, flatten=True)}"'
            why = f" [{found.reason}]" if found.reason else ""
            line += (
                f"\n      on the snapshot (not live): {found.label.value}{confidence}"
                + (quote if found.evidence_quote else "")
                + why
            )
        return line
    if archive.status == "never_archived":
        why = f" ({archive.detail})" if archive.detail else ""
        return f"      never archived: likely invented{why}"
    return f"      {truncate(archive.detail, 400, flatten=True)}" if archive.detail else None


def _confidence(verdict: Verdict) -> str:
    return "n/a" if verdict.confidence is None else f"{verdict.confidence:.2f}"
