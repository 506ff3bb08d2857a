"""Text as the guard compares it: normalisation and stop words.

Shared by the guard (:mod:`pytest_citecheck.stages.guard`, which re-exports
them), the injection check (:mod:`pytest_citecheck.stages.injection`) and the
relevance check (:mod:`pytest_citecheck.stages.relevance`), so the three read
page text the same way. No imports from the package.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

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

# The characters the translation below changes: a quote mark or an invisible character.
TRANSLATED = re.compile(f"[{_SINGLE_QUOTES}{_DOUBLE_QUOTES}{_INVISIBLE}]")
TRANSLATION = str.maketrans(
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
HYPHEN_WRAP = re.compile(r"(?<=\w)-[ \t]*(?:\r\n|\r|\n)\s*(?=\w)")


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

    A short text (a quote, a sentence: up to :data:`REMEMBERED_CHARS`) is remembered:
    one verification normalises its quote in every check of the guard, and the
    confirmation guards it again.
    """
    if len(text) <= REMEMBERED_CHARS:
        return _normalise_short(text)
    return _normalise(text)


# The longest text normalise() remembers; pages and passages are not kept.
REMEMBERED_CHARS = 2_000


@functools.lru_cache(maxsize=1024)
def _normalise_short(text: str) -> str:
    return _normalise(text)


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFC", text).translate(TRANSLATION)
    text = HYPHEN_WRAP.sub("-", text)
    return _WHITESPACE.sub(" ", text).strip()


def word_set(text: str) -> frozenset[str]:
    """The words of a space-separated list, as a set (for the word tables)."""
    return frozenset(text.split())


STOP_WORDS = word_set(
    "a about above after again against all am an and any are as at be because been before "
    "being below between both but by can could did do does doing down during each few for "
    "from further had has have having he her here hers herself him himself his how i if in "
    "into is it its itself just me more most my myself of off on once only or other our ours "
    "ourselves out over own same she should so some such than that the their theirs them "
    "themselves then there these they this those through to too under until up very was we "
    "were what when where which while who whom why will with would you your yours yourself "
    "yourselves also may might must shall"
)
# "...", ". . .", "…", and the bracketed "[...]" / "[…]" of an edited quote. Of a longer
# run of dots the last three are the ellipsis: "the end...." is a full stop, then one.
ELLIPSIS = re.compile(r"\[\s*(?:\.\s*){3}\]|\[\s*…\s*\]|(?:\.\s*){2}\.(?!\s*\.)|…")
# A word: letters and digits, with inner apostrophes ("don't").
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


# The longest text a memo below keeps: a passage, a sentence, a quote -- not a whole
# page or document (a longer one is computed each time, nothing of it kept).
REMEMBERED_CHARS = 20_000


def remembered(
    maxsize: int, max_chars: int = REMEMBERED_CHARS
) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """``functools.lru_cache(maxsize)`` for a pure function of text, used when its text
    arguments (strings, and tuples of strings) hold at most ``max_chars`` characters
    together; longer ones are computed each time, nothing of them kept.

    Replay and large runs show many claims the same passages of the same page: what
    is read from a passage is read once. The result must not be mutated by callers.
    """

    def wrap(function: Callable[_P, _R]) -> Callable[_P, _R]:
        cached = functools.lru_cache(maxsize=maxsize)(function)

        @functools.wraps(function)
        def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            if kwargs or _chars(args) > max_chars:
                return function(*args, **kwargs)
            return cached(*args)

        return call

    return wrap


def _chars(args: tuple[object, ...]) -> int:
    total = 0
    for arg in args:
        if isinstance(arg, str):
            total += len(arg)
        elif isinstance(arg, tuple):
            total += sum(len(part) for part in arg if isinstance(part, str))
    return total
