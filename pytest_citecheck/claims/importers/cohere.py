"""Cohere chat v2 (``POST /v2/chat``): ``message.citations`` spans over the answer.

``message.content[]`` holds ``thinking`` and ``text`` items; each citation's
``start``/``end`` (end exclusive) index ``content[content_index].text`` (the first text
item when ``content_index`` is absent), and its ``text`` is that slice of the ANSWER,
never a quote. The slice is checked against ``text`` and looked up near the offsets
when they disagree. Spans are phrases ("Yukihiro Matsumoto", "1993."): each is a span,
so the sentence around it gets its sources, once.

``sources[]`` are ``tool`` results (``tool_output.url``, or an ``id`` that is a URL) or
request ``document`` items: ``doc:N`` is the N-th document of the request (pass
``documents`` to map it to a path), else its ``title`` or ``id`` names it. The source's
full text is carried but no quote offsets into it, so no quote is taken.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pytest_citecheck.claims.importers.answer import CitedSource, Reader
from pytest_citecheck.claims.importers.draft import Draft, Paragraphs, Span, clean_url
from pytest_citecheck.claims.importers.openai_responses import no_text

FORMAT = "cohere"
_DOC_ID = re.compile(r"doc[:_](\d+)")


def read(
    data: Any, reader: Reader, documents: Sequence[str] | None = None
) -> tuple[Draft, str | None]:
    body = reader.mapping(data, "response")
    message = reader.mapping(body.get("message"), "message")
    content = message.get("content")
    if isinstance(content, str):  # an older shape: the answer as one string
        content = [{"type": "text", "text": content}]
    items = reader.optional_items(content, "message.content")
    offsets: dict[int, int] = {}
    joined = Paragraphs()
    for i, item in enumerate(items):
        item = reader.mapping(item, f"message.content[{i}]")
        if item.get("type") == "text":
            offsets[i] = joined.add(reader.text(item.get("text"), f"message.content[{i}].text"))
    if not offsets:
        calls = ["tool_calls"] if message.get("tool_calls") else []
        raise no_text(reader, "message.content", calls)
    draft = Draft(text=joined.text)
    first_text = min(offsets)
    citations = reader.optional_items(message.get("citations"), "message.citations")
    for k, value in enumerate(citations):
        where = f"message.citations[{k}]"
        citation = reader.mapping(value, where)
        index = reader.index(citation.get("content_index"), f"{where}.content_index")
        index = first_text if index is None else index
        if index not in offsets:
            raise reader.fail(
                f"{where}.content_index",
                f"content item {index} is not a text item of the answer",
                "save the response unedited",
            )
        part: str = items[index]["text"]
        start, end = _span(reader, citation, part, where)
        sources = [
            _source(reader, s, f"{where}.sources[{n}]", documents)
            for n, s in enumerate(
                reader.optional_items(citation.get("sources"), f"{where}.sources")
            )
        ]
        if sources:
            draft.spans.append(Span(offsets[index] + start, offsets[index] + end, sources))
    response_id = body.get("id") if isinstance(body.get("id"), str) else None
    return draft, response_id


def _span(reader: Reader, citation: dict[str, Any], text: str, where: str) -> tuple[int, int]:
    start = reader.index(citation.get("start"), f"{where}.start")
    end = reader.index(citation.get("end"), f"{where}.end")
    anchor = reader.optional_text(citation.get("text"), f"{where}.text")
    fits = start is not None and end is not None and start <= end <= len(text)
    if fits and (anchor is None or text[start:end] == anchor):
        assert start is not None and end is not None
        return start, end
    if anchor:
        found = [m.start() for m in re.finditer(re.escape(anchor), text)]
        if found:
            at = min(found, key=lambda f: abs(f - (start or 0)))
            return at, at + len(anchor)
    raise reader.fail(
        f"{where}.start",
        f"the span {start}..{end} is not the cited text {anchor!r} of the answer",
        "save the response unedited",
    )


def _source(reader: Reader, value: Any, where: str, documents: Sequence[str] | None) -> CitedSource:
    source = reader.mapping(value, where)
    kind = source.get("type")
    ident = source.get("id") if isinstance(source.get("id"), str) else None
    if kind == "tool":
        raw = source.get("tool_output")
        output: dict[str, Any] = raw if isinstance(raw, dict) else {}
        title = output.get("title") if isinstance(output.get("title"), str) else None
        for url in (output.get("url"), ident):
            if isinstance(url, str) and url.strip().lower().startswith(("http://", "https://")):
                return CitedSource(url=clean_url(url), title=title, where=where)
        raise reader.fail(
            where,
            "the tool result the citation points at has no URL",
            "have the tool return a `url` with each result, or cite the source by hand",
        )
    if kind == "document":
        given = source.get("document")
        document: dict[str, Any] = given if isinstance(given, dict) else {}
        title = document.get("title") if isinstance(document.get("title"), str) else None
        doc_id = ident or (document.get("id") if isinstance(document.get("id"), str) else None)
        match = _DOC_ID.fullmatch(doc_id or "")
        if documents is not None and match is not None:
            n = int(match.group(1))
            if n >= len(documents):
                raise reader.fail(
                    f"{where}.id",
                    f"{doc_id} is not among the {len(documents)} document(s) given",
                    "list every document of the request in order",
                )
            return CitedSource(document=documents[n], title=title, where=where)
        name = (title or doc_id or "").strip()
        if not name:
            raise reader.fail(
                where,
                "the document source has neither a title nor an id",
                "pass the request's documents in order (documents=[...])",
            )
        return CitedSource(document=name, title=title, where=where)
    raise reader.fail(
        where,
        f"unknown source type {kind!r}",
        "tool and document sources are understood; report the new type",
    )
