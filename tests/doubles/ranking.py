"""A model-free ranker for tests and benchmarks: no embedding cost at all."""

from __future__ import annotations

from collections.abc import Sequence


class WordOverlap:
    """Passages sharing the most words with the claim first; ties keep page order."""

    name = "word-overlap"
    version = "1"

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        words = set(claim.lower().split())
        scored = sorted(
            (
                (len(words & set(p.lower().split())) / (1 + len(words)), i)
                for i, p in enumerate(passages)
            ),
            key=lambda t: (-t[0], t[1]),
        )
        return [(i, s) for s, i in scored[:k]]
