"""The listings of a run: which citations a person should look at, and the hints.

:class:`ReportListings` picks the citations the summary lists (contradicted,
errors, review, no recording), the claims whose label changed against the
baseline, the judges' warnings, and the one-line hints (the record command for
the missing recordings, the claims never started, the files not written).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pytest_citecheck.claims.labels import BAD_LABELS, Label, Reason
from pytest_citecheck.claims.results import Verdict
from pytest_citecheck.core.text import plural
from pytest_citecheck.reports.figures import ReportFigures


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


def missing_recording(verdict: Verdict) -> bool:
    """The citation failed only because its claim has no recording yet."""
    return verdict.reason == Reason.NO_RECORDING


class ReportListings(ReportFigures):
    """The citations and claims a run's reports list, and the hints they print."""

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

    def missing_recordings(self) -> list[tuple[str, Verdict]]:
        """The citations that failed because their claim has no recording yet."""
        return self._flagged(missing_recording)

    def missing_line(self, *, verbose: bool = True) -> str | None:
        """The terminal's line for the citations with no recording
        (:meth:`missing_text`); not ``verbose``, it says that ``-v`` lists each."""
        text = self.missing_text()
        if text is None:
            return None
        return f"citecheck: {text}" + ("" if verbose else "; -v lists each")

    def missing_text(self) -> str | None:
        """One sentence for every citation with no recording (None: none is missing):
        how many, the one command that records them (their claim, or their files,
        where ``once`` records only what is missing) and what recording needs: the
        keys of the judges that would record them (each verdict names its own: a
        file's ``judge:``, the flag, the ini), never a judge nothing asked for. The
        terminal, the HTML header and the markdown summary say the same."""
        from pytest_citecheck.engine.panel import judge_of
        from pytest_citecheck.engine.preflight import recording_needs
        from pytest_citecheck.reports.figures import file_of

        missing = self.missing_recordings()
        if not missing:
            return None
        claims = list(dict.fromkeys(nodeid for nodeid, _ in missing))
        files = claims if len(claims) == 1 else list(dict.fromkeys(map(file_of, claims)))
        judges = [judge_of(name) for _, v in missing for name in (v.judge or "").split(",") if name]
        urls = any(v.url.startswith(("http://", "https://")) for _, v in missing)
        them = "it" if len(missing) == 1 else "them"
        command = self.terms.record_all_command(files, "once")
        record = f"record {them} with: {command}" if command else f"record {them}"
        return (
            f"{plural(len(missing), 'citation')} in {plural(len(claims), 'claim')} "
            f"{'has' if len(missing) == 1 else 'have'} no recording; {record} (recording needs "
            f"{recording_needs(judges, urls)})"
        )

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

    def unwritten_line(self) -> str:
        """The last line when the gate passed but a report file could not be written."""
        n = len(self.output_errors)
        files = "report file" if n == 1 else "report files"
        return f"citecheck gate passed, but {n} {files} could not be written: the run fails"

    def not_started_line(self) -> str | None:
        """``citecheck: 3 claims were not started (interrupted); nothing was billed
        for them``, or None when every claim started."""
        from pytest_citecheck.engine.stopping import not_started_line

        if self.not_started == 0:
            return None
        return not_started_line(self.not_started, self.stopped_by or "the run stopped")

    def _record_again(self, mode: str, joint: bool = False) -> str:
        """How to record the unconfirmed claims (``joint``: those not judged jointly)
        again, in the front end's words (the first one's command: the review list names
        them all)."""
        first = next(
            (
                nodeid
                for nodeid, result in self.ordered()
                for v in result.verdicts
                if any(c.status == "not_recorded" for c in v.confirmations())
            )
            if not joint
            else (
                nodeid
                for nodeid, result in self.ordered()
                if result.joint is not None and result.joint.status == "not_recorded"
            ),
            None,
        )
        command = None if first is None else self.terms.record_command(first, mode)
        if command is None:
            return f"record it with {self.terms.setting('record_mode', mode)}"
        return f"record it with: {command}"


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
