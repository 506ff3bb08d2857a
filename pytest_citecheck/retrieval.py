"""Ranking passages against a claim (DESIGN §3 step 9).

INTERFACE ONLY -- the implementation is being written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Ranker(Protocol):
    """Ranks passages by relevance to a claim."""

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Return up to ``k`` ``(passage index, score)`` pairs, best first."""
        ...
