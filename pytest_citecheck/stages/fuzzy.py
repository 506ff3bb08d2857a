"""Fuzzy quote matching: the guard's opt-in ``fuzzy`` mode.

Judges edit quotes lightly: an ellipsis for a skipped clause, a dropped comma,
a changed capital, another apostrophe, no final period. In ``fuzzy`` mode such
a quote is accepted when it aligns with a span of the passages, and the verdict
then reports that span, the page's own words, rather than the judge's text.

How a quote is compared with the page:

- both sides are *folded*: lower case, every run of characters that are not
  letters or digits becomes one space. The similarity is rapidfuzz's
  normalised Indel similarity (``fuzz.ratio`` / 100) between the folded quote
  and the folded span, so it measures the words and ignores case and
  punctuation;
- the span is found with ``fuzz.partial_ratio_alignment`` (the best window of
  the page for the quote, computed in C++ with a bit-parallel LCS), then moved
  to word boundaries, trying one word more or less at each end;
- an ellipsis (``...``, ``…``, ``[...]``) splits the quote into pieces that
  must align, in order, within one passage or run of adjacent passages; the
  span then runs from the first piece to the last, and the text it skips may
  hold no negation and no number (:func:`skipped_meaning`);
- the quote's first and last words must be the span's (give or take a
  spelling): a quote that runs on past the passages it was shown is refused;
- an edit that changes meaning is never accepted, whatever the similarity: the
  span and the quote must have the same negations (not, no, never, n't, ...),
  numbers, number words, dates (months, weekdays) and units, in the same order.

rapidfuzz is imported on the first fuzzy comparison only, so exact mode (the
default) never loads it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_citecheck.stages.text import ELLIPSIS, word_set

# Characters a page or a judge uses as an apostrophe inside a word. The guard's
# normalise() already maps typographic quotes; these are the look-alikes it
# (rightly) keeps in exact mode: acute and grave accents, primes, modifiers.
_APOSTROPHES = str.maketrans(dict.fromkeys("\u00b4`\u2018\u2019\u02b9\u02bb\u02bc\u2032", "'"))
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*|[%‰°$€£¥]")
# A number as written: digits with decimal points or thousands separators;
# a minus only at the start of a word ("-5", but "2013-2016" is two numbers).
_NUMBER = re.compile(r"(?<![\w.,])[-−]?\d+(?:[.,]\d+)*|\d+(?:[.,]\d+)*")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


NEGATIONS = word_set(
    "not no never nor neither none nothing nobody nowhere without cannot n't "
    "dont doesnt didnt isnt arent wasnt werent cant couldnt wouldnt shouldnt wont "
    "hasnt havent hadnt aint mustnt neednt shant"
)
NUMBER_WORDS = word_set(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty "
    "sixty seventy eighty ninety hundred thousand million billion trillion dozen "
    "half halves third thirds quarter quarters fifth fifths once twice thrice double "
    "triple first second fourth sixth seventh eighth ninth tenth"
)
DATE_WORDS = word_set(
    "january february march april may june july august september october november "
    "december jan feb apr jun jul aug sep sept oct nov dec monday tuesday wednesday "
    "thursday friday saturday sunday"
)
UNIT_WORDS = word_set(
    "percent percentage percentages celsius fahrenheit kelvin degree degrees "
    "meter meters metre metres kilometer kilometers kilometre kilometres centimeter "
    "centimeters centimetre centimetres millimeter millimeters millimetre millimetres "
    "mile miles feet foot inch inches yard yards km cm mm kg mg lb lbs pound pounds "
    "ounce ounces oz ton tons tonne tonnes gram grams kilogram kilograms litre litres "
    "liter liters gallon gallons ml acre acres hectare hectares mph kph second seconds "
    "minute minutes hour hours day days week weeks month months year years decade "
    "decades century centuries dollar dollars euro euros cent cents yen usd eur gbp "
    "byte bytes kb mb gb tb hz khz mhz ghz watt watts kw mw volt volts calorie "
    "calories kcal % ‰ ° $ € £ ¥"
)
# One or two letters are a unit only right after a number ("100 m", "5 g").
SHORT_UNITS = word_set("m g s h l w v k b c f t")


# Two words "match" at a quote's ends at this Indel similarity ("centre"/"center").
ANCHOR_WORD_SIMILARITY = 75
# How many windows of one passage run are tried for one quote.
WINDOWS = 3
UNANCHORED = "its first or last words (the passages do not have them)"


@dataclass(frozen=True)
class Alignment:
    """The closest span of the passages to a quote (before any threshold)."""

    span: str  # the page's own words: a substring of the normalised passages
    similarity: float  # in [0, 1], of the folded quote and the folded span
    change: str | None  # None, or what meaning the quote changes ("a negation", ...)


def split_ellipsis(quote: str) -> list[str]:
    """The pieces of ``quote`` between ellipses (one piece when there is none)."""
    return [piece.strip() for piece in ELLIPSIS.split(quote) if piece.strip(" .")]


def closest(quote: str, runs: Sequence[str]) -> list[Alignment]:
    """Candidate spans for ``quote`` (normalised), best first, one per run.

    ``runs`` are the normalised texts of the passages shown, adjacent passages
    read as one text (what the page has there). A quote with an ellipsis is
    looked for piece by piece, in order, within one run.
    """
    pieces = split_ellipsis(quote)
    if len(pieces) > 1:
        found = [_align_pieces(pieces, text) for text in runs]
    else:
        found = [_align(quote, text) for text in runs]
    return sorted((a for a in found if a is not None), key=_rank)


# -- alignment ------------------------------------------------------------------


def fold(text: str) -> tuple[str, list[int]]:
    """Lower case, each run of non-alphanumerics as one space, stripped; with the
    index in ``text`` each folded character comes from."""
    out: list[str] = []
    origin: list[int] = []
    for i, char in enumerate(text):
        if char.isalnum():
            lowered = char.lower()
            out.extend(lowered)
            origin.extend([i] * len(lowered))
        elif out and out[-1] != " ":
            out.append(" ")
            origin.append(i)
    if out and out[-1] == " ":
        out.pop()
        origin.pop()
    return "".join(out), origin


def similarity(a: str, b: str) -> float:
    """Indel similarity of the folded texts, in [0, 1]."""
    from rapidfuzz import fuzz

    return float(fuzz.ratio(fold(a)[0], fold(b)[0])) / 100.0


def _spans(
    quote: str, text: str, start: int = 0, every: bool = False
) -> list[tuple[int, int, float, bool]]:
    """``(start, end, similarity, anchored)`` of the spans of ``text[start:]``
    closest to ``quote``, on word boundaries of ``text``, best first.

    rapidfuzz gives the best window; a page often has the same words twice (a
    title and its URL, a heading and the body), so the next windows are looked
    for too, with the ones found masked, up to :data:`WINDOWS` (``every``: even
    after a verbatim one, for the first piece of an ellipsis quote).
    """
    from rapidfuzz import fuzz

    needle, _ = fold(quote)
    hay, origin = fold(text[start:])
    if not needle or not hay:
        return []
    words = [(m.start() + start, m.end() + start) for m in re.finditer(r"\S+", text[start:])]
    found: list[tuple[bool, float, int, int, int]] = []
    for _ in range(WINDOWS):
        hit = fuzz.partial_ratio_alignment(needle, hay)
        if (
            hit is None
            or hit.dest_end <= hit.dest_start
            or not hay[hit.dest_start : hit.dest_end].strip()
        ):
            break
        hay = hay[: hit.dest_start] + " " * (hit.dest_end - hit.dest_start) + hay[hit.dest_end :]
        lo = start + origin[hit.dest_start]
        hi = start + origin[hit.dest_end - 1] + 1
        first = next(i for i, (_, end) in enumerate(words) if end > lo)
        last = max(i for i, (begin, _) in enumerate(words) if begin < hi)
        best: tuple[bool, float, int, int, int] | None = None
        # The window has the quote's length; a dropped or added word moves the
        # true span by a word at either end. Anchored spans first, then the
        # most similar, then the shortest.
        for i in range(max(0, first - 1), min(len(words), first + 2)):
            for j in range(max(i, last - 1), min(len(words), last + 2)):
                begin, end = _trim(text, words[i][0], words[j][1])
                folded = fold(text[begin:end])[0]
                if not folded:
                    continue
                score = float(fuzz.ratio(needle, folded)) / 100.0
                key = (_anchored(needle, folded), score, begin - end, begin, end)
                best = key if best is None or key > best else best
        if best is not None:
            found.append(best)
        if best is not None and best[0] and best[1] == 1.0 and not every:
            break  # a verbatim span: no other window can be better
    return [
        (begin, end, score, anchored)
        for anchored, score, _, begin, end in sorted(found, reverse=True)
    ]


def _anchored(needle: str, span: str) -> bool:
    """Whether the quote starts and ends with the span's first and last words (give
    or take a spelling): a quote that runs on past the passages it was shown
    ("... to pile up." where the passage ends at "pile") is not a span of them."""
    from rapidfuzz import fuzz

    quote_words, span_words = needle.split(), span.split()
    return all(fuzz.ratio(quote_words[k], span_words[k]) >= ANCHOR_WORD_SIMILARITY for k in (0, -1))


def _trim(text: str, begin: int, end: int) -> tuple[int, int]:
    """Drop punctuation that only joins the span to its neighbours."""
    while begin < end and text[begin] in "([{\"',;:":
        begin += 1
    while end > begin and text[end - 1] in ",;:([{":
        end -= 1
    return begin, end


def _align(quote: str, text: str) -> Alignment | None:
    found = [
        Alignment(text[b:e], score, meaning_change(quote, text[b:e]) if anchored else UNANCHORED)
        for b, e, score, anchored in _spans(quote, text)
    ]
    return min(found, key=_rank, default=None)


def _align_pieces(pieces: Sequence[str], text: str) -> Alignment | None:
    """The first piece where each of its windows is; the others, in order, after it."""
    found = []
    for first in _spans(pieces[0], text, every=True):
        spans = [first]
        for piece in pieces[1:]:
            after = _spans(piece, text, spans[-1][1])
            if not after:
                break
            spans.append(after[0])
        if len(spans) == len(pieces):
            found.append(_pieces_alignment(pieces, text, spans))
    return min(found, key=_rank, default=None)


def _pieces_alignment(
    pieces: Sequence[str], text: str, spans: Sequence[tuple[int, int, float, bool]]
) -> Alignment:
    span = text[spans[0][0] : spans[-1][1]]
    score = similarity(" ".join(pieces), " ".join(text[b:e] for b, e, _, _ in spans))
    if not all(anchored for _, _, _, anchored in spans):
        return Alignment(span, score, UNANCHORED)
    change = next(
        (
            c
            for piece, (b, e, _, _) in zip(pieces, spans, strict=True)
            if (c := meaning_change(piece, text[b:e]))
        ),
        None,
    )
    gaps = [text[spans[k][1] : spans[k + 1][0]] for k in range(len(spans) - 1)]
    skipped = next((kind for gap in gaps if (kind := skipped_meaning(gap))), None)
    if change is None and skipped is not None:
        change = f"{skipped} (in the text the ellipsis skips)"
    return Alignment(span, score, change)


def holds_negation(text: str) -> bool:
    """Whether ``text`` holds a negation (not, no, never, n't...)."""
    return bool(_meaning(text, negations_only=True))


def skipped_meaning(skipped: str) -> str | None:
    """What the text an ellipsis skips holds that no quote may leave out: ``"a negation"``
    (not, no, never, n't...) or ``"a number"`` (a number or date as
    :func:`pytest_citecheck.stages.numbers.stated_numbers` reads them); None when it
    holds neither. The one rule for every elided quote: a judge's (exact or fuzzy), a
    citation's own, a document's."""
    from pytest_citecheck.stages.numbers import stated_numbers

    if holds_negation(skipped):
        return "a negation"
    if stated_numbers(skipped):
        return "a number"
    return None


def _rank(alignment: Alignment) -> tuple[bool, float]:
    """Sort key, best first: spans that keep the meaning, then the most similar."""
    return alignment.change is not None, -alignment.similarity


# -- meaning ----------------------------------------------------------------------


def meaning_change(quote: str, span: str) -> str | None:
    """What meaning ``quote`` changes against ``span`` (``"a number"``, ...), or None."""
    left, right = _meaning(quote), _meaning(span)
    if left == right:
        return None
    for kind in ("negation", "number", "date", "unit"):
        if [v for k, v in left if k == kind] != [v for k, v in right if k == kind]:
            return f"a {kind}"
    return "a number"  # same values, another order


def _meaning(text: str, negations_only: bool = False) -> list[tuple[str, str]]:
    """The words that carry meaning a light edit must keep, in order."""
    text = _THOUSANDS.sub("", text.translate(_APOSTROPHES).casefold())
    out: list[tuple[str, str]] = []
    previous_is_number = False
    for match in re.finditer(rf"{_NUMBER.pattern}|{_TOKEN.pattern}", text):
        token = match.group()
        # A number, or a word with digits in it ("A16z", "DK3", "1990s", "4th").
        if any(c.isdigit() for c in token):
            if not negations_only:
                out.append(("number", token.replace("−", "-")))
            previous_is_number = True
            continue
        word = token.replace("'", "") if token.endswith("n't") else token
        if token.endswith("n't") or word in NEGATIONS:
            out.append(("negation", "not"))
        elif negations_only:
            pass
        elif word in NUMBER_WORDS:
            out.append(("number", word))
        elif word in DATE_WORDS:
            out.append(("date", word))
        elif word in UNIT_WORDS or (previous_is_number and word in SHORT_UNITS):
            out.append(("unit", word.removesuffix("s") if len(word) > 3 else word))
        # A scale letter follows a degree sign as a unit follows a number ("°C").
        previous_is_number = token == "°"
    return out
