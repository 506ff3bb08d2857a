"""The page rules, in one place: what a fetched page says before any judge reads it.

A fetcher only fetches: it hands back the raw page (text, final URL, the origin's
status) and this module alone decides what the page says. Every fetcher's result
passes through :func:`fetch_page` (the pipeline and the recheck call it), so a
fetcher supplied through the ``pytest_citecheck_make_fetcher`` hook cannot skip
the rules. The Crawling API fetcher asks the same predicates while it crawls, but
only to decide whether to fetch again or to stop; it never words a page verdict:

1. ``original_status`` 404 or 410 -> ``unreachable`` (``http_404`` / ``http_410``);
2. a deep link whose final URL is the homepage -> ``not_found``,
   ``redirected_to_homepage``;
3. a PDF (the fetcher hands back its bytes: a ``.pdf`` URL, or a reply that is one) ->
   its text, page by page (:mod:`pytest_citecheck.stages.pdf`), or ``not_found`` with
   ``pdf_encrypted``, ``pdf_no_text``, ``pdf_too_large`` or ``pdf_malformed``
   (:func:`pdf_rule`); no page rule below reads a PDF's text;
4. a blocked page (:func:`blocked_page`: a short bot-challenge or captcha
   interstitial, or an origin 401/403/429) -> ``not_found``, ``blocked``, marked
   for review (:func:`blocked_rule`); a paywall named by a structured signal (an
   origin 402, schema.org JSON-LD ``isAccessibleForFree: false``:
   :func:`~pytest_citecheck.stages.paywall.paywall_signal`, never the page's words)
   -> ``not_found``, ``paywalled``, marked for review (:func:`paywall_rule`);
5. a server error instead of the page (:func:`server_error_page`: an origin 5xx,
   or a short "502 Bad Gateway" / "503 Service Unavailable" / Cloudflare "Error
   522" page served with 200) -> ``error``, ``origin_error``: the page was not
   seen, so it is neither evidence nor missing;
6. a page with more than ``max_page_bytes`` bytes of text (or a reply the
   transport cut off at that size) -> ``not_found``, ``page_too_large``;
7. a short "page does not exist" template -> ``not_found``, ``soft_404``.

A result that already carries a label (a failed crawl, an empty page) is left as
it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Protocol
from urllib.parse import urlsplit

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import Fetch
from pytest_citecheck.core.errors import ResponseTooLarge
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.core.urls import fetch_url
from pytest_citecheck.stages.paywall import paywall_signal, paywalled_detail
from pytest_citecheck.stages.pdf import PdfLimits, PdfText, PdfUnreadable
from pytest_citecheck.stages.text import remembered


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
    # A person should look at the page (a blocked page is not evidence either way).
    review: bool = False
    # A PDF's bytes as the fetcher got them (the rules extract them), then its text
    # page by page (``text`` is then the body's text, pages apart).
    pdf: bytes | None = None
    pdf_text: PdfText | None = None

    @property
    def credits(self) -> float:
        return sum(f.credits for f in self.fetches)

    def verdict_fields(self) -> dict[str, Any]:
        """What a :class:`~pytest_citecheck.claims.results.Verdict` on this page says of
        its fetch: where it landed, the origin's status, the stored page, the calls and
        their credits."""
        return {
            "final_url": self.final_url,
            "original_status": self.original_status,
            "rid": self.rid,
            "fetches": self.fetches,
            "credits": self.credits,
        }


class Fetcher(Protocol):
    """Anything that turns a URL into a raw :class:`FetchResult` (the rules come after)."""

    def fetch(self, url: str) -> FetchResult: ...


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


# -- blocked pages -----------------------------------------------------------
#
# The origin refused the crawler, or answered with a bot challenge or a captcha
# interstitial instead of the page. Conservative on purpose: a marker counts only
# on a short page (the interstitial *is* the page); a long article that mentions
# "captcha" or "access denied" is an article.

# The origin's own refusal (``original_status``): unauthorised, forbidden, rate-limited.
BLOCKED_STATUSES = frozenset({401, 403, 429})
# A challenge page is a title and a sentence or two; longer than this is content.
BLOCKED_MAX_CHARS = 1000


@dataclass(frozen=True)
class Blocked:
    """Why a page is blocked, and whether a JavaScript-rendering browser gets past it."""

    why: str
    browser_passes: bool = False


# Challenges that a real browser solves by running their script (Cloudflare's
# "Just a moment...", "Checking your browser"): worth one JavaScript-token fetch.
_BROWSER_CHALLENGES = (
    ("a Cloudflare 'Just a moment...' challenge", r"\bjust\s+a\s+moment(?:\.\.\.|\u2026)"),
    ("a 'Checking your browser' challenge", r"\bchecking\s+your\s+browser\b"),
    (
        "a Cloudflare 'Verifying you are human' challenge",
        r"\bverifying\s+(?:that\s+)?you\s+are\s+(?:a\s+)?human\b",
    ),
    (
        "a 'Checking if the site connection is secure' challenge",
        r"\bchecking\s+if\s+the\s+site\s+connection\s+is\s+secure\b",
    ),
    ("a Cloudflare challenge (cf-chl)", r"(?<![a-z0-9])_*cf[-_]chl"),
    (
        "an 'Enable JavaScript and cookies to continue' challenge",
        r"\benable\s+javascript\s+and\s+cookies\s+to\s+continue\b",
    ),
)
# Walls a browser does not pass on its own: a block page, a captcha, a refusal.
_WALLS = (
    (
        "a Cloudflare 'Attention Required!' block page",
        r"\battention\s+required!?\s*\|\s*cloudflare\b",
    ),
    ("a 'Sorry, you have been blocked' page", r"\bsorry,?\s+you\s+have\s+been\s+blocked\b"),
    (
        "a captcha interstitial ('verify you are a human')",
        r"\b(?:verify|confirm)\s+(?:that\s+)?you\s+are\s+(?:a\s+)?human\b",
    ),
    ("a captcha interstitial ('Are you a robot?')", r"\bare\s+you\s+a\s+robot\b"),
    (
        "a captcha interstitial ('complete the captcha')",
        r"\b(?:complete|solve|enter|pass)\s+(?:the\s+|this\s+|a\s+)?"
        r"(?:captcha|security\s+check)\b",
    ),
    ("a captcha interstitial ('Press & Hold')", r"\bpress\s*(?:&|&amp;|and)\s*hold\b"),
    ("an 'Access denied' page", r"(?m)^[\s#*_>|-]*access\s+denied\b"),
    (
        "an 'Access denied' page",
        r"\byou\s+don['\u2019]?t\s+have\s+permission\s+to\s+access\b",
    ),
    ("an Incapsula block page", r"\bincapsula\s+incident\b"),
)
_MARKERS = [
    (why, re.compile(pattern, re.IGNORECASE), browser)
    for group, browser in ((_BROWSER_CHALLENGES, True), (_WALLS, False))
    for why, pattern in group
]


def blocked_page(text: str | None, original_status: int | None) -> Blocked | None:
    """Whether the page is a refusal rather than the page: an origin 401/403/429,
    or a short page that is a bot challenge or captcha interstitial (the markers
    above). None: not blocked."""
    marker = None
    if text and 0 < non_whitespace_chars(text) < BLOCKED_MAX_CHARS:
        marker = next(((why, b) for why, rx, b in _MARKERS if rx.search(text)), None)
    if marker is not None:
        why, browser = marker
        if original_status in BLOCKED_STATUSES:
            why = f"{why}, HTTP {original_status}"
        return Blocked(why, browser_passes=browser)
    if original_status in BLOCKED_STATUSES:
        return Blocked(f"the site answered HTTP {original_status}")
    return None


# -- server error pages ---------------------------------------------------------
#
# A proxy, load balancer or CDN in front of the site answered instead of it -- often
# with HTTP 200 as far as the crawler is concerned. Like the blocked markers, a
# marker counts only on a short page: an article about gateways is an article.

# A server error page is a title and a line or two; longer than this is content.
SERVER_ERROR_MAX_CHARS = 1000
_SERVER_ERRORS = [
    (why, re.compile(pattern, re.IGNORECASE))
    for why, pattern in (
        ("502 Bad Gateway", r"\bbad\s+gateway\b"),
        ("504 Gateway Timeout", r"\bgateway\s+time-?\s?out\b"),
        ("503 Service Unavailable", r"\bservice\s+(?:temporarily\s+)?unavailable\b"),
        ("500 Internal Server Error", r"\binternal\s+server\s+error\b"),
        ("Cloudflare 5xx error", r"\berror\s+code:?\s*5[0-9]{2}\b|\berror\s+5[0-9]{2}\b"),
        ("'Web server is down'", r"\bweb\s+server\s+is\s+(?:down|returning\s+an\s+unknown)"),
        ("upstream error", r"\bupstream\s+connect\s+error\b|\bno\s+healthy\s+upstream\b"),
    )
]


def server_error_page(text: str | None, original_status: int | None) -> str | None:
    """Why the reply is a server error rather than the page (an origin 5xx, or a
    short page with a server-error marker above), or None."""
    if original_status is not None and 500 <= original_status <= 599:
        return f"the site answered HTTP {original_status}"
    if text and 0 < non_whitespace_chars(text) < SERVER_ERROR_MAX_CHARS:
        for why, marker in _SERVER_ERRORS:
            if marker.search(text):
                status = "" if original_status is None else f" with HTTP {original_status}"
                return f"the site served an error page ({why}){status}"
    return None


def server_error_detail(why: str) -> str:
    return f"Not the page: {why}. It may be back later; run again to judge it."


def blocked_detail(blocked: Blocked) -> str:
    return (
        f"The site blocked the crawler ({blocked.why}): the page was not judged; "
        "a person should check it."
    )


# The page rules and the crawl's record each ask it of the same page text.
@remembered(maxsize=8, max_chars=250_000)
def non_whitespace_chars(text: str) -> int:
    """How much text a page has, ignoring layout (``split()`` and ``isspace`` agree)."""
    return len("".join(text.split()))


def is_pdf(url: str) -> bool:
    """Whether ``url``'s path names a PDF document (a reply may say so too: stages/pdf.py)."""
    return urlsplit(url).path.lower().endswith(".pdf")


def looks_like_soft_404(text: str) -> bool:
    """A short page that reads like a "this page does not exist" template."""
    chars = non_whitespace_chars(text)
    return 0 < chars < SOFT_404_MAX_CHARS and _SOFT_404.search(text) is not None


def is_gone(original_status: int | None) -> bool:
    """Whether the origin said the page is gone (404, 410)."""
    return original_status in GONE_REASONS


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


def pdf_rule(result: FetchResult, max_page_bytes: int | None) -> FetchResult:
    """A fetched PDF's text (``pdf_text``, ``text``) or the reason it cannot be read."""
    from pytest_citecheck.stages.pdf import extract

    assert result.pdf is not None
    try:
        text = extract(result.pdf, PdfLimits(max_bytes=max_page_bytes))
    except PdfUnreadable as exc:
        return replace(
            _settled(result, Label.NOT_FOUND, exc.reason, exc.detail), pdf=None, pdf_text=None
        )
    return replace(result, pdf=None, pdf_text=text, text=text.text)


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


def blocked_rule(result: FetchResult) -> FetchResult | None:
    """A bot challenge, captcha interstitial or origin 401/403/429
    (:func:`blocked_page`) -> ``not_found``, ``blocked``, marked for review; None
    when the page is not blocked."""
    blocked = blocked_page(result.text, result.original_status)
    if blocked is None:
        return None
    settled = _settled(result, Label.NOT_FOUND, Reason.BLOCKED, blocked_detail(blocked))
    return replace(settled, review=True)


def paywall_rule(result: FetchResult) -> FetchResult | None:
    """A paywall a structured signal names (:func:`paywall_signal`) -> ``not_found``,
    ``paywalled``, marked for review; None when nothing structured says so."""
    paywall = paywall_signal(result.text, result.original_status)
    if paywall is None:
        return None
    settled = _settled(result, Label.NOT_FOUND, Reason.PAYWALLED, paywalled_detail(paywall))
    return replace(settled, review=True)


def fetch_raw(fetcher: Fetcher, url: str, terms: Terms = NEUTRAL) -> FetchResult:
    """``fetcher.fetch(url)``, a reply the transport cut off at the size cap as a
    ``page_too_large`` result (rule 5), before any other rule. The URL's fragment is
    not part of the page: its fetch key is asked for
    (:func:`~pytest_citecheck.core.urls.fetch_url`)."""
    url = fetch_url(url)
    try:
        return fetcher.fetch(url)
    except ResponseTooLarge as exc:
        return FetchResult(
            url=url,
            label=Label.NOT_FOUND,
            reason=Reason.PDF_TOO_LARGE if is_pdf(url) else Reason.PAGE_TOO_LARGE,
            detail=too_large_detail(exc.limit, terms),
        )


def fetch_page(
    fetcher: Fetcher, url: str, max_page_bytes: int | None, terms: Terms = NEUTRAL
) -> FetchResult:
    """What ``url`` (its fetch key) says, fetched by ``fetcher`` and read by the page rules."""
    url = fetch_url(url)
    return apply_rules(url, fetch_raw(fetcher, url, terms), max_page_bytes, terms)


def apply_rules(
    url: str, result: FetchResult, max_page_bytes: int | None, terms: Terms = NEUTRAL
) -> FetchResult:
    """``result`` with the page rules (this module's docstring) and the size cap applied."""
    if result.label is not None:
        return result
    status = result.original_status
    if status is not None and is_gone(status):
        return _settled(result, Label.UNREACHABLE, GONE_REASONS[status], gone_detail(status))
    if redirected_to_homepage(url, result.final_url):
        return _settled(
            result,
            Label.NOT_FOUND,
            Reason.REDIRECTED_TO_HOMEPAGE,
            homepage_detail(result.final_url),
        )
    if result.pdf is not None:
        return pdf_rule(result, max_page_bytes)
    blocked = blocked_rule(result)
    if blocked is not None:
        return blocked
    paywalled = paywall_rule(result)
    if paywalled is not None:
        return paywalled
    server_error = server_error_page(result.text, status)
    if server_error is not None:
        return _settled(result, Label.ERROR, Reason.ORIGIN_ERROR, server_error_detail(server_error))
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
