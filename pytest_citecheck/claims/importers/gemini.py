"""Google Gemini ``generateContent`` with Google Search grounding (``groundingMetadata``).

``groundingSupports[].segment`` gives the answer text a support covers by **UTF-8
byte** offsets into ``parts[partIndex].text`` (``startIndex`` omitted when 0), with
``segment.text``, the safest anchor: the offsets are checked against it, and when
they disagree (recorders that rewrote dashes shift them) the text is looked up near
them instead. Segments overlap and start mid-word; each is a span, so every sentence
it overlaps gets its chunks.

Web chunk URIs are opaque redirect links (``vertexaisearch.cloud.google.com/...``,
title = the domain): they are kept as cited, in ``url``, with ``resolved_url`` left
for whoever follows the redirect. ``url_context`` chunks carry the real URL. File
Search chunks (``retrievedContext`` with text only) point at nothing that can be
fetched: an error when cited. A response without grounding metadata (or ``{}``) has
no citations: every sentence is uncited, and a note says so.

``urlContextMetadata.urlMetadata[]`` says how the provider fared fetching each URL
the answer was asked about: a status other than success (``PAYWALL``, ``ERROR``,
``UNSAFE``) is information about the page, carried as a note on the answer and on
each citation of that URL; ``URL_RETRIEVAL_STATUS_PAYWALL`` also becomes the
citation's ``paywall:`` (a known paywall: the page is not crawled, the verdict is
``paywalled``, stages/paywall.py). ``image`` chunks (image search grounding) cite the page
the image is on (``sourceUri``). A ``retrievedContext`` chunk's ``text`` is what the
provider retrieved: a provider quote.

Both the REST shape (camelCase) and the Python SDK's ``model_dump()`` (snake_case)
are read.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from pytest_citecheck.claims.importers.answer import (
    CitedSource,
    Reader,
    ResponseImportError,
    provider_quote,
)
from pytest_citecheck.claims.importers.answer import either_case as _get
from pytest_citecheck.claims.importers.draft import (
    Draft,
    Paragraphs,
    Span,
    clean_url,
    dedup_key,
    provider_url,
)
from pytest_citecheck.claims.importers.openai_responses import no_text

FORMAT = "gemini"


def read(data: Any, reader: Reader) -> tuple[Draft, str | None]:
    body = reader.mapping(data, "response")
    candidates = reader.items(_get(body, "candidates"), "candidates")
    if not candidates:
        raise reader.fail(
            "candidates", "the response has no candidates", "import a response with an answer"
        )
    candidate = reader.mapping(candidates[0], "candidates[0]")
    content = _get(candidate, "content")
    if content is None:
        raise no_text(reader, "candidates[0].content", [])
    content = reader.mapping(content, "candidates[0].content")
    parts = reader.optional_items(_get(content, "parts"), "candidates[0].content.parts")
    offsets: dict[int, int] = {}
    joined = Paragraphs()
    calls: list[str] = []
    for i, part in enumerate(parts):
        part = reader.mapping(part, f"candidates[0].content.parts[{i}]")
        text = _get(part, "text")
        if text is None or _get(part, "thought"):
            calls += [k for k in ("functionCall", "toolCall", "executableCode") if _get(part, k)]
            continue
        offsets[i] = joined.add(reader.text(text, f"candidates[0].content.parts[{i}].text"))
    if not offsets:
        raise no_text(reader, "candidates[0].content.parts", calls)
    draft = Draft(text=joined.text)
    statuses = _url_statuses(reader, candidate, draft)
    metadata = _get(candidate, "groundingMetadata")
    where = "candidates[0].groundingMetadata"
    if not metadata:
        draft.notes.append("the response has no grounding metadata: no citations")
        return draft, _response_id(body)
    metadata = reader.mapping(metadata, where)
    chunks = reader.optional_items(_get(metadata, "groundingChunks"), f"{where}.groundingChunks")
    supports = reader.optional_items(
        _get(metadata, "groundingSupports"), f"{where}.groundingSupports"
    )
    if not supports:
        draft.notes.append("the grounding metadata ties no text to a source: no citations")
    cited: set[int] = set()
    in_bytes = _parts_in_bytes(supports, parts)
    for k, support in enumerate(supports):
        swhere = f"{where}.groundingSupports[{k}]"
        support = reader.mapping(support, swhere)
        indices = reader.optional_items(
            _get(support, "groundingChunkIndices"), f"{swhere}.groundingChunkIndices"
        )
        sources = []
        for n, value in enumerate(indices):
            index = reader.index(value, f"{swhere}.groundingChunkIndices[{n}]")
            if index is None or index >= len(chunks):
                raise reader.fail(
                    f"{swhere}.groundingChunkIndices[{n}]",
                    f"chunk {index} does not exist: the response has {len(chunks)} "
                    "grounding chunk(s)",
                    "save the response unedited",
                )
            sources.append(
                _chunk(reader, chunks[index], f"{where}.groundingChunks[{index}]", statuses)
            )
            cited.add(index)
        if not sources:
            continue
        start, end, part = _segment(
            reader, _get(support, "segment"), f"{swhere}.segment", parts, offsets, in_bytes
        )
        draft.spans.append(Span(offsets[part] + start, offsets[part] + end, sources))
    for index, chunk in enumerate(chunks):
        if index not in cited:
            try:
                draft.unattached.append(
                    _chunk(reader, chunk, f"{where}.groundingChunks[{index}]", statuses)
                )
            except ResponseImportError:  # an unusable chunk nobody cites costs nothing
                continue
    return draft, _response_id(body)


def _response_id(body: dict[str, Any]) -> str | None:
    value = _get(body, "responseId")
    return value if isinstance(value, str) else None


_STATUS_PREFIX = "URL_RETRIEVAL_STATUS_"
# The status that says the provider met a paywall, and how a citation names who said so.
_PAYWALL = "PAYWALL"
PAYWALL_SAID_BY = f"Gemini url_context: {_STATUS_PREFIX}{_PAYWALL}"


def _url_statuses(reader: Reader, candidate: dict[str, Any], draft: Draft) -> dict[str, str]:
    """URL (dedup key) -> what the provider said about fetching it, when not a success."""
    metadata = _get(candidate, "urlContextMetadata")
    if not isinstance(metadata, dict):
        return {}
    where = "candidates[0].urlContextMetadata.urlMetadata"
    out: dict[str, str] = {}
    for k, value in enumerate(reader.optional_items(_get(metadata, "urlMetadata"), where)):
        item = reader.mapping(value, f"{where}[{k}]")
        url = _get(item, "retrievedUrl")
        status = _get(item, "urlRetrievalStatus")
        if not isinstance(url, str) or not isinstance(status, str):
            continue
        short = status.removeprefix(_STATUS_PREFIX)
        if short in ("SUCCESS", "UNSPECIFIED"):
            continue
        note = f"the provider could not read {url}: {short}"
        out[dedup_key(url)] = _status_note(short)
        draft.notes.append(note)
    return out


def _status_note(short: str) -> str:
    return f"provider retrieval status {short}"


def _chunk(
    reader: Reader, value: Any, where: str, statuses: dict[str, str] | None = None
) -> CitedSource:
    chunk = reader.mapping(value, where)
    image = _get(chunk, "image")
    if image is not None:
        image = reader.mapping(image, f"{where}.image")
        page = reader.optional_text(_get(image, "sourceUri"), f"{where}.image.sourceUri")
        title = reader.optional_text(_get(image, "title"), f"{where}.image.title")
        if page is None or not page.strip().lower().startswith(("http://", "https://")):
            raise reader.fail(
                f"{where}.image",
                "the image chunk names no http(s) page it comes from (sourceUri)",
                "save the response unedited",
            )
        return CitedSource(url=clean_url(page), title=title, where=where)
    for name in ("web", "maps", "retrievedContext"):
        inner = _get(chunk, name)
        if inner is None:
            continue
        inner = reader.mapping(inner, f"{where}.{name}")
        uri = reader.optional_text(_get(inner, "uri"), f"{where}.{name}.uri")
        title = reader.optional_text(_get(inner, "title"), f"{where}.{name}.title")
        retrieved = _get(inner, "text") if name == "retrievedContext" else None
        quote = retrieved.strip() if isinstance(retrieved, str) and retrieved.strip() else None
        by = provider_quote(quote)
        if uri is not None and uri.strip().lower().startswith(("http://", "https://")):
            note = (statuses or {}).get(dedup_key(uri))
            return provider_url(
                uri,
                quote,
                title=title,
                note=note,
                paywall=PAYWALL_SAID_BY if note == _status_note(_PAYWALL) else None,
                where=where,
            )
        if name != "retrievedContext" or uri is None:
            raise reader.fail(
                f"{where}.{name}",
                "the chunk has no http(s) URI"
                + (
                    " (a File Search chunk holds only the retrieved text)"
                    if name == "retrievedContext"
                    else ""
                ),
                "nothing can be fetched for it: verify this answer with document citations "
                "written by hand",
            )
        return CitedSource(document=uri.strip(), quote=quote, quote_by=by, title=title, where=where)
    raise reader.fail(
        where,
        "unknown grounding chunk: no `web`, `image`, `maps` or `retrievedContext`",
        "save the response unedited, or report the new chunk type",
    )


def _parts_in_bytes(supports: list[Any], parts: list[Any]) -> set[int]:
    """The parts some segment of which ends past the part's last character: their
    offsets can only be UTF-8 bytes (as Gemini gives them)."""
    out: set[int] = set()
    for support in supports:
        segment = _get(support, "segment") if isinstance(support, dict) else None
        if not isinstance(segment, dict):
            continue
        part, end = _get(segment, "partIndex") or 0, _get(segment, "endIndex")
        if not isinstance(part, int) or not isinstance(end, int) or not 0 <= part < len(parts):
            continue
        text = _get(parts[part], "text") if isinstance(parts[part], dict) else None
        if isinstance(text, str) and end > len(text):
            out.add(part)
    return out


def _segment(
    reader: Reader,
    value: Any,
    where: str,
    parts: list[Any],
    offsets: dict[int, int],
    in_bytes: set[int],
) -> tuple[int, int, int]:
    """The segment's character span in its part: ``(start, end, part index)``."""
    segment = reader.mapping(value, where)
    part = reader.index(_get(segment, "partIndex"), f"{where}.partIndex") or 0
    if part not in offsets:
        raise reader.fail(
            f"{where}.partIndex",
            f"part {part} is not a text part of the answer",
            "save the response unedited",
        )
    text: str = _get(parts[part], "text")
    chars = _char_at(text)
    size = len(chars) - 1  # the part's length in UTF-8 bytes
    start = reader.index(_get(segment, "startIndex"), f"{where}.startIndex") or 0
    end = reader.index(_get(segment, "endIndex"), f"{where}.endIndex")
    anchor = reader.optional_text(_get(segment, "text"), f"{where}.text")
    span = None
    if end is not None and start <= end <= size:
        first, last = chars[start], chars[end]
        span = None if first is None or last is None else (first, last)
    if anchor and (span is None or text[span[0] : span[1]] != anchor):
        near = _near_char(chars, min(start, size))
        found = [m.start() for m in re.finditer(re.escape(anchor), text)]
        if found:
            at = min(found, key=lambda f: abs(f - near))
            return at, at + len(anchor), part
        raise reader.fail(
            f"{where}.text",
            f"the segment text {anchor[:60]!r} is not in the answer part",
            "save the response unedited",
        )
    if (
        anchor is None
        and part not in in_bytes
        and span is not None
        and end is not None
        and end <= len(text)
        and span != (start, end)
    ):
        # Without the segment's text, offsets that fit both as UTF-8 bytes and as
        # characters of a non-ASCII text name two different passages: unless another
        # segment of the part proves them bytes, which one was meant cannot be told.
        raise reader.fail(
            where,
            f"the segment has no `text`, and its offsets {start}..{end} fit the answer part "
            f"both as UTF-8 bytes (Gemini's unit: {text[span[0] : span[1]][:40]!r}) and as "
            f"characters ({text[start:end][:40]!r}): which sentence it cites is unknown",
            "save the response unedited (Gemini gives each segment's text); offsets "
            "converted to characters must be converted back to UTF-8 bytes",
        )
    if span is None:
        raise reader.fail(
            f"{where}.endIndex",
            f"the byte offsets {start}..{end} are outside the text ({size} bytes) "
            "or split a character",
            "Gemini offsets are UTF-8 byte offsets into the part's text: "
            "save the response unedited",
        )
    return span[0], span[1], part


@functools.lru_cache(maxsize=16)
def _char_at(text: str) -> list[int | None]:
    """For each UTF-8 byte offset of ``text`` (its length included), the character
    offset it starts, or None inside a character: computed once per part, so thousands
    of segments cost one pass."""
    out: list[int | None] = []
    for i, ch in enumerate(text):
        out.append(i)
        width = len(ch.encode("utf-8", "surrogatepass"))
        out.extend([None] * (width - 1))
    out.append(len(text))
    return out


def _near_char(chars: list[int | None], byte: int) -> int:
    """The character at or before a byte offset."""
    while byte > 0 and chars[byte] is None:
        byte -= 1
    return chars[byte] or 0
