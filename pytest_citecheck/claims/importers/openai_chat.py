"""OpenAI Chat Completions with a search model (``gpt-4o-search-preview``...), OpenRouter.

``choices[0].message.annotations[] = {"type": "url_citation", "url_citation": {url,
title, start_index, end_index}}``, with the offset rules of the Responses API
(:mod:`~pytest_citecheck.claims.importers.openai_responses`). ``annotations: []`` is
an answer nobody cited: every sentence is uncited.
"""

from __future__ import annotations

from typing import Any

from pytest_citecheck.claims.importers.answer import Reader
from pytest_citecheck.claims.importers.openai_responses import (
    cite_repeated_links,
    no_text,
    read_annotation,
)
from pytest_citecheck.claims.importers.text import Draft

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
    annotations = reader.items(msg.get("annotations") or [], "choices[0].message.annotations")
    for k, annotation in enumerate(annotations):
        where = f"choices[0].message.annotations[{k}]"
        annotation = reader.mapping(annotation, where)
        if annotation.get("type") == "url_citation" and "url_citation" in annotation:
            inner = reader.mapping(annotation["url_citation"], f"{where}.url_citation")
            annotation = {"type": "url_citation", **inner}
            where = f"{where}.url_citation"
        read_annotation(reader, draft, text, 0, annotation, where)
    cite_repeated_links(draft, text, 0, "choices[0].message.content")
    response_id = body.get("id") if isinstance(body.get("id"), str) else None
    return draft, response_id
