"""Pushing a citation's URL to Crawlbase's Crawler.

A push is a Crawling API GET with two more parameters, ``callback=true`` and
``crawler=NAME``; it answers at once with ``{"rid": "..."}`` and the Crawler crawls
the page later, on its own fleet, then POSTs it to the user's webhook. The push asks
for what the synchronous fetcher's first call asks for (``format=md`` with
``md_readability``), so the delivered page is the page a synchronous recording reads;
``callback_headers`` carries what the caller asks to be echoed on the delivery (a
job's and a citation's ids: a delivery whose push answer was lost still finds its
citation by them).

A push's outcome says what a resume may do with it:

- ``accepted`` -- answered with a rid;
- ``not_sent`` / ``refused`` with ``retry`` -- certainly not queued at Crawlbase (no
  connection, or 429/503): it may be pushed again;
- ``refused`` without ``retry`` -- the API turned the URL down (422, other 4xx): pushing
  it again gets the same answer; ``fatal`` when it is about the token (401/402/403);
- ``ambiguous`` -- the request went out and no clear answer came back (a read timeout, a
  dropped connection, a gateway error, a 200 without a rid): it may be queued, so it is
  never pushed again; its delivery binds by the echoed citation id.

A Crawler is created for one token: a TCP Crawler takes pushes with the Normal token,
a JavaScript Crawler (its pages rendered in a browser) with the JavaScript token; a
:class:`CrawlerPusher` pushes with the token of its ``kind``.

Secrets: the token rides in the query string; no outcome, message or log line holds it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from pytest_citecheck.core.defaults import DEFAULT_CRAWLER_PUSH_RATE
from pytest_citecheck.core.providers import TOKEN_ENV, TokenKind
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.core.urls import fetch_url
from pytest_citecheck.stages.fetch import DEFAULT_BASE_URL, base_url_from

# The Crawler's default push rate (``--crawler-push-rate``).
PUSH_RATE = DEFAULT_CRAWLER_PUSH_RATE
# Seconds a push may take: it answers at once with a rid, the crawl comes later.
PUSH_TIMEOUT = 30.0
# Answers that say the push was not queued and may be tried again later.
_NOT_QUEUED_STATUSES = frozenset({429, 503})
# Answers about the token, not the URL: every other push would get the same.
_TOKEN_STATUSES = frozenset({401, 402, 403})

Outcome = Literal["accepted", "not_sent", "refused", "ambiguous"]


@dataclass(frozen=True)
class PushResult:
    """What one push did (see the module docstring)."""

    outcome: Outcome
    rid: str | None = None
    status: int | None = None
    detail: str = ""
    retry: bool = False  # not queued, and worth pushing again
    fatal: bool = False  # the token is refused: no push of this job can succeed


class PushRate:
    """At most ``per_second`` pushes each second, shared by every push thread."""

    def __init__(
        self,
        per_second: float = PUSH_RATE,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if per_second <= 0:
            raise ValueError("the push rate must be positive")
        self.interval = 1.0 / per_second
        self._clock = clock
        self._sleep = sleep
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        """Return when the next push may go."""
        with self._lock:
            now = self._clock()
            at = max(now, self._next)
            self._next = at + self.interval
        if at > now:
            self._sleep(at - now)


def callback_headers(echo: Mapping[str, str]) -> str:
    """The ``callback_headers`` value: ``NAME:VALUE|NAME:VALUE``. Raises ValueError for
    a name or value the format cannot carry (a ``:`` in a name, a ``|`` anywhere)."""
    for name, value in echo.items():
        if ":" in name or "|" in name or "|" in value or not name:
            raise ValueError(f"callback header {name!r}: {value!r} cannot be echoed")
    return "|".join(f"{name}:{value}" for name, value in echo.items())


class CrawlerPusher:
    """Pushes URLs to one Crawler with the token of ``kind``: the Normal token
    (``CRAWLBASE_TOKEN``) for a TCP Crawler, the JavaScript token
    (``CRAWLBASE_JS_TOKEN``) for a JavaScript Crawler."""

    def __init__(
        self,
        *,
        token: str,
        crawler: str,
        base_url: str = DEFAULT_BASE_URL,
        client: httpx.Client | None = None,
        timeout: float | None = None,
        kind: TokenKind = "normal",
    ) -> None:
        self._token = token
        self.crawler = crawler
        self.kind: TokenKind = kind
        self.base_url = base_url
        self.timeout = PUSH_TIMEOUT if timeout is None else timeout
        self._client = client if client is not None else httpx.Client(timeout=self.timeout)
        self._owns_client = client is None
        # Its own client sends through httpcore, which reports when the request's
        # headers are about to be written; a caller's may not.
        self._traced = client is None

    @classmethod
    def from_env(
        cls,
        crawler: str,
        environ: Mapping[str, str] | None = None,
        kind: TokenKind = "normal",
        **kw: Any,
    ) -> CrawlerPusher:
        """Built from ``CRAWLBASE_TOKEN`` (``CRAWLBASE_JS_TOKEN`` for ``kind``
        ``javascript``) and, when set, ``CITECHECK_CRAWLBASE_URL``. Raises ValueError
        naming the variable (never a value) when the token is unset."""
        env = os.environ if environ is None else environ
        token = env.get(TOKEN_ENV[kind])
        if not token:
            which = (
                "a JavaScript Crawler needs your Crawlbase JavaScript token"
                if kind == "javascript"
                else "the Crawler needs your Crawlbase Normal token"
            )
            raise ValueError(f"{TOKEN_ENV[kind]} is not set: pushing to {which}")
        kw.setdefault("base_url", base_url_from(env))
        return cls(token=token, crawler=crawler, kind=kind, **kw)

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def push(
        self,
        url: str,
        echo: Mapping[str, str],
        about_to_send: Callable[[], None] | None = None,
    ) -> PushResult:
        """Push ``url`` (its fetch key, :func:`~pytest_citecheck.core.urls.fetch_url`:
        a fragment is never pushed), asking the Crawler to send ``echo`` back as headers
        of its delivery; never raises for what the network or the API did.

        ``about_to_send`` is called once, as late as possible before the first byte of
        the request may leave: when the connection is open and the request's headers
        are about to be written (httpcore's ``trace`` extension), so a process killed
        while it waited for a slot, connected or wrote down that it was sending knows,
        on resume, that the push never left. With a client whose transport reports no
        such event (a test's), it is called right before the request is handed over."""
        called = False

        def mark() -> None:
            nonlocal called
            if not called:
                called = True
                if about_to_send is not None:
                    about_to_send()

        def trace(event: str, info: Mapping[str, Any]) -> None:
            if event.endswith(".send_request_headers.started"):
                mark()

        params = (
            ("token", self._token),
            ("format", "md"),
            ("md_readability", "true"),
            ("callback", "true"),
            ("crawler", self.crawler),
            ("callback_headers", callback_headers(echo)),
            ("url", fetch_url(url)),
        )
        request = self._client.build_request(
            "GET",
            self.base_url,
            params=params,
            timeout=self.timeout,
            extensions={"trace": trace} if self._traced else None,
        )
        if not self._traced:
            mark()
        try:
            response = self._client.send(request)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            if called and self._traced:  # not before the headers: kept as "may be queued"
                return PushResult("ambiguous", detail=self._text(f"no answer: {exc}"))
            return PushResult("not_sent", detail=self._text(f"not sent: {exc}"), retry=True)
        except httpx.TransportError as exc:
            # The request may have reached the API: never pushed again.
            why = type(exc).__name__
            return PushResult("ambiguous", detail=self._text(f"no answer after sending ({why})"))
        mark()  # answered: it left (a transport with no trace reported nothing)
        return self._read(response)

    def _read(self, response: httpx.Response) -> PushResult:
        status = response.status_code
        if status == 200:
            rid = _rid_of(response)
            if rid is not None:
                return PushResult("accepted", rid=rid, status=status)
            return PushResult(
                "ambiguous", status=status, detail="HTTP 200 without a rid: the push may be queued"
            )
        if status in _NOT_QUEUED_STATUSES:
            return PushResult(
                "refused", status=status, detail=f"HTTP {status}: not queued", retry=True
            )
        env = TOKEN_ENV[self.kind]
        if status in _TOKEN_STATUSES:
            return PushResult(
                "refused",
                status=status,
                fatal=True,
                detail=f"the Crawling API refused the token in {env} (HTTP {status}) for "
                f"a push to the Crawler {self.crawler!r}: check the token, the account's "
                "credits, and that the Crawler exists for this token",
            )
        if 400 <= status < 500:
            return PushResult("refused", status=status, detail=f"HTTP {status}: URL refused")
        # A gateway error may come after the API queued the push.
        return PushResult(
            "ambiguous", status=status, detail=f"HTTP {status}: the push may be queued"
        )

    def _text(self, text: str) -> str:
        return scrub(text, extra=[self._token])


def _rid_of(response: httpx.Response) -> str | None:
    try:
        body = json.loads(response.content)
    except ValueError:
        return None
    rid = body.get("rid") if isinstance(body, dict) else None
    return rid if isinstance(rid, str) and rid else None
