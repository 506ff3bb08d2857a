"""Claim and verdict labels, their order, and the reasons a claim gets the label it gets.

Plain values (a ``StrEnum`` each), so a label crosses process boundaries as a string.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypedDict


class Label(StrEnum):
    """What a citation (or a claim) turned out to be (docs/verification.md, "Labels")."""

    SUPPORTED = "supported"
    CONTRADICTED = "contradicted"
    NOT_FOUND = "not_found"
    UNREACHABLE = "unreachable"
    FABRICATED = "fabricated"
    # The run itself failed (judge down, unparseable reply, no recording).
    # Never counted as supported; always fails the session.
    ERROR = "error"


# The one order every report lists labels in (terminal, JSON totals, markdown, HTML).
LABEL_ORDER = (
    Label.SUPPORTED,
    Label.CONTRADICTED,
    Label.FABRICATED,
    Label.NOT_FOUND,
    Label.UNREACHABLE,
    Label.ERROR,
)

# The source is against the claim, or the quote was made up: a claim with one is
# contradicted, and the gate fails it unless contradicted citations are allowed.
BAD_LABELS = frozenset({Label.CONTRADICTED, Label.FABRICATED})


class Reason:
    """Reason strings that appear in verdicts and reports (stable: users grep for them)."""

    HTTP_404 = "http_404"
    HTTP_410 = "http_410"
    REDIRECTED_TO_HOMEPAGE = "redirected_to_homepage"
    SOFT_404 = "soft_404"
    # A bot challenge, captcha interstitial or an origin 401/403/429: not evidence
    # either way, and a person should look (the verdict carries the review flag).
    BLOCKED = "blocked"
    # A cited PDF that cannot be read (stages/pdf.py): encrypted, no text layer (scanned
    # images), over the size, page or extraction-time cap, or not a well-formed PDF.
    PDF_ENCRYPTED = "pdf_encrypted"
    PDF_NO_TEXT = "pdf_no_text"
    PDF_TOO_LARGE = "pdf_too_large"
    PDF_MALFORMED = "pdf_malformed"
    # A quote found only in a PDF's references or bibliography: never evidence for the body.
    QUOTE_IN_REFERENCES = "quote_in_references"
    # A structured signal says the page is behind a paywall (an origin 402, schema.org
    # isAccessibleForFree: false, the provider's own paywall status): not the article,
    # so not evidence either way, and a person with access should look (review).
    PAYWALLED = "paywalled"
    # The site answered with a server error (an origin 5xx, or a short "502 Bad
    # Gateway" page served with 200): not the page, and maybe not for long.
    ORIGIN_ERROR = "origin_error"
    EVIDENCE_QUOTE_NOT_IN_SOURCE = "evidence_quote_not_in_source"
    EVIDENCE_QUOTE_TOO_SHORT = "evidence_quote_too_short"
    QUOTE_NOT_IN_DOCUMENT = "quote_not_in_document"
    QUOTE_NOT_IN_PAGE = "quote_not_in_page"
    # A citation's own elided quote (not the provider's) whose pieces are in the source,
    # but an ellipsis skips a negation or a number the source has there ("The Eiffel
    # Tower is ... in Lyon" where the page says "is not in Lyon").
    QUOTE_ELISION_CHANGES_MEANING = "quote_elision_changes_meaning"
    # A provider's quote (Anthropic cited_text, a URL's text fragment) that the page
    # fetched today does not have: the judge read retrieval's passages instead. Not a
    # fabrication (the model cannot invent a provider's quote): a marker beside the label.
    PROVIDER_QUOTE_NOT_ON_PAGE = "provider_quote_not_on_page"
    SECTION_NOT_IN_DOCUMENT = "section_not_in_document"
    # A conversation's cited URL that none of its tool results returned (search
    # results, fetched pages, the provider's source lists): found without a request,
    # a marker for review beside the label the live page gives.
    URL_NOT_RETRIEVED = "url_not_retrieved"
    EMPTY_PAGE = "empty_page"
    CRAWL_FAILED = "crawl_failed"
    JUDGE_REFUSED = "judge_refused"
    JUDGE_TRUNCATED = "judge_truncated"
    JUDGE_INVALID_JSON = "judge_invalid_json"
    JUDGE_SCHEMA_MISMATCH = "judge_schema_mismatch"
    JUDGE_HTTP_ERROR = "judge_http_error"
    JUDGE_UNAVAILABLE = "judge_unavailable"
    # The provider's batch API gave no answer for this judge request: the item errored,
    # expired or was cancelled, or the batch did not end within the wait.
    JUDGE_BATCH_FAILED = "judge_batch_failed"
    CONFIGURATION = "configuration_error"
    NO_RECORDING = "no_recording"
    STALE_RECORDING = "stale_recording"
    WORKER_CRASHED = "worker_crashed"
    # The engine's own: a cassette that cannot be read; a page or judge reply over the cap.
    CORRUPT_RECORDING = "corrupt_recording"
    PAGE_TOO_LARGE = "page_too_large"
    JUDGE_REPLY_TOO_LARGE = "judge_reply_too_large"
    # The URL policy (pytest_citecheck.stages.url_policy) refused the URL (nothing was
    # fetched) or where its crawl landed (nothing of the page was used).
    URL_REFUSED = "url_refused"
    # Not recorded: the run's --citecheck-max-cost / --citecheck-max-credits ran out.
    BUDGET_EXHAUSTED = "budget_exhausted"
    INTERNAL = "internal_error"
    # The guard overruled the judge: the passages try to instruct a grader, or the
    # quote (read in its passage) is not about the claim.
    SUSPECTED_INJECTION = "suspected_injection"
    QUOTE_NOT_ABOUT_CLAIM = "quote_not_about_claim"
    # A judge panel that did not agree enough to decide (engine/panel.py).
    PANEL_NO_MAJORITY = "panel_no_majority"
    PANEL_NOT_UNANIMOUS = "panel_not_unanimous"
    PANEL_SPLIT = "panel_supported_and_contradicted"
    # Fewer members answered than the panel needs (citecheck_panel_min_votes).
    PANEL_INCOMPLETE = "panel_incomplete"
    # The confirmation (stages/confirm.py): a second judge call that read only the
    # sentence(s) holding the quote did not give the same label.
    UNCONFIRMED = "unconfirmed"
    # Replayed from a recording made without the confirmation: kept, not confirmed.
    RECORDED_WITHOUT_CONFIRMATION = "recorded_without_confirmation"
    # A supported verdict whose evidence lacks a number, date or quantity of the claim.
    EVIDENCE_LACKS_NUMBER = "evidence_lacks_number"
    # No cited source supports the claim alone, but the joint judgment read them together
    # (engine/joint.py) and verified a quote on each of two or more: the claim is
    # supported, and so is each citation that carried one of those quotes.
    SUPPORTED_JOINTLY = "supported_jointly"
    # The joint judgment answered supported, but its quotes were verified on fewer than
    # two sources (each quote is checked on its own source): the single verdicts stand.
    JOINT_TOO_FEW_SOURCES = "joint_too_few_sources"


class Refusal(TypedDict):
    """What a result the URL policy refused says (a verdict's or a fetch's fields)."""

    label: Label
    reason: str
    detail: str


def url_refusal(detail: str) -> Refusal:
    """A URL the policy refused, or a crawl it refused where it landed: ``not_found``
    (nothing of the page is evidence), ``url_refused``, ``detail`` saying why."""
    return Refusal(label=Label.NOT_FOUND, reason=Reason.URL_REFUSED, detail=detail)
