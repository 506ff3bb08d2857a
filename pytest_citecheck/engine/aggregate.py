"""Fixed rules that turn citation labels into claim labels and session figures.

No model is involved here: the claim-level label, the precision figures and the
answer-level figures of imported answers (answer support, and ALCE's citation
recall and citation precision).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from statistics import fmean

from pydantic import BaseModel, Field

from pytest_citecheck.claims.labels import BAD_LABELS, Label, Reason
from pytest_citecheck.claims.models import AnswerOutline
from pytest_citecheck.claims.results import ClaimResult, Usage, Verdict
from pytest_citecheck.core.text import plural, ratio
from pytest_citecheck.engine.rates import Rates, rates


def claim_label(labels: Sequence[Label]) -> Label:
    """Any contradicted (or fabricated) -> contradicted; else any supported ->
    supported; else unreachable if every citation is; else not_found.

    An ``error`` citation makes the claim ``error`` unless a contradiction or a
    support was established anyway: a failed run must never read as
    ``not_found`` (or ``unreachable``) by omission.
    """
    if any(label in BAD_LABELS for label in labels):
        return Label.CONTRADICTED
    if Label.SUPPORTED in labels:
        return Label.SUPPORTED
    if Label.ERROR in labels:
        return Label.ERROR
    if labels and all(label is Label.UNREACHABLE for label in labels):
        return Label.UNREACHABLE
    return Label.NOT_FOUND


def deciding(label: Label, labels: Sequence[Label]) -> list[int]:
    """Which citations (indices into ``labels``) decided the claim label ``label``
    (:func:`claim_label`): the contradicted and fabricated ones for ``contradicted``,
    else those labelled ``label``."""
    wanted = BAD_LABELS if label is Label.CONTRADICTED else {label}
    return [i for i, citation in enumerate(labels) if citation in wanted]


def shown_label(label: Label, labels: Sequence[Label]) -> Label:
    """The claim label as a report's table shows it: ``fabricated`` when a made-up
    quote decided a contradicted claim and no citation contradicts it."""
    fabricated = Label.FABRICATED in labels and Label.CONTRADICTED not in labels
    return Label.FABRICATED if label is Label.CONTRADICTED and fabricated else label


class Totals(BaseModel):
    """Citation counts over a set of claims, and the precision figures."""

    claims: int = 0
    citations: int = 0
    by_label: dict[str, int] = {}
    review: int = 0
    credits: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    # Judge tries billed, unanswered (Usage.unanswered): counted in the tokens above.
    unanswered: int = 0
    # Citations a judge panel decided, and how many of them it decided unanimously.
    panel_citations: int = 0
    unanimous: int = 0
    # Citations whose provider quote the page did not have (judged on retrieval's
    # passages instead): a marker, not a label.
    provider_quote_not_on_page: int = 0
    # Conversation citations of URLs no tool result returned (Verdict.url_not_retrieved).
    url_not_retrieved: int = 0
    # The deep-research audit's three rates (engine/rates.py).
    rates: Rates = Field(default_factory=Rates)

    @property
    def agreement(self) -> float | None:
        """Share of the panel-judged citations where every member voted alike."""
        return self.unanimous / self.panel_citations if self.panel_citations else None

    @property
    def supported(self) -> int:
        return self.by_label.get(Label.SUPPORTED.value, 0)

    @property
    def reachable(self) -> int:
        return self.citations - self.by_label.get(Label.UNREACHABLE.value, 0)

    @property
    def citation_precision(self) -> float | None:
        """Supported citations over all citations (None when there are none)."""
        return self.supported / self.citations if self.citations else None

    @property
    def reachable_precision(self) -> float | None:
        """Supported over citations that are not unreachable (None when none is)."""
        return self.supported / self.reachable if self.reachable else None

    def count(self, label: Label) -> int:
        return self.by_label.get(label.value, 0)


def totals(results: Iterable[ClaimResult]) -> Totals:
    """Sum the verdicts of ``results``."""
    by_label: Counter[str] = Counter()
    t = Totals()
    for result in results:
        t.claims += 1
        for verdict in result.verdicts:
            t.citations += 1
            by_label[verdict.label.value] += 1
            t.rates.add(verdict)
            t.review += verdict.review
            t.provider_quote_not_on_page += verdict.provider_quote_not_on_page
            t.url_not_retrieved += verdict.url_not_retrieved
            t.credits += verdict.credits
            if verdict.usage is not None:
                t.input_tokens += verdict.usage.input_tokens
                t.output_tokens += verdict.usage.output_tokens
                t.unanswered += verdict.usage.unanswered
            for usage in snapshot_usages(verdict):
                t.input_tokens += usage.input_tokens
                t.output_tokens += usage.output_tokens
            if verdict.panel and len(verdict.panel) > 1:
                t.panel_citations += 1
                t.unanimous += len({vote.label for vote in verdict.panel}) == 1
    t.by_label = {label.value: by_label.get(label.value, 0) for label in Label}
    return t


def not_retrieved_line(count: int) -> str:
    """The summary line for conversation citations of URLs no tool result returned."""
    return (
        f"{Reason.URL_NOT_RETRIEVED} {count}: cited URL(s) that no tool result of the "
        "conversation returned (found without a request; still verified on the live page)"
    )


def snapshot_usages(verdict: Verdict) -> list[Usage]:
    """The judge tokens of a rotted citation's snapshot check (citecheck_wayback_verify):
    spent for this citation, so counted with it, though its label is not."""
    found = verdict.archive.verdict if verdict.archive is not None else None
    if found is None:
        return []
    return [u for u in (found.usage, found.confirmation_usage) if u is not None]


def provider_quote_line(count: int) -> str:
    """The summary line for citations whose provider quote the page did not have."""
    return (
        f"{Reason.PROVIDER_QUOTE_NOT_ON_PAGE} {count}: the provider's quote is not on the "
        "page fetched (changed, or served differently); judged on retrieval's passages, "
        "not fabricated"
    )


# -- answers ---------------------------------------------------------------------------------
#
# Two families of answer figures, side by side:
# - answer support: supported claims over the answer's claims (claim labels, so a claim
#   with one contradicting citation is not supported; uncited sentences are left out);
# - ALCE's citation recall and citation precision (Gao et al. 2023, princeton-nlp/ALCE
#   eval.py), which the field reports. Recall: sentences supported by their citations
#   over all sentences of the answer, an uncited sentence counting 0. Precision:
#   citations that support their sentence over all citations. ALCE asks an NLI model
#   whether the cited passages *together* entail the sentence, and counts a citation
#   that does not support it alone as precise when the others without it no longer
#   do. Here a sentence none of whose citations supports it alone gets the joint
#   judgment of its sources (engine/joint.py): supported together, each citation that
#   carried one of its verified quotes is ``supported`` (reason supported_jointly), the
#   others stay as they were. So "supported by its citations" is "a citation is
#   supported" (alone or jointly), and a precise citation is one that supports alone or
#   carried a quote of the joint support: the judge's choice of quotes stands in for
#   ALCE's "the others without it no longer entail" (docs/reports.md). Like eval.py,
#   the run's figure is the mean of the answers' figures.


class AnswerSentenceLabel(BaseModel):
    """One sentence of an answer with its claim's label (None: uncited, or not run)
    and each of its citations' labels (empty then)."""

    text: str
    claim_id: str | None
    label: Label | None
    citations: list[Label] = []

    @property
    def counted(self) -> bool:
        """Whether citation recall counts the sentence: uncited (it counts 0) or its
        claim ran; a claim deselected with ``-k`` leaves its sentence out."""
        return self.claim_id is None or self.label is not None

    @property
    def supported_by_citations(self) -> bool:
        """ALCE's "supported by its citations together": a citation is supported, on
        its own or as a part of the joint judgment of its sources."""
        return Label.SUPPORTED in self.citations

    @property
    def supporting(self) -> int:
        """ALCE's precise citations: those that support the sentence on their own or
        carried a verified quote of its joint support."""
        return self.citations.count(Label.SUPPORTED)


class AnswerFigures(BaseModel):
    """One imported answer: its sentences with their claims' labels, and its figures.

    ``claims`` counts the answer's claims verified in this run (a claim deselected
    with ``-k`` is not counted); ``supported`` those whose claim label is supported.
    """

    id: str
    format: str | None
    # Which answers are one (AnswerOutline.origin): the claim file or the test.
    origin: str
    sentences: list[AnswerSentenceLabel]
    claims: int
    supported: int
    # A turn of a conversation (AnswerOutline.conversation/turn); None for a response.
    conversation: str | None = None
    turn: int | None = None
    # The three rates over the answer's citations whose claims ran (engine/rates.py).
    rates: Rates = Field(default_factory=Rates)

    @property
    def cited(self) -> int:
        return sum(1 for s in self.sentences if s.claim_id is not None)

    @property
    def uncited(self) -> int:
        return len(self.sentences) - self.cited

    @property
    def support(self) -> float | None:
        """Supported claims over the answer's claims (None when none was verified)."""
        return self.supported / self.claims if self.claims else None

    @property
    def counted_sentences(self) -> int:
        """Sentences citation recall counts (every sentence unless its claim did not run)."""
        return sum(1 for s in self.sentences if s.counted)

    @property
    def sentences_supported(self) -> int:
        """Sentences at least one of whose citations is supported."""
        return sum(1 for s in self.sentences if s.supported_by_citations)

    @property
    def citations(self) -> int:
        """The citations of the answer's sentences whose claims ran."""
        return sum(len(s.citations) for s in self.sentences)

    @property
    def citations_supporting(self) -> int:
        return sum(s.supporting for s in self.sentences)

    @property
    def citation_recall(self) -> float | None:
        """ALCE citation recall: supported sentences over counted sentences."""
        n = self.counted_sentences
        return self.sentences_supported / n if n else None

    @property
    def citation_precision(self) -> float | None:
        """ALCE citation precision: supporting citations over all citations (None
        when none was judged)."""
        n = self.citations
        return self.citations_supporting / n if n else None


class AnswerTotals(BaseModel):
    """The run's imported answers together: answer support, uncited sentences, and
    ALCE's citation recall and precision (each the mean of the answers' figures)."""

    answers: int = 0
    sentences: int = 0
    uncited: int = 0
    claims: int = 0
    supported: int = 0
    # The answers' ALCE figures, one per answer that has one (for the means), and the
    # counts pooled over every answer.
    recalls: list[float] = []
    precisions: list[float] = []
    counted_sentences: int = 0
    sentences_supported: int = 0
    citations: int = 0
    citations_supporting: int = 0

    @property
    def support(self) -> float | None:
        """Supported claims over all claims of imported answers (None: no claim)."""
        return self.supported / self.claims if self.claims else None

    @property
    def citation_recall(self) -> float | None:
        """The mean of the answers' citation recall, as ALCE's eval.py averages it."""
        return fmean(self.recalls) if self.recalls else None

    @property
    def citation_precision(self) -> float | None:
        """The mean of the answers' citation precision, as ALCE's eval.py averages it."""
        return fmean(self.precisions) if self.precisions else None


def alce_line(
    recall: float | None, precision: float | None, answers: int, mark: Callable[[str], str] = str
) -> str:
    """``ALCE citation recall 0.5000, citation precision 0.9167 (mean over 6 answers)``;
    ``mark`` dresses the two figures (the markdown summary makes them bold)."""
    return (
        f"ALCE citation recall {mark(ratio(recall))}, citation precision "
        f"{mark(ratio(precision))} (mean over {plural(answers, 'answer')})"
    )


def answer_figures(results: Iterable[ClaimResult]) -> list[AnswerFigures]:
    """The answers ``results`` were made from, in the order their first claim comes."""
    outlines: dict[tuple[str, str], AnswerOutline] = {}
    ran: dict[tuple[str, str], dict[str, ClaimResult]] = {}
    for result in results:
        if result.answer is None:
            continue
        key = result.answer.key
        outlines.setdefault(key, result.answer)
        ran.setdefault(key, {})[result.id] = result
    return [figures(outline, ran[key]) for key, outline in outlines.items()]


def figures(outline: AnswerOutline, results: Mapping[str, ClaimResult]) -> AnswerFigures:
    """One answer's figures, from the results of its claims verified (by claim id)."""
    sentences = []
    for s in outline.sentences:
        result = results.get(s.claim_id) if s.claim_id is not None else None
        sentences.append(
            AnswerSentenceLabel(
                text=s.text,
                claim_id=s.claim_id,
                label=None if result is None else result.label,
                citations=[] if result is None else [v.label for v in result.verdicts],
            )
        )
    return AnswerFigures(
        id=outline.id,
        format=outline.format,
        origin=outline.origin,
        sentences=sentences,
        claims=len(results),
        supported=sum(1 for r in results.values() if r.label is Label.SUPPORTED),
        conversation=outline.conversation,
        turn=outline.turn,
        rates=rates(results.values()),
    )


def conversation_figures(answers: Iterable[AnswerFigures]) -> list[AnswerFigures]:
    """Each conversation's turns as one answer (its id the conversation's): their
    sentences in turn order, so answer support and ALCE's recall and precision are the
    conversation's, pooled over its turns. Answers that are no turn are left out."""
    turns: dict[tuple[str, str], list[AnswerFigures]] = {}
    for answer in answers:
        if answer.conversation is not None:
            turns.setdefault((answer.origin, answer.conversation), []).append(answer)
    out = []
    for (origin, conversation), members in turns.items():
        members.sort(key=lambda a: a.turn or 0)
        out.append(
            AnswerFigures(
                id=conversation,
                format=members[0].format,
                origin=origin,
                sentences=[s for a in members for s in a.sentences],
                claims=sum(a.claims for a in members),
                supported=sum(a.supported for a in members),
                conversation=conversation,
            )
        )
    return out


class AnswerResult(AnswerFigures):
    """What ``citecheck.verify_answer`` returns: the answer's figures and each claim's result."""

    results: list[ClaimResult]

    def result(self, claim_id: str) -> ClaimResult:
        """The result of the claim ``claim_id`` (a sentence's ``claim_id``)."""
        for result in self.results:
            if result.id == claim_id:
                return result
        raise KeyError(claim_id)


def answer_totals(answers: Iterable[AnswerFigures]) -> AnswerTotals:
    t = AnswerTotals()
    for answer in answers:
        t.answers += 1
        t.sentences += len(answer.sentences)
        t.uncited += answer.uncited
        t.claims += answer.claims
        t.supported += answer.supported
        if answer.citation_recall is not None:
            t.recalls.append(answer.citation_recall)
        if answer.citation_precision is not None:
            t.precisions.append(answer.citation_precision)
        t.counted_sentences += answer.counted_sentences
        t.sentences_supported += answer.sentences_supported
        t.citations += answer.citations
        t.citations_supporting += answer.citations_supporting
    return t


# What the review list is: verdicts a person should look at, each with why.
REVIEW_HEADING = "review (a person should look)"


def review_why(verdict: Verdict) -> str:
    """Why a verdict is marked for review: its reason (a blocked page, a signal in the
    page, a number the evidence lacks, an unconfirmed verdict...), else what is wrong
    with its confidence (low, a split panel, or on another scale than 0-1)."""
    if verdict.url_not_retrieved:
        why = Reason.URL_NOT_RETRIEVED
        return f"{verdict.reason}, {why}" if verdict.reason else why
    if verdict.reason:
        return str(verdict.reason)
    if verdict.confidence_raw is not None:
        return "confidence on another scale"
    if verdict.panel is not None:
        return "panel split"
    return "low confidence"
