"""The page rules, in one place: what a fetched page says before any judge reads it.

Every fetcher's result passes through :func:`apply_rules` (the pipeline calls it),
so a fetcher supplied through the ``pytest_citecheck_make_fetcher`` hook cannot
skip them; the Crawling API fetcher also asks the same predicates while it
crawls (they decide whether to fetch again) and words its verdicts with the same
messages:

1. ``original_status`` 404 or 410 -> ``unreachable`` (``http_404`` / ``http_410``);
2. a deep link whose final URL is the homepage -> ``not_found``,
   ``redirected_to_homepage``;
3. a ``.pdf`` URL -> ``not_found``, ``pdf_unsupported``;
4. a page with more than ``max_page_bytes`` bytes of text -> ``not_found``,
   ``page_too_large``;
5. a short "page does not exist" template -> ``not_found``, ``soft_404``.

A result that already carries a label is left as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from pytest_citecheck.claims.models import Fetch, Label, Reason
from pytest_citecheck.core.terms import NEUTRAL, Terms


@dataclass
class FetchResult:
    """What fetching one URL gave.

    Either ``text`` holds the readable markdown to cut into passages (and
    ``label`` is None), or ``label``/``reason`` say why the page cannot be
    judged (unreachable, not_found, error) and ``text`` is None.
    """

    url: str
    text: str | None = None
    label: Label | None = None
    reason: str | None = None
    detail: str | None = None
    final_url: str | None = None
    original_status: int | None = None
    rid: str | None = None
    fetches: list[Fetch] = field(default_factory=list)

    @property
    def credits(self) -> float:
        return sum(f.credits for f in self.fetches)


# A "not found" template longer than this is an article that mentions 404.
SOFT_404_MAX_CHARS = 800

# An origin that says the page is gone.
GONE_REASONS = {404: Reason.HTTP_404, 410: Reason.HTTP_410}

_SOFT_404 = re.compile(
    r"""(?ix)
      \b404\b
    | \bnot\s+found\b
    | \b(?:could\s*not|couldn['\u2019]t|can\s*not|can['\u2019]t)\s+(?:be\s+found|find)\b
    | \b(?:does\s+not|doesn['\u2019]t|no\s+longer)\s+exists?\b
    | \bno\s+longer\s+(?:available|online)\b
    | \b(?:page|content|article|post|resource)\s+(?:is\s+)?(?:unavailable|not\s+available)\b
    | \bhas\s+been\s+(?:removed|deleted|taken\s+down)\b
    | \bpage\s+you\s+(?:are|were|['\u2019]re)\s+looking\s+for\b
    | \bnothing\s+(?:was\s+)?found\b
    """
)


def non_whitespace_chars(text: str) -> int:
    """How much text a page has, ignoring layout (``split()`` and ``isspace`` agree)."""
    return len("".join(text.split()))


def is_pdf(url: str) -> bool:
    """Whether ``url`` names a PDF document ."""
    return urlsplit(url).path.lower().endswith(".pdf")


def looks_like_soft_404(text: str) -> bool:
    """A short page that reads like a "this page does not exist" template."""
    chars = non_whitespace_chars(text)
    return 0 < chars < SOFT_404_MAX_CHARS and _SOFT_404.search(text) is not None


def _is_deep(path: str) -> bool:
    return path not in ("", "/")


def redirected_to_homepage(url: str, final_url: str | None) -> bool:
    """A deep link whose final URL is the site's root."""
    return (
        final_url is not None
        and _is_deep(urlsplit(url).path)
        and not _is_deep(urlsplit(final_url).path)
    )


# -- the messages a user reads (the same from every fetcher) ---------------------------

PDF_DETAIL = (
    "PDF documents are not supported: only a page's text is judged, and no text is "
    "extracted from a PDF."
)


def gone_detail(status: int | None) -> str:
    return f"The page answered HTTP {status}."


def homepage_detail(final_url: str | None) -> str:
    return f"The deep link redirected to the homepage {final_url}."


def soft_404_detail(text: str) -> str:
    return (
        "The page is a short 'page not found' template "
        f"({non_whitespace_chars(text)} non-whitespace characters)."
    )


def too_large_detail(limit: int, terms: Terms = NEUTRAL) -> str:
    return (
        f"The page is larger than {terms.option('max_page_bytes')} ({limit} bytes); raise "
        "the limit to judge it."
    )


def _settled(result: FetchResult, label: Label, reason: str, detail: str) -> FetchResult:
    """``result`` decided without the judge: no text goes further."""
    return replace(result, text=None, label=label, reason=reason, detail=detail)


def apply_rules(
    url: str, result: FetchResult, max_page_bytes: int | None, terms: Terms = NEUTRAL
) -> FetchResult:
    """``result`` with the page rules (this module's docstring) and the size cap applied."""
    if result.label is not None:
        return result
    status = result.original_status
    if status in GONE_REASONS:
        return _settled(result, Label.UNREACHABLE, GONE_REASONS[status], gone_detail(status))
    if redirected_to_homepage(url, result.final_url):
        return _settled(
            result,
            Label.NOT_FOUND,
            Reason.REDIRECTED_TO_HOMEPAGE,
            homepage_detail(result.final_url),
        )
    if is_pdf(url):
        return _settled(result, Label.NOT_FOUND, Reason.PDF_UNSUPPORTED, PDF_DETAIL)
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
            result, Label.NOT_FOUND, Reason.PAGE_TOO_LARGE, too_large_detail(max_page_bytes, terms)
        )
    if looks_like_soft_404(text):
        return _settled(
            result,
            Label.NOT_FOUND,
            Reason.SOFT_404,
            soft_404_detail(text),
        )
    return result
