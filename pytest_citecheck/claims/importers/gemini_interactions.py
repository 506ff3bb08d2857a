"""Gemini Interactions API (``POST /v1beta/interactions``): ``steps[]`` with annotations.

The answer is the ``text`` items of the ``model_output`` steps (the step comes before
the search steps it used). Each ``url_citation`` annotation {start_index, end_index,
url, title} spans answer text (a sentence or list item, sometimes stopping before its
final "."): a span, so every sentence it overlaps gets the URL. The offsets are UTF-8
bytes, as in ``generateContent``; the URL is a grounding redirect link (title = the
domain), kept as cited, as for ``gemini``.
"""

from __future__ import annotations

from typing import Any

from pytest_citecheck.claims.importers.answer import CitedSource, Reader
from pytest_citecheck.claims.importers.draft import Draft, Paragraphs, Span, clean_url
from pytest_citecheck.claims.importers.openai_responses import no_text

FORMAT = "gemini-interactions"


def is_interaction(body: dict[str, Any]) -> bool:
    steps = body.get("steps")
    return isinstance(steps, list) and (
        body.get("object") == "interaction"
        or any(isinstance(s, dict) and s.get("type") == "model_output" for s in steps)
    )


def read(data: Any, reader: Reader) -> tuple[Draft, str | None]:
    body = reader.mapping(data, "response")
    steps = reader.items(body.get("steps"), "steps")
    draft = Draft(text="")
    joined = Paragraphs()
    calls: list[str] = []
    for i, step in enumerate(steps):
        step = reader.mapping(step, f"steps[{i}]")
        kind = step.get("type")
        if kind != "model_output":
            if isinstance(kind, str) and kind.endswith("_call"):
                calls.append(kind)
            continue
        for j, item in enumerate(reader.optional_items(step.get("content"), f"steps[{i}].content")):
            where = f"steps[{i}].content[{j}]"
            item = reader.mapping(item, where)
            if item.get("type") != "text":
                continue
            text = reader.text(item.get("text"), f"{where}.text")
            offset = joined.add(text)
            annotations = reader.optional_items(item.get("annotations"), f"{where}.annotations")
            for k, value in enumerate(annotations):
                _annotation(reader, draft, text, offset, value, f"{where}.annotations[{k}]")
    draft.text = joined.text
    if not draft.text.strip():
        raise no_text(reader, "steps", calls)
    response_id = body.get("id") if isinstance(body.get("id"), str) else None
    return draft, response_id


def _annotation(
    reader: Reader, draft: Draft, text: str, offset: int, value: Any, where: str
) -> None:
    annotation = reader.mapping(value, where)
    if annotation.get("type") != "url_citation":
        raise reader.fail(
            where,
            f"unknown annotation type {annotation.get('type')!r}",
            "url_citation is understood; report the new type",
        )
    url = reader.text(annotation.get("url"), f"{where}.url")
    title = annotation.get("title") if isinstance(annotation.get("title"), str) else None
    source = CitedSource(url=clean_url(url), title=title, where=where)
    start = reader.index(annotation.get("start_index"), f"{where}.start_index") or 0
    end = reader.index(annotation.get("end_index"), f"{where}.end_index")
    data = text.encode("utf-8")
    if end is None or not start <= end <= len(data):
        raise reader.fail(
            f"{where}.end_index",
            f"the byte offsets {start}..{end} are outside the text ({len(data)} bytes)",
            "the offsets are UTF-8 byte offsets into the text item: save the response unedited",
        )
    lo = len(data[:start].decode("utf-8", errors="ignore"))
    hi = len(data[:end].decode("utf-8", errors="ignore"))
    draft.spans.append(Span(offset + lo, offset + hi, [source]))
