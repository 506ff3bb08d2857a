"""Fetching a URL citation through the Crawlbase Crawling API.

:class:`CrawlbaseFetcher` turns a URL into the raw page the Crawling API gives
(readable markdown, final URL, the origin's status), spending as few credits as
the crawl rules allow:

1. ``format=md&md_readability=true&store=true`` with the normal token;
2. a page with fewer than 200 non-whitespace characters is fetched again
   without ``md_readability`` (thin pages only);
3. the JavaScript token is used only on a real signal -- a failed crawl (520 or
   525, as the API's HTTP status or as ``cb_status``/``pc_status`` inside a 200),
   ``cb_status``/``pc_status`` 207, a challenge a browser passes ("Just a
   moment..."), or still thin (an empty body included) after step 2 -- and its
   reply is crawled exactly like the normal one, readability retry included.

What the page then says (gone, redirected to the homepage, a PDF, blocked, too
large, a soft 404) is decided by :mod:`pytest_citecheck.stages.fetch_rules` alone,
after the fetcher returns; the fetcher asks its predicates only to stop crawling:
a page that is gone (404/410), a deep link that lands on ``/``, a wall a browser
does not pass or a paywall (:mod:`pytest_citecheck.stages.paywall`) is not fetched
again. A ``.pdf`` URL is asked for as the file itself (:data:`PDF_PARAMS`; or
downloaded directly, ``pdf_fetch = direct``), and any reply that is a PDF (its body or
its Content-Type) is handed back as bytes for the rules to extract
(:mod:`pytest_citecheck.stages.pdf`).
What only the crawl can tell stays here: a failed crawl (``crawl_failed``) and a
page with no text even rendered with JavaScript (``empty_page``).

Where the Crawlbase docs are unconfirmed, both readings are
handled: a failed crawl may come as HTTP 520/525 with an empty body (what the SDK
sees) or as a 200 whose ``pc_status``/``cb_status`` says 520/525 (what the
status-codes page describes); an empty page may come as status 207 or as a 200
with an empty body. An empty body after readability is fetched again without
it first (step 2 applies to it literally; readability may be what emptied it),
then goes to the JavaScript token, as the docs advise for an empty body.

A reply that is gone, redirected to the homepage or walled off ends the crawl;
the soft-404 rule reads the text the crawl settles on: a thin page is fetched
again first, as steps 2-3 say, and a thin "not found" template is read after that.

Why httpx and not the ``crawlbase`` SDK: the SDK keeps only
``original_status``, ``pc_status``, ``cb_status`` and ``url`` of a reply, so the
``rid`` and ``storage_url`` headers are lost; for every non-2xx reply it returns
an empty dict of headers, so ``Retry-After`` (and anything else) is gone before
a retry could honour it; and it is synchronous only, on urllib. Talking HTTP
directly keeps those headers, records the exchange through the engine's
per-claim transport (:mod:`pytest_citecheck.recording.transport`) like the
judges', and reuses :mod:`pytest_citecheck.core.retry`. The query is
built the way the SDK builds it (token, options, ``url`` last, urlencoded) so a
recording made either way matches.

Secrets: the ``storage_url`` header carries the token in its query string; only
the ``rid`` is taken from it and the URL itself is never kept. Error messages
name the environment variable of a token, never its value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

import httpx

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import Fetch
from pytest_citecheck.core.defaults import DEFAULT_PDF_FETCH
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.core.providers import TOKEN_ENV, TokenKind
from pytest_citecheck.core.retry import GaveUp, RetryPolicy, send, transport_text
from pytest_citecheck.core.secrets import TOKEN_PLACEHOLDERS, scrub
from pytest_citecheck.core.terms import NEUTRAL, Terms

# The fetcher protocol lives with the rules every fetcher's result passes through;
# it stays importable from here.
from pytest_citecheck.stages.fetch_rules import (
    FetchResult,
    blocked_page,
    is_gone,
    is_pdf,
    non_whitespace_chars,
    redirected_to_homepage,
)
from pytest_citecheck.stages.paywall import paywall_signal
from pytest_citecheck.stages.pdf import pdf_reply

# -- the rules' constants ------------------------------------------------------


if TYPE_CHECKING:
    from pytest_citecheck.stages.pdf_fetch import DirectPdfFetcher

DEFAULT_BASE_URL = "https://api.crawlbase.com/"
BASE_URL_ENV = "CITECHECK_CRAWLBASE_URL"

# Fewer non-whitespace characters than this after readability: fetch again
# without it (step 2); still fewer: render with JavaScript (step 3).
THIN_CHARS = 200
# The Crawling API's transient statuses. 520 and 525
# are deliberately absent: a failed crawl is answered by the JavaScript token.
CRAWL_TRANSIENT_STATUSES = frozenset({429, 500, 503, 522, 599})
# The reply is about our request, not the page: the user must fix something.
_CONFIGURATION_STATUSES = frozenset({401, 402, 403, 422})
# A failed crawl (520) or an anti-bot challenge the normal crawl could not solve
# (525): the docs say to retry with the JavaScript token. Read as the API's HTTP
# status or as cb_status/pc_status inside a 200.
FAILED_CRAWL_STATUSES = frozenset({520, 525})
EMPTY_PAGE_STATUS = 207
# Crawlbase billing: charged only when pc/cb_status is 200 and the origin said one of these.
_BILLED_ORIGINAL_STATUSES = frozenset({200, 201, 204, 301, 302, 404, 410})
_CREDITS = {"normal": 1.0, "javascript": 2.0}
_STORE_CREDITS = 0.5

DEFAULT_RETRY = RetryPolicy()

# A ``.pdf`` URL is asked for as the file (no ``format=md``: it converts HTML) with the
# origin's headers (``get_headers=true``: its Content-Type). docs/verification.md, "PDF
# sources", says what the Crawling API is assumed to answer where its docs are silent.
PDF_PARAMS = (("get_headers", "true"),)


def base_url_from(environ: Mapping[str, str]) -> str:
    """The Crawling API's base URL: ``CITECHECK_CRAWLBASE_URL`` when set, else Crawlbase's."""
    return environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL


# A reply answered from a Crawler delivery (large_audit/delivery_transport.py) names its rid here:
# the page was crawled once, by the Crawler, whatever the fetcher asks after it.
CRAWLER_RID_HEADER = "citecheck-crawler-rid"


def credits_for(
    kind: TokenKind, cb_status: int | None, original_status: int | None, store: bool = True
) -> float:
    """What one Crawling API call costs (``store=true`` adds 0.5 when billed; a
    Crawler push stores nothing)."""
    if cb_status != 200 or original_status not in _BILLED_ORIGINAL_STATUSES:
        return 0.0
    return _CREDITS[kind] + (_STORE_CREDITS if store else 0.0)


# -- one API reply, interpreted ------------------------------------------------


@dataclass
class _Reply:
    """One Crawling API call and what it answered (``status_code`` 0: no reply)."""

    kind: TokenKind
    readability: bool
    status_code: int
    text: str = ""
    original_status: int | None = None
    cb_status: int | None = None
    final_url: str | None = None
    rid: str | None = None
    failure: str | None = None  # why there is no usable reply, for humans
    stopped: str | None = None  # why a reply asked to be retried was not (Sent.stopped)
    # The Crawler's rid when the reply is a Crawler delivery (billed once, no storage).
    crawler_rid: str | None = None
    # The body when it is a PDF (stages/pdf.py): bytes, never decoded as text.
    pdf: bytes | None = None

    @property
    def chars(self) -> int:
        return non_whitespace_chars(self.text)

    def record(self) -> Fetch:
        return Fetch(
            token=self.kind,
            readability=self.readability,
            status_code=self.status_code,
            original_status=self.original_status,
            cb_status=self.cb_status,
            final_url=self.final_url,
            rid=self.rid,
            non_whitespace_chars=self.chars,
            credits=credits_for(
                self.kind, self.cb_status, self.original_status, store=self.crawler_rid is None
            ),
        )


@dataclass
class _Escalate:
    """The normal token cannot get this page; the JavaScript token might."""

    why: str
    failed: bool  # 520/525: the crawl failed (as opposed to an empty or thin page)
    # A challenge a browser passes: the normal reply, the page if JavaScript fails too.
    blocked: _Reply | None = None


@dataclass
class _Crawl:
    """The state of fetching one URL: every reply so far, in order."""

    url: str
    replies: list[_Reply] = field(default_factory=list)

    @property
    def fetches(self) -> list[Fetch]:
        out: list[Fetch] = []
        delivered: set[str] = set()
        for reply in self.replies:
            fetch = reply.record()
            if reply.crawler_rid is not None:
                # Asked again (thin, JavaScript), the same delivery answers: crawled once.
                if reply.crawler_rid in delivered:
                    fetch = fetch.model_copy(update={"credits": 0.0})
                delivered.add(reply.crawler_rid)
            out.append(fetch)
        return out

    def page(self, reply: _Reply) -> FetchResult:
        """The raw page ``reply`` gave, for the page rules to read (a PDF's bytes as such)."""
        if reply.pdf is not None:
            return replace(self.result(reply), pdf=reply.pdf)
        return self.result(reply, text=reply.text)

    def failed(self, reply: _Reply | None, detail: str) -> FetchResult:
        """The crawl failed: an ``error`` (a failure never counts as a page)."""
        return self.result(reply, label=Label.ERROR, reason=Reason.CRAWL_FAILED, detail=detail)

    def result(
        self,
        reply: _Reply | None,
        *,
        text: str | None = None,
        label: Label | None = None,
        reason: str | None = None,
        detail: str | None = None,
    ) -> FetchResult:
        """A result carrying the metadata of the reply that decided it."""
        return FetchResult(
            url=self.url,
            text=text,
            label=label,
            reason=reason,
            detail=detail,
            final_url=reply.final_url if reply else None,
            original_status=reply.original_status if reply else None,
            rid=reply.rid if reply else None,
            fetches=self.fetches,
        )


def _int_header(headers: Mapping[str, str], name: str) -> int | None:
    value = headers.get(name)
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


def _final_url(headers: Mapping[str, str]) -> str | None:
    value = headers.get("url")
    if not value:
        return None
    # Some copies of the docs show the header still percent-encoded.
    if "://" not in value and "://" in unquote(value):
        value = unquote(value)
    return value


def _rid(headers: Mapping[str, str]) -> str | None:
    rid = headers.get("rid")
    if rid:
        return rid
    storage_url = headers.get("storage_url")
    if storage_url:
        rids = parse_qs(urlsplit(storage_url).query).get("rid")
        if rids and rids[0]:
            return rids[0]
    return None


# -- the fetcher ---------------------------------------------------------------


class CrawlbaseFetcher:
    """Fetches URL citations through the Crawling API (docs/architecture.md, "A claim's path").

    ``token``/``js_token`` are the Normal and JavaScript tokens. A missing one raises
    :class:`ConfigurationError` when it is needed, unless ``require_tokens`` is False
    (replaying recordings: the cassette stores the token as a placeholder, sent instead).
    """

    def __init__(
        self,
        *,
        token: str | None,
        js_token: str | None,
        require_tokens: bool = True,
        base_url: str = DEFAULT_BASE_URL,
        client: httpx.Client | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        timeout: float = 90.0,
        terms: Terms = NEUTRAL,
        pdf_fetch: str = DEFAULT_PDF_FETCH,
        direct: DirectPdfFetcher | None = None,
    ) -> None:
        self.terms = terms
        # How a ``.pdf`` URL is fetched: the API, or ``direct`` (stages/pdf_fetch.py).
        self.pdf_fetch = pdf_fetch
        self.direct = direct
        self._tokens: dict[TokenKind, str | None] = {
            "normal": token or None,
            "javascript": js_token or None,
        }
        self.require_tokens = require_tokens
        self.base_url = base_url
        self.timeout = timeout
        self._client = client if client is not None else httpx.Client(timeout=timeout)
        self._owns_client = client is None
        # Only what the Crawling API calls transient is retried: a 520 goes
        # to the JavaScript token at once instead of burning retries.
        transient = frozenset(retry.retry_statuses) & CRAWL_TRANSIENT_STATUSES
        self.retry = replace(retry, retry_statuses=transient)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **kw: Any) -> CrawlbaseFetcher:
        """Build from ``CRAWLBASE_TOKEN``, ``CRAWLBASE_JS_TOKEN`` and, when set,
        ``CITECHECK_CRAWLBASE_URL`` (the API's base URL); ``kw`` go to the constructor."""
        env = os.environ if environ is None else environ
        kw.setdefault("base_url", base_url_from(env))
        return cls(
            token=env.get(TOKEN_ENV["normal"]) or None,
            js_token=env.get(TOKEN_ENV["javascript"]) or None,
            **kw,
        )

    def close(self) -> None:
        """Close the HTTP client if this fetcher created it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> CrawlbaseFetcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the rules -----------------------------------------------------------

    def fetch(self, url: str) -> FetchResult:
        crawl = _Crawl(url)
        if is_pdf(url):
            fetched = self._fetch_pdf(crawl)
            if fetched is not None:
                return fetched
        normal = self._crawl_with(crawl, "normal")
        if isinstance(normal, FetchResult):
            return normal
        if normal.blocked is not None and not self._has_token("javascript"):
            # Worth a JavaScript fetch only when there is a token for it.
            return crawl.page(normal.blocked)
        rendered = self._crawl_with(crawl, "javascript", after=normal)
        if isinstance(rendered, FetchResult):
            return rendered
        if normal.blocked is not None:
            # The JavaScript token did not get past the challenge either.
            return crawl.page(normal.blocked)
        if rendered.failed:
            last = crawl.replies[-1]
            return crawl.failed(
                last,
                f"The JavaScript crawl failed ({rendered.why}) after the normal one "
                f"gave no usable page ({normal.why}).",
            )
        # Thin or empty with both tokens: keep the richest reply (the latest on a tie).
        best = max(reversed(crawl.replies), key=lambda r: r.chars)
        if best.chars == 0:
            return crawl.result(
                crawl.replies[-1],
                label=Label.NOT_FOUND,
                reason=Reason.EMPTY_PAGE,
                detail="The page has no text, not even rendered with JavaScript.",
            )
        return crawl.page(best)

    def _crawl_with(
        self, crawl: _Crawl, kind: TokenKind, after: _Escalate | None = None
    ) -> FetchResult | _Escalate:
        """Steps 1-2 with one token: readability first, without it if thin."""
        outcome = self._interpret(crawl, self._call(crawl, kind, True, after))
        if isinstance(outcome, _Reply):  # thin
            outcome = self._interpret(crawl, self._call(crawl, kind, False, after))
            if isinstance(outcome, _Reply):
                thin = "empty" if outcome.chars == 0 else f"still under {THIN_CHARS} characters"
                return _Escalate(f"{thin} without readability", failed=False)
        return outcome

    def _interpret(self, crawl: _Crawl, reply: _Reply) -> FetchResult | _Escalate | _Reply:
        """One reply: the page to hand to the rules (the crawl ends), a crawl error, a
        reason to escalate, or a thin reply (fetch it again)."""
        if reply.failure is not None:
            return crawl.failed(
                reply,
                f"The Crawling API could not crawl the page: {reply.failure}.",
            )
        if is_gone(reply.original_status):
            return crawl.page(reply)  # gone: no other crawl brings it back
        if reply.status_code in FAILED_CRAWL_STATUSES:
            return _Escalate(f"HTTP {reply.status_code} from the Crawling API", failed=True)
        if reply.cb_status in FAILED_CRAWL_STATUSES and 200 <= reply.status_code < 300:
            return _Escalate(
                f"cb_status {reply.cb_status} in an HTTP {reply.status_code} reply", failed=True
            )
        if reply.pdf is not None and 200 <= reply.status_code < 300:
            return crawl.page(reply)  # a PDF whatever its URL said: its text is extracted
        if not 200 <= reply.status_code < 300:
            if reply.stopped is not None:
                why = f": {reply.stopped}."
            elif reply.status_code in self.retry.retry_statuses:
                why = " after retries."
            else:
                why = "."
            return crawl.failed(
                reply,
                f"The Crawling API answered HTTP {reply.status_code}{why}",
            )
        if redirected_to_homepage(crawl.url, reply.final_url):
            return crawl.page(reply)  # the homepage is not the page, however rendered
        blocked = blocked_page(reply.text, reply.original_status)
        if blocked is not None:
            if blocked.browser_passes and reply.kind == "normal":
                return _Escalate(blocked.why, failed=False, blocked=reply)
            return crawl.page(reply)  # a wall: fetching again does not pass it
        if paywall_signal(reply.text, reply.original_status) is not None:
            return crawl.page(reply)  # a paywall: no token or retry gets past it
        if reply.cb_status == EMPTY_PAGE_STATUS:
            return _Escalate("cb_status 207: the site answered with an empty page", failed=False)
        if reply.cb_status is not None and reply.cb_status != 200:
            return crawl.failed(
                reply,
                f"The Crawling API could not crawl the page (cb_status {reply.cb_status}"
                f", original_status {reply.original_status}).",
            )
        # Thin first (re-crawling comes before the soft-404 rule): a thin page is fetched
        # again before the rules read its text as a "not found" template.
        if reply.chars < THIN_CHARS:
            return reply
        return crawl.page(reply)

    # -- PDFs (stages/pdf.py) -------------------------------------------------

    def _fetch_pdf(self, crawl: _Crawl) -> FetchResult | None:
        """A ``.pdf`` URL: one call for the file itself (no ``format=md``, which renders
        HTML; ``get_headers`` for the origin's ``Content-Type``), or a direct download
        when ``pdf_fetch`` says so. None: the reply is not a PDF after all (an HTML
        landing page), so the page is crawled as any page is."""
        if self.pdf_fetch == "direct" and self.direct is not None:
            return self.direct.fetch(crawl.url)
        reply = self._call(crawl, "normal", False, None, as_pdf=True)
        if reply.failure is not None:
            return crawl.failed(
                reply, f"The Crawling API could not crawl the PDF: {reply.failure}."
            )
        if is_gone(reply.original_status) or reply.pdf is not None:
            return crawl.page(reply)
        if reply.status_code in FAILED_CRAWL_STATUSES or reply.cb_status in FAILED_CRAWL_STATUSES:
            return None  # the page path escalates a failed crawl as it does for a page
        if not 200 <= reply.status_code < 300:
            return crawl.failed(reply, f"The Crawling API answered HTTP {reply.status_code}.")
        return None

    # -- the wire ------------------------------------------------------------

    def _has_token(self, kind: TokenKind) -> bool:
        return self._tokens[kind] is not None or not self.require_tokens

    def _token(self, kind: TokenKind, why: _Escalate | None) -> str:
        token = self._tokens[kind]
        if token is not None:
            return token
        if not self.require_tokens:
            return TOKEN_PLACEHOLDERS[kind]
        env = TOKEN_ENV[kind]
        if kind == "javascript":
            reason = f" ({why.why})" if why else ""
            raise ConfigurationError(
                f"{env} is not set: this page needs JavaScript rendering{reason}. "
                f"Set {env} to your Crawlbase JavaScript token."
            )
        raise ConfigurationError(
            f"{env} is not set: set it to your Crawlbase Normal token to fetch URL citations"
            f"{self.terms.replay_hint('or replay committed recordings with')}."
        )

    def _call(
        self,
        crawl: _Crawl,
        kind: TokenKind,
        readability: bool,
        after: _Escalate | None,
        *,
        as_pdf: bool = False,
    ) -> _Reply:
        token = self._token(kind, after)
        # Like the SDK: token, then the options, ``url`` last.
        if as_pdf:
            options: tuple[tuple[str, str], ...] = PDF_PARAMS
        else:
            options = (("format", "md"), *((("md_readability", "true"),) if readability else ()))
        params = (("token", token), *options, ("store", "true"), ("url", crawl.url))
        request = self._client.build_request(
            "GET", self.base_url, params=params, timeout=self.timeout
        )
        try:
            sent = send(self._client, request, self.retry)
        except GaveUp as exc:
            reply = _Reply(
                kind,
                readability,
                status_code=0,
                failure=scrub(
                    f"not sent: {exc.error}"
                    if exc.attempts == 0  # the deadline ran out waiting for a slot
                    else f"no reply after {exc.attempts} tries ({transport_text(exc.error)})",
                    extra=[token],
                ),
            )
            crawl.replies.append(reply)
            return reply
        response = sent.response
        if response.status_code in _CONFIGURATION_STATUSES:
            raise ConfigurationError(
                self._configuration_message(response.status_code, kind, crawl.url)
            )
        headers = response.headers
        cb_status = _int_header(headers, "cb_status")
        pdf = pdf_reply(response.is_success, response.content, response.headers)
        reply = _Reply(
            kind,
            readability and not as_pdf,
            status_code=response.status_code,
            text=response.text if response.is_success and pdf is None else "",
            pdf=pdf,
            original_status=_int_header(headers, "original_status"),
            cb_status=cb_status if cb_status is not None else _int_header(headers, "pc_status"),
            final_url=_final_url(headers),
            rid=_rid(headers),
            stopped=sent.stopped,
            crawler_rid=headers.get(CRAWLER_RID_HEADER),
        )
        crawl.replies.append(reply)
        return reply

    def _configuration_message(self, status: int, kind: TokenKind, url: str) -> str:
        env = TOKEN_ENV[kind]
        placeholder = self._tokens[kind] is None
        if status == 401:
            if placeholder:
                return (
                    f"The Crawling API rejected the request (HTTP 401): {env} is not set, "
                    f"so a placeholder was sent. Set {env} to record, or replay the "
                    "committed recordings."
                )
            return (
                f"The Crawling API rejected the token in {env} (HTTP 401): check that {env} "
                f"holds your Crawlbase {'JavaScript' if kind == 'javascript' else 'Normal'} "
                "token."
            )
        if status == 402:
            return (
                f"The Crawlbase account of the token in {env} is out of credits (HTTP 402): "
                "add credits or use another token."
            )
        if status == 403:
            other = TOKEN_ENV["normal" if kind == "javascript" else "javascript"]
            return (
                f"The Crawling API refused the token in {env} (HTTP 403): it is not valid for "
                f"this product; check that {env} and {other} are not swapped."
            )
        return (
            f"The Crawling API rejected the URL {scrub(url)!r} sent with {env} (HTTP 422): "
            "check that the citation is a complete http(s) URL."
        )
