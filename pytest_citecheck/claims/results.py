"""What verifying a claim produces: the fetch, the passages shown, the judge's reply, the
guard's verdict and the claim's result.

Plain data (pydantic models), so a result crosses process boundaries (pytest-xdist workers,
the batch CLI, the service) as JSON without loss.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import AnswerOutline
from pytest_citecheck.core.providers import TokenKind, token_kind


class Fetch(BaseModel):
    """One billed (or attempted) Crawling API call made for a citation."""

    # Which token kind was used: "normal" or "javascript" (never the value); "direct" for a
    # PDF downloaded from its origin (pdf_fetch = direct: no token, no credits).
    token: str
    readability: bool
    status_code: int
    original_status: int | None = None
    cb_status: int | None = None
    final_url: str | None = None
    rid: str | None = None
    non_whitespace_chars: int = 0
    credits: float = 0.0


def page_only_when_set(data: Any, page: int | None) -> Any:
    """A serialised model without its ``page`` key when it has no page (a web page's
    passage or verdict is written as it was before PDF pages were told apart)."""
    if isinstance(data, dict) and page is None:
        data.pop("page", None)
    return data


class Passage(BaseModel):
    """A block of page text shown to the judge, with its retrieval score."""

    index: int
    text: str
    score: float | None = None
    # The 1-based page of a PDF the passage is on (None: a web page or a text document).
    page: int | None = None

    @model_serializer(mode="wrap")
    def _page_only_when_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A web page's passage serialises as it always did (recordings compare them).
        return page_only_when_set(handler(self), self.page)


class Usage(BaseModel):
    """Tokens one judge call cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    # Answered through the provider's batch API (billed at its price); shown only when so.
    batch: bool = False
    # Tries the provider received whole but whose answer never came (the connection
    # failed after the request was written, and the retry sent it again): billed,
    # unanswered. Each is counted in the tokens above as the answered try's tokens
    # (the same request); shown only when there is one.
    unanswered: int = 0

    @model_serializer(mode="wrap")
    def _batch_only_when_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A synchronous call's usage serialises as it always did: two token counts.
        data = handler(self)
        if isinstance(data, dict):
            if not self.batch:
                data.pop("batch", None)
            if not self.unanswered:
                data.pop("unanswered", None)
        return data

    def with_unanswered(self, tries: int) -> Usage:
        """This usage with ``tries`` billed, unanswered tries of the same request added
        (each as many tokens as the answered one)."""
        if tries <= 0:
            return self
        return self.model_copy(
            update={
                "input_tokens": self.input_tokens * (1 + tries),
                "output_tokens": self.output_tokens * (1 + tries),
                "unanswered": self.unanswered + tries,
            }
        )


class JudgeReply(BaseModel):
    """What a judge answered, already parsed and schema-checked (not yet guarded).

    Plain data, here rather than in ``judges``, so the guard and the documents
    module read it without importing an HTTP client or any provider.
    """

    label: Literal["supported", "contradicted", "not_found"]
    quote: str | None
    # In [0, 1]. A judge that graded on another scale (10, 2.0, 85) gets 0 here and its
    # number in ``confidence_raw``: the verdict then reports the confidence as unknown.
    confidence: float = Field(ge=0.0, le=1.0)
    usage: Usage | None = None
    confidence_raw: float | None = None
    # What the judge's server refused and how the call was asked again (a feature the
    # server does not take), for the run's summary; None: asked once.
    fallback: str | None = None


class JointQuote(BaseModel):
    """A quote the joint judgment gave for one source: ``source`` is the source's number
    in the joint prompt (1, 2, ...), ``quote`` a span of that source's passages."""

    source: int
    quote: str


class JointReply(BaseModel):
    """What a judge answered to the joint judgment of a claim's sources
    (:mod:`pytest_citecheck.stages.judges.joint`), parsed and schema-checked, not yet
    guarded: a label and one quote per source it used."""

    label: Literal["supported", "contradicted", "not_found"]
    quotes: list[JointQuote]
    confidence: float = Field(ge=0.0, le=1.0)
    usage: Usage | None = None
    confidence_raw: float | None = None
    fallback: str | None = None


class Confirmation(BaseModel):
    """The second judge call that checked a ``supported``/``contradicted`` answer on the
    sentence(s) holding its quote alone (:mod:`pytest_citecheck.stages.confirm`)."""

    # confirmed: the same label; unconfirmed: another one; not_recorded: replayed from a
    # recording made without the confirmation, so nothing was asked.
    status: Literal["confirmed", "unconfirmed", "not_recorded"]
    # The only text the call read: the sentence(s) holding the quote.
    evidence: str
    # What the call answered (None: not asked): its label, confidence and quote, and
    # the guard's reason when it refused that answer (the quote not in ``evidence``,
    # too short...), as the first reading is guarded.
    label: Label | None = None
    confidence: float | None = None
    quote: str | None = None
    reason: str | None = None
    usage: Usage | None = None


class JointSource(BaseModel):
    """One source the joint judgment read: the quote the judge gave for it (None: it
    used none) and what the guard made of that quote on this source's own passages."""

    url: str  # the citation target, as its verdict has it
    quote: str | None = None
    # The guard accepted the quote on this source's passages (stages/joint.py).
    verified: bool = False
    # Why the guard refused the quote (evidence_quote_not_in_source, ...).
    reason: str | None = None


class JointConfirmation(BaseModel):
    """The second call that checked a joint ``supported`` on the sentence(s) holding each
    verified quote alone (one passage per source), as :class:`Confirmation` does for
    one citation."""

    status: Literal["confirmed", "unconfirmed", "not_recorded"]
    # What the call read, one entry per source (the sentence(s) holding its quote).
    evidence: list[str]
    label: Label | None = None
    confidence: float | None = None
    # How many sources the confirming answer's quotes were verified on.
    verified: int = 0
    usage: Usage | None = None


class JointJudgment(BaseModel):
    """The joint judgment of a claim that cites two or more sources none of which
    supports it alone (:mod:`pytest_citecheck.engine.joint`): one more judge call that
    read the top passages of all of them."""

    # supported: quotes verified on two or more sources (and confirmed);
    # not_supported: the judge's answer, or the guard, gave less; unconfirmed: the
    # confirmation did not hold; not_recorded: replayed from a recording made without
    # the joint judgment, so nothing was asked (the single-source verdicts stand).
    status: Literal["supported", "not_supported", "unconfirmed", "not_recorded"]
    judge: str | None = None
    # What the judge answered (None: not asked).
    label: Label | None = None
    confidence: float | None = None
    # Every source read, in citation order.
    sources: list[JointSource] = Field(default_factory=list)
    # Why it is not support (joint_too_few_sources, ...); None when supported.
    reason: str | None = None
    detail: str | None = None
    usage: Usage | None = None
    confirmation: JointConfirmation | None = None

    @property
    def claim_reason(self) -> str | None:
        """The claim's reason when this judgment decided it: supported_jointly."""
        return Reason.SUPPORTED_JOINTLY if self.status == "supported" else None

    def usages(self) -> list[Usage]:
        """The tokens of its calls: the joint reading and its confirmation."""
        found = [self.usage, self.confirmation.usage if self.confirmation else None]
        return [u for u in found if u is not None]

    @property
    def calls(self) -> int:
        """Judge calls it made (0: replayed from a recording made without it)."""
        asked = self.label is not None
        confirmed = self.confirmation is not None and self.confirmation.status != "not_recorded"
        return int(asked) + int(confirmed)


class JointPart(BaseModel):
    """A citation's part in the joint judgment that supported its claim: the label it
    had alone is kept beside the ``supported`` it carries now."""

    alone: Label
    alone_reason: str | None = None
    alone_quote: str | None = None
    # The other sources whose verified quotes completed the support.
    together_with: list[str] = Field(default_factory=list)


class SnapshotVerdict(BaseModel):
    """A rotted citation verified against its Wayback snapshot (citecheck_wayback_verify):
    what the page said when archived, labelled as such and never counted with the live
    verdicts (precision, rates, the gate). Its spend is the citation's: the crawl's
    credits are in the verdict's ``credits``, the judge's tokens in ``usage`` here."""

    url: str  # the snapshot's address
    label: Label
    evidence_quote: str | None = None
    confidence: float | None = None
    reason: str | None = None
    detail: str | None = None
    judge: str | None = None
    usage: Usage | None = None
    # The confirmation's tokens (a supported/contradicted answer is confirmed, as live).
    confirmation_usage: Usage | None = None


class Archive(BaseModel):
    """What the Wayback Machine's availability API says of an unreachable citation
    (:mod:`pytest_citecheck.stages.wayback`): ``never_archived`` (no snapshot: the URL
    likely never existed, an invented link), ``rotted`` (archived, gone now: the
    snapshot's link and time), or ``unknown`` (the lookup failed; ``detail`` says why)."""

    status: Literal["never_archived", "rotted", "unknown"]
    snapshot_url: str | None = None
    # The snapshot's time, ISO 8601 (UTC), as the archive's timestamp gives it.
    snapshot_time: str | None = None
    detail: str | None = None
    # The snapshot verified (citecheck_wayback_verify; None: not asked).
    verdict: SnapshotVerdict | None = None


class Screenshot(BaseModel):
    """A picture of the cited page (citecheck_screenshots), taken for a verdict a person
    must look at: ``taken`` (``file``, named by the picture's SHA-256, is in the claim
    file's ``shots/`` folder beside its cassettes) or ``missing`` (``detail`` says why;
    never the verdict's failure). ``credits``: what the Crawling API billed for it."""

    status: Literal["taken", "missing"]
    sha256: str | None = None
    # The stored picture: its path as this run found it (beside the cassettes).
    file: str | None = None
    media_type: str | None = None
    detail: str | None = None
    credits: float = 0.0


class PanelVote(BaseModel):
    """What one member of a judge panel answered for a citation, after the guard."""

    judge: str
    label: Label  # supported, contradicted, not_found, or error (the member failed)
    evidence_quote: str | None = None
    confidence: float | None = None
    reason: str | None = None
    detail: str | None = None
    # Set when the guard overruled this member (its own answer).
    judge_label: Label | None = None
    judge_quote: str | None = None
    usage: Usage | None = None
    # The member's confidence on another scale than [0, 1] (``confidence`` is then None).
    confidence_raw: float | None = None
    # How the member's server was asked again (JudgeReply.fallback).
    judge_fallback: str | None = None
    # The member's own confirmation of a supported/contradicted answer.
    confirmation: Confirmation | None = None


class Verdict(BaseModel):
    """The outcome for one citation (field names as in the service's ``/verify`` reply)."""

    url: str  # the citation target: URL or document path as written
    label: Label
    evidence_quote: str | None = None
    # Fuzzy quote matching (citecheck_quote_match = fuzzy): evidence_quote is then
    # the page's own span, judge_quote what the judge wrote, with their similarity.
    judge_quote: str | None = None
    quote_similarity: float | None = None
    confidence: float | None = None
    final_url: str | None = None
    original_status: int | None = None
    rid: str | None = None
    reason: str | None = None
    # A sentence for humans (error text, what the judge said); never holds a secret.
    detail: str | None = None
    # Below the confidence gate: a human should look at it.
    review: bool = False
    section: str | None = None
    # The 1-based page of a PDF the evidence is on (reports link ``URL#page=N``).
    page: int | None = None
    fetches: list[Fetch] = Field(default_factory=list)
    credits: float = 0.0
    passages: list[Passage] = Field(default_factory=list)
    judge: str | None = None
    usage: Usage | None = None
    # Set when the guard overruled the judge (suspected_injection, quote_not_about_claim,
    # a refused quote): what the judge itself answered. A quote the guard refused is
    # always in evidence_quote (the reason says why it is no evidence); judge_quote is
    # only the judge's own wording of a quote fuzzy matching replaced by the page's span.
    judge_label: Label | None = None
    judge_confidence: float | None = None
    # The judge's confidence when it was not in [0, 1] (10, 2.0, 85): kept as said,
    # read as unknown (``confidence`` None) and sent to review.
    confidence_raw: float | None = None
    # How the judge's server was asked again, without a feature it refused
    # (JudgeReply.fallback); the summary shows it once per judge.
    judge_fallback: str | None = None
    # A judge panel's members, in panel order (None: one judge). ``confidence`` is
    # then the share of members that voted ``label``.
    panel: list[PanelVote] | None = None
    # The citation's quote was the provider's and the page does not have it (the
    # page changed, renders differently, or served something else): the judge read
    # retrieval's passages. Never a label of its own and never a gate failure.
    provider_quote_not_on_page: bool = False
    # The citation is a conversation's and no tool result of it returned the URL
    # (``Citation.retrieved`` False): marked for review, found without a request; the
    # label is the live page's. A gate failure only with ``fail_not_retrieved``.
    url_not_retrieved: bool = False
    # The confirmation of a supported/contradicted answer (one judge; a panel's are
    # its members'). ``usage`` above is the first reading's; the confirmation's is here.
    confirmation: Confirmation | None = None
    # Set when the claim is supported jointly and this citation carried a verified quote
    # of that joint judgment (reason supported_jointly): what it was alone.
    joint: JointPart | None = None

    def stored_with(self) -> TokenKind | None:
        """The token kind whose crawl stored the page under ``rid`` (the fetch answered
        with that rid), which the Storage API read-back asks first: storage may be kept
        per token. None when no fetch names the rid."""
        stored = [f for f in self.fetches if self.rid and f.rid == self.rid]
        return token_kind(stored[-1].token) if stored else None

    # An unreachable citation looked up in the Wayback Machine (citecheck_wayback):
    # invented (never archived) or rotted (archived, now gone).
    archive: Archive | None = None
    # The cited page as a picture (citecheck_screenshots; None: not taken or not asked).
    screenshot: Screenshot | None = None

    @model_serializer(mode="wrap")
    def _page_only_when_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A web page's verdict serialises as it always did.
        return page_only_when_set(handler(self), self.page)

    def confirmations(self) -> list[Confirmation]:
        """Every confirmation behind this verdict: its own, or its panel members'."""
        own = [self.confirmation] if self.confirmation is not None else []
        return own + [v.confirmation for v in self.panel or () if v.confirmation is not None]


class ClaimResult(BaseModel):
    """The outcome for one claim: its verdicts and the aggregated label."""

    id: str
    claim: str
    label: Label
    verdicts: list[Verdict]
    expect: Label | None = None
    file: str | None = None
    # Why the claim has its label when no single citation decides it: supported_jointly.
    reason: str | None = None
    # The joint judgment of its sources (None: not made, as for a claim one source supports).
    joint: JointJudgment | None = None
    # Every exchange came from its recording (nothing was billed in this run): how the
    # summary tells this run's spend from the recordings'. Not part of the result's
    # JSON (a replay reports what the recording did); an xdist worker sends it along.
    replayed: bool = Field(default=False, exclude=True, repr=False)
    # The imported answer the claim was made from; reports show it once, as an answer
    # (an xdist worker sends it along: ``dump_with_answer``).
    answer: AnswerOutline | None = Field(default=None, exclude=True, repr=False)

    def dump_with_answer(self) -> dict[str, Any]:
        """The JSON of this result with its answer, for another process."""
        data = self.model_dump(mode="json")
        if self.answer is not None:
            data["answer"] = self.answer.model_dump(mode="json")
        if self.replayed:
            data["replayed"] = True
        return data

    @property
    def labels(self) -> list[Label]:
        return [v.label for v in self.verdicts]
