"""A loopback double of the Crawlbase Crawling API (and a little of the Storage API).

Speaks the Crawling API's reply format (``format=md``): status in the
``original_status``, ``pc_status`` and ``cb_status`` headers, the final URL in
``url``, ``storage_url`` and ``rid`` when ``store=true``; non-2xx replies have
an empty body, except 429 (``Retry-After`` and the documented JSON body).

Usage::

    with CrawlbaseDouble() as api:  # tokens: DEFAULT_TOKENS
        api.add("https://example.com/a", Page(markdown=LONG_ARTICLE))
        api.add("https://example.com/spa", Page(http_status=520, js=Page(markdown=LONG)))
        fetcher = CrawlbaseFetcher(token=api.tokens["normal"],
                                   js_token=api.tokens["javascript"], base_url=api.base_url)
        fetcher.fetch("https://example.com/a")
        assert [c.kind for c in api.calls] == ["normal"]

Every request is logged in :attr:`CrawlbaseDouble.calls` (token value, the
token kind it matched, the query parameters, the status answered). A token
that matches none of ``tokens`` gets 401; a URL with no page registered gets
HTTP 404 with a JSON ``error`` naming the URL, so a forgotten ``add`` shows up
as a failed crawl rather than a hang. The server listens on 127.0.0.1 only.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qsl, urlencode, urlsplit

from tests.doubles import PAID, LoopbackServer, QuietHandler

DEFAULT_TOKENS: Mapping[str, str] = {
    "normal": "double-normal-token-0123",
    "javascript": "double-js-token-4567",
}
STORAGE_BASE = "https://api.crawlbase.com/storage"
# Where the double serves the pictures ``screenshot=true`` takes (no token needed: the
# real API answers a short-lived link to its own storage).
SHOTS_PATH = "/screenshots/"


def png(width: int = 4, height: int = 3, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A real (tiny, one-colour) PNG a browser draws: the double's screenshot."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


RATE_LIMIT_BODY = {"error": "Concurrency limit reached", "limit": 20}
# A failed crawl (520) or an unsolved anti-bot challenge (525): the body is empty.
FAILED_CRAWL = frozenset({520, 525})


@dataclass(frozen=True)
class Page:
    """What the Crawling API answers for one target URL (with one token kind).

    ``markdown`` is the body with ``md_readability=true``; ``full_markdown`` the
    body without it (defaults to ``markdown``). ``js`` is what the JavaScript
    token gets (defaults to this same page). ``http_status`` is the API's own
    status (520/525 failed crawl, 401/402/403/422, 500...); ``pc_status`` goes in
    both ``pc_status`` and ``cb_status`` (``legacy_status_only`` sends
    ``pc_status`` alone; ``cb_status`` sends another value in ``cb_status``).

    A failed crawl has two shapes:
    ``http_status=520`` (or 525) with an empty body, or a 200 with
    ``pc_status=520`` (or 525) and an empty body whatever ``markdown`` says.

    ``transient`` lists statuses answered first, one per call, before the page
    (429 carries ``Retry-After: retry_after``). ``rid`` defaults to a stable
    hash of URL, token kind and readability; ``send_rid_header`` and
    ``send_storage_url`` drop either way of telling it.
    """

    markdown: str = ""
    full_markdown: str | None = None
    js: Page | None = None
    original_status: int = 200
    final_url: str | None = None
    http_status: int = 200
    pc_status: int = 200
    cb_status: int | None = None
    legacy_status_only: bool = False
    transient: tuple[int, ...] = ()
    retry_after: str | None = "0"
    rid: str | None = None
    send_rid_header: bool = True
    send_storage_url: bool = True
    # A PDF file (the origin serves application/pdf). The Crawling API's docs do not say
    # what it answers for one; this double assumes (docs/verification.md, "PDF sources")
    # it passes the file through unchanged, with or without ``format=md``, its
    # Content-Type ``application/pdf``, and with ``get_headers=true`` the origin's
    # headers prefixed ``original_`` (``original_content-type``).
    pdf: bytes | None = None
    # The picture ``screenshot=true`` (JavaScript token) takes of the page; None: a
    # PNG of a colour made from the URL.
    screenshot: bytes | None = None

    def body(self, readability: bool) -> str:
        if self.pc_status in FAILED_CRAWL or self.cb_status in FAILED_CRAWL:
            return ""
        if readability or self.full_markdown is None:
            return self.markdown
        return self.full_markdown


@dataclass(frozen=True)
class Call:
    """One request the double received."""

    path: str  # "/" (Crawling API) or "/storage"
    params: dict[str, str]
    token: str | None
    kind: str | None  # "normal" / "javascript" when the token matched, else None
    status: int  # the HTTP status answered
    query: str = ""  # the raw query string, exactly as received

    @property
    def url(self) -> str | None:
        return self.params.get("url")

    @property
    def readability(self) -> bool:
        return self.params.get("md_readability") == "true"

    @property
    def store(self) -> bool:
        return self.params.get("store") == "true"

    @property
    def format(self) -> str | None:
        return self.params.get("format")


@dataclass(frozen=True)
class Push:
    """One push to a Crawler, and the rid it was answered with."""

    url: str
    crawler: str
    params: dict[str, str]
    rid: str

    @property
    def echoed(self) -> dict[str, str]:
        """The ``callback_headers`` the Crawler would send back on the delivery."""
        pairs = (item.partition(":") for item in self.params.get("callback_headers", "").split("|"))
        return {name: value for name, _, value in pairs if name}


@dataclass
class _Stored:
    url: str
    page: Page
    body: str | bytes
    final_url: str
    kind: str = "normal"  # the token kind that crawled (and stored) it


@dataclass
class _State:
    tokens: dict[str, str]
    pages: dict[str, Page] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    served: dict[tuple[str, str], int] = field(default_factory=dict)
    stored: dict[str, _Stored] = field(default_factory=dict)
    pushes: list[Push] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The rate limit (None: none): requests in flight beyond it get 429 + Retry-After.
    max_concurrent: int | None = None
    # The other reading of the limit (None: none): requests started per second, a
    # bucket of that many refilled at that rate; a request finding it empty gets 429.
    max_per_second: float | None = None
    bucket: float = 0.0
    bucket_at: float = 0.0
    retry_after: str = "1"
    # Seconds each Crawling API request takes, by target URL (None: at once).
    latency: Callable[[str], float] | None = None
    in_flight: int = 0
    peak_in_flight: int = 0
    rejected: int = 0
    # Storage kept per token (Crawlbase's plugin: "Storage is per-token"): a page is
    # read back only with the token kind that stored it, 404 for the other.
    storage_per_token: bool = False
    # The pictures taken, by their link's name; ``expired``: every link answers 404.
    shots: dict[str, bytes] = field(default_factory=dict)
    shots_expired: bool = False
    base_url: str = ""

    def kind_of(self, token: str | None) -> str | None:
        for kind, value in self.tokens.items():
            if token is not None and token == value:
                return kind
        return None


_Reply = tuple[int, list[tuple[str, str]], bytes]


def _answer(state: _State, path: str, params: dict[str, str]) -> _Reply:
    if path.startswith(SHOTS_PATH):
        picture = state.shots.get(path[len(SHOTS_PATH) :])
        if picture is None or state.shots_expired:
            return 404, [], b""
        return 200, [("Content-Type", "image/png")], picture
    token = params.get("token")
    kind = state.kind_of(token)
    if kind is None:
        return 401, [], b""
    if path == "/storage":
        return _answer_storage(state, params)
    if path != "/":
        return 404, [], b""
    url = params.get("url")
    if not url or not url.startswith(("http://", "https://")):
        return 422, [], b""
    if params.get("callback") == "true" and params.get("crawler"):
        return _answer_push(state, params)
    page = state.pages.get(url)
    if page is None:
        error = {"error": f"CrawlbaseDouble: no page registered for {url}"}
        return 404, [("Content-Type", "application/json")], json.dumps(error).encode()
    if kind == "javascript" and page.js is not None:
        page = page.js
    served = state.served.get((url, kind), 0)
    state.served[(url, kind)] = served + 1
    if served < len(page.transient):
        return _transient(page, page.transient[served])
    if not 200 <= page.http_status < 300:
        return page.http_status, [], b""

    readability = params.get("md_readability") == "true"
    final_url = page.final_url or url
    body: str | bytes = page.body(readability) if page.pdf is None else page.pdf
    kind_of_body = "text/markdown; charset=utf-8" if page.pdf is None else "application/pdf"
    if params.get("format") != "md" and page.pdf is None:
        kind_of_body = "text/html; charset=utf-8"
    headers = [
        ("Content-Type", kind_of_body),
        ("original_status", str(page.original_status)),
        ("pc_status", str(page.pc_status)),
    ]
    if not page.legacy_status_only:
        cb_status = page.pc_status if page.cb_status is None else page.cb_status
        headers.append(("cb_status", str(cb_status)))
    headers.append(("url", final_url))
    if params.get("get_headers") == "true":
        headers.append(("original_content-type", kind_of_body))
    if params.get("screenshot") == "true" and kind == "javascript":
        picture = page.screenshot or png(rgb=tuple(hashlib.sha1(url.encode()).digest()[:3]))
        name = f"{hashlib.sha1(f'{url}|{len(state.shots)}'.encode()).hexdigest()[:16]}.png"
        state.shots[name] = picture
        headers.append(("screenshot_url", f"{state.base_url.rstrip('/')}{SHOTS_PATH}{name}"))
    if params.get("store") == "true":
        rid = page.rid or hashlib.sha1(f"{kind}|{readability}|{url}".encode()).hexdigest()[:20]
        state.stored[rid] = _Stored(url=url, page=page, body=body, final_url=final_url, kind=kind)
        if page.send_storage_url:
            storage_url = f"{STORAGE_BASE}?{urlencode({'token': token, 'rid': rid})}"
            headers.append(("storage_url", storage_url))
        if page.send_rid_header:
            headers.append(("rid", rid))
    return page.http_status, headers, body if isinstance(body, bytes) else body.encode()


def _answer_push(state: _State, params: dict[str, str]) -> _Reply:
    """A push to the Crawler (``callback=true&crawler=NAME``): answered at once with a
    new rid, as the Crawler's pushing page shows; the crawl itself is not played here
    (tests deliver the page themselves, from :attr:`CrawlbaseDouble.pushes`)."""
    seed = f"{params['crawler']}|{params['url']}|{len(state.pushes)}"
    rid = hashlib.sha1(seed.encode()).hexdigest()[:24]
    state.pushes.append(Push(params["url"], params["crawler"], params, rid))
    return 200, [("Content-Type", "application/json")], json.dumps({"rid": rid}).encode()


def _transient(page: Page, status: int) -> _Reply:
    if status != 429:
        return status, [], b""
    headers = [("Content-Type", "application/json; charset=utf-8")]
    if page.retry_after is not None:
        headers.append(("Retry-After", page.retry_after))
    return 429, headers, json.dumps(RATE_LIMIT_BODY).encode()


def _answer_storage(state: _State, params: dict[str, str]) -> _Reply:
    stored = state.stored.get(params.get("rid", ""))
    if stored is None or (
        state.storage_per_token and stored.kind != state.kind_of(params.get("token"))
    ):
        return 404, [], b""
    headers = [
        ("Content-Type", "text/plain"),
        ("stored_at", "2026-01-01T00:00:00+00:00"),
        ("original_status", str(stored.page.original_status)),
        ("pc_status", str(stored.page.pc_status)),
        ("rid", params["rid"]),
        ("url", stored.final_url),
    ]
    body = stored.body
    return 200, headers, body if isinstance(body, bytes) else body.encode()


class CrawlbaseDouble(LoopbackServer):
    """A Crawling API on ``http://127.0.0.1:<free port>/``; use it as a context manager.

    ``tokens`` maps token kind ("normal", "javascript") to the token value the
    double accepts; pass ``pytest_citecheck.core.secrets.TOKEN_PLACEHOLDERS`` to play
    a replay where the fetcher has no tokens.
    """

    def __init__(
        self,
        tokens: Mapping[str, str] = DEFAULT_TOKENS,
        pages: Mapping[str, Page] | None = None,
        *,
        max_concurrent: int | None = None,
        max_per_second: float | None = None,
        retry_after: str = "1",
        latency: Callable[[str], float] | None = None,
        storage_per_token: bool = False,
    ) -> None:
        """``max_concurrent``: the API's concurrency limit per double (the real one's
        is 20 per token): a request beyond it is answered 429 with ``Retry-After:
        retry_after`` and the documented body, as the rate-limit page shows.
        ``max_per_second``: the other reading of that page ("20 requests per second,
        regardless of the number of threads"): at most that many requests start in
        any second (a bucket of that many tokens, refilled at that rate), 429 beyond.
        ``latency(url)``: seconds a Crawling API request takes (outside any lock).
        ``storage_per_token``: ``/storage`` reads a page back only with the token kind
        that stored it (404 for the other), as Crawlbase's plugin says of its storage."""
        super().__init__()
        self._state = _State(
            tokens=dict(tokens),
            pages=dict(pages or {}),
            max_concurrent=max_concurrent,
            max_per_second=max_per_second,
            bucket=max_per_second or 0.0,
            bucket_at=time.monotonic(),
            retry_after=retry_after,
            latency=latency,
            storage_per_token=storage_per_token,
        )

    @property
    def peak_in_flight(self) -> int:
        """The most Crawling API requests that were in flight at once."""
        with self._state.lock:
            return self._state.peak_in_flight

    @property
    def rejected(self) -> int:
        """Requests answered 429 for going over ``max_concurrent`` or
        ``max_per_second``."""
        with self._state.lock:
            return self._state.rejected

    # -- scenarios -------------------------------------------------------------

    @property
    def tokens(self) -> dict[str, str]:
        return dict(self._state.tokens)

    def add(self, url: str, page: Page) -> Page:
        """Register (or replace) what the API answers for target ``url``."""
        with self._state.lock:
            self._state.pages[url] = page
        return page

    @property
    def calls(self) -> list[Call]:
        """Every request received so far, in order (a copy)."""
        with self._state.lock:
            return list(self._state.calls)

    @property
    def pushes(self) -> list[Push]:
        """The pushes to a Crawler (``callback=true``) answered with a rid, in order."""
        with self._state.lock:
            return list(self._state.pushes)

    @property
    def api_calls(self) -> list[Call]:
        """The Crawling API requests (path ``/``), without Storage API ones."""
        return [c for c in self.calls if c.path == "/"]

    def calls_for(self, url: str) -> list[Call]:
        """The Crawling API requests made for target ``url``."""
        return [c for c in self.api_calls if c.url == url]

    def reset(self) -> None:
        """Forget the calls and the transient and rate-limit counters (pages stay
        registered)."""
        with self._state.lock:
            self._state.calls.clear()
            self._state.served.clear()
            self._state.rejected = self._state.peak_in_flight = 0
        PAID.forget(self.ledger_name)

    # -- the server ------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def screenshot_calls(self) -> list[Call]:
        """The Crawling API requests that asked for a picture (``screenshot=true``)."""
        return [c for c in self.api_calls if c.params.get("screenshot") == "true"]

    @property
    def downloads(self) -> list[Call]:
        """The downloads of the pictures' links."""
        return [c for c in self.calls if c.path.startswith(SHOTS_PATH)]

    def expire_screenshots(self) -> None:
        """Every picture's link expires (404), as the real ones do after about an hour."""
        with self._state.lock:
            self._state.shots_expired = True

    def handler(self) -> type[BaseHTTPRequestHandler]:
        state = self._state
        double = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                split = urlsplit(self.path)
                params = dict(parse_qsl(split.query, keep_blank_values=True))
                path = split.path or "/"
                token = params.get("token")
                if not state.base_url:
                    state.base_url = double.base_url
                if path == "/":  # a crawl (Storage reads are not billed)
                    double.paid("GET /", split.query.encode())
                if path == "/" and not self._admit():
                    with state.lock:
                        kind = state.kind_of(token)
                        state.calls.append(Call(path, params, token, kind, 429, split.query))
                    headers = [
                        ("Content-Type", "application/json; charset=utf-8"),
                        ("Retry-After", state.retry_after),
                        ("X-Crawlbase-Concurrency", str(state.max_concurrent)),
                    ]
                    self.reply(429, headers, json.dumps(RATE_LIMIT_BODY).encode())
                    return
                try:
                    if path == "/" and state.latency is not None:
                        time.sleep(state.latency(params.get("url", "")))
                    with state.lock:
                        status, headers, body = _answer(state, path, params)
                        kind = state.kind_of(token)
                        state.calls.append(Call(path, params, token, kind, status, split.query))
                finally:
                    if path == "/":
                        with state.lock:
                            state.in_flight -= 1
                self.reply(status, headers, body)

            def _admit(self) -> bool:
                with state.lock:
                    if state.max_concurrent is not None and state.in_flight >= state.max_concurrent:
                        state.rejected += 1
                        return False
                    if state.max_per_second is not None:
                        now = time.monotonic()
                        state.bucket = min(
                            state.max_per_second,
                            state.bucket + (now - state.bucket_at) * state.max_per_second,
                        )
                        state.bucket_at = now
                        if state.bucket < 1:
                            state.rejected += 1
                            return False
                        state.bucket -= 1
                    state.in_flight += 1
                    state.peak_in_flight = max(state.peak_in_flight, state.in_flight)
                    return True

        return Handler
