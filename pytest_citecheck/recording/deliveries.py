"""The Crawling API answered from Crawler deliveries: the live transport of a job's claims.

When a Crawler job verifies a claim, its pages have already arrived (POSTed to the
webhook, kept in the job's store). The engine's normal path runs unchanged: the
fetcher asks the Crawling API for each page, and this transport -- plugged in as the
``live`` transport of :class:`~pytest_citecheck.recording.transport.StageTransport` --
answers those requests from the deliveries, in the Crawling API's own reply format
(``original_status``, ``pc_status`` and ``url`` headers, the markdown body). So the
claim's cassette records each page as a synchronous crawl would have, with one more
header naming the Crawler's rid (:data:`CRAWLER_RID_HEADER`), and a replay reads it
like any recording. Every other request (the judges') goes to the network.

Which deliveries answer is set per claim, for the thread verifying it
(:meth:`DeliveryTransport.serving`): claims verified in parallel each see their own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from urllib.parse import urlsplit

import httpx

from pytest_citecheck.recording.jobs import Delivery

# Marks a recorded reply as a Crawler delivery and names its rid (the fetcher bills
# such a page once).
from pytest_citecheck.stages.fetch import CRAWLER_RID_HEADER as CRAWLER_RID_HEADER

_pages: ContextVar[Mapping[str, Delivery] | None] = ContextVar(
    "citecheck.crawler_deliveries", default=None
)


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


class DeliveryTransport(httpx.BaseTransport):
    """Answers GETs to the Crawling API at ``api_base`` from the current claim's
    deliveries (by the ``url`` they ask for); sends the rest through ``fallback``."""

    def __init__(self, api_base: str, fallback: httpx.BaseTransport | None = None) -> None:
        base = urlsplit(api_base)
        self._api = (base.scheme, base.hostname, base.port, base.path or "/")
        self._fallback = fallback if fallback is not None else httpx.HTTPTransport()

    @contextmanager
    def serving(self, pages: Mapping[str, Delivery]) -> Iterator[None]:
        """Answer this thread's Crawling API requests from ``pages`` (target URL ->
        its delivery) while inside."""
        token = _pages.set(pages)
        try:
            yield
        finally:
            _pages.reset(token)

    def _is_crawl(self, request: httpx.Request) -> bool:
        url = request.url
        where = (url.scheme, url.host, url.port, url.path or "/")
        return request.method == "GET" and where == self._api and "url" in url.params

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not self._is_crawl(request):
            return self._fallback.handle_request(request)
        target = request.url.params["url"]
        pages = _pages.get()
        delivery = None if pages is None else pages.get(target)
        if delivery is None:
            raise NoDelivery(f"no Crawler delivery for {target}")
        return delivery_reply(delivery, request)

    def close(self) -> None:
        self._fallback.close()
