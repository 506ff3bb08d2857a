"""Judging the passages a citation's source shows: the judge (or a panel) asked, its answer
guarded, confirmed on its quote alone (stages/confirm.py) and checked.

:class:`~pytest_citecheck.engine.pipeline.Verifier` finds what to show (fetch, passages,
retrieval, a citation's own quote) and hands it to :class:`Judging`, which turns it into a
verdict. What a judge says is capped before it reaches a verdict, so a 5 MB "quote" never
reaches a report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import (
    Confirmation,
    JudgeReply,
    PanelVote,
    Passage,
    Usage,
    Verdict,
)
from pytest_citecheck.core.defaults import DEFAULT_PANEL_RULE
from pytest_citecheck.core.errors import ResponseTooLarge, StageFailed
from pytest_citecheck.core.text import truncate
from pytest_citecheck.stages.guard import Guarded, guard
from pytest_citecheck.stages.judges.base import Judge
from pytest_citecheck.stages.quote_policy import EXACT, QuotePolicy

# Longest evidence quote and detail text a verdict keeps (the rest becomes "…").
MAX_QUOTE_CHARS = 2000
MAX_DETAIL_CHARS = 1000

# Failures of the run itself, not of a judge: they fail the citation, panel or not.
_NOT_A_VOTE = frozenset(
    {Reason.NO_RECORDING, Reason.STALE_RECORDING, Reason.CORRUPT_RECORDING, Reason.CONFIGURATION}
)


def cap(text: str | None, limit: int) -> str | None:
    """``text`` cut to ``limit`` characters, marked with an ellipsis when cut."""
    return None if text is None else truncate(text, limit)


@dataclass
class Judging:
    """judge (or panel) -> guard -> confirmation -> checks, on the passages shown."""

    judge: Judge
    quote_policy: QuotePolicy = EXACT
    # A judge panel (engine/panel.py): every member judges each citation, in this
    # order, and the rule decides. Empty: ``judge`` alone, as without a panel.
    panel: Sequence[Judge] = field(default_factory=tuple)
    panel_rule: str = DEFAULT_PANEL_RULE
    # The votes a panel needs (members that answered); None: every member.
    panel_min_votes: int | None = None
    # Confirm supported/contradicted answers on their quote alone (stages/confirm.py).
    confirm: bool = True
    # False: replaying a recording made without the confirmation (nothing to replay).
    confirm_recorded: bool = True

    def verdict(self, claim: str, shown: list[Passage], base: Verdict) -> Verdict:
        """``base`` judged on ``shown``: by the judge or the panel, guarded, confirmed
        and checked; quotes and details capped."""
        if self.panel:
            return self._panel(claim, shown, base)
        reply = self._ask(self.judge, claim, shown)
        guarded = guard(reply, shown, self.quote_policy, claim)
        guarded, confirmation = self._confirm(self.judge, claim, guarded, shown)
        fields = guarded.verdict_fields()
        for name in ("evidence_quote", "judge_quote", "detail"):
            fields[name] = cap(fields[name], MAX_QUOTE_CHARS)
        fields.update(_reply_notes(reply))
        verdict = base.model_copy(
            update={
                **fields,
                "passages": shown,
                "judge": self.judge.name,
                "usage": reply.usage,
                "confirmation": confirmation,
            }
        )
        return self._checked(verdict, claim, shown)

    def _confirm(
        self, judge: Judge, claim: str, guarded: Guarded, shown: list[Passage]
    ) -> tuple[Guarded, Confirmation | None]:
        """``judge``'s guarded answer after its confirmation on its quote alone."""
        if not self.confirm:
            return guarded, None
        from pytest_citecheck.stages.confirm import confirm

        def ask(texts: list[str]) -> JudgeReply:
            return self._ask(judge, claim, [Passage(index=0, text=t) for t in texts])

        outcome, confirmation, _ = confirm(
            ask,
            guarded,
            shown,
            recorded=self.confirm_recorded,
            policy=self.quote_policy,
        )
        if confirmation is not None:
            confirmation = confirmation.model_copy(
                update={
                    "evidence": cap(confirmation.evidence, MAX_QUOTE_CHARS),
                    "quote": cap(confirmation.quote, MAX_QUOTE_CHARS),
                }
            )
        return outcome, confirmation

    def _checked(self, verdict: Verdict, claim: str, shown: list[Passage]) -> Verdict:
        """The checks after the judge that need no model (stages/confirm.py)."""
        from pytest_citecheck.stages.confirm import checked

        verdict = checked(verdict, claim, shown)
        return verdict.model_copy(update={"detail": cap(verdict.detail, MAX_DETAIL_CHARS)})

    @staticmethod
    def _ask(judge: Judge, claim: str, shown: list[Passage]) -> JudgeReply:
        try:
            return judge.judge(claim, [p.text for p in shown])
        except ResponseTooLarge as exc:
            raise StageFailed(
                Reason.JUDGE_REPLY_TOO_LARGE,
                f"the judge's reply is larger than {exc.limit} bytes",
            ) from None

    def _panel(self, claim: str, shown: list[Passage], base: Verdict) -> Verdict:
        """Every member judges and is guarded on its own; then the rule decides."""
        from pytest_citecheck.engine.panel import decide, judge_of, member_names

        names = member_names([member.name for member in self.panel])
        votes = [
            self._vote(member, name, claim, shown)
            for member, name in zip(self.panel, names, strict=True)
        ]
        decision = decide(votes, self.panel_rule, self.panel_min_votes)
        # A member's confidence on another scale is unknown: a human looks at it.
        off_scale = any(v.confidence_raw is not None for v in votes)
        usage = Usage(
            input_tokens=sum(v.usage.input_tokens for v in votes if v.usage),
            output_tokens=sum(v.usage.output_tokens for v in votes if v.usage),
            unanswered=sum(v.usage.unanswered for v in votes if v.usage),
        )
        verdict = base.model_copy(
            update={
                "label": decision.label,
                "evidence_quote": decision.evidence_quote,
                "confidence": decision.confidence,
                "reason": decision.reason,
                "detail": decision.detail,
                "review": decision.review or (off_scale and decision.label is not Label.ERROR),
                "passages": shown,
                "judge": ",".join(dict.fromkeys(judge_of(v.judge) for v in votes)),
                "usage": usage,
                "panel": votes,
            }
        )
        return self._checked(verdict, claim, shown)

    def _vote(self, member: Judge, name: str, claim: str, shown: list[Passage]) -> PanelVote:
        """One member's guarded vote (``name``: the member as listings show it); a member
        that fails votes ``error`` with its reason.

        A recording that cannot serve the member (no recording, stale, corrupt) or a
        missing key is not a vote: it fails the citation, as without a panel."""
        try:
            reply = self._ask(member, claim, shown)
            guarded = guard(reply, shown, self.quote_policy, claim)
            guarded, confirmation = self._confirm(member, claim, guarded, shown)
        except StageFailed as exc:
            if exc.reason in _NOT_A_VOTE:
                raise
            return PanelVote(judge=name, label=Label.ERROR, reason=exc.reason, detail=exc.detail)
        return PanelVote(
            judge=name,
            label=guarded.label,
            evidence_quote=cap(guarded.quote, MAX_QUOTE_CHARS),
            confidence=guarded.confidence,
            reason=guarded.reason,
            detail=cap(guarded.detail, MAX_DETAIL_CHARS),
            judge_label=guarded.judge_label,
            judge_quote=cap(guarded.judge_quote, MAX_QUOTE_CHARS),
            usage=reply.usage,
            confirmation=confirmation,
        ).model_copy(update={k: v for k, v in _reply_notes(reply).items() if k in _VOTE_NOTES})


# The notes of a reply a panel member's vote keeps (a vote has no review of its own).
_VOTE_NOTES = ("confidence", "confidence_raw", "judge_fallback")


def _reply_notes(reply: JudgeReply) -> dict[str, object]:
    """What a reply says beside its verdict: a confidence on another scale (the number
    kept as said, the confidence unknown, the verdict sent to review) and how its
    server was asked again (a feature it refused)."""
    notes: dict[str, object] = {}
    if reply.fallback is not None:
        notes["judge_fallback"] = reply.fallback
    if reply.confidence_raw is not None:
        notes |= {
            "confidence": None,
            "confidence_raw": reply.confidence_raw,
            "judge_confidence": None,
            "review": True,
        }
    return notes
