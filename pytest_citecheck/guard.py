"""The guard: a verdict is believed only if its quote is really in what the judge read.

DESIGN §3.11. The judge interprets; it is never the source of truth. A
``supported`` or ``contradicted`` verdict stands only when its quote is an
exact substring of the passages the judge was shown, after both sides are
normalised the same way (:func:`normalise`). Document citations reuse
:func:`normalise` to look quotes up in a whole document.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_citecheck.models import Label, Passage, Reason

if TYPE_CHECKING:
    # Only the type: importing the judges package would pull in httpx and every
    # provider wherever the guard's normalise() is used (documents, the loader).
    from pytest_citecheck.judges.base import JudgeReply

# Typographic variants of the ASCII quote characters. A judge (or a user
# pasting from a browser) routinely swaps one for the other; the words are the
# evidence, not the glyph of the quote mark around them.
_SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2032\u2035\u02bc\u2039\u203a\uff07"
_DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb\u301d\u301e\uff02"

# Invisible characters that only say where a line may break or how glyphs
# join: zero-width space, zero-width non-joiner and joiner, word joiner,
# byte-order mark / zero-width no-break space, soft hyphen. They sit *inside*
# words ("infor\u00admation"), so they are removed rather than read as spaces.
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"

_TRANSLATION = str.maketrans(
    {
        **dict.fromkeys(_SINGLE_QUOTES, "'"),
        **dict.fromkeys(_DOUBLE_QUOTES, '"'),
        **dict.fromkeys(_INVISIBLE, None),
    }
)

# ``\s`` on str patterns is Unicode-aware: it covers NBSP (U+00A0), narrow
# NBSP (U+202F), figure space, the U+2000 block, ideographic space, line and
# paragraph separators, tabs, form feeds and every line ending.
_WHITESPACE = re.compile(r"\s+")
# A compound word broken after its hyphen at a line end ("case-\n   sensitive",
# as RFCs and hard-wrapped text do): the hyphen is real, the line break is not.
_HYPHEN_WRAP = re.compile(r"(?<=\w)-[ \t]*(?:\r\n|\r|\n)\s*(?=\w)")


def normalise(text: str) -> str:
    """Normalise text for quote matching.

    - NFC, so a precomposed and a decomposed accent compare equal;
    - typographic quotes (curly, low-9, reversed, primes, guillemets, fullwidth)
      -> ASCII ``'`` / ``"``;
    - zero-width characters and soft hyphens removed (they sit inside words);
    - a hyphen at a line end between two word characters joins them
      (``case-\\n   sensitive`` -> ``case-sensitive``);
    - every run of whitespace, NBSP and narrow NBSP included, -> one space;
    - stripped.

    Case, dashes and all other punctuation are kept: the quote must still be
    verbatim.
    """
    text = unicodedata.normalize("NFC", text).translate(_TRANSLATION)
    text = _HYPHEN_WRAP.sub("-", text)
    return _WHITESPACE.sub(" ", text).strip()


@dataclass(frozen=True)
class Guarded:
    """A judge reply after the guard: what the verdict will say."""

    label: Label
    quote: str | None
    confidence: float
    reason: str | None


def guard(reply: JudgeReply, shown: Sequence[Passage]) -> Guarded:
    """Accept ``reply`` only if its quote is in ``shown`` (DESIGN §3.11).

    ``shown`` are the passages the judge read, each with ``index`` = its
    position in the page's passage list. A quote may run across passages only
    where they are adjacent in the page (consecutive indices): those are
    joined by one space, which is what the page had between them.

    - ``supported``/``contradicted`` with a quote that is missing, blank or not
      in ``shown`` -> ``not_found``, confidence 0, reason
      ``evidence_quote_not_in_source`` (the quote is kept for the report);
    - ``not_found`` with a quote that is not in ``shown`` -> the same;
    - ``not_found`` without a quote -> ``not_found``, no reason;
    - otherwise the label and quote stand, confidence clamped to [0, 1].
    """
    label = Label(reply.label)
    confidence = _clamp(reply.confidence)
    quote = reply.quote
    has_quote = quote is not None and normalise(quote) != ""

    if label is Label.NOT_FOUND and not has_quote:
        return Guarded(label=Label.NOT_FOUND, quote=None, confidence=confidence, reason=None)
    if quote is not None and has_quote and quote_in_passages(quote, shown):
        return Guarded(label=label, quote=quote, confidence=confidence, reason=None)
    return Guarded(
        label=Label.NOT_FOUND,
        quote=quote,
        confidence=0.0,
        reason=Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE,
    )


def quote_in_passages(quote: str, shown: Sequence[Passage]) -> bool:
    """Whether ``quote`` (normalised) is a substring of ``shown``, where only
    passages adjacent in the page may be read as one text."""
    needle = normalise(quote)
    if not needle:
        return False
    return any(needle in text for text in _runs(shown))


def _runs(shown: Sequence[Passage]) -> list[str]:
    """The normalised text of each maximal run of consecutive passage indices."""
    runs: list[list[str]] = []
    previous: int | None = None
    for passage in sorted(shown, key=lambda p: p.index):
        text = normalise(passage.text)
        if previous is not None and passage.index == previous + 1:
            runs[-1].append(text)
        else:
            runs.append([text])
        previous = passage.index
    return [" ".join(part for part in run if part) for run in runs]


def _clamp(confidence: float) -> float:
    if math.isnan(confidence):
        return 0.0
    return min(1.0, max(0.0, float(confidence)))
