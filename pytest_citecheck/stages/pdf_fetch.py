"""A cited PDF downloaded directly, not through the Crawling API (``pdf_fetch = direct``).

By default a ``.pdf`` URL goes through the Crawling API like any page (its proxies, its
billing, one cassette: :meth:`~pytest_citecheck.stages.fetch.CrawlbaseFetcher._fetch_pdf`).
Where the API's answer for a PDF does not serve (docs/verification.md, "PDF sources"),
``pdf_fetch = direct`` downloads the file itself: a plain GET through the same recorded
client (so the exchange is in the claim's cassette and replays offline), each redirect
followed by hand and checked against the URL policy before it is fetched (the policy
applies to where a fetch lands, not only to the cited URL), at most
:data:`MAX_REDIRECTS` of them. No credits are spent; the origin's status is the
verdict's ``original_status``.
"""

from __future__ import annotations

from urllib.parse import urljoin

import httpx

from pytest_citecheck.claims.labels import Label, Reason, url_refusal
from pytest_citecheck.claims.results import Fetch
from pytest_citecheck.core.retry import GaveUp, RetryPolicy, send, transport_text
from pytest_citecheck.stages.fetch_rules import FetchResult
from pytest_citecheck.stages.pdf import pdf_reply
from pytest_citecheck.stages.url_policy import check as check_url

MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# What the download sends: a PDF first, anything else accepted (an HTML landing page
# is then crawled as a page).
_HEADERS = {"accept": "application/pdf,*/*;q=0.5"}


class DirectPdfFetcher:
    """Downloads ``.pdf`` URLs with ``client`` (borrowed: never closed here)."""

    def __init__(
        self,
        client: httpx.Client,
        *,
        url_policy: str,
        retry: RetryPolicy,
        timeout: float,
    ) -> None:
        self._client = client
        self.url_policy = url_policy
        self.retry = retry
        self.timeout = timeout

    def fetch(self, url: str) -> FetchResult | None:
        """The downloaded PDF (its bytes for the page rules), a result that says why
        there is none, or None: the URL serves something else (crawl it as a page)."""
        fetches: list[Fetch] = []
        target = url
        for _ in range(MAX_REDIRECTS + 1):
            refused = check_url(self.url_policy, target)
            if refused is not None:
                return FetchResult(
                    url=url, fetches=fetches, **url_refusal(f"not downloaded: {refused}")
                )
            request = self._client.build_request(
                "GET", target, headers=_HEADERS, timeout=self.timeout
            )
            try:
                response = send(self._client, request, self.retry).response
            except GaveUp as exc:
                return _failed(
                    url, f"The PDF could not be downloaded ({transport_text(exc.error)}).", fetches
                )
            fetches.append(
                Fetch(
                    token="direct",
                    readability=False,
                    status_code=response.status_code,
                    original_status=response.status_code,
                    final_url=target,
                )
            )
            location = response.headers.get("location")
            if response.status_code in _REDIRECTS and location:
                target = urljoin(target, location)
                continue
            pdf = pdf_reply(response.is_success, response.content, response.headers)
            if pdf is not None:
                return FetchResult(
                    url=url,
                    pdf=pdf,
                    final_url=target,
                    original_status=response.status_code,
                    fetches=fetches,
                )
            if response.status_code in (404, 410):
                return FetchResult(
                    url=url,
                    text="",
                    final_url=target,
                    original_status=response.status_code,
                    fetches=fetches,
                )
            if response.is_success:
                return None
            return _failed(
                url,
                f"The PDF download answered HTTP {response.status_code}.",
                fetches,
                final_url=target,
                original_status=response.status_code,
            )
        return _failed(
            url, f"The PDF download redirected more than {MAX_REDIRECTS} times.", fetches
        )


def _failed(
    url: str,
    detail: str,
    fetches: list[Fetch],
    *,
    final_url: str | None = None,
    original_status: int | None = None,
) -> FetchResult:
    """A download that gave no PDF and no page: an error (``crawl_failed``), ``detail``
    saying why, with the calls made so far."""
    return FetchResult(
        url=url,
        label=Label.ERROR,
        reason=Reason.CRAWL_FAILED,
        detail=detail,
        final_url=final_url,
        original_status=original_status,
        fetches=fetches,
    )
