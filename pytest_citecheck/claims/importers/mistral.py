"""Mistral: Agents / Conversations ``tool_reference`` chunks and chat ``reference`` chunks.

A Conversations response (``outputs[]`` entries of type ``message.output``) and a chat
completion (``choices[0].message``) give the answer as ``content``: text, or a list
of chunks mixing ``{type: text, text}`` with ``{type: tool_reference, tool, title,
url?}`` (built-in web search, document library) or ``{type: reference,
reference_ids}``. Neither has a span or a quote: a reference chunk sits after the text
it supports and cites the sentence that text ends in.

A ``tool_reference`` without a URL (a library document) is kept as unattached, with a
note; one whose ``url`` is there but no text (a number, a list) is refused as a
malformed URL. ``reference_ids`` count the request's documents: pass ``documents`` to map them to
paths (else each is written as ``reference-<id>``, which the claim file leaves as a
comment to fix).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_citecheck.claims.importers.answer import CitedSource, Reader
from pytest_citecheck.claims.importers.draft import Draft, Marker, clean_url
from pytest_citecheck.claims.importers.openai_responses import no_text
from pytest_citecheck.claims.models import kind as kind_of

FORMAT = "mistral"
CHUNK_TYPES = frozenset({"tool_reference", "reference"})


def is_mistral(body: dict[str, Any]) -> bool:
    """A Mistral body: a conversation response, or a chat completion with chunked content."""
    if body.get("object") == "conversation.response" or "conversation_id" in body:
        return True
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(c, dict) and c.get("type") in CHUNK_TYPES for c in content
    )


def read(
    data: Any, reader: Reader, documents: Sequence[str] | None = None
) -> tuple[Draft, str | None]:
    body = reader.mapping(data, "response")
    contents: list[tuple[Any, str]] = []
    calls: list[str] = []
    if "choices" in body:
        choices = reader.items(body.get("choices"), "choices")
        if not choices:
            raise reader.fail("choices", "the response has no choices", "import an answer")
        message = reader.mapping(
            reader.mapping(choices[0], "choices[0]").get("message"), "choices[0].message"
        )
        contents.append((message.get("content"), "choices[0].message.content"))
        if message.get("tool_calls"):
            calls.append("tool_calls")
    else:
        outputs = reader.items(body.get("outputs"), "outputs")
        for i, entry in enumerate(outputs):
            entry = reader.mapping(entry, f"outputs[{i}]")
            if entry.get("type") == "message.output":
                contents.append((entry.get("content"), f"outputs[{i}].content"))
            elif isinstance(entry.get("type"), str):
                calls.append(entry["type"])
    draft = Draft(text="")
    pieces: list[str] = []
    offset = 0
    library = 0
    for content, where in contents:
        if content is None:
            continue
        chunks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if pieces:
            pieces.append("\n\n")
            offset += 2
        for k, chunk in enumerate(reader.items(chunks, where)):
            cwhere = f"{where}[{k}]"
            chunk = reader.mapping(chunk, cwhere)
            kind = chunk.get("type")
            if kind == "text":
                text = reader.text(chunk.get("text"), f"{cwhere}.text")
                pieces.append(text)
                offset += len(text)
            elif kind == "tool_reference":
                url = chunk.get("url")
                title = chunk.get("title") if isinstance(chunk.get("title"), str) else None
                if url is None or url == "":
                    library += 1  # no URL at all: a library document
                    continue
                if not isinstance(url, str) or not url.strip():
                    # A URL that is there but no text is a broken citation, not a document.
                    raise reader.fail(
                        f"{cwhere}.url",
                        f"the tool_reference's url is malformed: {kind_of(url)}, not a URL",
                        "save the response unedited (a library document's tool_reference "
                        "has no url at all)",
                    )
                source = CitedSource(url=clean_url(url), title=title, where=cwhere)
                draft.markers.append(Marker(offset, offset, [source]))
            elif kind == "reference":
                ids = reader.optional_items(chunk.get("reference_ids"), f"{cwhere}.reference_ids")
                sources = [
                    _reference(reader, r, f"{cwhere}.reference_ids[{n}]", documents)
                    for n, r in enumerate(ids)
                ]
                if sources:
                    draft.markers.append(Marker(offset, offset, sources))
    draft.text = "".join(pieces)
    if not draft.text.strip():
        raise no_text(reader, "outputs" if "outputs" in body else "choices[0].message", calls)
    if library:
        draft.notes.append(
            f"{library} tool_reference chunk(s) have no URL (a library document): not cited"
        )
    response_id = body.get("id") if isinstance(body.get("id"), str) else None
    return draft, response_id or (
        body.get("conversation_id") if isinstance(body.get("conversation_id"), str) else None
    )


def _reference(
    reader: Reader, value: Any, where: str, documents: Sequence[str] | None
) -> CitedSource:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise reader.fail(
            where, "a reference id must be a number or text", "save the response unedited"
        )
    if documents is not None and isinstance(value, int):
        if not 0 <= value < len(documents):
            raise reader.fail(
                where,
                f"reference {value} is not among the {len(documents)} document(s) given",
                "list every document of the request in order",
            )
        return CitedSource(document=documents[value], where=where)
    return CitedSource(document=f"reference-{value}", where=where)
