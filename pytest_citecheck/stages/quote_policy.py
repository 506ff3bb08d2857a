"""How the guard matches a judge's quote: ``exact`` or ``fuzzy``.

Plain data importing only core constants, so the pytest options can build
it without loading pydantic or the guard.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_citecheck.core.defaults import DEFAULT_QUOTE_SIMILARITY as DEFAULT_QUOTE_SIMILARITY
from pytest_citecheck.core.defaults import QUOTE_MATCH_MODES as QUOTE_MATCH_MODES


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
