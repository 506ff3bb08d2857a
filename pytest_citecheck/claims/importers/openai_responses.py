"""OpenAI Responses API (``tools=[{"type": "web_search"}]``), and xAI / OpenRouter look-alikes.

``output[]`` holds ``web_search_call`` items (their ``action.sources`` list every page
consulted, cited or not: never citations) and ``message`` items whose ``output_text``
parts carry ``url_citation`` annotations. An annotation's ``start_index``/``end_index``
(code points) cover the marker the model printed after the sentence, such as
``" ([domain](url))"``, ``[domain](url)`` or ``[[1]](url)``: the claim is the sentence
before it (:func:`~pytest_citecheck.claims.importers.draft.place_url_annotation`).
``file_citation`` and ``container_file_citation`` cite a file by name (a document
citation); ``file_path`` links a file the model wrote and cites nothing.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from pytest_citecheck.claims.importers.answer import CitedSource, Reader
from pytest_citecheck.claims.importers.draft import (
    Draft,
    LinkIndex,
    Marker,
    Paragraphs,
    add_url_annotation,
    clean_url,
    dedup_key,
    marker_extent,
)
from pytest_citecheck.claims.importers.text import line_column

FORMAT = "openai-responses"
_NOT_CITATIONS = frozenset({"file_path"})


def read(data: Any, reader: Reader) -> tuple[Draft, str | None]:
    body = reader.mapping(data, "response")
    texts = output_texts(reader, body, ignored=("reasoning",))
    draft = Draft(text="")
    joined = Paragraphs()
    for text, listed, where in texts:
        offset = joined.add(text)
        for k, annotation in enumerate(listed):
            read_annotation(reader, draft, text, offset, annotation, f"{where}.annotations[{k}]")
        cite_repeated_links(draft, text, offset, f"{where}.text")
    draft.text = joined.text
    response_id = body.get("id") if isinstance(body.get("id"), str) else None
    return draft, response_id


# An output item a reader reads itself: (its place in ``output``, the item, its type)
# -> whether it was one of the reader's.
OtherItem = Callable[[int, dict[str, Any], Any], bool]


def output_texts(
    reader: Reader,
    body: dict[str, Any],
    other_item: OtherItem | None = None,
    ignored: tuple[str, ...] = (),
) -> list[tuple[str, list[Any], str]]:
    """The ``output_text`` parts of ``body``'s ``message`` items (see
    :func:`message_texts`); ``other_item`` reads the items of other types it knows.
    No text raises, naming the tool calls (the items of other types, but
    ``ignored``) the response has instead."""
    output = reader.items(body.get("output"), "output")
    texts: list[tuple[str, list[Any], str]] = []
    other: list[str] = []
    for i, item in enumerate(output):
        item = reader.mapping(item, f"output[{i}]")
        kind = item.get("type")
        if kind == "message":
            texts += message_texts(reader, item, f"output[{i}]")
        elif other_item is not None and other_item(i, item, kind):
            continue
        elif isinstance(kind, str) and kind not in ignored:
            other.append(kind)
    if not texts:
        raise no_text(reader, "output", other)
    return texts


def message_texts(
    reader: Reader, item: dict[str, Any], where: str
) -> list[tuple[str, list[Any], str]]:
    """A ``message`` item's ``output_text`` parts: (text, annotations, where) each."""
    out = []
    content = reader.items(item.get("content"), f"{where}.content")
    for j, part in enumerate(content):
        here = f"{where}.content[{j}]"
        part = reader.mapping(part, here)
        if part.get("type") != "output_text":
            continue
        text = reader.text(part.get("text"), f"{here}.text")
        annotations = reader.optional_items(part.get("annotations"), f"{here}.annotations")
        out.append((text, annotations, here))
    return out


def no_text(reader: Reader, where: str, other: list[str]) -> Exception:
    if other:
        calls = ", ".join(sorted(set(other)))
        return reader.fail(
            where,
            f"the response has tool calls ({calls}) but no answer text",
            "import the final response of the turn, the one with the answer "
            "(send the tool results back and save the model's reply)",
        )
    return reader.fail(where, "the response has no answer text", "import a response with an answer")


def read_annotation(
    reader: Reader, draft: Draft, text: str, offset: int, annotation: Any, where: str
) -> None:
    """One annotation of one text part (``offset``: where the part starts in the answer)."""
    annotation = reader.mapping(annotation, where)
    kind = annotation.get("type")
    if kind in _NOT_CITATIONS:
        return
    if kind == "url_citation":
        url = reader.text(annotation.get("url"), f"{where}.url")
        title = reader.optional_text(annotation.get("title"), f"{where}.title")
        start = reader.index(annotation.get("start_index"), f"{where}.start_index")
        end = reader.index(annotation.get("end_index"), f"{where}.end_index")
        check_offsets(reader, text, start, end, where)
        source = CitedSource(url=clean_url(url), title=title, where=where)
        add_url_annotation(draft, reader, text, offset, source, start, end)
        return
    if kind in ("file_citation", "container_file_citation"):
        name = annotation.get("filename")
        if not isinstance(name, str) or not name.strip():
            raise reader.fail(
                where,
                f"the {kind} has no filename, so there is no document to check it against",
                "save the response with the file's name, or cite the file by hand "
                "(`document: <path>`)",
            )
        index = reader.index(
            annotation.get("index", annotation.get("start_index")), f"{where}.index"
        )
        if index is None:
            draft.unattached.append(CitedSource(document=name, where=where))
            return
        check_offsets(reader, text, index, index, where)
        draft.markers.append(
            Marker(offset + index, offset + index, [CitedSource(document=name, where=where)])
        )
        return
    raise reader.fail(
        where,
        f"unknown annotation type {kind!r}",
        "url_citation, file_citation, container_file_citation and file_path are understood; "
        "remove this annotation or report the new type",
    )


def cite_repeated_links(draft: Draft, text: str, offset: int, where: str) -> None:
    """Links the model printed to a URL the API cites elsewhere in this text, left without
    an annotation of their own (Azure annotates only the first), cite like the annotated."""
    mine = [m for m in draft.markers if offset <= m.start <= offset + len(text)]
    placed = sorted((m.start - offset, m.end - offset) for m in mine)
    starts = [s for s, _ in placed]
    reach = list(accumulate((e for _, e in placed), max))  # the furthest end so far
    cited = {dedup_key(s.url) for m in mine for s in m.sources if s.url}
    index = draft.links.get(offset) or LinkIndex(text)
    for start, end, url in zip(index.starts, index.ends, index.urls, strict=True):
        if dedup_key(url) not in cited:
            continue
        before = bisect.bisect_left(starts, end)  # the markers starting before the link ends
        if before and reach[before - 1] > start:
            continue  # a marker overlaps it
        lo, hi = marker_extent(text, start, end)
        # The model printed this link: its URL (and text fragment) is the model's.
        source = CitedSource(
            url=clean_url(url), url_by="model", where=f"{where}, {line_column(text, start)}"
        )
        draft.markers.append(Marker(offset + lo, offset + hi, [source]))


def check_offsets(
    reader: Reader, text: str, start: int | None, end: int | None, where: str
) -> None:
    if start is not None and start > len(text):
        raise reader.fail(
            f"{where}.start_index",
            f"the offset {start} is outside the text ({len(text)} characters)",
            "the annotation does not belong to this text: save the response unedited",
        )
    if end is not None and (end > len(text) or (start is not None and end < start)):
        raise reader.fail(
            f"{where}.end_index",
            f"the offset {end} is outside the text ({len(text)} characters)"
            if end > len(text)
            else f"end_index {end} is before start_index {start}",
            "the annotation does not belong to this text: save the response unedited",
        )
