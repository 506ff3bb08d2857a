"""xAI native API (gRPC ``xai-sdk``) responses saved as JSON: ``inline_citations``.

``GetChatCompletionResponse`` as ``MessageToDict`` writes it (camelCase, or snake_case
with ``preserving_proto_field_name``): ``outputs[].message`` has ``content`` and
``citations[]`` = InlineCitation {id, start_index, end_index, web_citation {url} |
x_citation {url} | collections_citation {file_id, chunk_id, chunk_content}}. The
offsets cover the citation the model printed (as OpenAI's do, a marker) or the text
cited; :func:`~pytest_citecheck.claims.importers.draft.place_url_annotation` tells which.
A collections citation cites an uploaded file; its ``chunk_content`` is the passage
the provider retrieved: a provider quote. xAI's REST Responses API is read as
``openai-responses``.
"""

from __future__ import annotations

from typing import Any

from pytest_citecheck.claims.importers.answer import (
    CitedSource,
    Reader,
    either_case,
    provider_quote,
)
from pytest_citecheck.claims.importers.draft import (
    Draft,
    Marker,
    Span,
    add_url_annotation,
    clean_url,
)
from pytest_citecheck.claims.importers.openai_responses import check_offsets, no_text

FORMAT = "xai"


def is_xai(body: dict[str, Any]) -> bool:
    outputs = body.get("outputs")
    return (
        isinstance(outputs, list)
        and bool(outputs)
        and isinstance(outputs[0], dict)
        and isinstance(outputs[0].get("message"), dict)
    )


def read(data: Any, reader: Reader) -> tuple[Draft, str | None]:
    body = reader.mapping(data, "response")
    outputs = reader.items(body.get("outputs"), "outputs")
    output = reader.mapping(outputs[0], "outputs[0]") if outputs else {}
    message = reader.mapping(output.get("message"), "outputs[0].message")
    text = reader.optional_text(message.get("content"), "outputs[0].message.content")
    if not text:
        raise no_text(
            reader,
            "outputs[0].message.content",
            ["tool_calls"] if either_case(message, "toolCalls") else [],
        )
    draft = Draft(text=text)
    citations = reader.optional_items(message.get("citations"), "outputs[0].message.citations")
    for k, value in enumerate(citations):
        where = f"outputs[0].message.citations[{k}]"
        citation = reader.mapping(value, where)
        start = reader.index(either_case(citation, "startIndex"), f"{where}.start_index")
        end = reader.index(either_case(citation, "endIndex"), f"{where}.end_index")
        check_offsets(reader, text, start, end, where)
        source, url = _source(reader, citation, where)
        if url is None:
            if start is not None and end is not None and end > start:
                draft.spans.append(Span(start, end, [source]))
            elif end is not None or start is not None:
                at = end if end is not None else start
                assert at is not None
                draft.markers.append(Marker(at, at, [source]))
            else:
                draft.unattached.append(source)
            continue
        add_url_annotation(draft, reader, text, 0, source, start, end)
    listed = body.get("citations")
    if isinstance(listed, list):
        cited = {s.url for m in draft.markers for s in m.sources} | {
            s.url for sp in draft.spans for s in sp.sources
        }
        draft.unattached += [
            CitedSource(url=clean_url(u), where=f"citations[{n}]")
            for n, u in enumerate(listed)
            if isinstance(u, str) and u.strip() and clean_url(u) not in cited
        ]
    response_id = body.get("id") if isinstance(body.get("id"), str) else None
    return draft, response_id


def _source(reader: Reader, citation: dict[str, Any], where: str) -> tuple[CitedSource, str | None]:
    for name in ("webCitation", "xCitation"):
        inner = either_case(citation, name)
        if isinstance(inner, dict):
            url = reader.text(inner.get("url"), f"{where}.{name}.url")
            return CitedSource(url=clean_url(url), where=where), url
    inner = either_case(citation, "collectionsCitation")
    if isinstance(inner, dict):
        file_id = reader.text(either_case(inner, "fileId"), f"{where}.collections_citation.file_id")
        chunk = either_case(inner, "chunkContent")
        quote = chunk.strip() if isinstance(chunk, str) and chunk.strip() else None
        return (
            CitedSource(
                document=file_id,
                quote=quote,
                quote_by=provider_quote(quote),
                where=where,
            ),
            None,
        )
    raise reader.fail(
        where,
        "the citation is none of web_citation, x_citation, collections_citation",
        "save the response unedited, or report the new citation kind",
    )
