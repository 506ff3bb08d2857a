"""Exceptions that cross stage boundaries."""

from __future__ import annotations


class CitecheckError(Exception):
    """Base class for errors pytest-citecheck raises on purpose."""


class ConfigurationError(CitecheckError):
    """The user must fix their setup (missing/invalid token, out of credits).

    The message names the environment variable to fix, never its value. A
    configuration error stops verification of the citation as ``error`` and
    is shown once, prominently.
    """


class StageFailed(CitecheckError):
    """A pipeline stage could not produce a result; the citation is ``error``.

    ``reason`` is one of :class:`pytest_citecheck.claims.labels.Reason`; ``detail`` is
    a sentence for humans that never contains a secret.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class ResponseTooLarge(CitecheckError):
    """A response body is larger than the size cap (``citecheck_max_page_bytes``)."""

    def __init__(self, url: str, limit: int) -> None:
        super().__init__(f"the response from {url} is larger than {limit} bytes")
        self.url = url
        self.limit = limit


class CrawlDeferred(CitecheckError):
    """A page waits for a crawl not delivered yet (a Crawler job's JavaScript crawl):
    the claim stops here, records nothing and runs again once the page has come.
    Never a verdict: the Crawler job running the claim catches it."""

    def __init__(self, url: str) -> None:
        super().__init__(f"the JavaScript crawl of {url} has not been delivered yet")
        self.url = url


class JudgeDeferred(CitecheckError):
    """A judge request waits for the provider's batch API (``--judge-batch``): the
    claim stops here, records nothing and runs again once the batch has answered.
    Never a verdict: the engine running the batch catches it."""

    def __init__(self, custom_id: str) -> None:
        super().__init__(f"judge request {custom_id} waits for the batch")
        self.custom_id = custom_id
