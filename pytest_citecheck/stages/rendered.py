"""A page as a reader sees it: markdown rendered to text, with a map back to the markdown.

The Crawling API returns a page as markdown; a provider (and a judge, and a person
copying from a browser) quotes what a reader sees: ``Radar · Satellite`` where the page
has ``[Radar](https://...) · [Satellite](https://...)``, ``1.0.0 2014-05-21`` for the
table row ``| 1.0.0 | 2014-05-21 |``, ``bold`` for ``**bold**``. Every quote check reads
the page this way:

- :func:`render` turns markdown into text with markdown-it-py's token stream: link text
  kept, link targets and images dropped; emphasis, headings, list, quote and table
  syntax dropped (table cells joined by spaces); entities decoded; then normalised as
  :func:`~pytest_citecheck.stages.text.normalise` normalises. Each rendered character
  remembers the markdown it came from, so a span found in the rendered text is a span
  of the page's own text (:meth:`Rendered.source_span`, the report's highlight).
- :func:`quote_pieces` reads a quote the same way: entities decoded, normalised, and cut
  at every ellipsis (``...``, ``…``, ``[...]``) into pieces that must be found in order
  (:func:`find_pieces`). A piece is a substring, so one cut mid-word at its start or end
  (``Here's wh...``) matches the word it is a prefix or suffix of.

A page is rendered once per text (an LRU cache): the guard, the quote index and the
report ask for the same passages many times. markdown-it-py is imported on the first
render only.
"""

from __future__ import annotations

import html
import re
import unicodedata
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from pytest_citecheck.stages.text import (
    ELLIPSIS,
    HYPHEN_WRAP,
    TRANSLATED,
    TRANSLATION,
    normalise,
)

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

# How far apart (in rendered characters) two pieces of an elided quote may be: an
# ellipsis skips a clause or a few sentences, not half the page.
MAX_ELISION_CHARS = 2000
# What html.unescape decodes (its own pattern): named, decimal and hex references.
_CHARREF = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")
# Only the whitespace normalise() changes: runs, and any whitespace that is not a space.
_WHITESPACE = re.compile(r"\s{2,}|[^\S ]")
# What follows a link's text in the markdown: an inline target, a reference label,
# or the end of an autolink.
_LINK_TAIL = re.compile(
    r"\]\((?:<[^>\n]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)|\]\[[^\]]*\]|\]|>"
)
_IMAGE = re.compile(r"!\[(?:[^\[\]]|\[[^\]]*\])*\](?:\([^)]*\)|\[[^\]]*\])?")
# How far ahead a character of a token may be looked for when the token is not a
# verbatim slice of the markdown (an entity or an escape inside it).
_LOOKAHEAD = 16
# How much markup may sit between two pieces of text (emphasis, a list marker, the
# pipes of a table row, a blockquote's ``>``): a token found further on is placed
# character by character instead.
_SLACK = 64
_CACHE_SIZE = 256
# HTML a reader sees as a break between words; other tags join the text around them.
_HTML_TAG = re.compile(r"<[^>]*>")
_BLOCK_TAG = re.compile(
    r"</?(?:address|article|aside|blockquote|br|dd|div|dl|dt|figcaption|"
    r"footer|h[1-6]|header|hr|li|main|nav|ol|p|pre|section|table|td|th|tr|ul)\b",
    re.I,
)


class _Builder:
    """Rendered text under construction: each character with its markdown span."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.chars: list[str] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.cursor = 0

    def gap(self, text: str = "\n") -> None:
        """A separator a reader sees between blocks or cells: it has no markdown of its own."""
        at = self.cursor
        for ch in text:
            self.chars.append(ch)
            self.starts.append(at)
            self.ends.append(at)

    def seek_line(self, line: int, line_starts: Sequence[int]) -> None:
        if 0 <= line < len(line_starts):
            self.cursor = max(self.cursor, line_starts[line])

    def skip(self, pattern: re.Pattern[str]) -> None:
        """Step over markup that renders to nothing (a link's target, an image)."""
        match = pattern.search(self.source, self.cursor)
        if match is not None and match.start() - self.cursor <= _LOOKAHEAD:
            self.cursor = match.end()

    def text(self, content: str) -> None:
        """``content`` as the token has it, placed in the markdown after the cursor."""
        if not content:
            return
        source = self.source
        at = source.find(content, self.cursor, self.cursor + _SLACK + len(content))
        if at != -1:
            self.chars.extend(content)
            self.starts.extend(range(at, at + len(content)))
            self.ends.extend(range(at + 1, at + len(content) + 1))
            self.cursor = at + len(content)
            return
        # Not a verbatim slice: an entity, a backslash escape or a stripped line prefix
        # sits inside. Place it character by character.
        for ch in content:
            start, end = self._place(ch)
            self.chars.append(ch)
            self.starts.append(start)
            self.ends.append(end)

    def _place(self, ch: str) -> tuple[int, int]:
        source, at = self.source, self.cursor
        limit = min(len(source), at + _LOOKAHEAD)
        while at < limit:
            if source[at] == ch:
                self.cursor = at + 1
                return at, at + 1
            if ch.isspace() and source[at].isspace():
                # A line break inside a code span or a link's text reads as a space.
                end = at + 1
                while end < len(source) and source[end].isspace():
                    end += 1
                self.cursor = end
                return at, end
            if source[at] == "\\" and source[at + 1 : at + 2] == ch:
                self.cursor = at + 2
                return at, at + 2
            if source[at] == "&":
                ref = _CHARREF.match(source, at)
                if ref is not None and html.unescape(ref.group()).startswith(ch):
                    self.cursor = ref.end()
                    return at, ref.end()
            at += 1
        return self.cursor, self.cursor


@dataclass(frozen=True)
class Rendered:
    """A page's text as a reader sees it, normalised, with each character's markdown span."""

    source: str
    text: str
    # Compact: a cached page keeps two machine integers a character, not two objects.
    starts: array[int]
    ends: array[int]

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The markdown span that rendered to ``text[start:end]`` (``end`` > ``start``)."""
        return self.starts[start], self.ends[end - 1]


@cache
def _parser() -> MarkdownIt:
    """CommonMark with tables and strikethrough (one parser; each parse has its own state)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def render(markdown: str) -> Rendered:
    """``markdown`` as a reader sees it (cached by text)."""
    return _render(markdown)


@lru_cache(maxsize=_CACHE_SIZE)
def _render(markdown: str) -> Rendered:
    builder = _Builder(markdown)
    line_starts = [0] + [m.end() for m in re.finditer(r"\n", markdown)]
    for token in _parser().parse(markdown):
        if token.map is not None:
            builder.seek_line(token.map[0], line_starts)
        kind = token.type
        if kind == "inline":
            _inline(builder, token.children or [])
        elif kind in ("fence", "code_block"):
            for line in token.content.splitlines():
                builder.text(line)
                builder.gap()
        elif kind == "html_block":
            _html(builder, token.content)
        elif kind in ("td_open", "th_open"):
            builder.gap(" ")
        elif kind.endswith("_close") or kind == "hr":
            builder.gap()
    chars, starts, ends = _normalised(builder)
    return Rendered(markdown, "".join(chars), array("q", starts), array("q", ends))


def _inline(builder: _Builder, children: Sequence[Any]) -> None:
    for child in children:
        kind = child.type
        if kind in ("text", "code_inline"):
            builder.text(child.content)
        elif kind in ("softbreak", "hardbreak"):
            builder.gap()
        elif kind == "link_close":
            builder.skip(_LINK_TAIL)
        elif kind == "image":
            builder.skip(_IMAGE)
        elif kind == "html_inline":
            _html(builder, child.content)


def _html(builder: _Builder, content: str) -> None:
    """Raw HTML: its text, without the tags (a block tag is a break between words)."""
    last = 0
    for tag in _HTML_TAG.finditer(content):
        builder.text(content[last : tag.start()])
        at = builder.source.find(tag.group(), builder.cursor, builder.cursor + _SLACK)
        if at != -1:
            builder.cursor = at + len(tag.group())
        if _BLOCK_TAG.match(tag.group()):
            builder.gap()
        last = tag.end()
    builder.text(content[last:])


Mapped = tuple[list[str], list[int], list[int]]


def _sub(mapped: Mapped, pattern: re.Pattern[str], repl: Callable[[re.Match[str]], str]) -> Mapped:
    """``pattern.sub(repl)`` on the characters, each replacement mapped to the markdown
    of what it replaced (one to one when the lengths agree)."""
    chars, starts, ends = mapped
    text = "".join(chars)
    out_chars: list[str] = []
    out_starts: list[int] = []
    out_ends: list[int] = []
    last = 0
    for match in pattern.finditer(text):
        new = repl(match)
        start, end = match.span()
        if new == match.group():
            continue
        out_chars += chars[last:start]
        out_starts += starts[last:start]
        out_ends += ends[last:start]
        if len(new) == end - start:
            out_starts += starts[start:end]
            out_ends += ends[start:end]
        else:
            out_starts += [starts[start]] * len(new)
            out_ends += [ends[end - 1]] * len(new)
        out_chars += new
        last = end
    if last == 0:
        return mapped
    out_chars += chars[last:]
    out_starts += starts[last:]
    out_ends += ends[last:]
    return out_chars, out_starts, out_ends


def _nfc(mapped: Mapped) -> Mapped:
    """NFC, one base character and its combining marks at a time."""
    chars, starts, ends = mapped
    if unicodedata.is_normalized("NFC", "".join(chars)):
        return mapped
    out: Mapped = ([], [], [])
    i = 0
    while i < len(chars):
        j = i + 1
        while j < len(chars) and unicodedata.combining(chars[j]):
            j += 1
        composed = unicodedata.normalize("NFC", "".join(chars[i:j]))
        out[0].extend(composed)
        out[1].extend([starts[i]] * len(composed))
        out[2].extend([ends[j - 1]] * len(composed))
        i = j
    return out


def _normalised(builder: _Builder) -> Mapped:
    """:func:`~pytest_citecheck.stages.text.normalise`, step by step, offsets kept;
    entities left in the rendered text (inside code, raw HTML) are decoded first."""
    mapped: Mapped = (builder.chars, builder.starts, builder.ends)
    mapped = _sub(mapped, _CHARREF, lambda m: html.unescape(m.group()))
    mapped = _nfc(mapped)
    mapped = _sub(mapped, TRANSLATED, lambda m: m.group().translate(TRANSLATION))
    mapped = _sub(mapped, HYPHEN_WRAP, lambda m: "-")
    mapped = _sub(mapped, _WHITESPACE, lambda m: " ")
    chars, starts, ends = mapped
    first = 0
    while first < len(chars) and chars[first] == " ":
        first += 1
    last = len(chars)
    while last > first and chars[last - 1] == " ":
        last -= 1
    return chars[first:last], starts[first:last], ends[first:last]


def quote_text(quote: str) -> str:
    """A quote as it is compared: entities decoded, normalised (ellipses kept)."""
    return normalise(html.unescape(quote))


def quote_pieces(quote: str) -> list[str]:
    """The parts of ``quote`` between ellipses, each as :func:`quote_text` reads it."""
    pieces = (piece.strip() for piece in ELLIPSIS.split(quote_text(quote)))
    return [piece for piece in pieces if piece]


def find_pieces(
    text: str,
    pieces: Sequence[str],
    start: int = 0,
    gap_ok: Callable[[str], bool] | None = None,
) -> tuple[int, int] | None:
    """The first span of ``text`` at or after ``start`` holding ``pieces`` in order, each
    at most :data:`MAX_ELISION_CHARS` after the one before (and, with ``gap_ok``, every
    skipped stretch accepted by it); None when there is none."""
    if not pieces:
        return None
    first = text.find(pieces[0], start)
    while first != -1:
        end = first + len(pieces[0])
        for piece in pieces[1:]:
            at = text.find(piece, end, end + MAX_ELISION_CHARS + len(piece))
            if at == -1 or (gap_ok is not None and not gap_ok(text[end:at])):
                break
            end = at + len(piece)
        else:
            return first, end
        first = text.find(pieces[0], first + 1)
    return None


def find_all(
    text: str, pieces: Sequence[str], gap_ok: Callable[[str], bool] | None = None
) -> list[tuple[int, int]]:
    """Every span :func:`find_pieces` finds, by start, left to right."""
    out: list[tuple[int, int]] = []
    found = find_pieces(text, pieces, 0, gap_ok)
    while found is not None:
        out.append(found)
        found = find_pieces(text, pieces, found[0] + 1, gap_ok)
    return out


def locate(markdown: str, quote: str) -> tuple[int, int] | None:
    """Where ``quote`` is in ``markdown`` as a reader sees it: the markdown span, or None."""
    pieces = quote_pieces(quote)
    if not pieces:
        return None
    rendered = render(markdown)
    found = find_pieces(rendered.text, pieces)
    if found is None:
        return None
    return rendered.source_span(*found)
