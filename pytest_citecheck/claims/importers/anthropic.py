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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_citecheck.claims.importers.answer import CitedSource, Reader
from pytest_citecheck.claims.importers.openai_responses import no_text
from pytest_citecheck.claims.importers.text import Draft, Span, clean_url

FORMAT = "anthropic"
_DOCUMENT_LOCATIONS = ("char_location", "page_location", "content_block_location")
# Blocks that carry no answer text and do not end a run of text either.
_QUIET = frozenset({"thinking", "redacted_thinking"})


def read(
    data: Any, reader: Reader, documents: Sequence[str] | None = None
) -> tuple[Draft, str | None]:
    body = reader.mapping(data, "response")
    content = reader.items(body.get("content"), "content")
    runs: list[list[tuple[int, dict[str, Any]]]] = [[]]
    tool_after: list[bool] = []
    tools: list[str] = []
    for i, block in enumerate(content):
        block = reader.mapping(block, f"content[{i}]")
        kind = block.get("type")
        if kind == "text":
            runs[-1].append((i, block))
        elif kind not in _QUIET:
            if isinstance(kind, str) and kind.endswith("tool_use"):
                tools.append(kind)
                tool_after = [True] * len(runs)
            runs.append([])
    tool_after += [False] * (len(runs) - len(tool_after))
    answer: list[list[tuple[int, dict[str, Any]]]] = []
    narration = 0
    for run, followed_by_tool in zip(runs, tool_after, strict=True):
        if not run:
            continue
        if followed_by_tool and not any(block.get("citations") for _, block in run):
            narration += 1
        else:
            answer.append(run)
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
    if narration:
        draft.notes.append(f"{narration} narration text run(s) between tool calls are not claims")
    if stop == "pause_turn":
        draft.notes.append("the response stopped with pause_turn: the answer may be incomplete")
    pieces: list[str] = []
    offset = 0
    for r, run in enumerate(answer):
        if r:
            pieces.append("\n\n")
            offset += 2
        for i, block in run:
            text = reader.text(block.get("text"), f"content[{i}].text")
            citations = reader.items(block.get("citations") or [], f"content[{i}].citations")
            sources = [
                _source(reader, c, f"content[{i}].citations[{k}]", documents)
                for k, c in enumerate(citations)
            ]
            if sources:
                draft.spans.append(Span(offset, offset + len(text), sources))
            pieces.append(text)
            offset += len(text)
    draft.text = "".join(pieces)
    response_id = body.get("id") if isinstance(body.get("id"), str) else None
    return draft, response_id


def _quote(reader: Reader, citation: dict[str, Any], where: str) -> str | None:
    cited = reader.optional_text(citation.get("cited_text"), f"{where}.cited_text")
    return cited.strip() or None if cited is not None else None


def _source(reader: Reader, value: Any, where: str, documents: Sequence[str] | None) -> CitedSource:
    citation = reader.mapping(value, where)
    kind = citation.get("type")
    quote = _quote(reader, citation, where)
    title = citation.get("title") if isinstance(citation.get("title"), str) else None
    if kind == "web_search_result_location":
        url = reader.text(citation.get("url"), f"{where}.url")
        return CitedSource(
            url=clean_url(url), quote=quote, quote_by="provider", title=title, where=where
        )
    if kind in _DOCUMENT_LOCATIONS:
        index = reader.index(citation.get("document_index"), f"{where}.document_index")
        doc_title = reader.optional_text(citation.get("document_title"), f"{where}.document_title")
        if documents is not None:
            if index is None or index >= len(documents):
                raise reader.fail(
                    f"{where}.document_index",
                    f"document_index {index} is not among the {len(documents)} document(s) given",
                    "list every document of the request, earlier turns included, in order",
                )
            name = documents[index]
        elif doc_title and doc_title.strip():
            name = doc_title.strip()
        else:
            raise reader.fail(
                where,
                f"the {kind} citation names document {index} but no title",
                "pass the request's documents in order (documents=[...], "
                "or `documents:` in the claim file's answer)",
            )
        return CitedSource(
            document=name, quote=quote, quote_by="provider", title=doc_title, where=where
        )
    if kind == "search_result_location":
        source = reader.text(citation.get("source"), f"{where}.source")
        if source.strip().lower().startswith(("http://", "https://")):
            return CitedSource(
                url=clean_url(source), quote=quote, quote_by="provider", title=title, where=where
            )
        return CitedSource(
            document=source.strip(), quote=quote, quote_by="provider", title=title, where=where
        )
    raise reader.fail(
        where,
        f"unknown citation type {kind!r}",
        "web_search_result_location, search_result_location, char_location, "
        "page_location and content_block_location are understood",
    )
