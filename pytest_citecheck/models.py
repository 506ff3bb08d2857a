"""The domain: claims, citations, verdicts and claim results.

Everything here is plain data (pydantic models) so it crosses process boundaries
(pytest-xdist workers, the batch CLI, the service) as JSON without loss.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Label(StrEnum):
    """What a citation (or a claim) turned out to be. DESIGN §3."""

    SUPPORTED = "supported"
    CONTRADICTED = "contradicted"
    NOT_FOUND = "not_found"
    UNREACHABLE = "unreachable"
    FABRICATED = "fabricated"
    # The run itself failed (judge down, unparseable reply, no recording).
    # Never counted as supported; always fails the session.
    ERROR = "error"


class Reason:
    """Reason strings that appear in verdicts and reports (stable: users grep for them)."""

    HTTP_404 = "http_404"
    HTTP_410 = "http_410"
    REDIRECTED_TO_HOMEPAGE = "redirected_to_homepage"
    SOFT_404 = "soft_404"
    PDF_UNSUPPORTED = "pdf_unsupported"
    EVIDENCE_QUOTE_NOT_IN_SOURCE = "evidence_quote_not_in_source"
    EVIDENCE_QUOTE_TOO_SHORT = "evidence_quote_too_short"
    QUOTE_NOT_IN_DOCUMENT = "quote_not_in_document"
    SECTION_NOT_IN_DOCUMENT = "section_not_in_document"
    EMPTY_PAGE = "empty_page"
    CRAWL_FAILED = "crawl_failed"
    JUDGE_REFUSED = "judge_refused"
    JUDGE_TRUNCATED = "judge_truncated"
    JUDGE_INVALID_JSON = "judge_invalid_json"
    JUDGE_SCHEMA_MISMATCH = "judge_schema_mismatch"
    JUDGE_HTTP_ERROR = "judge_http_error"
    JUDGE_UNAVAILABLE = "judge_unavailable"
    CONFIGURATION = "configuration_error"
    NO_RECORDING = "no_recording"
    STALE_RECORDING = "stale_recording"
    WORKER_CRASHED = "worker_crashed"
    INTERNAL = "internal_error"


class Citation(BaseModel):
    """One source an LLM gave for a claim: a web URL or a local document."""

    model_config = ConfigDict(frozen=True)

    url: str | None = None
    # The document path as the user wrote it (relative to the claim file).
    document: str | None = None
    quote: str | None = None
    section: str | None = None
    # Where the document really is; resolved by the loader, never reported.
    document_path: Path | None = Field(default=None, exclude=True, repr=False)

    @property
    def target(self) -> str:
        """What the citation points at, as the user wrote it."""
        return self.url or self.document or ""


class Claim(BaseModel):
    """A claim an LLM made, with the citations it gave for it."""

    id: str
    claim: str
    citations: list[Citation]
    expect: Label | None = None
    # File-level judge spec (``provider:model``); CLI and ini override it.
    judge: str | None = None
    # Where the claim starts in its file (1-based), for error messages.
    line: int | None = None


class Fetch(BaseModel):
    """One billed (or attempted) Crawling API call made for a citation."""

    token: str  # which token kind was used: "normal" or "javascript" (never the value)
    readability: bool
    status_code: int
    original_status: int | None = None
    cb_status: int | None = None
    final_url: str | None = None
    rid: str | None = None
    non_whitespace_chars: int = 0
    credits: float = 0.0


class Passage(BaseModel):
    """A block of page text shown to the judge, with its retrieval score."""

    index: int
    text: str
    score: float | None = None


class Usage(BaseModel):
    """Tokens one judge call cost."""

    input_tokens: int = 0
    output_tokens: int = 0


class JudgeReply(BaseModel):
    """What a judge answered, already parsed and schema-checked (not yet guarded).

    Plain data, here rather than in ``judges``, so the guard and the documents
    module read it without importing an HTTP client or any provider.
    """

    label: Literal["supported", "contradicted", "not_found"]
    quote: str | None
    confidence: float = Field(ge=0.0, le=1.0)
    usage: Usage | None = None


class Verdict(BaseModel):
    """The outcome for one citation. Field names follow DESIGN §8's ``/verify``."""

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
    fetches: list[Fetch] = Field(default_factory=list)
    credits: float = 0.0
    passages: list[Passage] = Field(default_factory=list)
    judge: str | None = None
    usage: Usage | None = None


class ClaimResult(BaseModel):
    """The outcome for one claim: its verdicts and the aggregated label."""

    id: str
    claim: str
    label: Label
    verdicts: list[Verdict]
    expect: Label | None = None
    file: str | None = None

    @property
    def labels(self) -> list[Label]:
        return [v.label for v in self.verdicts]
