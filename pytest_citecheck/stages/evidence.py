"""The evidence of a verdict: the sentence(s) of the page that hold the judge's quote.

A quote is a span the judge chose; what it says depends on the sentence around it
("The Hostile widget" says nothing about a weight, the sentence it opens may).
:func:`evidence_sentences` widens an accepted quote to whole sentences within its
passage (or the run of adjacent passages it spans), and nothing more: this is the only
text the confirmation call reads (:mod:`pytest_citecheck.stages.confirm`), where the
injection check looks for an instruction inside the evidence, and what the number floor
reads.

Sentences end at ``.``, ``!`` or ``?`` (closing quotes and brackets included) before
a capital, a digit or an opening quote, except after a common abbreviation or an
initial ("Dr.", "U.S."); a blank line, a markdown heading, list item, table row or
quote block, and a passage boundary always end one. The result is normalised as the
guard compares text (:func:`pytest_citecheck.stages.text.normalise`) and holds at most
:data:`MAX_CONTEXT_CHARS` characters on either side of the quote (an unpunctuated run
of text is not one sentence to read whole).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pytest_citecheck.claims.results import Passage
from pytest_citecheck.stages.quote_policy import thin_piece
from pytest_citecheck.stages.text import normalise, remembered

MAX_CONTEXT_CHARS = 300

# A line that starts a block of its own in markdown: heading, list item, table row, quote.
_BLOCK_START = re.compile(r"^\s*(?:#{1,6}\s|[-*+]\s|\d{1,3}[.)]\s|\||>)")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9\u00c0-\u00de])")
_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "mt",
        "no",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "inc",
        "ltd",
        "co",
        "corp",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "gen",
        "col",
        "lt",
        "sgt",
        "rev",
        "fig",
        "approx",
        "dept",
        "est",
    ]
)


def _blocks(text: str) -> list[str]:
    """The hard blocks of a passage: paragraphs, and markdown lines that are blocks."""
    blocks: list[list[str]] = []
    new_block = True
    for line in text.splitlines():
        if not line.strip():
            new_block = True
            continue
        if new_block or _BLOCK_START.match(line):
            blocks.append([])
        blocks[-1].append(line)
        new_block = False
    return [normalise("\n".join(lines)) for lines in blocks if lines]


def _sentence_spans(block: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(block):
        word = block[: match.start() + 1].rsplit(" ", 1)[-1].rstrip(".").casefold()
        if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
            continue
        spans.append((start, match.start() + 1 + len(match.group(0)[1:].rstrip())))
        start = match.end()
    spans.append((start, len(block)))
    return spans


def _runs(shown: Sequence[Passage]) -> list[list[Passage]]:
    runs: list[list[Passage]] = []
    for passage in sorted(shown, key=lambda p: p.index):
        if runs and passage.index == runs[-1][-1].index + 1:
            runs[-1].append(passage)
        else:
            runs.append([passage])
    return runs


def evidence_sentences(quote: str, shown: Sequence[Passage]) -> str:
    """The sentence(s) of ``shown`` holding ``quote``, normalised; the quote itself
    (normalised) when it is not found whole (it always is once the guard accepted it).

    An elided quote is read whole: the source's span from its first piece to its last,
    the text its ellipses skip included, widened to sentences the same way."""
    needle = normalise(quote)
    if not needle:
        return needle
    for run in _runs(shown):
        text, bounds = _sentences(tuple(p.text for p in run))
        found = _span(text, quote, needle)
        if found is None:
            continue
        at, end = found
        first = max((a for a, b in bounds if a <= at), default=0)
        last = min((b for a, b in bounds if b >= end), default=len(text))
        first = min(max(first, _word_start(text, at - MAX_CONTEXT_CHARS)), at)
        last = max(min(last, _word_end(text, end + MAX_CONTEXT_CHARS)), end)
        return text[first:last].strip()
    return needle


def _span(text: str, quote: str, needle: str) -> tuple[int, int] | None:
    """Where ``quote`` (``needle``: normalised) is in ``text``: as it is, else piece by
    piece across its ellipses (the guard's rule for what they may skip)."""
    from pytest_citecheck.stages.rendered import find_pieces, quote_pieces

    at = text.find(needle)
    if at != -1:
        return at, at + len(needle)
    pieces = quote_pieces(quote)
    if len(pieces) < 2 or thin_piece(pieces) is not None:
        return None
    from pytest_citecheck.stages.fuzzy import skipped_meaning

    return find_pieces(text, pieces, gap_ok=lambda gap: skipped_meaning(gap) is None)


@remembered(maxsize=512)
def _sentences(run: tuple[str, ...]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """A run of passages as one normalised text (its blocks joined by one space) and
    the (start, end) of each of its sentences in that text."""
    blocks = [b for text in run for b in _blocks(text)]
    bounds: list[tuple[int, int]] = []
    offset = 0
    for block in blocks:
        bounds += [(offset + a, offset + b) for a, b in _sentence_spans(block)]
        offset += len(block) + 1
    return " ".join(blocks), tuple(bounds)


def _word_start(text: str, at: int) -> int:
    if at <= 0:
        return 0
    space = text.find(" ", at)
    return at if space == -1 else space + 1


def _word_end(text: str, at: int) -> int:
    if at >= len(text):
        return len(text)
    space = text.rfind(" ", 0, at)
    return at if space == -1 else space
