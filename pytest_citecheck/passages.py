"""Cutting page text into passages (DESIGN §3 step 8).

Deterministic and model-free: the same text always gives the same passages,
so a recording of which passages retrieval picked replays on any machine.
"""

from __future__ import annotations

import re

MAX_WORDS = 200

# A blank line: a line break, any whitespace-only lines, a line break.
_BLANK_LINES = re.compile(r"\n\s*\n")
# A word as ``str.split()`` sees one (``\s`` and ``str.isspace`` agree).
_WORD = re.compile(r"\S+")


def split_passages(text: str, max_words: int = MAX_WORDS) -> list[str]:
    """Split on blank lines, pack paragraphs up to ``max_words`` words (``split()``),
    cut longer paragraphs on word boundaries, drop blank blocks.

    Paragraphs are packed greedily in page order and joined by one blank line.
    A paragraph longer than ``max_words`` starts a new passage and is cut into
    ``max_words``-word pieces; its last piece may be packed with the paragraphs
    after it. Text inside a paragraph (and inside a piece) is kept as the page
    has it, so a quote copied from the page is a substring of a passage or of
    two adjacent passages joined by whitespace.
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
            pieces = [
                block[words[i].start() : words[min(i + max_words, len(words)) - 1].end()]
                for i in range(0, len(words), max_words)
            ]
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
