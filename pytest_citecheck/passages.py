"""Cutting page text into passages (DESIGN §3 step 8).

INTERFACE ONLY -- the implementation is being written.
"""

from __future__ import annotations

MAX_WORDS = 200


def split_passages(text: str, max_words: int = MAX_WORDS) -> list[str]:
    """Split on blank lines, pack paragraphs up to ``max_words`` words (``split()``),
    cut longer paragraphs on word boundaries, drop blank blocks."""
    raise NotImplementedError
