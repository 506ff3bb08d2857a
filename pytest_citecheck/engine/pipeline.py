"""Verifying one claim's citations: the stages wired together (docs/architecture.md).

Usable without pytest; :mod:`pytest_citecheck.engine.core` builds a :class:`Verifier`
per claim from the stages it built once. Any fetcher's result goes through
:func:`pytest_citecheck.stages.fetch_rules.fetch_page` (the page rules, the page-size
cap). What is shown goes to :class:`~pytest_citecheck.engine.judging.Judging` (the judge or
panel, the guard, the confirmation), which caps what a judge says before it reaches a
verdict, so a 5 MB "quote" never reaches a report.

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

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_citecheck.claims.labels import Label, Reason, url_refusal
from pytest_citecheck.claims.models import Citation, Claim, QuoteBy
from pytest_citecheck.claims.results import (
    ClaimResult,
    Passage,
    Verdict,
)
from pytest_citecheck.core.defaults import (
    DEFAULT_MAX_PAGE_BYTES,
    DEFAULT_REVIEW_BELOW,
    DEFAULT_TOP_K,
    DEFAULT_URL_POLICY,
)
from pytest_citecheck.core.errors import (
    ConfigurationError,
    CrawlDeferred,
    JudgeDeferred,
    StageFailed,
)
from pytest_citecheck.core.secrets import without_credentials
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.core.urls import fetch_url
from pytest_citecheck.engine.aggregate import claim_label
from pytest_citecheck.engine.joint import JointStep
from pytest_citecheck.engine.judging import MAX_DETAIL_CHARS, MAX_QUOTE_CHARS, Judging, cap
from pytest_citecheck.stages.fetch_rules import Fetcher, FetchResult, fetch_page
from pytest_citecheck.stages.guard import ElisionRefused, QuoteIndex
from pytest_citecheck.stages.passages import split_passages
from pytest_citecheck.stages.paywall import known_paywall_verdict
from pytest_citecheck.stages.pdf import (
    PdfText,
    PdfUnreadable,
    holding_in_pdf,
    page_passages,
    references_verdict,
    with_pages,
)
from pytest_citecheck.stages.quote_policy import thin_piece, too_short
from pytest_citecheck.stages.rendered import quote_pieces
from pytest_citecheck.stages.retrieval import Ranker
from pytest_citecheck.stages.url_policy import check as check_url
from pytest_citecheck.stages.url_policy import landing_refusal, mask_landing

if TYPE_CHECKING:
    from pytest_citecheck.engine.archived import Archived
    from pytest_citecheck.stages.screenshot import PageShots


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
    except (ConfigurationError, PdfUnreadable):
        return False
    return (
        citation.quote_by == "provider"
        or document.find_quote(citation.quote, near=citation.section) is not None
    )


# Maps an exception the pipeline did not expect to a reason; a recording adds a
# classifier that recognises "no recording for this request" (Recording.classify_error).
ErrorClassifier = Callable[[BaseException], "tuple[str, str] | None"]


@dataclass
class Verifier:
    """Verifies claims: fetch -> passages -> retrieval -> what to show the judge; the
    judging itself (judge -> guard -> confirmation) is :attr:`judging`'s."""

    fetcher: Fetcher
    ranker: Ranker
    # The judge (or panel), the guard and the confirmation (engine/judging.py); its quote
    # policy is also how a citation's own quote is found in its source.
    judging: Judging
    review_below: float = DEFAULT_REVIEW_BELOW
    top_k: int = DEFAULT_TOP_K
    classify_error: ErrorClassifier | None = None
    max_page_bytes: int | None = DEFAULT_MAX_PAGE_BYTES
    url_policy: str = DEFAULT_URL_POLICY
    # How messages name options (the front end's words).
    terms: Terms = NEUTRAL
    # The joint judgment of a claim's sources none supports alone (engine/joint.py);
    # None: not made (turned off, a judge panel, a judge that cannot).
    joint: JointStep | None = None
    # Looks an unreachable citation up in the Wayback Machine (None: not asked).
    archive: Archived | None = None
    # Takes the cited page's picture for a verdict a person must look at (None: not asked).
    screenshots: PageShots | None = None

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
        judgment = None
        if self.joint is not None:
            verdicts, judgment = self.joint.apply(claim.claim, verdicts)
        return ClaimResult(
            id=claim.id,
            claim=claim.claim,
            label=claim_label([v.label for v in verdicts]),
            verdicts=verdicts,
            expect=claim.expect,
            answer=claim.answer,
            reason=judgment.claim_reason if judgment is not None else None,
            joint=judgment,
        )

    def verify_citation(self, claim: str, citation: Citation, archived: bool = True) -> Verdict:
        """Verify one citation; any failure becomes an ``error`` verdict. ``archived``:
        a gone page is looked up in the Wayback Machine (when :attr:`archive` is set)."""
        try:
            if citation.paywall is not None and citation.url is not None:
                verdict = known_paywall_verdict(citation.url, citation.paywall)
            elif citation.url is not None:
                verdict = self._verify_url(
                    claim, citation.url, *_url_quote(citation), page=citation.page
                )
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
            # No recording: not judged, but named with the judge(s) that would record
            # it, so the hint asks for their keys (ReportListings.missing_line).
            judge = self.judge_names() if reason == Reason.NO_RECORDING else None
            verdict = Verdict(
                url=citation.target, label=Label.ERROR, reason=reason, detail=detail, judge=judge
            )
        if verdict.detail is not None and len(verdict.detail) > MAX_DETAIL_CHARS:
            verdict = verdict.model_copy(update={"detail": cap(verdict.detail, MAX_DETAIL_CHARS)})
        if archived and self.archive is not None and citation.url is not None:
            verdict = self.archive.add(self, claim, citation.url, verdict)
        if citation.url is not None and "@" in citation.url:
            # Credentials in a cited URL never reach a report, the audit index or a terminal.
            verdict = verdict.model_copy(
                update={
                    "url": without_credentials(verdict.url),
                    "final_url": verdict.final_url and without_credentials(verdict.final_url),
                }
            )
        verdict = self._gate_confidence(verdict)
        if citation.retrieved is False:
            # Known from the conversation alone: no request was made for this mark.
            verdict = verdict.model_copy(update={"url_not_retrieved": True, "review": True})
        if archived and self.screenshots is not None and citation.url is not None:
            shot_url = fetch_url(citation.url)
            if check_url(self.url_policy, shot_url) is None:  # a refused URL: no request
                verdict = self.screenshots.add(shot_url, verdict)
        return verdict

    def judge_names(self) -> str:
        """The judge, or the panel's judges joined with ``,`` (as a panel's verdict names them)."""
        judging = self.judging
        if not judging.panel:
            return judging.judge.name
        return ",".join(dict.fromkeys(member.name for member in judging.panel))

    # -- URL citations -------------------------------------------------------

    def _verify_url(
        self,
        claim: str,
        url: str,
        quote: str | None = None,
        quote_by: QuoteBy = "user",
        fragment: bool = False,
        page: int | None = None,
    ) -> Verdict:
        """``fragment``: the quote is the URL's text fragment, whose ``start,end`` range
        marks the whole span between them (nothing is left out, so no gap is refused);
        written by a person or the model, each end must still be a real span."""
        refused = check_url(self.url_policy, url)
        if refused is not None:
            return Verdict(
                url=url,
                **url_refusal(
                    f"not fetched: {refused} ({self.terms.setting('url_policy', self.url_policy)})"
                ),
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
        if fetched.pdf_text is not None:
            return _verify_pdf(self, claim, fetched.pdf_text, base, quote, quote_by, page)
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
            **url_refusal(f"not used: {why} ({self.terms.setting('url_policy', policy)})"),
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
        found = QuoteIndex(texts).locate(quote, self.judging.quote_policy, provider)
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
        base = Verdict(url=citation.target, label=Label.ERROR)
        try:
            document = Document.load(path)
        except PdfUnreadable as exc:
            return base.model_copy(
                update={"label": Label.NOT_FOUND, "reason": exc.reason, "detail": exc.detail}
            )
        if document.pdf is not None and citation.section is None:
            quote, by, page = citation.quote, citation.quote_by, citation.page
            return _verify_pdf(self, claim, document.pdf, base, quote, by, page, document=True)
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
        return self.judging.verdict(claim, shown, base)

    def _gate_confidence(self, verdict: Verdict) -> Verdict:
        needs_review = (
            verdict.judge is not None
            and verdict.label in (Label.SUPPORTED, Label.CONTRADICTED, Label.NOT_FOUND)
            and verdict.confidence is not None
            and verdict.confidence < self.review_below
        )
        return verdict.model_copy(update={"review": needs_review}) if needs_review else verdict


def _verify_pdf(
    verifier: Verifier,
    claim: str,
    pdf: PdfText,
    base: Verdict,
    quote: str | None,
    quote_by: QuoteBy,
    page: int | None,
    document: bool = False,
) -> Verdict:
    """A PDF source (stages/pdf.py), for ``verifier``: its passages carry their page, a
    quote is looked for on the citation's page first and as the text layer may hold it,
    a quote only the references have is no evidence, and the verdict names its
    evidence's page."""
    passages = page_passages(pdf)
    texts, provider = passages.texts, quote_by == "provider"
    if not texts:
        return base.model_copy(update={"label": Label.NOT_FOUND, "reason": Reason.EMPTY_PAGE})
    holding = None
    if quote is not None:
        ask = lambda q, t: verifier._passages_holding(q, t, provider)  # noqa: E731
        holding = holding_in_pdf(quote, passages, page, ask)
        refused = references_verdict(base, quote, pdf) if holding is None else None
        if refused is not None:
            return refused
        if holding is None and not provider:
            elided = QuoteIndex(texts).elision_refusal(quote)
            reason = Reason.QUOTE_NOT_IN_DOCUMENT if document else Reason.QUOTE_NOT_IN_PAGE
            return _quote_missing(base, quote, reason, "PDF", elided)
    if quote is not None and holding is None:
        verdict = verifier._provider_quote_missing(claim, texts, base)
    else:
        shown = holding or verifier._top_passages(claim, texts)
        verdict = verifier._judge(claim, shown, base)
    return with_pages(verdict, passages)


def _url_quote(citation: Citation) -> tuple[str | None, QuoteBy, bool]:
    """The quote a URL citation brings, who wrote it, and whether it is a text
    fragment's: its own ``quote``, else the text fragment of its URL, written by
    whoever wrote the URL (Citation.own_quote)."""
    quote, by = citation.own_quote()
    return quote, by, citation.quote is None and quote is not None


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
