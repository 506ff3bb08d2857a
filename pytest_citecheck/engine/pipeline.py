"""Verifying one claim's citations: the stages wired together (docs/architecture.md).

Usable without pytest; :mod:`pytest_citecheck.engine.core` builds a :class:`Verifier`
per claim from the stages it built once. Any fetcher's result goes through
:func:`pytest_citecheck.stages.fetch_rules.apply_rules` (the page rules, the page-size
cap). What a judge says is capped before it reaches a verdict, so a 5 MB
"quote" never reaches a report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pytest_citecheck.claims.models import (
    Citation,
    Claim,
    ClaimResult,
    Label,
    Passage,
    Reason,
    Verdict,
)
from pytest_citecheck.core.defaults import (
    DEFAULT_MAX_PAGE_BYTES,
    DEFAULT_REVIEW_BELOW,
    DEFAULT_URL_POLICY,
)
from pytest_citecheck.core.errors import ConfigurationError, ResponseTooLarge, StageFailed
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.engine.aggregate import claim_label
from pytest_citecheck.stages.fetch import Fetcher
from pytest_citecheck.stages.fetch_rules import apply_rules, too_large_detail
from pytest_citecheck.stages.guard import EXACT, QuotePolicy, guard
from pytest_citecheck.stages.judges.base import Judge
from pytest_citecheck.stages.passages import split_passages
from pytest_citecheck.stages.retrieval import Ranker
from pytest_citecheck.stages.url_policy import check as check_url
from pytest_citecheck.stages.url_policy import without_credentials

DEFAULT_TOP_K = 3
# Longest evidence quote and detail text a verdict keeps (the rest becomes "…").
MAX_QUOTE_CHARS = 2000
MAX_DETAIL_CHARS = 1000


def cap(text: str | None, limit: int) -> str | None:
    """``text`` cut to ``limit`` characters, marked with an ellipsis when cut."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


# Maps an exception the pipeline did not expect to a reason; a recording adds a
# classifier that recognises "no recording for this request" (Recording.classify_error).
ErrorClassifier = Callable[[BaseException], "tuple[str, str] | None"]


@dataclass
class Verifier:
    """Verifies claims: fetch -> passages -> retrieval -> judge -> guard."""

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
        return ClaimResult(
            id=claim.id,
            claim=claim.claim,
            label=claim_label([v.label for v in verdicts]),
            verdicts=verdicts,
            expect=claim.expect,
        )

    def verify_citation(self, claim: str, citation: Citation) -> Verdict:
        """Verify one citation; any failure becomes an ``error`` verdict."""
        try:
            if citation.url is not None:
                verdict = self._verify_url(claim, citation.url)
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

    def _verify_url(self, claim: str, url: str) -> Verdict:
        refused = check_url(self.url_policy, url)
        if refused is not None:
            return Verdict(
                url=url,
                label=Label.NOT_FOUND,
                reason=Reason.URL_REFUSED,
                detail=f"not fetched: {refused} "
                f"({self.terms.setting('url_policy', self.url_policy)})",
            )
        try:
            fetched = self.fetcher.fetch(url)
        except ResponseTooLarge as exc:
            return Verdict(
                url=url,
                label=Label.NOT_FOUND,
                reason=Reason.PAGE_TOO_LARGE,
                detail=too_large_detail(exc.limit, self.terms),
            )
        fetched = apply_rules(url, fetched, self.max_page_bytes, self.terms)
        base = Verdict(
            url=url,
            label=Label.ERROR,
            final_url=fetched.final_url,
            original_status=fetched.original_status,
            rid=fetched.rid,
            fetches=fetched.fetches,
            credits=fetched.credits,
            review=fetched.review,
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
        return self._judge(claim, self._top_passages(claim, texts), base)

    # -- document citations --------------------------------------------------

    def _verify_document(self, claim: str, citation: Citation) -> Verdict:
        from pytest_citecheck.stages.documents import Document

        path = citation.document_path
        if path is None:
            raise StageFailed(Reason.INTERNAL, f"document {citation.document!r} was not resolved")
        document = Document.load(path)
        base = Verdict(url=citation.target, label=Label.ERROR)
        if citation.quote is not None:
            section = document.find_quote(citation.quote, near=citation.section)
            if section is None:
                return base.model_copy(
                    update={
                        "label": Label.FABRICATED,
                        "reason": Reason.QUOTE_NOT_IN_DOCUMENT,
                        "evidence_quote": citation.quote,
                        "confidence": 1.0,
                        "detail": "the quote is not in the document",
                    }
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
        try:
            reply = self.judge.judge(claim, [p.text for p in shown])
        except ResponseTooLarge as exc:
            raise StageFailed(
                Reason.JUDGE_REPLY_TOO_LARGE,
                f"the judge's reply is larger than {exc.limit} bytes",
            ) from None
        guarded = guard(reply, shown, self.quote_policy)
        fields = guarded.verdict_fields()
        for name in ("evidence_quote", "judge_quote", "detail"):
            fields[name] = cap(fields[name], MAX_QUOTE_CHARS)
        return base.model_copy(
            update={
                **fields,
                "passages": shown,
                "judge": self.judge.name,
                "usage": reply.usage,
            }
        )

    def _gate_confidence(self, verdict: Verdict) -> Verdict:
        needs_review = (
            verdict.judge is not None
            and verdict.label in (Label.SUPPORTED, Label.CONTRADICTED, Label.NOT_FOUND)
            and verdict.confidence is not None
            and verdict.confidence < self.review_below
        )
        return verdict.model_copy(update={"review": needs_review}) if needs_review else verdict
