"""How many requests one service gets at once, adapted at run time (AIMD).

Each service citecheck records from -- the Crawling API, each judge endpoint --
has its own :class:`AdaptiveLimit`: at most ``cap`` requests in flight (the
service's documented limit, or a conservative default), cut in half when the
service answers 429 or 503, and grown again by one request per round of
successes (additive increase, multiplicative decrease, as TCP does). It is cut
once per round: by the first overload answered to a request sent under the
limit as it is now, never by the answers to requests sent before the last cut
(they were sent under the higher limit the cut already corrected). A
``Retry-After`` on such an answer pauses only the request that received it (the
way the providers' own SDKs treat it): the halved limit is what slows the other
requests down, so one throttled reply cannot freeze every claim past its
deadline. The user's own cap is ``citecheck_concurrency``, the claims in
flight; :mod:`pytest_citecheck.core.retry` calls :meth:`AdaptiveLimit.acquire`
(bounded by what is left of the request's deadline) and
:meth:`AdaptiveLimit.release` around every try, and :meth:`AdaptiveLimit.pausing`
around a ``Retry-After`` wait (shown on the progress line).

Why these caps (:data:`DEFAULT_CAPS`): the Crawling API documents 20 concurrent
requests per token (429 with ``Retry-After`` beyond). The judges' limits depend on
the account's tier (tokens and requests per minute), not on concurrency; their
caps are starting points that 429s adapt down from. A local server (Ollama, an
OpenAI-compatible vLLM or llama.cpp) serves a few requests at a time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

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
        self._pauses: list[float] = []  # when each Retry-After wait under way ends
        # How many cuts there had been when this thread's request took its slot (a
        # request is acquired and released on one thread: core/retry.py's send).
        self._sent_at = threading.local()
        self._clock = clock
        self._cond = threading.Condition()

    # -- around each try ------------------------------------------------------------

    def acquire(self, timeout: float | None = None) -> bool:
        """Wait for a free slot, at most ``timeout`` seconds (None: as long as it
        takes); False when none freed up in time."""
        with self._cond:
            return self._cond.wait_for(self._take_slot, timeout=timeout)

    def _take_slot(self) -> bool:
        if self.in_flight < int(self.limit):
            self.in_flight += 1
            self._sent_at.cuts = self.cuts
            return True
        return False

    def release(self, status: int | None) -> None:
        """A try ended with ``status`` (None: no answer); adapt the limit."""
        with self._cond:
            self.in_flight -= 1
            if status in OVERLOAD_STATUSES:
                self.overloads += 1
                # One cut per round: only a request sent since the last cut says that
                # the limit as it is now is still too high.
                if getattr(self._sent_at, "cuts", self.cuts) == self.cuts:
                    self.limit = max(1.0, self.limit / 2)
                    self.cuts += 1
            elif status is not None and status < 500:
                self.limit = min(float(self.cap), self.limit + 1.0 / self.limit)
            self._cond.notify_all()

    # -- for the progress line ---------------------------------------------------------

    @contextmanager
    def pausing(self, seconds: float) -> Iterator[None]:
        """One request waits out a ``Retry-After`` of ``seconds`` (holding no slot)."""
        with self._cond:
            end = self._clock() + seconds
            self._pauses.append(end)
        try:
            yield
        finally:
            with self._cond:
                self._pauses.remove(end)

    def backing_off(self) -> float:
        """Seconds left of the longest ``Retry-After`` wait under way (0: none)."""
        with self._cond:
            return max([0.0, *(end - self._clock() for end in self._pauses)])

    def status(self) -> str:
        """E.g. ``crawlbase 18/20 in flight`` or ``crawlbase 9/10 in flight (3 x
        429/503, 2 backing off up to 1.0 s)``."""
        with self._cond:
            text = f"{self.name} {self.in_flight}/{int(self.limit)} in flight"
            extra = []
            if self.overloads:
                extra.append(f"{self.overloads} x 429/503")
            now = self._clock()
            pauses = [end - now for end in self._pauses if end > now]
            if pauses:
                extra.append(f"{len(pauses)} backing off up to {max(pauses):.1f} s")
            return text + (f" ({', '.join(extra)})" if extra else "")
