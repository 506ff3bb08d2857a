"""Inspect AI: an assistant message (``ChatMessageAssistant``) whose text carries citations.

Inspect keeps one message shape whatever the provider: ``content`` is a string or a list of
content parts, and a ``text`` part (``ContentText``) may carry ``citations`` supporting it:
``UrlCitation`` (``url``), ``DocumentCitation`` (a document of the request, by ``title`` or
the provider's ``document_index``), ``ContentCitation`` (neither: nothing to check). A
citation's ``cited_text`` says where it points, in one of two ways, by the provider it came
from:

- a string (Anthropic's ``cited_text``): text the provider took from the source, the
  citation's quote; the part it is attached to is the cited text (Anthropic cuts an
  answer into one part per cited fragment), so the part is a cited span;
- a ``[start, end]`` range (OpenAI's ``url_citation``, Gemini's grounding segments): code
  points of the part's text, read as the Responses importer reads an annotation's offsets:
  a link the model printed there is a marker, other text a cited span
  (:func:`~pytest_citecheck.claims.importers.draft.add_url_annotation`), and a link the model
  printed again to a URL cited elsewhere in the part cites its sentence too (Azure annotates
  only the first);
- none: the citation supports the part as a whole (Inspect's own definition of
  ``ContentText.citations``), a span over it.

The answer is the text parts concatenated as they come (the providers' answer text: an
Anthropic sentence is often split over parts), as the Anthropic importer reads its blocks:
a server tool's part (``tool_use``: web search, MCP) ends a run of text, runs are
paragraphs, and a run that cites nothing before a tool call is narration ("Let me
search..."), not answer. Reasoning and images are not answer text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_citecheck.claims.importers.answer import CitedSource, Reader, provider_quote
from pytest_citecheck.claims.importers.draft import (
    Draft,
    Span,
    add_url_annotation,
    answer_runs,
    clean_url,
    joined_runs,
    narration_note,
)
from pytest_citecheck.claims.importers.openai_responses import check_offsets, cite_repeated_links

FORMAT = "inspect"
# A server tool's call and result in the message (ContentToolUse): it ends a run of text.
_TOOL_USE = "tool_use"


_CITATION_TYPES = frozenset({"url", "document", "content"})


def is_inspect_message(data: dict[str, Any]) -> bool:
    """Whether a JSON object is an Inspect assistant message, not an Anthropic response
    (which says ``"type": "message"`` and cites by location types): Inspect's ``source``
    field, or its citation types."""
    if data.get("role") != "assistant" or data.get("type") == "message":
        return False
    content = data.get("content")
    if "source" in data and isinstance(content, list | str):
        return True
    return isinstance(content, list) and any(
        isinstance(part, dict)
        and isinstance(part.get("citations"), list)
        and any(isinstance(c, dict) and c.get("type") in _CITATION_TYPES for c in part["citations"])
        for part in content
    )


def read(
    data: Any, reader: Reader, documents: Sequence[str] | None = None
) -> tuple[Draft, str | None]:
    message = reader.mapping(data, "message")
    content = message.get("content")
    draft = Draft(text="")
    if isinstance(content, str):
        draft.text = content
        return draft, _message_id(message)
    listed = reader.items(content, "content")
    parts = [reader.mapping(part, f"content[{i}]") for i, part in enumerate(listed)]
    # Runs of text parts, cut by the server tools' parts (web search, MCP) between them.
    answer, narration = answer_runs(
        parts,
        is_text=lambda part: part.get("type") == "text",
        cuts=lambda part: part.get("type") == _TOOL_USE,
        is_tool_call=lambda part: part.get("type") == _TOOL_USE,
    )
    if not answer:
        raise reader.fail(
            "content",
            "the message has no answer text",
            "score the model's final answer (state.output.message), the one with text",
        )
    narration_note(draft, narration)
    draft.text, placed = joined_runs(
        answer, lambda i, part: reader.text(part.get("text"), f"content[{i}].text")
    )
    for offset, i, part, text in placed:
        where = f"content[{i}]"
        citations = reader.optional_items(part.get("citations"), f"{where}.citations")
        for k, citation in enumerate(citations):
            _cite(reader, draft, text, offset, citation, f"{where}.citations[{k}]", documents)
        if citations:
            cite_repeated_links(draft, text, offset, f"{where}.text")
    return draft, _message_id(message)


def _message_id(message: dict[str, Any]) -> str | None:
    value = message.get("id")
    return value if isinstance(value, str) else None


def _cite(
    reader: Reader,
    draft: Draft,
    text: str,
    offset: int,
    value: Any,
    where: str,
    documents: Sequence[str] | None,
) -> None:
    citation = reader.mapping(value, where)
    kind = citation.get("type")
    cited = citation.get("cited_text")
    title = reader.optional_text(citation.get("title"), f"{where}.title")
    quote: str | None = None
    span: tuple[int, int] | None = None
    if isinstance(cited, str):
        quote = cited.strip() or None
    elif isinstance(cited, list | tuple) and len(cited) == 2:
        start = reader.index(cited[0], f"{where}.cited_text[0]")
        end = reader.index(cited[1], f"{where}.cited_text[1]")
        check_offsets(reader, text, start, end, f"{where}.cited_text")
        span = (start or 0, end if end is not None else len(text))
    elif cited is not None:
        raise reader.fail(
            f"{where}.cited_text",
            "cited_text is neither text nor a [start, end] range",
            "save the log as Inspect wrote it",
        )
    if kind == "url":
        url = clean_url(reader.text(citation.get("url"), f"{where}.url"))
        source = CitedSource(url=url, quote=quote, quote_by=provider_quote(quote), title=title)
        source = source.model_copy(update={"where": where})
        if span is not None:
            add_url_annotation(draft, reader, text, offset, source, *span)
        else:
            draft.spans.append(Span(offset, offset + len(text), [source]))
        return
    if kind == "document":
        internal = citation.get("internal")
        index = internal.get("document_index") if isinstance(internal, dict) else None
        name = reader.document(
            documents,
            reader.index(index, f"{where}.internal.document_index"),
            title,
            where,
            "internal.document_index",
            "document",
        )
        source = CitedSource(
            document=name, quote=quote, quote_by=provider_quote(quote), title=title, where=where
        )
        lo, hi = span if span is not None else (0, len(text))
        draft.spans.append(Span(offset + lo, offset + hi, [source]))
        return
    if kind == "content":
        raise reader.fail(
            where,
            "a ContentCitation names no URL and no document, so there is nothing to check it "
            "against",
            "cite a URL (UrlCitation) or a document (DocumentCitation), or cite it by hand",
        )
    raise reader.fail(
        where,
        f"unknown citation type {kind!r}",
        "url and document citations are understood; report the new type",
    )
