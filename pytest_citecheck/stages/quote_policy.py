"""How the guard matches a judge's quote (``exact`` or ``fuzzy``), and the evidence
minimum every quote meets: a judge's, a confirmation's, a citation's own, and each
piece of an elided one (:func:`too_short`, :func:`thin_piece`: one rule).

Plain data importing only core constants and the text helpers, so the pytest options
can build it without loading pydantic or the guard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_citecheck.core.defaults import DEFAULT_QUOTE_SIMILARITY, QUOTE_MATCH_MODES
from pytest_citecheck.stages.text import STOP_WORDS, WORD, normalise

# The trivial-quote minimum: a quote is evidence only when it
# is a real span. "the", "Water", "." or "boils at" can be found in almost any
# page; "Cats are mammals." is the shortest kind of sentence that says something.
MIN_QUOTE_WORDS = 3
MIN_QUOTE_CHARS = 15
MIN_CONTENT_WORDS = 2


def too_short(quote: str) -> bool:
    """Whether ``quote`` is too short to be evidence: fewer than
    :data:`MIN_QUOTE_WORDS` words, :data:`MIN_QUOTE_CHARS` characters (after
    :func:`normalise`) or :data:`MIN_CONTENT_WORDS` words that are not stop words."""
    text = normalise(quote)
    words = WORD.findall(text.casefold())
    content = [w for w in words if w not in STOP_WORDS]
    return (
        len(words) < MIN_QUOTE_WORDS
        or len(text) < MIN_QUOTE_CHARS
        or len(content) < MIN_CONTENT_WORDS
    )


def thin_piece(pieces: Sequence[str]) -> str | None:
    """The first piece of an elided quote (``pieces``: more than one) below the evidence
    minimum (:func:`too_short`), None when each is a real span on its own (or there is
    no ellipsis). ``"The Eiffel Tower is ... in Lyon"`` and ``"T ... L"`` are no quote:
    one rule for a judge's quote and a citation's own."""
    if len(pieces) < 2:
        return None
    return next((piece for piece in pieces if too_short(piece)), None)


@dataclass(frozen=True)
class QuotePolicy:
    """How the guard matches a judge's quote against the passages.

    ``exact`` (default): the normalised quote must be a substring. ``fuzzy``: a
    quote whose folded words align with a span at ``similarity`` or more is
    accepted too, unless the edit changes a negation, number, date or unit.
    """

    mode: str = "exact"
    similarity: float = DEFAULT_QUOTE_SIMILARITY

    def __post_init__(self) -> None:
        if self.mode not in QUOTE_MATCH_MODES:
            raise ValueError(f"quote match must be one of {', '.join(QUOTE_MATCH_MODES)}")
        if not 0.0 <= self.similarity <= 1.0:
            raise ValueError("quote similarity must be between 0 and 1")

    @property
    def fuzzy(self) -> bool:
        return self.mode == "fuzzy"

    def metadata(self) -> dict[str, str | float]:
        """What a recording and the JSON report store: the mode, and the
        threshold when it is used."""
        if not self.fuzzy:
            return {"quote_match": self.mode}
        return {"quote_match": self.mode, "quote_similarity": self.similarity}


EXACT = QuotePolicy()
