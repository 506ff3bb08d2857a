"""The rules of DESIGN §3 steps 4-7 on any fetcher's result, plus the page-size cap.

The Crawling API fetcher applies them while it crawls (they decide whether to
fetch again); this module applies them once more to whatever a fetcher
returned, so a fetcher supplied through ``pytest_citecheck_make_fetcher``
cannot skip them:

4. ``original_status`` 404 or 410 -> ``unreachable`` (``http_404`` / ``http_410``);
5. a deep link whose final URL is the homepage -> ``not_found``,
   ``redirected_to_homepage``;
6. a short "page does not exist" template -> ``not_found``, ``soft_404``;
7. a ``.pdf`` URL -> ``not_found``, ``pdf_unsupported``;

a blocked page (:func:`blocked_rule`) -> ``not_found``, ``blocked``, for review;
and a page with more than ``max_page_bytes`` bytes of text -> ``not_found``,
``page_too_large`` (issue 8 item 7). A result that already carries a label is
left as it is.
"""

from __future__ import annotations

from dataclasses import replace

from pytest_citecheck.claims.models import Label, Reason
from pytest_citecheck.stages.fetch import (
    GONE_REASONS,
    FetchResult,
    blocked_detail,
    blocked_page,
    is_pdf,
    looks_like_soft_404,
    redirected_to_homepage,
)


def too_large_detail(limit: int) -> str:
    return (
        f"The page is larger than citecheck_max_page_bytes ({limit} bytes); raise the limit "
        "to judge it."
    )


def _settled(result: FetchResult, label: Label, reason: str, detail: str) -> FetchResult:
    """``result`` decided without the judge: no text goes further."""
    return replace(result, text=None, label=label, reason=reason, detail=detail)


def blocked_rule(result: FetchResult) -> FetchResult | None:
    """A bot challenge, captcha interstitial or origin 401/403/429
    (:func:`~pytest_citecheck.stages.fetch.blocked_page`) -> ``not_found``,
    ``blocked``, marked for review; None when the page is not blocked."""
    blocked = blocked_page(result.text, result.original_status)
    if blocked is None:
        return None
    settled = _settled(result, Label.NOT_FOUND, Reason.BLOCKED, blocked_detail(blocked))
    return replace(settled, review=True)


def apply_rules(url: str, result: FetchResult, max_page_bytes: int | None) -> FetchResult:
    """``result`` with DESIGN §3 steps 4-7 and the size cap applied."""
    if result.label is not None:
        return result
    status = result.original_status
    if status in GONE_REASONS:
        return _settled(
            result, Label.UNREACHABLE, GONE_REASONS[status], f"The page answered HTTP {status}."
        )
    if redirected_to_homepage(url, result.final_url):
        return _settled(
            result,
            Label.NOT_FOUND,
            Reason.REDIRECTED_TO_HOMEPAGE,
            f"The deep link redirected to the homepage {result.final_url}.",
        )
    if is_pdf(url):
        return _settled(
            result, Label.NOT_FOUND, Reason.PDF_UNSUPPORTED, "PDF documents are not supported."
        )
    blocked = blocked_rule(result)
    if blocked is not None:
        return blocked
    text = result.text
    if text is None:
        return result
    # Cheap first (a character is at most 4 bytes), exact only near the cap.
    if (
        max_page_bytes is not None
        and len(text) > max_page_bytes // 4
        and len(text.encode("utf-8")) > max_page_bytes
    ):
        return _settled(
            result, Label.NOT_FOUND, Reason.PAGE_TOO_LARGE, too_large_detail(max_page_bytes)
        )
    if looks_like_soft_404(text):
        return _settled(
            result,
            Label.NOT_FOUND,
            Reason.SOFT_404,
            "The page is a short 'page not found' template.",
        )
    return result
