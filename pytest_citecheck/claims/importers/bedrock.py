"""AWS Bedrock Converse: ``citationsContent`` blocks in ``output.message.content``.

The answer is the ``text`` blocks and the generated text inside ``citationsContent``
joined in order. Claude puts the cited text INSIDE the block
(``citationsContent.content[].text``, a span); Nova puts a block with citations only
AFTER the text it supports (a marker there: it cites the sentence it ends in).

``location`` is ``web`` {url} (no quote), ``documentChar`` / ``documentPage`` /
``documentChunk`` {documentIndex} (a request document: pass ``documents`` to map it,
else the citation's ``title`` names it) or ``searchResultLocation`` (the citation's
``source`` is the URL). ``sourceContent[].text`` is extracted by the provider from the
source: a provider quote, its pieces joined as the source's text has them (no
separator added). Zero-width spaces (Nova ends its text with one) are removed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_citecheck.claims.importers.answer import CitedSource, Reader, provider_quote
from pytest_citecheck.claims.importers.draft import Draft, Marker, Span, provider_url
from pytest_citecheck.claims.importers.openai_responses import no_text

FORMAT = "bedrock-converse"
_DOCUMENT_LOCATIONS = ("documentChar", "documentPage", "documentChunk")
_ZERO_WIDTH = "\u200b\ufeff"


def read(
    data: Any, reader: Reader, documents: Sequence[str] | None = None
) -> tuple[Draft, str | None]:
    body = reader.mapping(data, "response")
    output = reader.mapping(body.get("output"), "output")
    message = reader.mapping(output.get("message"), "output.message")
    content = reader.items(message.get("content"), "output.message.content")
    draft = Draft(text="")
    pieces: list[str] = []
    offset = 0
    calls: list[str] = []
    for i, block in enumerate(content):
        where = f"output.message.content[{i}]"
        block = reader.mapping(block, where)
        if "text" in block:
            text = reader.text(block["text"], f"{where}.text")
            pieces.append(text)
            offset += len(text)
        elif "citationsContent" in block:
            cited = reader.mapping(block["citationsContent"], f"{where}.citationsContent")
            texts = reader.optional_items(cited.get("content"), f"{where}.citationsContent.content")
            text = "".join(
                reader.text(reader.mapping(t, f"{where}.content[{n}]").get("text"), f"{where}.text")
                for n, t in enumerate(texts)
            )
            sources = [
                _source(reader, c, f"{where}.citationsContent.citations[{k}]", documents)
                for k, c in enumerate(
                    reader.optional_items(
                        cited.get("citations"), f"{where}.citationsContent.citations"
                    )
                )
            ]
            if text:
                draft.spans.append(Span(offset, offset + len(text), sources))
            elif sources:
                draft.markers.append(Marker(offset, offset, sources))
            pieces.append(text)
            offset += len(text)
        else:
            calls += [k for k in ("toolUse", "toolResult") if k in block]
    draft.text = "".join(pieces)
    if not draft.text.strip():
        raise no_text(reader, "output.message.content", calls)
    draft.removals += [(i, i + 1) for i, ch in enumerate(draft.text) if ch in _ZERO_WIDTH]
    return draft, None


def _piece(reader: Reader, value: Any, where: str) -> str:
    """One piece of a citation's ``sourceContent``: its text (none: no text)."""
    piece = reader.mapping(value, where)
    return reader.optional_text(piece.get("text"), f"{where}.text") or ""


def _source(reader: Reader, value: Any, where: str, documents: Sequence[str] | None) -> CitedSource:
    citation = reader.mapping(value, where)
    title = citation.get("title") if isinstance(citation.get("title"), str) else None
    quoted = reader.optional_items(citation.get("sourceContent"), f"{where}.sourceContent")
    # The pieces are the source's text cut where the provider cut it, each with its own
    # spaces and line breaks ("...in 1993. " then "It is..."): joined as they are, a
    # quote spanning pieces reads as the source does (a space between them would split
    # "Matsu" "moto").
    joined = "".join(_piece(reader, q, f"{where}.sourceContent[{n}]") for n, q in enumerate(quoted))
    quote = joined.strip() or None
    by = provider_quote(quote)
    location = reader.mapping(citation.get("location") or {}, f"{where}.location")
    if "web" in location:
        web = reader.mapping(location["web"], f"{where}.location.web")
        url = reader.text(web.get("url"), f"{where}.location.web.url")
        return provider_url(url, quote, title=title, where=where)
    source = citation.get("source")
    if isinstance(source, str) and source.strip().lower().startswith(("http://", "https://")):
        return provider_url(source, quote, title=title, where=where)
    for kind in _DOCUMENT_LOCATIONS:
        if kind not in location:
            continue
        place = reader.mapping(location[kind], f"{where}.location.{kind}")
        index = reader.index(place.get("documentIndex"), f"{where}.location.{kind}.documentIndex")
        name = reader.document(
            documents, index, title, f"{where}.location.{kind}", "documentIndex", kind
        )
        start = place.get("start") if kind == "documentPage" else None
        page = (
            start if isinstance(start, int) and not isinstance(start, bool) and start >= 1 else None
        )
        return CitedSource(
            document=name, quote=quote, quote_by=by, title=title, where=where, page=page
        )
    name = source.strip() if isinstance(source, str) and source.strip() else (title or "").strip()
    if "searchResultLocation" in location and name:
        return CitedSource(document=name, quote=quote, quote_by=by, title=title, where=where)
    raise reader.fail(
        f"{where}.location",
        f"unknown citation location {sorted(location)!r}",
        "web, documentChar, documentPage, documentChunk and searchResultLocation are "
        "understood; report the new location",
    )
