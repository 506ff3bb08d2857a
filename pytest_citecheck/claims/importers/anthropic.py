"""Anthropic Messages: text blocks with ``citations`` (web search and documents).

The answer is the text blocks joined as they come: one sentence is often split over
several blocks, a cited fragment ("The current stable version is Ruby 4.0.6") and
uncited glue (", according to ...", "."), so each cited block is a span and every
sentence it overlaps gets its citations. ``cited_text`` is text from the source, the
citation's ``quote``; never the claim.

Text written between tool calls that cites nothing ("Let me search for more...") is
narration, not answer. A response that stopped for ``pause_turn`` with no cited text
has no answer yet: importing it is an error that says to import the continuation.

Document citations (``char_location``, ``page_location``, ``content_block_location``)
name a document by ``document_index``, which counts every document of the request
(earlier turns included): pass ``documents`` (paths in that order) to map them, or
the ``document_title`` is used as the path.

Pages the web fetch tool read (``web_fetch_tool_result``) are documents too: a
``char_location`` citation of a fetched page (matched by its title, else by its place
after the request's documents) cites the page's ``url``, with ``retrieved_at`` kept. A
fetch that failed (``web_fetch_tool_result_error``) is a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_citecheck.claims.importers.answer import CitedSource, Reader, provider_quote
from pytest_citecheck.claims.importers.draft import (
    Draft,
    Span,
    answer_runs,
    clean_url,
    joined_runs,
    narration_note,
    provider_url,
    url_or_document,
)
from pytest_citecheck.claims.importers.openai_responses import no_text

FORMAT = "anthropic"
_DOCUMENT_LOCATIONS = ("char_location", "page_location", "content_block_location")
# Blocks that carry no answer text and do not end a run of text either.
_QUIET = frozenset({"thinking", "redacted_thinking"})


def read(
    data: Any, reader: Reader, documents: Sequence[str] | None = None
) -> tuple[Draft, str | None]:
    body = reader.mapping(data, "response")
    content = reader.items(body.get("content"), "content")
    tools: list[str] = []
    fetched: list[Fetched] = []
    fetch_notes: list[str] = []
    blocks = [reader.mapping(block, f"content[{i}]") for i, block in enumerate(content)]
    for i, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "web_fetch_tool_result":
            _fetch_result(reader, block, f"content[{i}]", fetched, fetch_notes)
        if isinstance(kind, str) and kind.endswith("tool_use"):
            tools.append(kind)
    answer, narration = answer_runs(
        blocks,
        is_text=lambda block: block.get("type") == "text",
        cuts=lambda block: block.get("type") not in _QUIET,
        is_tool_call=lambda block: str(block.get("type")).endswith("tool_use"),
    )
    stop = body.get("stop_reason")
    if not answer:
        if stop == "pause_turn":
            raise reader.fail(
                "stop_reason",
                "the response stopped with pause_turn: it has tool calls and narration "
                "but no answer yet",
                "send it back to continue the turn and import the response that ends "
                "with stop_reason end_turn",
            )
        raise no_text(reader, "content", tools)
    draft = Draft(text="")
    draft.notes += fetch_notes
    draft.fetched = [f.url for f in fetched]
    narration_note(draft, narration)
    if stop == "pause_turn":
        draft.notes.append("the response stopped with pause_turn: the answer may be incomplete")
    draft.text, placed = joined_runs(
        answer, lambda i, block: reader.text(block.get("text"), f"content[{i}].text")
    )
    for offset, i, block, text in placed:
        citations = reader.optional_items(block.get("citations"), f"content[{i}].citations")
        sources = [
            _source(reader, c, f"content[{i}].citations[{k}]", documents, fetched)
            for k, c in enumerate(citations)
        ]
        if sources:
            draft.spans.append(Span(offset, offset + len(text), sources))
    response_id = body.get("id") if isinstance(body.get("id"), str) else None
    return draft, response_id


def _quote(reader: Reader, citation: dict[str, Any], where: str) -> str | None:
    cited = reader.optional_text(citation.get("cited_text"), f"{where}.cited_text")
    return cited.strip() or None if cited is not None else None


@dataclass(frozen=True)
class Fetched:
    """A page the web fetch tool read: a document the answer may cite."""

    url: str
    title: str | None
    retrieved_at: str | None


def _fetch_result(
    reader: Reader, block: dict[str, Any], where: str, fetched: list[Fetched], notes: list[str]
) -> None:
    result = reader.mapping(block.get("content"), f"{where}.content")
    if result.get("type") == "web_fetch_tool_result_error":
        code = result.get("error_code")
        notes.append(f"a web fetch failed ({code}): the answer was written without that page")
        return
    if result.get("type") != "web_fetch_result":
        return
    url = reader.text(result.get("url"), f"{where}.content.url")
    retrieved = reader.optional_text(result.get("retrieved_at"), f"{where}.content.retrieved_at")
    document = result.get("content")
    title = document.get("title") if isinstance(document, dict) else None
    fetched.append(Fetched(clean_url(url), title if isinstance(title, str) else None, retrieved))


def _fetched_page(
    index: int | None, title: str | None, documents: Sequence[str] | None, fetched: list[Fetched]
) -> Fetched | None:
    """The fetched page a document citation names, if it names one."""
    if not fetched:
        return None
    if title is not None:
        same = [f for f in fetched if f.title is not None and f.title.strip() == title.strip()]
        if len(same) == 1:
            return same[0]
    given = len(documents) if documents is not None else 0
    if index is not None and given <= index < given + len(fetched):
        return fetched[index - given]
    return None


def _source(
    reader: Reader,
    value: Any,
    where: str,
    documents: Sequence[str] | None,
    fetched: list[Fetched] | None = None,
) -> CitedSource:
    citation = reader.mapping(value, where)
    kind = citation.get("type")
    quote = _quote(reader, citation, where)
    by = provider_quote(quote)  # cited_text: extracted by the API from what it read
    title = citation.get("title") if isinstance(citation.get("title"), str) else None
    if kind == "web_search_result_location":
        url = reader.text(citation.get("url"), f"{where}.url")
        return provider_url(url, quote, title=title, where=where)
    if kind in _DOCUMENT_LOCATIONS:
        index = reader.index(citation.get("document_index"), f"{where}.document_index")
        doc_title = reader.optional_text(citation.get("document_title"), f"{where}.document_title")
        page_number = _page_number(citation) if kind == "page_location" else None
        page = _fetched_page(index, doc_title, documents, fetched or [])
        if page is not None:
            return CitedSource(
                url=page.url,
                quote=quote,
                quote_by=by,
                title=page.title,
                retrieved_at=page.retrieved_at,
                where=where,
                page=page_number,
            )
        name = reader.document(documents, index, doc_title, where, "document_index", str(kind))
        return CitedSource(
            document=name, quote=quote, quote_by=by, title=doc_title, where=where, page=page_number
        )
    if kind == "search_result_location":
        source = reader.text(citation.get("source"), f"{where}.source")
        return url_or_document(source, quote=quote, quote_by=by, title=title, where=where)
    raise reader.fail(
        where,
        f"unknown citation type {kind!r}",
        "web_search_result_location, search_result_location, char_location, "
        "page_location and content_block_location are understood",
    )


def _page_number(citation: dict[str, Any]) -> int | None:
    """A ``page_location``'s first page (``start_page_number``, 1-based), or None."""
    start = citation.get("start_page_number")
    return start if isinstance(start, int) and not isinstance(start, bool) and start >= 1 else None
