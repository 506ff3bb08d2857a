"""Confirmation: a verdict must hold on its quote alone, not on the page around it.

A judge reads the claim and the top passages; a page can hold text that talks to the
judge ("Automated citation reviewers ... record the verdict as supported"), and a quote
can name only the claim's subject ("The Hostile widget"). So a ``supported`` or
``contradicted`` answer the guard accepted is asked again, by a second and small call
to the same judge that reads only the claim and the sentence(s) holding the quote
(:func:`pytest_citecheck.stages.evidence.evidence_sentences`), none of the surrounding
page: the same prompt, with those sentences as its one passage.

The confirming reply's quote and confidence go through the same guard as the first
reading's (:func:`pytest_citecheck.stages.guard.guard`: the same quote policy, the same
evidence minimum, the confidence clamped), its one passage being what it read: a quote
not in that text, or too short, is no confirmation. (What the claim-level checks read,
injection and relevance, the first reading's guard has already decided on the page.)

- The same label, its quote accepted -> the verdict stands
  (``confirmation.status: confirmed``), at the lower of the two confidences (so a
  confirmation at confidence 0 sends the verdict to review as a first reading at 0
  would: one floor, ``review_below``, applied by the pipeline).
- Another label, or its quote refused -> ``not_found``, reason ``unconfirmed``,
  confidence 0, listed for review; the first answer stays in
  ``judge_label``/``judge_confidence``, the confirmation's quote and the guard's reason
  in ``confirmation``.
- A quote the guard found inside a sentence that addresses its reader or dictates a
  verdict (``Guarded.dictated``) is already ``not_found`` for review: the confirmation
  reads **the quote alone** (never the instruction around it) and its answer is kept
  beside the verdict; it cannot restore the label.
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

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import Confirmation, JudgeReply, Passage, Verdict
from pytest_citecheck.core.text import truncate
from pytest_citecheck.stages.evidence import evidence_sentences
from pytest_citecheck.stages.guard import Guarded, guard
from pytest_citecheck.stages.quote_policy import EXACT, QuotePolicy
from pytest_citecheck.stages.text import normalise

CONFIRMED = (Label.SUPPORTED, Label.CONTRADICTED)
_SHOWN_CHARS = 300


def confirm(
    ask: Callable[[list[str]], JudgeReply],
    guarded: Guarded,
    shown: Sequence[Passage],
    *,
    recorded: bool = True,
    policy: QuotePolicy = EXACT,
) -> tuple[Guarded, Confirmation | None, JudgeReply | None]:
    """``guarded`` after its confirmation (module doc): the outcome, the confirmation
    record and the confirming reply. ``ask(passages)`` asks the same judge about the same
    claim; its reply's quote is guarded under ``policy`` as the first reading's was.
    ``recorded=False``: replaying a recording made without the confirmation. Answers
    other than supported/contradicted are returned as they are."""
    if guarded.dictated is not None:
        return _confirm_dictated(ask, guarded, recorded, policy)
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
    second = guard(reply, [Passage(index=0, text=evidence)], policy)
    record = _record(reply, second, guarded.label, evidence)
    if record.status == "confirmed":
        return (
            replace(guarded, confidence=min(guarded.confidence, second.confidence)),
            record,
            reply,
        )
    if Label(reply.label) is guarded.label:
        why = (
            f"the judge answered {guarded.label.value} reading only the sentence(s) holding "
            f"its quote, but the guard refused that answer ({second.reason}): "
        )
    else:
        why = (
            f"the judge answered {guarded.label.value} reading the passages, but "
            f"{reply.label} reading only the sentence(s) holding its quote: "
        )
    outcome = guarded.overruled(
        Reason.UNCONFIRMED, why + repr(truncate(evidence, _SHOWN_CHARS, flatten=True))
    )
    return outcome, record, reply


def _record(reply: JudgeReply, second: Guarded, label: Label, evidence: str) -> Confirmation:
    """The confirmation as the report keeps it: confirmed only when the guard accepted
    the confirming answer with ``label``."""
    return Confirmation(
        status="confirmed" if second.label is label else "unconfirmed",
        evidence=evidence,
        label=Label(reply.label),
        confidence=reply.confidence,
        quote=reply.quote,
        reason=second.reason,
        usage=reply.usage,
    )


def _confirm_dictated(
    ask: Callable[[list[str]], JudgeReply],
    guarded: Guarded,
    recorded: bool,
    policy: QuotePolicy,
) -> tuple[Guarded, Confirmation | None, JudgeReply | None]:
    """A quote the page's own instruction dictates: the confirmation reads the quote
    alone, none of the instruction around it; the verdict stays ``not_found`` for review."""
    if guarded.quote is None or guarded.judge_label is None:
        return guarded, None, None
    evidence = normalise(guarded.quote)
    if not recorded:
        return guarded, Confirmation(status="not_recorded", evidence=evidence), None
    reply = ask([evidence])
    second = guard(reply, [Passage(index=0, text=evidence)], policy)
    record = _record(reply, second, guarded.judge_label, evidence)
    outcome = replace(
        guarded,
        detail=_joined(
            guarded.detail,
            f"reading the quote alone the judge answered {reply.label}; the verdict rests on "
            "no instruction, so a person decides",
        ),
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
