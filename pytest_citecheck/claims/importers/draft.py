"""What an importer collects from an answer before its claims are built: the answer's text
(``Draft``), the citation markers in it and the spans they cover, its paragraphs, and its
links: a URL cleaned of tracking parameters, a marker's link found in the text, a URL
annotation placed on the sentence it supports.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from pytest_citecheck.claims.importers.answer import (
    CitedSource,
    Reader,
    provider_quote,
)


@dataclass
class Marker:
    start: int
    end: int
    sources: list[CitedSource]


@dataclass
class Span:
    start: int
    end: int
    sources: list[CitedSource]


@dataclass
class Draft:
    text: str
    markers: list[Marker] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    # Other text that is not answer: definition lines, a reasoning block, link syntax.
    removals: list[tuple[int, int]] = field(default_factory=list)
    unattached: list[CitedSource] = field(default_factory=list)
    # Where the annotations are that carry no position in the text (no offsets, and no
    # link to their URL in it): why they are unattached, said when nothing is cited.
    no_position: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Pages the provider read for this answer (fetched or searched) that are not listed
    # as citations: counted when no sentence is cited, so that is never silent.
    fetched: list[str] = field(default_factory=list)
    # Per text part: the starts of links already taken by an annotation without offsets.
    taken: dict[int, set[int]] = field(default_factory=dict)
    # Per text part: its links, found once.
    links: dict[int, LinkIndex] = field(default_factory=dict)


class Paragraphs:
    """Answer text parts joined as paragraphs; :meth:`add` says where each part starts."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.length = 0

    def add(self, text: str) -> int:
        if self.pieces:
            self.pieces.append("\n\n")
            self.length += 2
        start = self.length
        self.pieces.append(text)
        self.length += len(text)
        return start

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def __bool__(self) -> bool:
        return bool(self.pieces)


# -- URLs -----------------------------------------------------------------------------------

# Query parameters that say who sent the reader, not which page it is.
_TRACKING_PREFIXES = ("utm_",)

_TRACKING_NAMES = frozenset({"fbclid", "gclid", "dclid", "msclkid", "mc_cid", "mc_eid", "igshid"})


def _tracking(piece: str) -> bool:
    name = piece.split("=", 1)[0].lower()
    return name.startswith(_TRACKING_PREFIXES) or name in _TRACKING_NAMES


@functools.lru_cache(maxsize=65536)  # one URL is cleaned at every place that names it
def clean_url(url: str) -> str:
    """The URL as cited, spaces percent-encoded and tracking parameters removed."""
    url = re.sub(r"\s", lambda m: quote(m.group()), url.strip())
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    pieces = [p for p in parts.query.split("&") if p] if parts.query else []
    kept = [p for p in pieces if not _tracking(p)]
    if len(kept) == len(pieces):
        return url
    return urlunsplit(parts._replace(query="&".join(kept)))


def provider_url(url: str, quote: str | None, **fields: Any) -> CitedSource:
    """A URL the provider's API cited with the quote it extracted from what it read
    (None: none): the URL cleaned (:func:`clean_url`), the quote the provider's."""
    return CitedSource(url=clean_url(url), quote=quote, quote_by=provider_quote(quote), **fields)


def url_or_document(target: str, **fields: Any) -> CitedSource:
    """A source named by text that is an http(s) URL or else a document's name."""
    target = target.strip()
    if target.lower().startswith(("http://", "https://")):
        return CitedSource(url=clean_url(target), **fields)
    return CitedSource(document=target, **fields)


@functools.lru_cache(maxsize=65536)
def dedup_key(url: str) -> str:
    """Two URLs with one key are one citation: scheme and host case, fragment, tracking."""
    cleaned = clean_url(url)
    try:
        parts = urlsplit(cleaned)
    except ValueError:
        return cleaned
    return urlunsplit(
        (parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, "")
    )


# -- markdown links -------------------------------------------------------------------------

# [text](url "title"): link text may hold one level of brackets ([[1]](url)), the URL
# one level of parentheses (Wikipedia's "(disambiguation)").
LINK = re.compile(
    r"\[(?P<text>(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"
    r"\((?P<url><[^<>\n]*>|(?:[^()\s]|\([^()\s]*\))*)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\)"
)


def link_url(match: re.Match[str]) -> str:
    return match.group("url").strip("<>")


def marker_extent(text: str, start: int, end: int, wrapped: bool = True) -> tuple[int, int]:
    """A marker with the spaces before it (and, ``wrapped``, the parentheses around it)."""
    if wrapped and start > 0 and text[start - 1] == "(" and end < len(text) and text[end] == ")":
        start, end = start - 1, end + 1
    while start > 0 and text[start - 1] in " \t":
        start -= 1
    return start, end


_BRACKETED = re.compile(r"\s*\(?\[[^\n]*\]\)?\s*")


class LinkIndex:
    """The markdown links of one text, found once: by URL (its :func:`dedup_key`), and
    all of them by position, so placing each of many annotations costs a look-up, not
    a pass over the text."""

    def __init__(self, text: str) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.urls: list[str] = []
        self.by_key: dict[str, list[tuple[int, int]]] = {}
        for match in LINK.finditer(text):
            url = link_url(match)
            self.starts.append(match.start())
            self.ends.append(match.end())
            self.urls.append(url)
            self.by_key.setdefault(dedup_key(url), []).append((match.start(), match.end()))

    def overlapping(self, start: int, end: int) -> list[int]:
        """The links (their numbers) that overlap ``start``-``end``: links never overlap
        one another, so their ends are in order too."""
        first = bisect.bisect_right(self.ends, start)
        last = bisect.bisect_left(self.starts, end)
        return list(range(first, last))


def place_url_annotation(
    text: str,
    url: str,
    start: int | None,
    end: int | None,
    taken: set[int],
    index: LinkIndex | None = None,
) -> tuple[str, int, int] | None:
    """Where an OpenAI-style ``url_citation`` sits: ``("marker"|"span", start, end)``.

    The offsets cover the marker the model printed; they are hints (recorders shift
    them): the link to the same URL that overlaps them, else the nearest one, is the
    marker. Without such a link a bracketed span is the marker and any other span is
    cited text; but offsets over a link to another URL are ``("other", start, end)``
    of that link: the annotation does not say what the answer printed there.
    ``None``: no position at all (no offsets, or ``0``/``0``, and no link to the URL in
    the text). ``taken`` holds the starts of links already placed, so offset-less
    annotations of one URL take its links in turn. ``index`` is the text's links (found
    here when not given). The caller has checked that the offsets lie inside the text.
    """
    index = index or LinkIndex(text)
    links = index.by_key.get(dedup_key(url), [])
    has_span = start is not None and end is not None and end > start
    if links:
        chosen: tuple[int, int]
        if has_span:
            assert start is not None and end is not None
            chosen = _nearest(links, start, end)
        else:
            chosen = next((link for link in links if link[0] not in taken), links[0])
        taken.add(chosen[0])
        return ("marker", *marker_extent(text, *chosen))
    if not has_span:
        return None
    assert start is not None and end is not None
    other = index.overlapping(start, end)
    if other:
        return ("other", index.starts[other[0]], index.ends[other[0]])
    if _BRACKETED.fullmatch(text[start:end]):
        return ("marker", *marker_extent(text, start, end))
    return ("span", start, end)


def _nearest(links: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """The link (in position order) overlapping ``start``-``end``, else the one starting
    nearest to ``start`` (the first of two as near)."""
    ends = [e for _, e in links]
    i = bisect.bisect_right(ends, start)
    if i < len(links) and links[i][0] < end:
        return links[i]
    j = bisect.bisect_left([s for s, _ in links], start)
    near = [links[k] for k in (j - 1, j) if 0 <= k < len(links)]
    return min(near, key=lambda link: (abs(link[0] - start), link[0]))


def add_url_annotation(
    draft: Draft,
    reader: Reader,
    text: str,
    offset: int,
    source: CitedSource,
    start: int | None,
    end: int | None,
) -> None:
    """An annotation citing ``source.url``, on the text part starting at ``offset`` of
    the answer, as a marker, a cited span, or unattached (no place); offsets over a link
    the model printed to another URL are refused, since the printed link would be lost
    and the sentence cited by a page it does not name."""
    assert source.url is not None
    index = draft.links.get(offset)
    if index is None:
        index = draft.links[offset] = LinkIndex(text)
    taken = draft.taken.setdefault(offset, set())
    placed = place_url_annotation(text, source.url, start, end, taken, index)
    if placed is None:
        draft.unattached.append(source)
        draft.no_position.append(source.where)
    elif placed[0] == "other":
        printed = text[placed[1] : placed[2]]
        raise reader.fail(
            source.where,
            f"the annotation cites {source.url} but the text at its offsets ({start}-{end}) "
            f"is a link to another page: {printed[:120]}",
            "the annotation does not belong to this text: save the response unedited",
        )
    elif placed[0] == "marker":
        draft.markers.append(Marker(offset + placed[1], offset + placed[2], [source]))
    else:
        draft.spans.append(Span(offset + placed[1], offset + placed[2], [source]))


# -- runs of text blocks between tool calls (Anthropic blocks, Inspect parts) -----------------

Block = tuple[int, dict[str, Any]]  # a content block and its place in the content list


def answer_runs(
    blocks: Sequence[dict[str, Any]],
    *,
    is_text: Callable[[dict[str, Any]], bool],
    cuts: Callable[[dict[str, Any]], bool],
    is_tool_call: Callable[[dict[str, Any]], bool],
) -> tuple[list[list[Block]], int]:
    """The runs of text blocks that are answer, and how many runs were narration.

    A block that ``cuts`` ends a run of text (a tool call, a tool's result); a run that
    cites nothing and is followed by a tool call ("Let me search for more...") is
    narration, not answer."""
    runs: list[list[Block]] = [[]]
    tool_after: list[bool] = []
    for i, block in enumerate(blocks):
        if is_text(block):
            runs[-1].append((i, block))
        elif cuts(block):
            if is_tool_call(block):
                tool_after = [True] * len(runs)
            runs.append([])
    tool_after += [False] * (len(runs) - len(tool_after))
    answer: list[list[Block]] = []
    narration = 0
    for run, followed_by_tool in zip(runs, tool_after, strict=True):
        if not run:
            continue
        if followed_by_tool and not any(block.get("citations") for _, block in run):
            narration += 1
        else:
            answer.append(run)
    return answer, narration


def narration_note(draft: Draft, narration: int) -> None:
    if narration:
        draft.notes.append(f"{narration} narration text run(s) between tool calls are not claims")


def joined_runs(
    runs: Sequence[Sequence[Block]], text_of: Callable[[int, dict[str, Any]], str]
) -> tuple[str, list[tuple[int, int, dict[str, Any], str]]]:
    """The answer text: each run's blocks as they come, runs as paragraphs; and each block
    as (its offset in the answer, its place, the block, its text)."""
    pieces: list[str] = []
    placed: list[tuple[int, int, dict[str, Any], str]] = []
    offset = 0
    for r, run in enumerate(runs):
        if r:
            pieces.append("\n\n")
            offset += 2
        for i, block in run:
            text = text_of(i, block)
            placed.append((offset, i, block, text))
            pieces.append(text)
            offset += len(text)
    return "".join(pieces), placed
