"""How far a run is: claims done of submitted, citations, credits, time, and the
requests in flight per service. Front ends show :meth:`Progress.line` while recording."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.core.limits import AdaptiveLimit


@dataclass
class Progress:
    """How far a run is: shown while recording."""

    total: int = 0
    done: int = 0
    # Submitted claims the engine was stopped before starting (no request made).
    not_started: int = 0
    citations: int = 0
    credits: float = 0.0
    started: float = field(default_factory=time.monotonic)
    # The engine's per-service limits: the line shows requests in flight and back-off.
    limits: Mapping[str, AdaptiveLimit] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, claims: int) -> None:
        with self._lock:
            self.total += claims

    def skipped(self) -> None:
        with self._lock:
            self.not_started += 1

    def finished(self, result: ClaimResult) -> None:
        with self._lock:
            self.done += 1
            self.citations += len(result.verdicts)
            self.credits += sum(v.credits for v in result.verdicts)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def line(self) -> str:
        elapsed = self.elapsed()
        text = (
            f"citecheck: {self.done}/{self.total} claims, {self.citations} "
            f"citation{'' if self.citations == 1 else 's'}, "
            f"{self.credits:g} credits, {elapsed:.1f} s"
        )
        if self.not_started:
            text += f", {self.not_started} not started"
        elif 0 < self.done < self.total:
            left = elapsed / self.done * (self.total - self.done)
            text += f", ~{left:.0f} s left"
        return text + self.services()

    def services(self) -> str:
        """``; crawlbase 18/20 in flight, openai 3/16 in flight`` (empty when idle)."""
        busy = [
            limit.status()
            for limit in list(self.limits.values())
            if limit.in_flight or limit.overloads
        ]
        return "; " + ", ".join(busy) if busy else ""
