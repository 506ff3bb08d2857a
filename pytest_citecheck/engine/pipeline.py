"""Verifying one claim's citations: the stages wired together (docs/architecture.md).

Usable without pytest; :mod:`pytest_citecheck.engine.core` builds a :class:`Verifier`
per claim from the stages it built once. Any fetcher's result goes through
:func:`pytest_citecheck.stages.fetch_rules.fetch_page` (the page rules, the page-size
cap). What a judge says is capped before it reaches a verdict, so a 5 MB
"quote" never reaches a report.

A citation that brings its own quote (a claim file's ``quote:``, a provider's
``cited_text``, a URL's ``#:~:text=`` fragment) is read where the quote is, on a page
as in a document, found as a reader sees the source (:mod:`pytest_citecheck.stages.rendered`):
a found one gives the judge the passage(s) or section holding it, not retrieval's
choice. One the source does not have depends on who wrote it (``Citation.quote_by``):
a quote the model or a person wrote is ``fabricated`` without asking the judge; a
provider's quote was extracted from what the provider read, so the model cannot have
made it up: the judge reads retrieval's passages as for a citation without a quote,
and the verdict is marked ``provider_quote_not_on_page``. A page that could not be
read keeps its own label: a dead page is not a made-up quote.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation, Claim, QuoteBy
from pytest_citecheck.claims.results import (
    ClaimResult,
    Confirmation,
    JointJudgment,
    JudgeReply,
    PanelVote,
    Passage,
    Usage,
    Verdict,
)
from pytest_citecheck.core.defaults import (
    DEFAULT_MAX_PAGE_BYTES,
    DEFAULT_PANEL_RULE,
    DEFAULT_REVIEW_BELOW,
    DEFAULT_TOP_K,
    DEFAULT_URL_POLICY,
)
from pytest_citecheck.core.errors import (
    ConfigurationError,
    CrawlDeferred,
    JudgeDeferred,
    ResponseTooLarge,
    StageFailed,
)
from pytest_citecheck.core.secrets import without_credentials
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.core.text import truncate
from pytest_citecheck.engine.aggregate import claim_label
from pytest_citecheck.stages.fetch_rules import Fetcher, FetchResult, fetch_page
from pytest_citecheck.stages.guard import ElisionRefused, Guarded, QuoteIndex, guard
from pytest_citecheck.stages.judges.base import Judge
from pytest_citecheck.stages.passages import split_passages
from pytest_citecheck.stages.quote_policy import EXACT, QuotePolicy, thin_piece, too_short
from pytest_citecheck.stages.rendered import quote_pieces
from pytest_citecheck.stages.retrieval import Ranker
from pytest_citecheck.stages.url_policy import check as check_url
from pytest_citecheck.stages.url_policy import landing_refusal, mask_landing

# Longest evidence quote and detail text a verdict keeps (the rest becomes "…").
MAX_QUOTE_CHARS = 2000
MAX_DETAIL_CHARS = 1000


def ranks_passages(citation: Citation) -> bool:
    """Whether verifying ``citation`` may rank passages: a web page, or a whole document
    (a document's quote or section is looked up, not ranked). Start-up checks use this
    to demand the ranker's extra only for claims that rank."""
    if citation.url:
        return True
    # A provider's quote the document lacks sends the judge to retrieval's passages.
    if citation.quote is not None:
        return citation.quote_by == "provider"
    return citation.section is None


def asks_judge(citation: Citation) -> bool:
    """Whether verifying ``citation`` may ask the judge. A document's quote that is
    not in the document is fabricated without one (:meth:`Verifier._verify_document`),
    unless the provider wrote it; so is a document that cannot be read (an error).
    Start-up checks use this to demand no judge key for claims that never reach the
    judge."""
    if citation.document_path is None or citation.quote is None:
        return True
    from pytest_citecheck.stages.documents import Document

    try:
        document = Document.load(citation.document_path)
    except ConfigurationError:
        return False
    return (
        citation.quote_by == "provider"
        or document.find_quote(citation.quote, near=citation.section) is not None
    )


# Failures of the run itself, not of a judge: they fail the citation, panel or not.
_NOT_A_VOTE = frozenset(
    {Reason.NO_RECORDING, Reason.STALE_RECORDING, Reason.CORRUPT_RECORDING, Reason.CONFIGURATION}
)


def cap(text: str | None, limit: int) -> str | None:
    """``text`` cut to ``limit`` characters, marked with an ellipsis when cut."""
    return None if text is None else truncate(text, limit)


# Maps an exception the pipeline did not expect to a reason; a recording adds a
# classifier that recognises "no recording for this request" (Recording.classify_error).
ErrorClassifier = Callable[[BaseException], "tuple[str, str] | None"]


@dataclass
class Verifier:
    """Verifies claims: fetch -> passages -> retrieval -> judge -> guard -> confirmation."""

    fetcher: Fetcher
    ranker: Ranker
    judge: Judge
    review_below: float = DEFAULT_REVIEW_BELOW
    top_k: int = DEFAULT_TOP_K
    classify_error: ErrorClassifier | None = None
    quote_policy: QuotePolicy = EXACT
    max_page_bytes: int | None = DEFAULT_MAX_PAGE_BYTES
    url_policy: str = DEFAULT_URL_POLICY
    # How messages name options (the front end's words).
    terms: Terms = NEUTRAL
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
    # Judge a claim's sources together when none supports it alone (engine/joint.py).
    joint: bool = True
    # False: replaying a recording made without the joint judgment.
    joint_recorded: bool = True

    def verify_claim(self, claim: Claim) -> ClaimResult:
        """Verify every citation of ``claim`` and aggregate the claim label."""
        verdicts: list[Verdict] = []
        # The same citation twice in one claim is verified once: a replay then
        # needs each HTTP exchange exactly once, like the recording made it.
        seen: dict[Citation, Verdict] = {}
        for citation in claim.citations:
            if citation not in seen:
                seen[citation] = self.verify_citation(claim.claim, citation)
            verdicts.append(seen[citation])
        verdicts, judgment = self._jointly(claim.claim, verdicts)
        return ClaimResult(
            id=claim.id,
            claim=claim.claim,
            label=claim_label([v.label for v in verdicts]),
            verdicts=verdicts,
            expect=claim.expect,
            answer=claim.answer,
            reason=Reason.SUPPORTED_JOINTLY
            if judgment is not None and judgment.status == "supported"
            else None,
            joint=judgment,
        )

    def _jointly(
        self, claim: str, verdicts: list[Verdict]
    ) -> tuple[list[Verdict], JointJudgment | None]:
        """The joint judgment of the claim's sources (engine/joint.py); a panel, or a
        judge without ``judge_jointly`` (a custom one), makes none."""
        if not self.joint or self.panel or not hasattr(self.judge, "judge_jointly"):
            return verdicts, None
        from pytest_citecheck.engine.joint import JointStep

        step = JointStep(
            judge=self.judge,  # type: ignore[arg-type]
            quote_policy=self.quote_policy,
            review_below=self.review_below,
            confirm=self.confirm,
            confirm_recorded=self.confirm_recorded,
            recorded=self.joint_recorded,
            classify_error=self.classify_error,
        )
        return step.apply(claim, verdicts)

    def verify_citation(self, claim: str, citation: Citation) -> Verdict:
        """Verify one citation; any failure becomes an ``error`` verdict."""
        try:
            if citation.url is not None:
                verdict = self._verify_url(claim, citation.url, *_url_quote(citation))
            else:
                verdict = self._verify_document(claim, citation)
        except ConfigurationError as exc:
            verdict = Verdict(
                url=citation.target,
                label=Label.ERROR,
                reason=Reason.CONFIGURATION,
                detail=str(exc),
            )
        except StageFailed as exc:
            verdict = Verdict(
                url=citation.target, label=Label.ERROR, reason=exc.reason, detail=exc.detail
            )
        except (JudgeDeferred, CrawlDeferred):
            # Not a verdict: the claim runs again once the batch API has answered (or
            # the Crawler has delivered the page).
            raise
        except Exception as exc:  # a failure must never count as success
            classified = self.classify_error(exc) if self.classify_error else None
            reason, detail = classified or (Reason.INTERNAL, f"{type(exc).__name__}: {exc}")
            verdict = Verdict(url=citation.target, label=Label.ERROR, reason=reason, detail=detail)
        if verdict.detail is not None and len(verdict.detail) > MAX_DETAIL_CHARS:
            verdict = verdict.model_copy(update={"detail": cap(verdict.detail, MAX_DETAIL_CHARS)})
        if citation.url is not None and "@" in citation.url:
            # Credentials in a cited URL never reach a report, the audit index or a terminal.
            verdict = verdict.model_copy(
                update={
                    "url": without_credentials(verdict.url),
                    "final_url": verdict.final_url and without_credentials(verdict.final_url),
                }
            )
        return self._gate_confidence(verdict)

    # -- URL citations -------------------------------------------------------

    def _verify_url(
        self,
        claim: str,
        url: str,
        quote: str | None = None,
        quote_by: QuoteBy = "user",
        fragment: bool = False,
    ) -> Verdict:
        """``fragment``: the quote is the URL's text fragment, whose ``start,end`` range
        marks the whole span between them (nothing is left out, so no gap is refused);
        written by a person or the model, each end must still be a real span."""
        refused = check_url(self.url_policy, url)
        if refused is not None:
            return Verdict(
                url=url,
                label=Label.NOT_FOUND,
                reason=Reason.URL_REFUSED,
                detail=f"not fetched: {refused} "
                f"({self.terms.setting('url_policy', self.url_policy)})",
            )
        fetched = fetch_page(self.fetcher, url, self.max_page_bytes, self.terms)
        landed = landing_refusal(
            self.url_policy, [fetched.final_url, *(f.final_url for f in fetched.fetches)]
        )
        if landed is not None:
            return self._landing_refused(url, fetched, landed)
        base = Verdict(
            url=url, label=Label.ERROR, review=fetched.review, **fetched.verdict_fields()
        )
        if fetched.text is None:
            return base.model_copy(
                update={
                    "label": fetched.label or Label.ERROR,
                    "reason": fetched.reason,
                    "detail": fetched.detail,
                }
            )
        texts = split_passages(fetched.text)
        if not texts:
            return base.model_copy(update={"label": Label.NOT_FOUND, "reason": Reason.EMPTY_PAGE})
        if quote is not None:
            whole_span = fragment and thin_piece(quote_pieces(quote)) is None
            holding = self._passages_holding(quote, texts, quote_by == "provider" or whole_span)
            if holding is None:
                if quote_by == "provider":
                    return self._provider_quote_missing(claim, texts, base)
                elided = QuoteIndex(texts).elision_refusal(quote)
                return _quote_missing(base, quote, Reason.QUOTE_NOT_IN_PAGE, "page", elided)
            if holding:
                return self._judge(claim, holding, base)
        return self._judge(claim, self._top_passages(claim, texts), base)

    def _landing_refused(self, url: str, fetched: FetchResult, why: str) -> Verdict:
        """The fetch ended where the URL policy does not go: nothing of the page is
        used, and the address it landed on is shown nowhere (the credits were spent)."""
        policy = self.url_policy
        return Verdict(
            url=url,
            label=Label.NOT_FOUND,
            reason=Reason.URL_REFUSED,
            detail=f"not used: {why} ({self.terms.setting('url_policy', policy)})",
            **{
                **fetched.verdict_fields(),
                "final_url": mask_landing(policy, fetched.final_url),
                "fetches": [
                    f.model_copy(update={"final_url": mask_landing(policy, f.final_url)})
                    for f in fetched.fetches
                ],
            },
        )

    def _passages_holding(
        self, quote: str, texts: list[str], provider: bool = False
    ) -> list[Passage] | None:
        """The passages holding ``quote`` (every occurrence, in page order, up to
        ``top_k`` passages beyond the first), None when the page does not have it.

        A quote too short to be evidence (:func:`~pytest_citecheck.stages.quote_policy.too_short`)
        must still be on the page, but says nothing about where to read: retrieval
        chooses then (an empty list).
        """
        found = QuoteIndex(texts).locate(quote, self.quote_policy, provider)
        if not found:
            return None
        if too_short(quote):
            return []
        chosen: list[int] = []
        for first, last in found:
            if chosen and len(chosen) + (last - first + 1) > self.top_k:
                break
            chosen += [i for i in range(first, last + 1) if i not in chosen]
        return [Passage(index=i, text=texts[i]) for i in sorted(chosen)]

    # -- document citations --------------------------------------------------

    def _verify_document(self, claim: str, citation: Citation) -> Verdict:
        from pytest_citecheck.stages.documents import Document

        path = citation.document_path
        if path is None:
            raise StageFailed(Reason.INTERNAL, f"document {citation.document!r} was not resolved")
        document = Document.load(path)
        base = Verdict(url=citation.target, label=Label.ERROR)
        if citation.quote is not None:
            provider = citation.quote_by == "provider"
            section = document.find_quote(citation.quote, near=citation.section, provider=provider)
            if section is None and provider:
                return self._provider_quote_missing(claim, split_passages(document.text), base)
            if section is None:
                elided = document.elision_refusal(citation.quote)
                return _quote_missing(
                    base, citation.quote, Reason.QUOTE_NOT_IN_DOCUMENT, "document", elided
                )
        elif citation.section is not None:
            section = document.section(citation.section)
            if section is None:
                return base.model_copy(
                    update={
                        "label": Label.NOT_FOUND,
                        "reason": Reason.SECTION_NOT_IN_DOCUMENT,
                        "detail": f"no section {citation.section!r} in the document",
                    }
                )
        else:
            # Neither quote nor section: the whole document is the source, read
            # the way a web page is.
            texts = split_passages(document.text)
            return self._judge(claim, self._top_passages(claim, texts), base)
        base = base.model_copy(update={"section": section.ref})
        return self._judge(claim, [Passage(index=0, text=section.text)], base)

    def _provider_quote_missing(self, claim: str, texts: list[str], base: Verdict) -> Verdict:
        """A provider's quote the source does not have: the judge reads retrieval's
        passages, as for a citation without a quote, and the verdict says so."""
        judged = self._judge(claim, self._top_passages(claim, texts), base)
        return judged.model_copy(update={"provider_quote_not_on_page": True})

    # -- retrieval, judge, guard ---------------------------------------------

    def _top_passages(self, claim: str, texts: list[str]) -> list[Passage]:
        ranked = self.ranker.rank(claim, texts, self.top_k)
        # Shown in page order: the judge reads them as the page has them, and
        # the guard can accept a quote that runs across two adjacent passages.
        return sorted(
            (Passage(index=i, text=texts[i], score=round(score, 4)) for i, score in ranked),
            key=lambda p: p.index,
        )

    def _judge(self, claim: str, shown: list[Passage], base: Verdict) -> Verdict:
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

    # -- confirmation (stages/confirm.py) ----------------------------------------

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

    def _gate_confidence(self, verdict: Verdict) -> Verdict:
        needs_review = (
            verdict.judge is not None
            and verdict.label in (Label.SUPPORTED, Label.CONTRADICTED, Label.NOT_FOUND)
            and verdict.confidence is not None
            and verdict.confidence < self.review_below
        )
        return verdict.model_copy(update={"review": needs_review}) if needs_review else verdict


def _url_quote(citation: Citation) -> tuple[str | None, QuoteBy, bool]:
    """The quote a URL citation brings, who wrote it, and whether it is a text
    fragment's: its own ``quote``, else the text fragment of its URL, written by
    whoever wrote the URL (Citation.own_quote)."""
    quote, by = citation.own_quote()
    return quote, by, citation.quote is None and quote is not None


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


def _quote_missing(
    base: Verdict,
    quote: str,
    reason: str,
    source: str,
    elided: ElisionRefused | None = None,
) -> Verdict:
    """The citation's own quote is not in its source: fabricated, no judge asked. An
    elided quote whose pieces the source has says why it is not read as there (an
    ellipsis that skips a negation or a number has its own reason)."""
    detail = f"the quote is not in the {source}"
    if elided is not None:
        detail = f"{detail} as quoted: {elided.detail}"
        if elided.skips is not None:
            reason = Reason.QUOTE_ELISION_CHANGES_MEANING
    return base.model_copy(
        update={
            "label": Label.FABRICATED,
            "reason": reason,
            "evidence_quote": cap(quote, MAX_QUOTE_CHARS),
            "confidence": 1.0,
            "detail": detail,
        }
    )
