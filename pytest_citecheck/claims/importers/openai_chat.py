"""OpenAI Chat Completions with a search model (``gpt-4o-search-preview``...), OpenRouter.

``choices[0].message.annotations[] = {"type": "url_citation", "url_citation": {url,
title, start_index, end_index}}``, with the offset rules of the Responses API
(:mod:`~pytest_citecheck.claims.importers.openai_responses`). ``annotations: []`` is
an answer nobody cited: every sentence is uncited. OpenRouter relaying Perplexity
sends annotations at ``0``/``0`` and keeps Perplexity's ``[n]`` markers in the text:
the markers then index the annotations.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_citecheck.claims.importers.answer import Reader
from pytest_citecheck.claims.importers.draft import Draft, Marker, marker_extent
from pytest_citecheck.claims.importers.openai_responses import (
    cite_repeated_links,
    no_text,
    read_annotation,
)
from pytest_citecheck.claims.importers.text import line_column

FORMAT = "openai-chat"


def message(reader: Reader, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The first choice's message and its text (every other choice is another answer)."""
    choices = reader.items(body.get("choices"), "choices")
    if not choices:
        raise reader.fail(
            "choices", "the response has no choices", "import a response with an answer"
        )
    choice = reader.mapping(choices[0], "choices[0]")
    msg = reader.mapping(choice.get("message"), "choices[0].message")
    content = msg.get("content")
    if content is None:
        calls = ["tool_calls"] if msg.get("tool_calls") else []
        raise no_text(reader, "choices[0].message.content", calls)
    return msg, reader.text(content, "choices[0].message.content")


def read(data: Any, reader: Reader) -> tuple[Draft, str | None]:
    body = reader.mapping(data, "response")
    msg, text = message(reader, body)
    draft = Draft(text=text)
    annotations = reader.optional_items(msg.get("annotations"), "choices[0].message.annotations")
    for k, annotation in enumerate(annotations):
        where = f"choices[0].message.annotations[{k}]"
        annotation = reader.mapping(annotation, where)
        if annotation.get("type") == "url_citation" and "url_citation" in annotation:
            inner = reader.mapping(annotation["url_citation"], f"{where}.url_citation")
            annotation = {"type": "url_citation", **inner}
            where = f"{where}.url_citation"
        read_annotation(reader, draft, text, 0, annotation, where)
    cite_repeated_links(draft, text, 0, "choices[0].message.content")
    _numbered_markers(reader, draft, text)
    response_id = body.get("id") if isinstance(body.get("id"), str) else None
    return draft, response_id


_NUMBERED = re.compile(r"\[(\d{1,4})\]")


def _numbered_markers(reader: Reader, draft: Draft, text: str) -> None:
    """OpenRouter relaying Perplexity: annotations without a position (``0``/``0``) and
    ``[n]`` markers in the text, 1-based into the annotations."""
    if draft.markers or draft.spans or not draft.unattached:
        return
    markers = list(_NUMBERED.finditer(text))
    if not markers:
        return
    listed = list(draft.unattached)
    for match in markers:
        n = int(match.group(1))
        if not 1 <= n <= len(listed):
            raise reader.fail(
                f"choices[0].message.content, {line_column(text, match.start())}",
                f"the marker [{n}] points at no source: the response has {len(listed)} "
                "url_citation annotation(s)",
                "save the response unedited (markers count from [1] into the annotations)",
            )
        start, end = marker_extent(text, match.start(), match.end(), wrapped=False)
        draft.markers.append(Marker(start, end, [listed[n - 1]]))
    used = {id(m.sources[0]) for m in draft.markers}
    draft.unattached = [s for s in listed if id(s) not in used]
