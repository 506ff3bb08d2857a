"""How many requests one service gets at once, adapted at run time (AIMD).

Each service citecheck records from -- the Crawling API, each judge endpoint --
has its own :class:`AdaptiveLimit`: at most ``cap`` requests in flight (the
service's documented limit, or a conservative default), cut in half when the
service answers 429 or 503, and grown again by one request per round of
successes (additive increase, multiplicative decrease, as TCP does). A
``Retry-After`` on such an answer pauses every new request to that service for
that long, not only the retried one: the other claims' requests would be
refused too. The user's own cap is ``citecheck_concurrency``, the claims in
flight; :mod:`pytest_citecheck.core.retry` calls :meth:`AdaptiveLimit.acquire`
and :meth:`AdaptiveLimit.release` around every try.

Why these caps (:data:`DEFAULT_CAPS`): the Crawling API documents 20 concurrent
requests per token (429 with ``Retry-After`` beyond). The judges' limits depend on
the account's tier (tokens and requests per minute), not on concurrency; their
caps are starting points that 429s adapt down from. A local server (Ollama, an
OpenAI-compatible vLLM or llama.cpp) serves a few requests at a time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

# The Crawling API's rate-limit page documents 20 concurrent requests per token.
CRAWLING_API_CAP = 20
DEFAULT_CAPS = {
    "crawlbase": CRAWLING_API_CAP,
    "openai": 16,
    "anthropic": 8,
    "ollama": 2,
    "openai-compatible": 4,
}
DEFAULT_JUDGE_CAP = 4
# Statuses that mean "too many at once" (the limit shrinks); others leave it alone.
OVERLOAD_STATUSES = frozenset({429, 503})
# A Retry-After longer than this is not waited out by the limit (the retry gives up).
MAX_PAUSE = 60.0


def cap_for(service: str) -> int:
    """The default cap of ``service`` (``crawlbase`` or a judge provider)."""
    return DEFAULT_CAPS.get(service, DEFAULT_JUDGE_CAP)


class AdaptiveLimit:
    """An AIMD limit on the requests in flight to one service; thread-safe."""

    def __init__(
        self,
        name: str,
        cap: int,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if cap < 1:
            raise ValueError("cap must be at least 1")
        self.name = name
        self.cap = cap
        self.limit = float(cap)
        self.in_flight = 0
        self.overloads = 0  # 429/503 answers seen
        self.cuts = 0  # times the limit was halved
        self._paused_until = 0.0
        self._last_cut = float("-inf")
        self._successes_since_cut = 0
        self._clock = clock
        self._cond = threading.Condition()

    # -- around each try ------------------------------------------------------------

    def acquire(self) -> None:
        """Wait for a free slot (and for any ``Retry-After`` pause to end)."""
        with self._cond:
            while True:
                wait = self._paused_until - self._clock()
                if wait <= 0 and self.in_flight < int(self.limit):
                    self.in_flight += 1
                    return
                self._cond.wait(timeout=wait if wait > 0 else None)

    def release(self, status: int | None, retry_after: float | None = None) -> None:
        """A try ended with ``status`` (None: no answer); adapt the limit."""
        with self._cond:
            self.in_flight -= 1
            now = self._clock()
            if status in OVERLOAD_STATUSES:
                self.overloads += 1
                if retry_after is not None and 0 < retry_after <= MAX_PAUSE:
                    self._paused_until = max(self._paused_until, now + retry_after)
                # One cut per round: the answers to requests already in flight when the
                # service pushed back do not cut again.
                if self._successes_since_cut > 0 or self.cuts == 0 or now - self._last_cut > 1:
                    self.limit = max(1.0, self.limit / 2)
                    self.cuts += 1
                    self._last_cut = now
                    self._successes_since_cut = 0
            elif status is not None and status < 500:
                self._successes_since_cut += 1
                self.limit = min(float(self.cap), self.limit + 1.0 / self.limit)
            self._cond.notify_all()

    # -- for the progress line ---------------------------------------------------------

    def backing_off(self) -> float:
        """Seconds of ``Retry-After`` pause left (0: none)."""
        with self._cond:
            return max(0.0, self._paused_until - self._clock())

    def status(self) -> str:
        """E.g. ``crawlbase 18/20 in flight`` or ``... (limit 10 after 3 x 429/503,
        paused 1.0 s)``."""
        with self._cond:
            text = f"{self.name} {self.in_flight}/{int(self.limit)} in flight"
            extra = []
            if self.overloads:
                extra.append(f"{self.overloads} x 429/503")
            pause = self._paused_until - self._clock()
            if pause > 0:
                extra.append(f"backing off {pause:.1f} s")
            return text + (f" ({', '.join(extra)})" if extra else "")
