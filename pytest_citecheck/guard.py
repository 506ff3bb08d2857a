"""The guard: a verdict is believed only if its quote is really in what the judge read.

INTERFACE ONLY -- the implementation is being written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_citecheck.judges.base import JudgeReply
from pytest_citecheck.models import Label, Passage


def normalise(text: str) -> str:
    """Typographic quotes -> ASCII, every run of whitespace (incl. NBSP,
    zero-width) -> one space, stripped."""
    raise NotImplementedError


@dataclass(frozen=True)
class Guarded:
    label: Label
    quote: str | None
    confidence: float
    reason: str | None


def guard(reply: JudgeReply, shown: Sequence[Passage]) -> Guarded:
    """DESIGN §3.11."""
    raise NotImplementedError
