"""A loopback double of Crawlbase's Crawler: the push and the deliveries to a webhook.

Written from crawlbase.com/docs/crawler (pushing, receiving) and its FAQ. A push is a
Crawling API GET with ``callback=true&crawler=NAME``; it answers at once
``{"rid": "..."}`` and the Crawler crawls the page later, then POSTs it to the
webhook URL its crawler was created with:

- gzip-compressed (``Content-Encoding: gzip``); ``format=html`` (the default, and
  any format but ``json`` here) sends ``Content-Type: text/plain``, the page as the
  body and the headers ``Original-Status``, ``PC-Status``, ``rid`` and ``url``;
  ``format=json`` sends ``Content-Type: gzip/json`` and the body
  ``{"pc_status", "original_status", "rid", "url", "body"}`` (its statuses and rid
  in the body only, as the docs' example shows);
- plus every ``callback_headers=NAME:VALUE|NAME2:VALUE2`` header of the push, echoed;
- an answer other than 200/201/204 (or none: a refused connection, a timeout)
  makes the Crawler crawl the page again and deliver it again, which is charged:
  :attr:`CrawlerDouble.retries` counts those, :attr:`CrawlerDouble.credits` every
  crawl (pushes plus retries); after ``max_retries`` (the FAQ's 110) it gives up;
- the monitor bot POSTs a JSON body like a ``format=json`` delivery with
  ``User-Agent: Crawlbase Monitoring Bot 1.0``; an answer other than 2xx pauses the
  Crawler's deliveries until a later monitor call gets one (as the FAQ describes
  a webhook that is down).

Usage::

    with CrawlerDouble({"nightly": webhook_url}, scale=0.01) as crawler:
        crawler.add("https://example.com/a", Page(markdown=ARTICLE), delay=5.0)
        crawler.add("https://example.com/b", Page(markdown=OTHER), copies=2)
        crawler.add("https://example.com/c", Page(markdown=THIRD), lose_answer=0.5)
        reply = httpx.get(crawler.base_url, params={
            "token": crawler.tokens["normal"], "url": "https://example.com/a",
            "callback": "true", "crawler": "nightly",
            "callback_headers": "Citecheck-Job:nightly|Citecheck-Citation:c1#1"})
        reply.json()["rid"]
        assert crawler.wait_idle(timeout=10)
        crawler.attempts  # every POST to a webhook, monitor calls included

A Crawler is created for one token (the docs: a TCP Crawler for the Normal token, a
JavaScript Crawler for the JavaScript token); ``js_crawlers`` names the JavaScript
ones. A JavaScript Crawler delivers the page rendered (its ``Page.js``, the page
itself when there is none); a push whose token is not its Crawler's kind is 404
``crawler not found`` (the docs do not show this answer: it is the double's).

Per URL (:meth:`CrawlerDouble.add`): the :class:`~tests.doubles.crawlbase.Page` that
is delivered (``markdown``, with ``md_readability=true`` in the push, else
``full_markdown``; ``original_status``, ``pc_status``, ``final_url``; ``js`` for a
JavaScript Crawler), ``delay`` (seconds from push to delivery, so deliveries arrive
out of order), ``copies`` (2 or more: the same result delivered again, as a
Crawler may), ``lose_answer`` (the push is taken and crawled, but its HTTP answer
is held that many seconds and then the connection is closed without one: the
pusher never learns the rid, the page is delivered all the same). A URL with no
page added is delivered as a failed crawl (``pc_status`` 520, empty body).

Every time but ``lose_answer`` (which plays against the pusher's real timeout) is
multiplied by ``scale`` (``delay``, ``latency(url)``, ``retry_wait``,
``monitor_every``), so documented latencies run in a fraction of real time. Pushes
beyond ``pushes_per_second`` (the docs' default, 30) in the last second get 429
with a JSON ``error`` (the docs name the limit, not its answer: this one is the
double's). An unknown token is 401, an unknown crawler 404, a push without
``callback=true`` or an ``http(s)`` ``url`` 400, each with a JSON ``error``; the
double serves no plain Crawling API (that is :class:`~tests.doubles.crawlbase.CrawlbaseDouble`).
Every push is logged in :attr:`CrawlerDouble.pushes`. The server listens on
127.0.0.1 only and delivers to whatever webhook URL it is given (tests give loopback ones).
"""

from __future__ import annotations

import gzip
import hashlib
import heapq
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from typing import Self
from urllib.parse import parse_qsl, urlsplit

import httpx

from tests.doubles import LoopbackServer, QuietHandler
from tests.doubles.crawlbase import DEFAULT_TOKENS, Page

MONITOR_AGENT = "Crawlbase Monitoring Bot 1.0"
DEFAULT_PUSHES_PER_SECOND = 30
DEFAULT_MAX_RETRIES = 110
ACKNOWLEDGED = frozenset({200, 201, 204})
# What an unknown URL is delivered as: a crawl that failed.
FAILED_CRAWL = Page(original_status=404, pc_status=520)


@dataclass(frozen=True)
class Push:
    """One push request the double received."""

    params: dict[str, str]
    status: int  # the HTTP status answered (0: the answer was lost)
    rid: str | None  # None when the push was refused

    @property
    def url(self) -> str | None:
        return self.params.get("url")


@dataclass(frozen=True)
class Attempt:
    """One POST to a webhook: a delivery (``attempt`` 1, 2... for its retries) or a
    monitor call."""

    rid: str | None
    url: str | None
    status: int | None  # None: no answer (refused connection, timeout)
    attempt: int
    copy: int
    monitor: bool
    seconds: float  # how long the webhook took to answer

    @property
    def acknowledged(self) -> bool:
        return self.status in ACKNOWLEDGED


@dataclass(frozen=True)
class _Scenario:
    page: Page
    delay: float = 0.0
    copies: int = 1
    lose_answer: float | None = None


@dataclass(frozen=True)
class _Delivery:
    crawler: str
    rid: str
    url: str
    params: dict[str, str]
    kind: str
    page: Page
    copy: int = 1
    attempt: int = 1


@dataclass
class _State:
    tokens: dict[str, str]
    webhooks: dict[str, str]
    js_crawlers: frozenset[str]
    scale: float
    pushes_per_second: int | None
    latency: Callable[[str], float] | None
    retry_wait: float
    max_retries: int
    scenarios: dict[str, _Scenario] = field(default_factory=dict)
    pushes: list[Push] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    given_up: list[str] = field(default_factory=list)
    recent: deque[float] = field(default_factory=deque)
    retries: int = 0
    counter: itertools.count[int] = field(default_factory=itertools.count)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def kind_of(self, token: str | None) -> str | None:
        return next((k for k, v in self.tokens.items() if token and token == v), None)


def echoed_headers(spec: str | None) -> list[tuple[str, str]]:
    """``callback_headers``' ``NAME:VALUE|NAME2:VALUE2`` as header pairs."""
    pairs = []
    for item in (spec or "").split("|"):
        name, sep, value = item.partition(":")
        if sep and name.strip():
            pairs.append((name.strip(), value.strip()))
    return pairs


def delivery_request(item: _Delivery) -> tuple[bytes, list[tuple[str, str]]]:
    """What the Crawler POSTs for ``item``: the compressed body and the headers."""
    page = item.page.js if item.kind == "javascript" and item.page.js is not None else item.page
    text = page.body(item.params.get("md_readability") == "true")
    final_url = page.final_url or item.url
    if item.params.get("format") == "json":
        envelope = {
            "pc_status": page.pc_status,
            "original_status": page.original_status,
            "rid": item.rid,
            "url": final_url,
            "body": text,
        }
        headers = [("Content-Type", "gzip/json")]
        raw = json.dumps(envelope).encode()
    else:
        headers = [
            ("Content-Type", "text/plain"),
            ("Original-Status", str(page.original_status)),
            ("PC-Status", str(page.pc_status)),
            ("rid", item.rid),
            ("url", final_url),
        ]
        raw = text.encode()
    headers.append(("Content-Encoding", "gzip"))
    headers.extend(echoed_headers(item.params.get("callback_headers")))
    return gzip.compress(raw), headers


class _Deliverer:
    """Deliveries due at a time, sent by a few worker threads (while not paused)."""

    def __init__(self, send: Callable[[_Delivery], None], workers: int) -> None:
        self._send = send
        self._heap: list[tuple[float, int, _Delivery]] = []
        self._order = itertools.count()
        self._cv = threading.Condition()
        self._busy = 0
        self._stop = False
        self.paused = False
        self._threads = [
            threading.Thread(target=self._run, name=f"crawler-deliverer-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def schedule(self, due: float, item: _Delivery) -> None:
        with self._cv:
            heapq.heappush(self._heap, (due, next(self._order), item))
            self._cv.notify()

    def set_paused(self, paused: bool) -> None:
        with self._cv:
            self.paused = paused
            self._cv.notify_all()

    def _next(self) -> _Delivery | None:
        with self._cv:
            while True:
                if self._stop:
                    return None
                if self._heap and not self.paused:
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        self._busy += 1
                        return heapq.heappop(self._heap)[2]
                    self._cv.wait(timeout=wait)
                else:
                    self._cv.wait()

    def _run(self) -> None:
        while (item := self._next()) is not None:
            try:
                self._send(item)
            finally:
                with self._cv:
                    self._busy -= 1
                    self._cv.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cv:
            while self._heap or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(timeout=left)
        return True

    def advance(self, seconds: float) -> None:
        """Every scheduled delivery ``seconds`` sooner (their order kept)."""
        with self._cv:
            self._heap = [(due - seconds, n, item) for due, n, item in self._heap]
            heapq.heapify(self._heap)
            self._cv.notify_all()

    def pending(self) -> int:
        with self._cv:
            return len(self._heap) + self._busy

    def close(self) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify_all()
        for thread in self._threads:
            thread.join(timeout=5)


class CrawlerDouble(LoopbackServer):
    """The Crawler's push API on ``http://127.0.0.1:<free port>/`` and its deliverer;
    use it as a context manager. ``crawlers`` maps each crawler's name to its
    webhook URL (:meth:`set_webhook` changes one)."""

    name = "crawler-double"

    def __init__(
        self,
        crawlers: Mapping[str, str],
        tokens: Mapping[str, str] = DEFAULT_TOKENS,
        *,
        js_crawlers: Collection[str] = (),
        scale: float = 1.0,
        latency: Callable[[str], float] | None = None,
        pushes_per_second: int | None = DEFAULT_PUSHES_PER_SECOND,
        retry_wait: float = 1.0,
        max_retries: int = DEFAULT_MAX_RETRIES,
        monitor_every: float | None = None,
        workers: int = 8,
        webhook_timeout: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``latency(url)``: seconds a crawl takes before its delivery (added to the
        URL's ``delay``); ``retry_wait``: seconds before a failed delivery is crawled
        and delivered again; ``monitor_every``: seconds between monitor calls (None:
        only when :meth:`monitor` is called). Every time is multiplied by ``scale``.
        ``clock``: the seconds the push limit counts in (a test may stop it).
        ``js_crawlers``: the names in ``crawlers`` that are JavaScript Crawlers."""
        super().__init__()
        self._state = _State(
            tokens=dict(tokens),
            webhooks=dict(crawlers),
            js_crawlers=frozenset(js_crawlers),
            scale=scale,
            pushes_per_second=pushes_per_second,
            latency=latency,
            retry_wait=retry_wait,
            max_retries=max_retries,
        )
        self._workers = workers
        self._clock = clock
        self._webhook_timeout = webhook_timeout
        self._monitor_every = monitor_every
        self._client: httpx.Client | None = None
        self._deliverer: _Deliverer | None = None
        self._monitor_stop = threading.Event()
        self._monitor_thread: threading.Thread | None = None

    # -- scenarios ---------------------------------------------------------------

    @property
    def tokens(self) -> dict[str, str]:
        return dict(self._state.tokens)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def add(
        self,
        url: str,
        page: Page,
        *,
        delay: float = 0.0,
        copies: int = 1,
        lose_answer: float | None = None,
    ) -> None:
        """What a push of ``url`` crawls and how it is delivered (see the module)."""
        with self._state.lock:
            self._state.scenarios[url] = _Scenario(page, delay, copies, lose_answer)

    def set_webhook(self, crawler: str, url: str) -> None:
        with self._state.lock:
            self._state.webhooks[crawler] = url

    # -- what happened -----------------------------------------------------------

    @property
    def pushes(self) -> list[Push]:
        """Every push received, in order (a copy)."""
        with self._state.lock:
            return list(self._state.pushes)

    def pushes_for(self, url: str) -> list[Push]:
        """The pushes of ``url`` the Crawler took (each one a crawl, charged)."""
        return [p for p in self.pushes if p.url == url and p.rid is not None]

    @property
    def attempts(self) -> list[Attempt]:
        """Every POST to a webhook so far, in the order they were answered (a copy)."""
        with self._state.lock:
            return list(self._state.attempts)

    @property
    def deliveries(self) -> list[Attempt]:
        """The delivery attempts, without monitor calls."""
        return [a for a in self.attempts if not a.monitor]

    @property
    def retries(self) -> int:
        """Deliveries that were not acknowledged and were crawled again (charged)."""
        with self._state.lock:
            return self._state.retries

    @property
    def credits(self) -> int:
        """Crawls charged: every push taken, plus every retry."""
        return sum(1 for p in self.pushes if p.rid is not None) + self.retries

    @property
    def given_up(self) -> list[str]:
        """rids whose delivery failed ``max_retries`` times more."""
        with self._state.lock:
            return list(self._state.given_up)

    @property
    def paused(self) -> bool:
        return self._deliverer is not None and self._deliverer.paused

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` (times ``scale``) pass on the Crawler's side: every delivery
        still to come is due that much sooner, in the same order. With long delays
        and one worker, a test fixes the order deliveries arrive in, however slowly
        its pushes went."""
        assert self._deliverer is not None, "the double is not started"
        self._deliverer.advance(seconds * self._state.scale)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Whether every scheduled delivery (retries included) was sent within
        ``timeout`` seconds (False: some are still due, or the Crawler is paused)."""
        return self._deliverer is not None and self._deliverer.wait_idle(timeout)

    # -- the monitor bot ---------------------------------------------------------

    def monitor(self) -> list[int | None]:
        """One monitor call to every crawler's webhook; pauses the deliveries when
        one is not 2xx, resumes them when all are. Returns the statuses."""
        statuses = []
        for _crawler, webhook in self._webhooks():
            envelope = {"pc_status": 200, "original_status": 200, "rid": "", "url": "", "body": ""}
            headers = [
                ("User-Agent", MONITOR_AGENT),
                ("Content-Type", "gzip/json"),
                ("Content-Encoding", "gzip"),
            ]
            status, seconds = self._post(
                webhook, gzip.compress(json.dumps(envelope).encode()), headers
            )
            with self._state.lock:
                self._state.attempts.append(Attempt(None, None, status, 1, 1, True, seconds))
            statuses.append(status)
        if self._deliverer is not None:
            self._deliverer.set_paused(not all(s is not None and 200 <= s < 300 for s in statuses))
        return statuses

    def _monitor_loop(self, every: float) -> None:
        while not self._monitor_stop.wait(every):
            self.monitor()

    # -- delivering --------------------------------------------------------------

    def _webhooks(self) -> list[tuple[str, str]]:
        with self._state.lock:
            return list(self._state.webhooks.items())

    def _post(
        self, url: str, body: bytes, headers: list[tuple[str, str]]
    ) -> tuple[int | None, float]:
        assert self._client is not None, "the double is not started"
        start = time.perf_counter()
        try:
            status: int | None = self._client.post(url, content=body, headers=headers).status_code
        except httpx.HTTPError:
            status = None
        return status, time.perf_counter() - start

    def _deliver(self, item: _Delivery) -> None:
        state = self._state
        with state.lock:
            webhook = state.webhooks.get(item.crawler)
        body, headers = delivery_request(item)
        status, seconds = self._post(webhook, body, headers) if webhook else (None, 0.0)
        with state.lock:
            state.attempts.append(
                Attempt(item.rid, item.url, status, item.attempt, item.copy, False, seconds)
            )
            if status in ACKNOWLEDGED:
                return
            if item.attempt > state.max_retries:
                state.given_up.append(item.rid)
                return
            state.retries += 1
        due = time.monotonic() + state.retry_wait * state.scale
        assert self._deliverer is not None
        self._deliverer.schedule(due, replace(item, attempt=item.attempt + 1))

    def _take(self, params: dict[str, str], kind: str) -> tuple[str, _Scenario]:
        """A push taken: its rid, and its deliveries scheduled."""
        state = self._state
        url = params["url"]
        with state.lock:
            n = next(state.counter)
            scenario = state.scenarios.get(url) or _Scenario(FAILED_CRAWL)
        crawler = params["crawler"]
        rid = hashlib.sha1(f"{crawler}|{url}|{n}".encode()).hexdigest()[:24]
        crawl = scenario.delay + (state.latency(url) if state.latency is not None else 0.0)
        now = time.monotonic()
        assert self._deliverer is not None
        for copy in range(1, scenario.copies + 1):
            item = _Delivery(crawler, rid, url, dict(params), kind, scenario.page, copy)
            # A repeat comes a little after the first copy.
            self._deliverer.schedule(now + (crawl + 0.01 * (copy - 1)) * state.scale, item)
        return rid, scenario

    def _admit(self) -> bool:
        """Whether a push fits in the last second's limit (and counts it)."""
        state = self._state
        if state.pushes_per_second is None:
            return True
        now = self._clock()
        with state.lock:
            while state.recent and state.recent[0] <= now - 1.0:
                state.recent.popleft()
            if len(state.recent) >= state.pushes_per_second:
                return False
            state.recent.append(now)
            return True

    # -- the server --------------------------------------------------------------

    def start(self) -> Self:
        self._client = httpx.Client(timeout=self._webhook_timeout)
        self._deliverer = _Deliverer(self._deliver, self._workers)
        super().start()
        if self._monitor_every is not None:
            every = self._monitor_every * self._state.scale
            self._monitor_thread = threading.Thread(
                target=self._monitor_loop, args=(every,), name="crawler-monitor", daemon=True
            )
            self._monitor_thread.start()
        return self

    def stop(self) -> None:
        self._monitor_stop.set()
        if self._monitor_thread is not None:
            self._monitor_thread.join(timeout=5)
        super().stop()
        if self._deliverer is not None:
            self._deliverer.close()
        if self._client is not None:
            self._client.close()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        double = self
        state = self._state

        def error(status: int, message: str) -> tuple[int, list[tuple[str, str]], bytes]:
            body = json.dumps({"error": message}).encode()
            return status, [("Content-Type", "application/json")], body

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                query = urlsplit(self.path).query
                double.paid("GET /", query.encode())  # a push is billed as a crawl
                params = dict(parse_qsl(query, keep_blank_values=True))
                kind = state.kind_of(params.get("token"))
                url = params.get("url", "")
                rid: str | None = None
                scenario: _Scenario | None = None
                if kind is None:
                    status, headers, body = error(401, "invalid token")
                elif params.get("callback") != "true":
                    status, headers, body = error(400, "CrawlerDouble: push with callback=true")
                elif params.get("crawler") not in double._webhooks_names() or (
                    (kind == "javascript") != (params.get("crawler") in state.js_crawlers)
                ):
                    status, headers, body = error(404, "crawler not found")
                elif not url.startswith(("http://", "https://")):
                    status, headers, body = error(400, "invalid url")
                elif not double._admit():
                    status, headers, body = error(429, "push limit reached")
                    headers.append(("Retry-After", "1"))
                else:
                    rid, scenario = double._take(params, kind)
                    status = 200
                    headers = [("Content-Type", "application/json")]
                    body = json.dumps({"rid": rid}).encode()
                if scenario is not None and scenario.lose_answer is not None:
                    with state.lock:
                        state.pushes.append(Push(params, 0, rid))
                    time.sleep(scenario.lose_answer)  # real seconds: the pusher's timeout is
                    self.close_connection = True  # no answer: the pusher never sees the rid
                    return
                with state.lock:
                    state.pushes.append(Push(params, status, rid))
                self.reply(status, headers, body)

        return Handler

    def _webhooks_names(self) -> set[str]:
        with self._state.lock:
            return set(self._state.webhooks)
