"""The Crawling API answered from Crawler deliveries: the live transport of a job's claims.

When a Crawler job verifies a claim, its pages have already arrived (POSTed to the
webhook, kept in the job's store). The engine's normal path runs unchanged: the
fetcher asks the Crawling API for each page, and this transport -- plugged in as the
``live`` transport of :class:`~pytest_citecheck.recording.transport.StageTransport` --
answers those requests from the deliveries, in the Crawling API's own reply format
(``original_status``, ``pc_status`` and ``url`` headers, the markdown body). So the
claim's cassette records each page as a synchronous crawl would have, with one more
header naming the Crawler's rid (:data:`CRAWLER_RID_HEADER`), and a replay reads it
like any recording. Every other request (the judges', and a ``.pdf`` URL's request for
the file, which is never pushed) goes to the network.

Which deliveries answer is set per claim, for the thread verifying it
(:meth:`DeliveryTransport.serving`): claims verified in parallel each see their own.

A request with the JavaScript token (or its placeholder) asks for a page rendered in
a browser, which only a JavaScript Crawler delivers; it is never answered with the
normal delivery. With a JavaScript Crawler (``js_crawler``) it is answered from the
claim's JavaScript delivery, and when there is none yet the claim stops with
:class:`~pytest_citecheck.core.errors.CrawlDeferred` (the job pushes the page to the
JavaScript Crawler and runs the claim again when it comes). Without one the page
cannot be rendered: the request fails as a synchronous run's does when no JavaScript
token is set (a ``configuration`` error), naming the fix, and the claim's
:class:`Serving` lists the page.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.core.errors import ConfigurationError, CrawlDeferred, StageFailed
from pytest_citecheck.core.providers import TOKEN_ENV
from pytest_citecheck.core.secrets import TOKEN_PLACEHOLDERS
from pytest_citecheck.core.urls import fetch_url
from pytest_citecheck.large_audit.job_store import Delivery

# Marks a recorded reply as a Crawler delivery and names its rid (the fetcher bills
# such a page once).
from pytest_citecheck.stages.fetch import CRAWLER_RID_HEADER, FAILED_CRAWL_STATUSES

# Why a citation's JavaScript page will never come (its push was refused).
Unpushed = str


@dataclass
class Serving:
    """The deliveries one claim is answered from, and what it asked for beyond them."""

    pages: Mapping[str, Delivery]  # target URL -> its (normal) delivery
    javascript: Mapping[str, Delivery | Unpushed] = field(default_factory=dict)
    # Pages the fetcher wanted rendered with JavaScript when no JavaScript Crawler was
    # configured (each answered with a configuration error), in the order asked.
    needs_javascript: list[str] = field(default_factory=list)


_serving: ContextVar[Serving | None] = ContextVar("citecheck.crawler_deliveries", default=None)


class NoDelivery(Exception):
    """The fetcher asked for a page the current claim has no delivery for."""


def delivery_reply(delivery: Delivery, request: httpx.Request) -> httpx.Response:
    """``delivery`` as the Crawling API's synchronous reply to ``request``."""
    headers = [("content-type", "text/markdown; charset=utf-8")]
    if delivery.original_status is not None:
        headers.append(("original_status", str(delivery.original_status)))
    if delivery.pc_status is not None:
        headers.append(("pc_status", str(delivery.pc_status)))
    headers += [("url", delivery.url), (CRAWLER_RID_HEADER, delivery.rid)]
    return httpx.Response(200, headers=headers, content=delivery.text().encode(), request=request)


def needs_javascript_message(url: str) -> str:
    """Why a page that needs JavaScript is an error in a job without a JavaScript Crawler."""
    return (
        f"this page needs JavaScript rendering ({url}), and the Crawler job has no "
        "JavaScript Crawler: add --js-crawler NAME (a Crawler created for your Crawlbase "
        f"JavaScript token, {TOKEN_ENV['javascript']}) and run the same command again"
    )


def _asks_for_a_pdf(request: httpx.Request, target: str) -> bool:
    """A ``.pdf`` URL asked for as the file (stages/fetch.py's ``PDF_PARAMS``)."""
    from pytest_citecheck.stages.fetch import PDF_PARAMS
    from pytest_citecheck.stages.fetch_rules import is_pdf

    params = request.url.params
    return is_pdf(target) and all(params.get(k) == v for k, v in PDF_PARAMS)


class DeliveryTransport(httpx.BaseTransport):
    """Answers GETs to the Crawling API at ``api_base`` from the current claim's
    deliveries (by the fetch key of the ``url`` they ask for,
    :func:`~pytest_citecheck.core.urls.fetch_url`); sends the rest through ``fallback``.

    ``js_tokens``: the JavaScript token's values a request may carry (its placeholder
    is always one); ``js_crawler``: whether the job pushes to a JavaScript Crawler.
    ``fallback`` is borrowed (its owner closes it); without one, this transport opens
    a network transport of its own and closes it in :meth:`close`."""

    def __init__(
        self,
        api_base: str,
        fallback: httpx.BaseTransport | None = None,
        *,
        js_tokens: Collection[str] = (),
        js_crawler: bool = False,
    ) -> None:
        base = urlsplit(api_base)
        self.api_base = api_base
        self._api = (base.scheme, base.hostname, base.port, base.path or "/")
        self._owns_fallback = fallback is None
        self._fallback = fallback if fallback is not None else httpx.HTTPTransport()
        self._js_tokens = frozenset({*js_tokens, TOKEN_PLACEHOLDERS["javascript"]})
        self.js_crawler = js_crawler

    @contextmanager
    def serving(
        self,
        pages: Mapping[str, Delivery],
        javascript: Mapping[str, Delivery | Unpushed] | None = None,
    ) -> Iterator[Serving]:
        """Answer this thread's Crawling API requests from ``pages`` (target URL ->
        its delivery) and, for the JavaScript token, ``javascript`` (target URL -> its
        JavaScript delivery, or why its push failed) while inside."""
        serving = Serving(pages, javascript or {})
        token = _serving.set(serving)
        try:
            yield serving
        finally:
            _serving.reset(token)

    def awaited(
        self,
        pages: Mapping[str, Delivery],
        javascript: Mapping[str, Delivery | Unpushed],
        urls: Collection[str],
    ) -> list[str]:
        """Which of ``urls`` the fetcher will want rendered with JavaScript and has no
        JavaScript delivery for yet: the fetcher itself crawls each from ``pages``
        (no recording, no network, no judge), so a claim waits for every such page
        before it runs, instead of being judged once per page it waits for."""
        from pytest_citecheck.recording.transport import Borrowed
        from pytest_citecheck.stages.fetch import CrawlbaseFetcher

        out: list[str] = []
        # Borrowed: closing this client must not close the fallback every other
        # claim's judge requests are in flight on.
        client = httpx.Client(transport=Borrowed(self))
        fetcher = CrawlbaseFetcher(
            token=TOKEN_PLACEHOLDERS["normal"],
            js_token=TOKEN_PLACEHOLDERS["javascript"],
            base_url=self.api_base,
            client=client,
        )
        with fetcher, client, self.serving(pages, javascript):
            for url in dict.fromkeys(urls):
                try:
                    fetcher.fetch(url)
                except CrawlDeferred:
                    out.append(url)
                except Exception:  # the claim's own run says what failed
                    continue
        return out

    def _is_crawl(self, request: httpx.Request) -> bool:
        url = request.url
        where = (url.scheme, url.host, url.port, url.path or "/")
        return request.method == "GET" and where == self._api and "url" in url.params

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not self._is_crawl(request):
            return self._fallback.handle_request(request)
        # Deliveries are kept by the fetch key, the URL pushed.
        target = fetch_url(request.url.params["url"])
        serving = _serving.get()
        if request.url.params.get("token") in self._js_tokens:
            return self._javascript(serving, target, request)
        delivery = None if serving is None else serving.pages.get(target)
        if delivery is None and _asks_for_a_pdf(request, target):
            # A PDF is never pushed (crawler_job.fetched_citations): the file is
            # crawled synchronously, as in a run without a job.
            return self._fallback.handle_request(request)
        if delivery is None:
            raise NoDelivery(f"no Crawler delivery for {target}")
        return delivery_reply(delivery, request)

    def _javascript(
        self, serving: Serving | None, target: str, request: httpx.Request
    ) -> httpx.Response:
        """A JavaScript-token request: never the normal delivery (see the module)."""
        if serving is None:
            raise NoDelivery(f"no Crawler delivery for {target}")
        if not self.js_crawler:
            serving.needs_javascript.append(target)
            normal = serving.pages.get(target)
            if normal is not None and normal.pc_status in FAILED_CRAWL_STATUSES:
                # The crawl failed, whatever a rendered one would have found.
                raise StageFailed(
                    Reason.CRAWL_FAILED,
                    f"the Crawler could not crawl the page (pc_status {normal.pc_status}); "
                    + needs_javascript_message(target).replace("this page needs", "it may need"),
                )
            raise ConfigurationError(needs_javascript_message(target))
        found = serving.javascript.get(target)
        if found is None:
            raise CrawlDeferred(target)
        if isinstance(found, str):
            raise StageFailed(
                Reason.CRAWL_FAILED, f"the JavaScript Crawler never received this page: {found}"
            )
        return delivery_reply(found, request)

    def close(self) -> None:
        if self._owns_fallback:
            self._fallback.close()
