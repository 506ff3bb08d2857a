"""The guard: a verdict is believed only if its quote is really in what the judge read.

The judge interprets; it is never the source of truth. A
``supported`` or ``contradicted`` verdict stands only when its quote is a real
span (:func:`too_short`) of the passages the judge was shown: in ``exact`` mode
(the default) a substring after both sides are normalised the same way
(:func:`normalise`); in the opt-in ``fuzzy`` mode a lightly edited quote that
aligns with a span (:mod:`pytest_citecheck.stages.fuzzy`), the span then being what
the verdict reports. A quote a citation brings with it (a claim file's
``quote:``, a provider's ``cited_text``) is looked up in a whole source with
:class:`QuoteIndex`: the sections of a document, the passages of a page.

Given the claim, the guard also refuses what a quote on the page cannot prove
(both checks deterministic, so a replay decides as the recording did):

- a ``supported``/``contradicted`` quote that is itself instruction-like text aimed
  at a grader, or sits in a sentence that is (:mod:`pytest_citecheck.stages.injection`),
  is never evidence: ``not_found``, reason ``suspected_injection``, for review
  (the same text elsewhere in the passages only marks the citation for review, and
  the confirmation decides: :mod:`pytest_citecheck.stages.confirm`);
- a ``supported``/``contradicted`` quote whose sentence, the quote left out, addresses
  its reader or dictates a verdict in any wording
  (:func:`~pytest_citecheck.stages.injection.find_dictation`) is the page's own
  instruction, never evidence: ``not_found``, reason ``suspected_injection``, for
  review, the instruction named (the confirmation reads the quote alone);
- a ``supported``/``contradicted`` quote that, read in its passage, is not about
  the claim (:mod:`pytest_citecheck.stages.relevance`) is ``not_found``, reason
  ``quote_not_about_claim``, for review.

The judge's own label, quote and confidence are then kept beside the verdict.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import JudgeReply, Passage

# Re-exported: the guard's callers normalise text and build the policy from here too.
from pytest_citecheck.stages.quote_policy import (
    EXACT,
    MIN_CONTENT_WORDS,
    MIN_QUOTE_CHARS,
    MIN_QUOTE_WORDS,
    QuotePolicy,
    thin_piece,
    too_short,
)
from pytest_citecheck.stages.text import normalise, remembered


@dataclass(frozen=True)
class Guarded:
    """A judge reply after the guard: what the verdict will say."""

    label: Label
    quote: str | None  # the verdict's evidence_quote
    confidence: float
    reason: str | None
    # Set only when a fuzzy match reports the page's span instead of the judge's text.
    judge_quote: str | None = None
    similarity: float | None = None
    # Why a near miss was refused (fuzzy mode), for humans.
    detail: str | None = None
    # A human must look at it whatever the confidence (injection, off-topic quote).
    review: bool = False
    # What the judge answered, kept when the guard overruled it: injection, relevance, or
    # a supported/contradicted whose quote was refused.
    judge_label: Label | None = None
    judge_confidence: float | None = None
    # The quote sits in a sentence that addresses its reader or dictates a verdict (the
    # instruction, described): the confirmation reads the quote alone, and the verdict
    # is not_found for review (stages/confirm.py).
    dictated: str | None = None

    def overruled(self, reason: str, detail: str) -> Guarded:
        """This supported/contradicted verdict turned ``not_found`` for ``reason`` and
        marked for review: its quote kept (with the judge's own text and the
        similarity), the judge's label and confidence kept beside it."""
        return Guarded(
            Label.NOT_FOUND,
            self.quote,
            0.0,
            reason,
            judge_quote=self.judge_quote,
            similarity=self.similarity,
            detail=detail,
            review=True,
            judge_label=self.label,
            judge_confidence=self.confidence,
        )

    def verdict_fields(self) -> dict[str, Any]:
        """The :class:`~pytest_citecheck.claims.results.Verdict` fields the guard decides."""
        fields: dict[str, Any] = {
            "label": self.label,
            "evidence_quote": self.quote,
            "confidence": self.confidence,
            "reason": self.reason,
            "judge_quote": self.judge_quote,
            "quote_similarity": self.similarity,
            "detail": self.detail,
        }
        if self.review:
            fields["review"] = True
        if self.judge_label is not None:
            fields["judge_label"] = self.judge_label
            fields["judge_confidence"] = self.judge_confidence
        return fields


def guard(
    reply: JudgeReply,
    shown: Sequence[Passage],
    policy: QuotePolicy = EXACT,
    claim: str | None = None,
) -> Guarded:
    """Accept ``reply`` only if its quote is a real span of ``shown``.

    With ``claim``, first the injection check and, after the quote checks, the
    relevance check of the module doc (:func:`guard_claim`).

    ``shown`` are the passages the judge read, each with ``index`` = its
    position in the page's passage list. A quote may run across passages only
    where they are adjacent in the page (consecutive indices): those are
    joined by one space, which is what the page had between them.

    - ``not_found`` without a quote -> ``not_found``, no reason;
    - a quote below the minimum (:func:`too_short`; in fuzzy mode, any piece
      of it between ellipses) -> ``not_found``, confidence 0, reason
      ``evidence_quote_too_short``;
    - ``supported``/``contradicted`` without a quote, or any quote not in
      ``shown`` -> ``not_found``, confidence 0, reason
      ``evidence_quote_not_in_source`` (the quote is kept for the report);
    - in fuzzy mode, a quote that aligns with a span of ``shown`` (see
      :mod:`pytest_citecheck.stages.fuzzy`) -> the label stands, the span is the
      evidence quote, the judge's text and the similarity are kept beside it;
    - otherwise the label and quote stand, confidence clamped to [0, 1].
    """
    if claim is None:
        return _guard_quote(reply, shown, policy)
    return guard_claim(claim, reply, shown, policy)


def guard_claim(
    claim: str, reply: JudgeReply, shown: Sequence[Passage], policy: QuotePolicy = EXACT
) -> Guarded:
    """:func:`guard` with the claim: the quote, then injection in its evidence, then
    relevance."""
    from pytest_citecheck.stages.relevance import about_claim

    judge_label, judge_confidence = Label(reply.label), _clamp(reply.confidence)
    guarded = _guard_quote(reply, shown, policy)
    if guarded.label not in (Label.SUPPORTED, Label.CONTRADICTED) or guarded.quote is None:
        return guarded
    injection = _injection_in_evidence(guarded.quote, shown)
    if injection is not None:
        return Guarded(
            Label.NOT_FOUND,
            reply.quote,  # refused, in the one field every refused quote is in
            0.0,
            Reason.SUSPECTED_INJECTION,
            detail=injection,
            review=True,
            judge_label=judge_label,
            judge_confidence=judge_confidence,
        )
    dictated = _dictated_by_its_sentence(guarded.quote, shown)
    if dictated is not None:
        return replace(guarded.overruled(Reason.SUSPECTED_INJECTION, dictated), dictated=dictated)
    passage = _holding_passage(guarded.quote, shown)
    if about_claim(claim, guarded.quote, passage):
        return guarded
    # The quote stood, so the judge's label and confidence are the guarded ones.
    return guarded.overruled(
        Reason.QUOTE_NOT_ABOUT_CLAIM,
        "the quote is on the page, but neither it nor the passage that holds it speaks of "
        "the claim",
    )


def _injection_in_evidence(quote: str, shown: Sequence[Passage]) -> str | None:
    """Why the quote cannot be evidence: it, or the sentence(s) holding it, is
    instruction-like text aimed at a grader (None: it is not)."""
    from pytest_citecheck.stages.evidence import evidence_sentences
    from pytest_citecheck.stages.injection import find_injection

    found = find_injection([evidence_sentences(quote, shown)])
    if found is None:
        return None
    return found.describe(
        "; instruction-like text is never evidence",
        where="the quote's sentence(s)",
    )


def _dictated_by_its_sentence(quote: str, shown: Sequence[Passage]) -> str | None:
    """Why the quote is what the page told the judge to quote: the sentence(s) holding
    it, the quote left out, address their reader or dictate a verdict (None: they do
    not)."""
    from pytest_citecheck.stages.evidence import evidence_sentences
    from pytest_citecheck.stages.injection import find_dictation

    found = find_dictation(evidence_sentences(quote, shown), quote)
    if found is None:
        return None
    return found.describe(
        "; a quote the page's own instruction dictates is never evidence",
        where="the sentence holding the quote",
    )


def _holding_passage(quote: str, shown: Sequence[Passage]) -> str:
    """The passage that holds ``quote``; for a quote across passages, their run."""
    for passage in shown:
        if quote_index((passage.text,)).find(quote):
            return passage.text
    for run in _runs(shown):
        if quote_index(tuple(run)).find(quote):
            return " ".join(run)
    return " ".join(p.text for p in shown)  # a fuzzy span: every passage it may be in


def _guard_quote(reply: JudgeReply, shown: Sequence[Passage], policy: QuotePolicy) -> Guarded:
    label = Label(reply.label)
    confidence = _clamp(reply.confidence)
    quote = reply.quote if reply.quote is not None and normalise(reply.quote) else None

    if quote is None:
        if label is Label.NOT_FOUND:
            return Guarded(Label.NOT_FOUND, None, confidence, None)
        return _refused(reply.quote, Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE, reply=reply)
    if too_short(quote):
        return _refused(quote, Reason.EVIDENCE_QUOTE_TOO_SHORT, reply=reply)
    if _verbatim(quote, shown):
        # Dots the page itself has ("Wait... what?") are text here, not an elision.
        return Guarded(label, quote, confidence, None)
    if _elides_to_nothing(quote):
        return _refused(quote, Reason.EVIDENCE_QUOTE_TOO_SHORT, reply=reply)
    if quote_in_passages(quote, shown):
        return Guarded(label, quote, confidence, None)
    if not policy.fuzzy:
        elided = elision_refusal(quote, shown)
        detail = elided.detail if elided is not None else None
        return _refused(quote, Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE, detail, reply)

    from pytest_citecheck.stages import fuzzy

    needle = normalise(quote)
    if thin_piece(fuzzy.split_ellipsis(needle)) is not None:
        return _refused(quote, Reason.EVIDENCE_QUOTE_TOO_SHORT, reply=reply)
    near_miss = None
    for found in fuzzy.closest(needle, _normalised_runs(shown)):
        if found.similarity < policy.similarity:
            break
        if found.change is None:
            return Guarded(
                label,
                found.span,
                confidence,
                None,
                judge_quote=quote,
                similarity=round(found.similarity, 4),
            )
        near_miss = near_miss or found
    detail = None
    if near_miss is not None:
        detail = (
            f"the closest span of the passages (similarity {near_miss.similarity:.2f}) "
            f"differs in {near_miss.change}: {near_miss.span!r}"
        )
    return _refused(quote, Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE, detail, reply)


def _verbatim(quote: str, shown: Sequence[Passage]) -> bool:
    """Whether ``quote``, normalised, is a substring of a run of ``shown`` as it is."""
    needle = normalise(quote)
    return any(needle in run for run in _normalised_runs(shown))


def _elides_to_nothing(quote: str) -> bool:
    """Whether an ellipsis leaves a piece of ``quote`` too short to be evidence."""
    from pytest_citecheck.stages.rendered import quote_pieces

    return thin_piece(quote_pieces(quote)) is not None


def _refused(
    quote: str | None, reason: str, detail: str | None = None, reply: JudgeReply | None = None
) -> Guarded:
    """``not_found`` with ``reason``; a refused ``supported``/``contradicted`` keeps what
    the judge answered (label and confidence; its quote is the evidence quote)."""
    overruled = reply is not None and Label(reply.label) is not Label.NOT_FOUND
    return Guarded(
        Label.NOT_FOUND,
        quote,
        0.0,
        reason,
        detail=detail,
        judge_label=Label(reply.label) if reply is not None and overruled else None,
        judge_confidence=_clamp(reply.confidence) if reply is not None and overruled else None,
    )


def quote_in_passages(quote: str, shown: Sequence[Passage]) -> bool:
    """Whether ``quote`` is in ``shown`` (:meth:`QuoteIndex.find`: as the page has it
    or as a reader sees it, an ellipsis skipping no negation or number), where only
    passages adjacent in the page may be read as one text."""
    if not normalise(quote):
        return False
    return any(quote_index(tuple(run)).find(quote) for run in _runs(shown))


class ElisionRefused(NamedTuple):
    """Why an elided quote is not read as in its source although the source has its
    pieces in order: ``skips`` is what an ellipsis leaves out (``"a negation"``, ``"a
    number"``), None for a piece too short to be evidence; ``detail`` says it for humans."""

    skips: str | None
    detail: str


def elision_refusal(quote: str, shown: Sequence[Passage]) -> ElisionRefused | None:
    """Why an elided ``quote`` is not read as in ``shown`` although its pieces are:
    :meth:`QuoteIndex.elision_refusal` on each run of adjacent passages."""
    for run in _runs(shown):
        why = quote_index(tuple(run)).elision_refusal(quote)
        if why is not None:
            return why
    return None


def _keeps_meaning(skipped: str) -> bool:
    """Whether the stretch an ellipsis skips may be left out: it holds no negation and
    no number (:func:`pytest_citecheck.stages.fuzzy.skipped_meaning`)."""
    from pytest_citecheck.stages.fuzzy import skipped_meaning

    return skipped_meaning(skipped) is None


def _runs(shown: Sequence[Passage]) -> list[list[str]]:
    """The text of each maximal run of consecutive passage indices."""
    runs: list[list[str]] = []
    previous: int | None = None
    for passage in sorted(shown, key=lambda p: p.index):
        if previous is not None and passage.index == previous + 1:
            runs[-1].append(passage.text)
        else:
            runs.append([passage.text])
        previous = passage.index
    return runs


def _normalised_runs(shown: Sequence[Passage]) -> list[str]:
    """Each run of :func:`_runs` normalised and joined by one space (fuzzy matching)."""
    return [
        " ".join(part for part in map(_normalised_passage, run) if part) for run in _runs(shown)
    ]


@remembered(maxsize=1024)
def _normalised_passage(text: str) -> str:
    """:func:`normalise` of a shown passage (remembered when passage-sized)."""
    return normalise(text)


def _clamp(confidence: float) -> float:
    if math.isnan(confidence):
        return 0.0
    return min(1.0, max(0.0, float(confidence)))


class QuoteIndex:
    """A source cut into parts (a document's sections, a page's passages), normalised
    and read as one text: which parts a quote lies in.

    The parts are joined by one space, which is exactly what normalising the whole
    text gives; a quote may run from one part into the next. A quote is looked for
    in the text as the source has it and, when it is not there, as a reader sees it
    (:mod:`pytest_citecheck.stages.rendered`: markdown rendered, entities decoded);
    an ellipsis in the quote splits it into pieces found in order, each a real span
    (:func:`thin_piece`), the text between them holding no negation and no number
    (:func:`pytest_citecheck.stages.fuzzy.skipped_meaning`). Dots the source itself
    has ("Wait... what?") are text: a quote the source has as it is is found so.
    """

    def __init__(self, parts: Sequence[str]) -> None:
        self.sources = list(parts)
        self.parts = [_normalised_passage(part) for part in parts]
        self._starts = _offsets(self.parts)
        self.text = " ".join(self.parts)
        self._reader: tuple[str, list[int]] | None = None

    def occurrences(self, needle: str) -> Iterator[tuple[int, int]]:
        """(first part, last part) of every occurrence of ``needle`` (normalised)."""
        if not needle:
            return
        start = self.text.find(needle)
        while start != -1:
            yield self._parts(self._starts, start, start + len(needle))
            start = self.text.find(needle, start + 1)

    def reader_text(self) -> tuple[str, list[int]]:
        """The parts as a reader sees them, joined by one space, and where each starts."""
        if self._reader is None:
            from pytest_citecheck.stages.rendered import render

            texts = [render(part).text for part in self.sources]
            self._reader = (" ".join(texts), _offsets(texts))
        return self._reader

    def find(self, quote: str, provider: bool = False) -> list[tuple[int, int]]:
        """(first part, last part) of every place ``quote`` is, as the source has it or
        else as a reader sees it; empty when it is in neither.

        ``provider``: a provider's quote, whose ellipses are where the provider cut or
        joined what it read (Anthropic's ``...``, a text fragment's ``start,end`` range):
        its pieces are found in order, none refused (a cut keeps its own rule)."""
        from pytest_citecheck.stages.rendered import find_all, quote_pieces, quote_text

        pieces = quote_pieces(quote)
        if not pieces:
            return []
        gap_ok = None if provider else _keeps_meaning
        if len(pieces) > 1 and not provider:
            # Dots the source itself has are text, not an elision.
            needle = quote_text(quote)
            verbatim = list(self.occurrences(needle))
            if verbatim:
                return verbatim
            text, starts = self.reader_text()
            verbatim = [self._parts(starts, at, at + len(needle)) for at in _all(text, needle)]
            if verbatim:
                return verbatim
            if thin_piece(pieces) is not None:
                return []
        spans = find_all(self.text, pieces, gap_ok)
        if spans:
            return [self._parts(self._starts, start, end) for start, end in spans]
        text, starts = self.reader_text()
        found = find_all(text, pieces, gap_ok)
        return [self._parts(starts, start, end) for start, end in found]

    def elision_refusal(self, quote: str) -> ElisionRefused | None:
        """Why an elided ``quote`` is not found although the source has its pieces in
        order: a piece too short to be evidence, or the text an ellipsis skips holds a
        negation or a number (the source's span named). None when that is not why (no
        ellipsis, found, or a piece the source lacks)."""
        from pytest_citecheck.core.text import truncate
        from pytest_citecheck.stages.fuzzy import skipped_meaning
        from pytest_citecheck.stages.rendered import find_all, quote_pieces

        pieces = quote_pieces(quote)
        if len(pieces) < 2 or self.find(quote):
            return None
        thin = thin_piece(pieces)
        if thin is not None:
            return ElisionRefused(
                None,
                f"a piece between the quote's ellipses ({thin!r}) is too short to be "
                f"evidence (fewer than {MIN_QUOTE_WORDS} words, {MIN_QUOTE_CHARS} characters "
                f"or {MIN_CONTENT_WORDS} words that are not stop words)",
            )
        for text in (self.text, self.reader_text()[0]):
            for start, end in find_all(text, pieces):
                for gap in _gaps(text, pieces, start):
                    kind = skipped_meaning(gap)
                    if kind is not None:
                        return ElisionRefused(
                            kind,
                            f"the quote's ellipsis skips {kind} ({gap.strip()!r}): the "
                            f"source says {truncate(text[start:end], 300)!r}",
                        )
        return None

    @staticmethod
    def _parts(starts: Sequence[int], start: int, end: int) -> tuple[int, int]:
        return (
            bisect.bisect_right(starts, start) - 1,
            bisect.bisect_right(starts, end - 1) - 1,
        )

    def locate(
        self, quote: str, policy: QuotePolicy = EXACT, provider: bool = False
    ) -> list[tuple[int, int]]:
        """Where ``quote`` is, as :meth:`find`; empty when it is not there.

        Under a fuzzy ``policy`` a lightly edited quote not found so is found where
        it aligns with a span at the policy's similarity without a change of
        meaning, as the guard accepts a judge's quote
        (:mod:`pytest_citecheck.stages.fuzzy`).
        """
        found = self.find(quote, provider)
        needle = normalise(quote)
        if found or not needle or not policy.fuzzy:
            return found
        from pytest_citecheck.stages import fuzzy

        if not provider and thin_piece(fuzzy.split_ellipsis(needle)) is not None:
            return []

        for alignment in fuzzy.closest(needle, [self.text]):
            if alignment.similarity >= policy.similarity and alignment.change is None:
                return list(self.occurrences(alignment.span))
        return []


@remembered(maxsize=256)
def quote_index(parts: tuple[str, ...]) -> QuoteIndex:
    """``QuoteIndex(parts)``, the same index again for the same passage-sized parts
    (what it finds depends only on them): the guard looks in the same shown passages
    for each claim that cites the same page."""
    return QuoteIndex(parts)


def _all(text: str, needle: str) -> Iterator[int]:
    """Where each occurrence of ``needle`` starts in ``text``."""
    at = text.find(needle) if needle else -1
    while at != -1:
        yield at
        at = text.find(needle, at + 1)


def _gaps(text: str, pieces: Sequence[str], start: int) -> list[str]:
    """The stretches of ``text`` between ``pieces`` found in order from ``start`` (as
    :func:`pytest_citecheck.stages.rendered.find_pieces` finds them)."""
    gaps: list[str] = []
    end = start + len(pieces[0])
    for piece in pieces[1:]:
        at = text.find(piece, end)
        gaps.append(text[end:at])
        end = at + len(piece)
    return gaps


def _offsets(parts: Sequence[str]) -> list[int]:
    """Where each part starts when the parts are joined by one space."""
    starts: list[int] = []
    offset = 0
    for part in parts:
        starts.append(offset)
        offset += len(part) + 1
    return starts
