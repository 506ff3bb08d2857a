"""From answer text and located citations to sentences and claims (every format shares it).

An importer reads its format into a :class:`Draft`: the answer text and where each
citation sits in it, as one of two things:

- a :class:`Marker`: text the model printed to cite (``" ([domain](url))"``, ``[2]``,
  ``[^1]``). It is removed from the answer, and cites the sentence it follows (on the
  same line; a marker alone on its line, like a trailing list of links, cites no
  sentence and its sources are kept as *unattached*);
- a :class:`Span`: answer text the provider says its sources support (Anthropic's
  cited text blocks, Gemini's segments, a markdown link's text). Every sentence it
  overlaps gets its sources.

:func:`build` removes the markers, splits the text into sentences (one per sentence,
list item or table row; headings and code are not claims), strips the markdown
from each, and makes one claim per cited sentence, its citations the distinct URLs
or documents behind it.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from pytest_citecheck.claims.importers.answer import (
    AnswerSentence,
    CitedSource,
    ImportedAnswer,
    ImportedClaim,
    ResponseImportError,
    claim_id,
)
from pytest_citecheck.claims.importers.draft import (
    LINK,
    Draft,
    dedup_key,
)
from pytest_citecheck.claims.models import ID_MAX_LENGTH, Citation, Claim

__all__ = ["build"]


def line_column(text: str, offset: int) -> str:
    starts = _line_starts(text)
    line = bisect.bisect_right(starts, offset)
    return f"line {line}, column {offset - starts[line - 1] + 1}"


@functools.lru_cache(maxsize=8)
def _line_starts(text: str) -> list[int]:
    """Where each line of ``text`` starts: found once, so placing many markers is linear."""
    return [0, *(m.end() for m in re.finditer("\n", text))]


# -- building the answer --------------------------------------------------------------------


@dataclass
class _Unit:
    start: int
    end: int
    # "sentence" (a claim when cited); "heading" (a claim only when a span cites it and
    # no sentence); "links" (a line of links alone: never a claim); "block" (a paragraph,
    # while it is being split into sentences).
    kind: str
    sources: list[CitedSource] = field(default_factory=list)


def build(
    draft: Draft,
    *,
    answer_id: str,
    fmt: str,
    response: str,
    response_id: str | None = None,
) -> ImportedAnswer:
    """The answer: sentences with claim ids, one claim per cited sentence."""
    cleaned, new_pos = _remove(
        draft.text, [*((m.start, m.end) for m in draft.markers), *draft.removals]
    )
    units = _segment(cleaned)
    starts = [u.start for u in units]
    unattached = list(draft.unattached)

    def unit_at(pos: int) -> _Unit | None:
        i = bisect.bisect_right(starts, pos) - 1
        return units[i] if i >= 0 and units[i].start <= pos < units[i].end else None

    for marker in draft.markers:
        p = new_pos(marker.start) - 1
        while p >= 0 and cleaned[p] in " \t":
            p -= 1
        unit = unit_at(p) if p >= 0 and cleaned[p] != "\n" else None
        if unit is None or unit.kind == "links":
            unattached.extend(marker.sources)
        else:
            unit.sources.extend(marker.sources)
    ends = [u.end for u in units]
    for span in draft.spans:
        lo, hi = new_pos(span.start), new_pos(span.end)
        hit = []
        # Units are in order and apart: from the first that ends after the span starts.
        for u in units[bisect.bisect_right(ends, lo) :]:
            if u.start >= hi:
                break
            if cleaned[max(u.start, lo) : min(u.end, hi)].strip():
                hit.append(u)
        # A span over a sentence and the model's own list of links cites the sentence.
        targets = [u for u in hit if u.kind == "sentence"] or [
            u for u in hit if u.kind == "heading"
        ]
        if not targets:
            unattached.extend(span.sources)
        for unit in targets:
            unit.sources.extend(span.sources)

    sentences: list[AnswerSentence] = []
    claims: list[ImportedClaim] = []
    used: dict[str, int] = {}  # each id given, and how often it was asked for
    for unit in units:
        text = claim_text(cleaned[unit.start : unit.end])
        if not re.search(r"\w", text):
            unattached.extend(unit.sources)
            continue
        if not unit.sources:
            if unit.kind == "sentence":
                sentences.append(
                    AnswerSentence(text=text, claim_id=None, start=unit.start, end=unit.end)
                )
            continue
        cid = repeat_id(claim_id(answer_id, text), unit.sources, used)
        claims.append(
            ImportedClaim(claim=_claim(cid, text, unit.sources, response), sources=unit.sources)
        )
        sentences.append(AnswerSentence(text=text, claim_id=cid, start=unit.start, end=unit.end))
    return ImportedAnswer(
        id=answer_id,
        format=fmt,
        response_id=response_id,
        text=cleaned,
        sentences=sentences,
        claims=claims,
        unattached=unattached,
        notes=list(draft.notes),
    )


def repeat_id(base: str, sources: Sequence[CitedSource], used: dict[str, int]) -> str:
    """The id of one occurrence of a sentence whose id would be ``base``: ``base`` the
    first time; a repeat of the sentence is told apart by what it cites
    (``<base>-<hash of its sources>``), not by its place, so inserting or removing
    another copy renames no other claim. Copies that cite the same sources are the same
    claim and are numbered among themselves (``-2``, ``-3``). ``used`` holds the ids
    given so far in the answer (and is updated)."""
    if base not in used:
        used[base] = 1
        return base
    keys = sorted({source_key(s) for s in sources})
    digest = hashlib.sha256("\n".join(keys).encode("utf-8")).hexdigest()[:_REPEAT_HASH_CHARS]
    cid = f"{base[: ID_MAX_LENGTH - _REPEAT_HASH_CHARS - 1]}-{digest}"
    used[cid] = used.get(cid, 0) + 1
    if used[cid] == 1:
        return cid
    return f"{cid[: ID_MAX_LENGTH - 4]}-{used[cid]}"


def source_key(source: CitedSource) -> str:
    """What a citation is told apart by: its URL (as deduplicated) or its document."""
    if source.url is not None:
        return "url:" + dedup_key(source.url)
    return f"document:{source.document or ''}"


# Characters of the sources' hash in a repeated sentence's id.
_REPEAT_HASH_CHARS = 6


def _claim(cid: str, text: str, sources: Sequence[CitedSource], response: str) -> Claim:
    """One citation per distinct URL or document; the first quote given for it is kept."""
    citations: dict[tuple[str, str], Citation] = {}
    firsts: dict[tuple[str, str], CitedSource] = {}
    for source in sources:
        key = (
            ("url", dedup_key(source.url))
            if source.url is not None
            else ("doc", source.document or "")
        )
        try:
            citation = source.citation()
        except ValidationError as exc:
            problem = exc.errors()[0]
            message = (problem.get("ctx") or {}).get("problem") or problem["msg"]
            raise ResponseImportError(
                response,
                source.where,
                f"the citation cannot be used: {message}",
                "cite an http(s) URL or a document; fix or remove this citation in the response",
            ) from None
        previous = firsts.get(key)
        if previous is None:
            firsts[key], citations[key] = source, citation
        elif previous.quote is None and source.quote is not None:
            # The quote comes with who wrote it.
            merged = previous.model_copy(
                update={"quote": source.quote, "quote_by": source.quote_by}
            )
            firsts[key], citations[key] = merged, merged.citation()
    return Claim(id=cid, claim=text, citations=list(citations.values()))


def _remove(text: str, spans: Iterable[tuple[int, int]]) -> tuple[str, _PositionMap]:
    merged: list[list[int]] = []
    for start, end in sorted((max(0, s), min(len(text), e)) for s, e in spans):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    pieces = []
    last = 0
    for start, end in merged:
        pieces.append(text[last:start])
        last = end
    pieces.append(text[last:])
    return "".join(pieces), _PositionMap([(s, e) for s, e in merged])


class _PositionMap:
    """Where a position of the original text is in the text with the removals taken out."""

    def __init__(self, removed: list[tuple[int, int]]) -> None:
        self.removed = removed
        self.starts = [s for s, _ in removed]
        self.before: list[int] = []
        total = 0
        for s, e in removed:
            self.before.append(total)
            total += e - s

    def __call__(self, pos: int) -> int:
        i = bisect.bisect_right(self.starts, pos) - 1
        if i < 0:
            return pos
        start, end = self.removed[i]
        return start - self.before[i] if pos < end else pos - self.before[i] - (end - start)


# -- sentences ------------------------------------------------------------------------------

_FENCE = re.compile(r"\s*(```|~~~)")

_RULE = re.compile(r"\s*(?:[-*_=]\s*){3,}")

_TABLE_RULE = re.compile(r"\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*")

_PREFIX = re.compile(r"[ \t]*(?:(?:#{1,6}|>|[-*+•]|\d{1,3}[.)])[ \t]+|>)*")

_BARE_ITEM = re.compile(r"[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]*")

_BOLD_LINE = re.compile(r"(\*\*|__)(?P<inner>[^*_\n]+)\1:?")

# The end of a sentence: its punctuation and whatever closes around it.
_END = re.compile(r"[.!?…]+[\"'”’)\]*_]*(?=\s+\S)")

_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "mt", "no", "fig", "figs", "eq"}
    | {"e.g", "i.e", "cf", "approx", "ca", "al", "gen", "col", "lt", "sgt", "bros", "corp"}
    | {"dept", "univ", "govt", "est"}
)

_INITIALISM = re.compile(r"(?:[a-z]\.){2,}")

# What may open a sentence after the punctuation that ended the previous one.
_OPENERS = "\"'“‘([*_#"


def _segment(text: str) -> list[_Unit]:
    """Sentences, list items and table rows, in order; code and rules are skipped.

    A paragraph's lines (and a list item's continuation lines) are one block: a
    sentence may wrap over lines.
    """
    units: list[_Unit] = []
    protected = [(m.start(), m.end()) for m in LINK.finditer(text)]
    protected_starts = [s for s, _ in protected]
    blocks: list[list[int]] = []  # [start, end, open for continuation (1/0)]
    offset = 0
    fenced = False
    for line in text.split("\n"):
        line_start = offset
        offset += len(line) + 1
        if _FENCE.match(line):
            fenced = not fenced
            blocks.append([0, 0, 0])  # closes the paragraph before it
            continue
        if (
            fenced
            or not line.strip()
            or _RULE.fullmatch(line)
            or _TABLE_RULE.fullmatch(line)
            or _BARE_ITEM.fullmatch(line)  # a list item whose links were all markers
        ):
            blocks.append([0, 0, 0])
            continue
        prefix = _PREFIX.match(line)
        marked = prefix is not None and prefix.group().strip() != ""
        body_start = line_start + (prefix.end() if prefix else 0)
        body_end = line_start + len(line.rstrip())
        if body_end <= body_start:
            continue
        body = text[body_start:body_end]
        if not marked and blocks and blocks[-1][2] and not body.startswith("|"):
            blocks[-1][1] = body_end  # the paragraph goes on
            continue
        heading = prefix is not None and "#" in prefix.group()
        bold = _BOLD_LINE.fullmatch(body)
        if heading or (
            bold is not None and not bold.group("inner").rstrip().endswith((".", "!", "?"))
        ):
            units.append(_Unit(body_start, body_end, "heading"))
            blocks.append([0, 0, 0])
            continue
        if body.startswith("|"):
            units.append(_Unit(body_start, body_end, "sentence"))
            blocks.append([0, 0, 0])
            continue
        blocks.append([body_start, body_end, 1])
        units.append(_Unit(body_start, body_end, "block"))
    # Blocks were appended as units in order; replace each by its sentences.
    ends = {b[0]: b[1] for b in blocks if b[2]}
    out: list[_Unit] = []
    for unit in units:
        if unit.kind != "block":
            out.append(unit)
            continue
        for start, end in _sentences(
            text, unit.start, ends[unit.start], protected, protected_starts
        ):
            only_links = not LINK.sub("", text[start:end]).strip(" \t-–—,;:|()")
            out.append(_Unit(start, end, "links" if only_links else "sentence"))
    return out


def _sentences(
    text: str,
    start: int,
    end: int,
    protected: Sequence[tuple[int, int]],
    protected_starts: Sequence[int],
) -> list[tuple[int, int]]:
    out = []
    current = start
    starts = protected_starts
    for match in _END.finditer(text, start, end):
        cut = match.end()
        # Links are in order and apart: only the last one starting before the cut may hold it.
        i = bisect.bisect_left(starts, cut) - 1
        inside = i >= 0 and cut < protected[i][1]
        if inside or not _is_boundary(text, match, end) or _quoted(text, current, cut, end):
            continue
        out.append((current, cut))
        current = cut
        while current < end and text[current].isspace():
            current += 1
    if current < end:
        out.append((current, end))
    return out


# The longest quotation kept whole in one sentence ("We grew fast. Sales doubled."):
# a stray quotation mark (5'11", a typo) never swallows a paragraph.
MAX_QUOTATION_CHARS = 400


def _quoted(text: str, start: int, cut: int, end: int) -> bool:
    """Whether ``cut`` falls inside a quotation opened since ``start`` (the sentence so
    far) and closed before ``end``, at most :data:`MAX_QUOTATION_CHARS` after it opened:
    straight double quotes by their count, curly ones by their kind. Single quotes are
    not read (an apostrophe is one)."""
    so_far = text[start:cut]
    if so_far.count('"') % 2:
        opened, closing = so_far.rfind('"'), '"'
    elif so_far.count("“") > so_far.count("”"):
        opened, closing = so_far.rfind("“"), "”"
    else:
        return False
    closed = text.find(closing, cut, end)
    return closed != -1 and closed - (start + opened) <= MAX_QUOTATION_CHARS


def _is_boundary(text: str, match: re.Match[str], end: int) -> bool:
    after = match.end()
    while after < end and (text[after].isspace() or text[after] in _OPENERS):
        after += 1
    if after < end and not (text[after].isupper() or text[after].isdigit()):
        return False  # "e.g. foo", "(see ...)", "… / Vercel"
    word_start = match.start()
    while word_start > 0 and not text[word_start - 1].isspace():
        word_start -= 1
    word = re.split(r"[/(\"'“*_]", text[word_start : match.start() + 1])[-1]
    before = text[max(0, word_start - 30) : word_start].split()
    # An initial ("J. K. Rowling", "George W. Bush"), not a unit ("100 C."): one
    # capital letter after a capitalised word.
    initial = len(word) == 2 and word[0].isupper() and bool(before) and before[-1][:1].isupper()
    abbreviation = (
        word.lower().rstrip(".") in _ABBREVIATIONS
        or _INITIALISM.fullmatch(word.lower()) is not None
        or initial
    )
    return not (match.group().startswith(".") and abbreviation)


_EMPHASIS = re.compile(r"\*{1,3}|(?<!\w)_{1,3}|_{1,3}(?!\w)|~~")

_AUTOLINK = re.compile(r"<(https?://[^<>\s]+)>")


def claim_text(raw: str) -> str:
    """A sentence as a claim: link syntax, emphasis and code marks stripped, one line."""
    text = LINK.sub(lambda m: m.group("text"), raw)
    text = _AUTOLINK.sub(lambda m: m.group(1), text)
    text = _EMPHASIS.sub("", text).replace("`", "")
    text = re.sub(r"^\s*\|\s*|\s*\|\s*$", "", text)
    text = re.sub(r"\s*\|\s*", " | ", text)
    return " ".join(text.split())
