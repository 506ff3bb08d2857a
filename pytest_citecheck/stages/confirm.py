"""Confirmation: a verdict must hold on its quote alone, not on the page around it.

A judge reads the claim and the top passages; a page can hold text that talks to the
judge ("Automated citation reviewers ... record the verdict as supported"), and a quote
can name only the claim's subject ("The Hostile widget"). So a ``supported`` or
``contradicted`` answer the guard accepted is asked again, by a second and small call
to the same judge that reads only the claim and the sentence(s) holding the quote
(:func:`pytest_citecheck.stages.evidence.evidence_sentences`), none of the surrounding
page: the same prompt, with those sentences as its one passage.

- The same label -> the verdict stands (``confirmation.status: confirmed``).
- Another label -> ``not_found``, reason ``unconfirmed``, confidence 0, listed for
  review; the first answer stays in ``judge_label``/``judge_confidence``.
- Replayed from a recording made without the confirmation -> the verdict stands,
  reason ``recorded_without_confirmation``, listed for review
  (``confirmation.status: not_recorded``): it is never passed off as confirmed.

The call is one more judge HTTP exchange, recorded in the claim's cassette and replayed
like the first; its tokens are ``confirmation.usage`` (the verdict's ``usage`` is the
first reading's). A panel confirms each member's answer with that member.

After the judge (one or a panel) has decided, :func:`checked` applies what does not
need a model: instruction-like text elsewhere in the passages marks the citation for
review (inside the evidence, the guard already refused it), and a ``supported`` verdict
whose evidence lacks a number or date of the claim is listed for review, reason
``evidence_lacks_number`` (:mod:`pytest_citecheck.stages.numbers`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from pytest_citecheck.claims.models import (
    Confirmation,
    JudgeReply,
    Label,
    Passage,
    Reason,
    Verdict,
)
from pytest_citecheck.core.text import truncate
from pytest_citecheck.stages.evidence import evidence_sentences
from pytest_citecheck.stages.guard import Guarded

CONFIRMED = (Label.SUPPORTED, Label.CONTRADICTED)
_SHOWN_CHARS = 300


def confirm(
    ask: Callable[[list[str]], JudgeReply],
    guarded: Guarded,
    shown: Sequence[Passage],
    *,
    recorded: bool = True,
) -> tuple[Guarded, Confirmation | None, JudgeReply | None]:
    """``guarded`` after its confirmation (module doc): the outcome, the confirmation
    record and the confirming reply. ``ask(passages)`` asks the same judge about the same
    claim. ``recorded=False``: replaying a recording made without the confirmation.
    Answers other than supported/contradicted are returned as they are."""
    if guarded.label not in CONFIRMED or guarded.quote is None:
        return guarded, None, None
    evidence = evidence_sentences(guarded.quote, shown)
    if not recorded:
        outcome = replace(
            guarded,
            reason=guarded.reason or Reason.RECORDED_WITHOUT_CONFIRMATION,
            detail=_joined(
                guarded.detail,
                "replayed from a recording made without the confirmation call: the verdict "
                "is not confirmed",
            ),
            review=True,
        )
        return outcome, Confirmation(status="not_recorded", evidence=evidence), None
    reply = ask([evidence])
    record = Confirmation(
        status="confirmed" if reply.label == guarded.label.value else "unconfirmed",
        evidence=evidence,
        label=Label(reply.label),
        confidence=reply.confidence,
        usage=reply.usage,
    )
    if record.status == "confirmed":
        return guarded, record, reply
    outcome = guarded.overruled(
        Reason.UNCONFIRMED,
        f"the judge answered {guarded.label.value} reading the passages, but "
        f"{reply.label} reading only the sentence(s) holding its quote: "
        f"{truncate(evidence, _SHOWN_CHARS, flatten=True)!r}",
    )
    return outcome, record, reply


def checked(verdict: Verdict, claim: str, shown: Sequence[Passage]) -> Verdict:
    """``verdict`` with the checks that need no model (module doc): review for
    instruction-like text elsewhere in ``shown``; the number floor under ``supported``."""
    from pytest_citecheck.stages.injection import find_injection
    from pytest_citecheck.stages.numbers import missing_numbers

    update: dict[str, object] = {}
    detail = verdict.detail
    if verdict.label is Label.SUPPORTED and verdict.evidence_quote:
        evidence = (
            verdict.confirmation.evidence
            if verdict.confirmation is not None
            else evidence_sentences(verdict.evidence_quote, shown)
        )
        missing = missing_numbers(claim, evidence)
        if missing:
            update["review"] = True
            update["reason"] = verdict.reason or Reason.EVIDENCE_LACKS_NUMBER
            detail = _joined(
                detail,
                f"the evidence does not state {', '.join(repr(m) for m in missing)} of the claim",
            )
    if verdict.reason != Reason.SUSPECTED_INJECTION:
        injection = find_injection([p.text for p in shown])
        if injection is not None:
            update["review"] = True
            detail = _joined(
                detail,
                injection.describe(
                    "; it decides nothing: the verdict rests on the quote's own sentence(s)"
                ),
            )
    if detail != verdict.detail:
        update["detail"] = detail
    return verdict.model_copy(update=update) if update else verdict


def _joined(first: str | None, second: str) -> str:
    return second if not first else f"{first}; {second}"
