"""Cutting page text into passages.

Deterministic and model-free: the same text always gives the same passages,
so a recording of which passages retrieval picked replays on any machine.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict

MAX_WORDS = 200
# Recent splits, by page text: many claims cite the same page, and a replayed
# claim gets the very text its neighbours got. Bounded by the characters held
# (a page over a quarter of it is split each time).
_MEMO_CHARS = 8_000_000

# A blank line: a line break, any whitespace-only lines, a line break.
_BLANK_LINES = re.compile(r"\n\s*\n")
# A word as ``str.split()`` sees one (``\s`` and ``str.isspace`` agree).
_WORD = re.compile(r"\S+")
# A word that ends a sentence: a full stop, question or exclamation mark (or an
# ellipsis), then any closing quotes and brackets.
_SENTENCE_END = re.compile(r"[.!?…][\"'”’»)\]]*$")


def split_passages(text: str, max_words: int = MAX_WORDS, keep_sentences: bool = True) -> list[str]:
    """:func:`_split`, remembered for the last pages split (a new list each call)."""
    return list(_MEMO.get(text, max_words, keep_sentences))


class _SplitMemo:
    """The passages of recently split texts, oldest dropped past ``_MEMO_CHARS``."""

    def __init__(self) -> None:
        self._splits: OrderedDict[tuple[str, int, bool], tuple[str, ...]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, text: str, max_words: int, keep_sentences: bool) -> tuple[str, ...]:
        key = (text, max_words, keep_sentences)
        with self._lock:
            found = self._splits.get(key)
            if found is not None:
                self._splits.move_to_end(key)
                return found
        passages = tuple(_split(text, max_words, keep_sentences))
        if len(text) <= _MEMO_CHARS // 4:
            with self._lock:
                if key not in self._splits:
                    self._splits[key] = passages
                    self._chars += len(text)
                while self._chars > _MEMO_CHARS:
                    (old, _, _), _ = self._splits.popitem(last=False)
                    self._chars -= len(old)
        return passages


def _split(text: str, max_words: int, keep_sentences: bool) -> list[str]:
    """Split on blank lines, pack paragraphs up to ``max_words`` words (``split()``),
    cut longer paragraphs at sentence ends where possible, drop blank blocks.

    Paragraphs are packed greedily in page order and joined by one blank line.
    A paragraph longer than ``max_words`` starts a new passage and is cut into
    pieces of at most ``max_words`` words; its last piece may be packed with
    the paragraphs after it. Each cut falls at the last sentence end (a line
    break, or a word ending in ``.``, ``!``, ``?`` or ``…``) in the second
    half of the budget, else on a word boundary, so a sentence of at most
    ``max_words // 2`` words without a line break inside is never cut. Many
    pages (WiCE's among them) put one sentence a line inside one paragraph.
    ``keep_sentences=False`` cuts every ``max_words`` words instead (the seed's
    rule, kept for the retrieval benchmark).

    Text inside a paragraph (and inside a piece) is kept as the page has it
    and only whitespace falls between passages, so a quote copied from the
    page is a substring of one passage or of adjacent passages joined by
    whitespace (the guard's guarantee, stages/guard.py).
    """
    if max_words < 1:
        raise ValueError(f"max_words must be at least 1, not {max_words}")
    passages: list[str] = []
    pack: list[str] = []
    pack_words = 0

    def flush() -> None:
        nonlocal pack, pack_words
        if pack:
            passages.append("\n\n".join(pack))
        pack, pack_words = [], 0

    for block in _BLANK_LINES.split(text.replace("\r\n", "\n").replace("\r", "\n")):
        words = list(_WORD.finditer(block))
        if not words:
            continue  # a blank block
        if len(words) > max_words:
            flush()
            pieces = _cut(block, words, max_words, keep_sentences)
            passages.extend(pieces[:-1])
            pack, pack_words = [pieces[-1]], len(pieces[-1].split())
            continue
        paragraph = block[words[0].start() : words[-1].end()]
        if pack_words + len(words) > max_words:
            flush()
        pack.append(paragraph)
        pack_words += len(words)
    flush()
    return passages


def _cut(block: str, words: list[re.Match[str]], max_words: int, keep_sentences: bool) -> list[str]:
    """Cut one long paragraph into pieces of at most ``max_words`` words."""
    pieces: list[str] = []
    start = 0
    while len(words) - start > max_words:
        end = start + max_words  # the piece is words[start:end]
        if keep_sentences:
            end = _last_sentence_end(block, words, start + max(1, max_words // 2), end)
        pieces.append(block[words[start].start() : words[end - 1].end()])
        start = end
    pieces.append(block[words[start].start() : words[-1].end()])
    return pieces


def _last_sentence_end(block: str, words: list[re.Match[str]], low: int, high: int) -> int:
    """The largest ``end`` in ``[low, high]`` where a sentence ends after
    ``words[end - 1]``; ``high`` when there is none."""
    for end in range(high, low - 1, -1):
        before, after = words[end - 1], words[end]
        if "\n" in block[before.end() : after.start()] or _SENTENCE_END.search(before.group()):
            return end
    return high


_MEMO = _SplitMemo()
