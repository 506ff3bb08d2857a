"""Capped exponential backoff that honours ``Retry-After`` (Crawling API and judges).

Under replay the recorded sequence (e.g. 429 then 200) is played back as it
was recorded, so the plugin passes ``sleep=lambda s: None``: the retry logic
runs identically, the wall clock is not spent.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

import httpx

TRANSIENT_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 529, 599})


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Delay asked for by ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a transient failure."""

    attempts: int = 4  # total tries, the first included
    base: float = 0.5
    cap: float = 8.0
    # A server asking for more than this is not retried (the SDKs do the same at 120 s).
    max_retry_after: float = 60.0
    retry_statuses: Collection[int] = TRANSIENT_STATUSES
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def delay(self, attempt: int, headers: Mapping[str, str]) -> float | None:
        """Seconds to wait before try ``attempt + 1`` (0-based), or None to give up."""
        if attempt + 1 >= self.attempts:
            return None
        asked = retry_after_seconds(headers)
        if asked is not None:
            return asked if asked <= self.max_retry_after else None
        return min(self.cap, self.base * 2.0**attempt)


def send(
    client: httpx.Client,
    request: httpx.Request,
    policy: RetryPolicy,
) -> httpx.Response:
    """Send ``request``, retrying transient statuses and transport errors.

    Returns the last response (which may still be an error status); raises the
    last transport error when every try failed to connect.
    """
    attempt = 0
    while True:
        try:
            response = client.send(request)
        except (httpx.TransportError, OSError):
            wait = policy.delay(attempt, {})
            if wait is None:
                raise
        else:
            if response.status_code not in policy.retry_statuses:
                return response
            wait = policy.delay(attempt, response.headers)
            if wait is None:
                return response
            response.close()
        policy.sleep(wait)
        attempt += 1
