"""The importers read the provider SDKs' own response objects (openai, anthropic,
google-genai: the dev extra) exactly as they read the JSON those objects come from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.claims.importers import ResponseImportError, import_response

NATIVE = Path(__file__).parent.parent / "data" / "native"
# Usage blocks drift between API versions and SDK releases (a field the SDK now
# requires, one it does not know yet); they carry no citation, so a recording whose
# usage the SDK refuses is validated without it.
USAGE = ("usage", "usageMetadata")


def sdk_type(folder: str) -> Any:
    if folder in ("openai_responses", "openai_deep_research", "deepseek_responses"):
        from openai.types.responses import Response

        return Response
    if folder == "openai_chat_completions":
        from openai.types.chat import ChatCompletion

        return ChatCompletion
    if folder in ("anthropic_messages", "anthropic_web_fetch"):
        from anthropic.types import Message

        return Message
    if folder == "cohere_chat_v2":
        from cohere.v2 import V2ChatResponse

        return V2ChatResponse
    from google.genai import types

    return types.GenerateContentResponse


# Streams are event lists (no SDK response type); Bedrock has no pydantic types (its
# shapes are checked against botocore's service model in test_importers_sdk_types.py); the
# Gemini Interactions types are private to google-genai.
SDK_RECORDINGS = [
    p
    for p in sorted(NATIVE.glob("*/*.json"))
    if p.parent.name not in ("perplexity_sonar", "bedrock_converse", "gemini_interactions")
    and not p.name.endswith(".stream.json")
]


@pytest.mark.parametrize("path", SDK_RECORDINGS, ids=lambda p: p.stem)
def test_recordings_as_sdk_objects_import_as_their_json(path: Path) -> None:
    from pydantic import ValidationError

    data = json.loads(path.read_text(encoding="utf-8"))
    model = sdk_type(path.parent.name)
    try:
        obj = model.model_validate(data)
    except ValidationError:
        data = {k: v for k, v in data.items() if k not in USAGE}
        if path.parent.name.startswith("anthropic_"):  # the SDK requires one
            data["usage"] = {"input_tokens": 0, "output_tokens": 0}
        obj = model.model_validate(data)
    try:
        expected = import_response(data, answer_id="a")
    except ResponseImportError as exc:
        with pytest.raises(ResponseImportError) as info:
            import_response(obj, answer_id="a")
        assert (info.value.where, info.value.problem) == (exc.where, exc.problem)
        return
    got = import_response(obj, answer_id="a")
    assert got.claim_list == expected.claim_list
    assert got.sentences == expected.sentences
    assert got.format == expected.format


def test_openai_response_built_with_the_sdk() -> None:
    from openai.types.responses import (
        Response,
        ResponseFunctionWebSearch,
        ResponseOutputMessage,
        ResponseOutputText,
    )
    from openai.types.responses.response_output_text import AnnotationURLCitation

    text = "Water boils at 100 °C at sea level. ([a.org](https://a.org/water?utm_source=openai))"
    start = text.index(" (")
    response = Response(
        id="resp_1",
        created_at=0,
        model="gpt-5",
        object="response",
        parallel_tool_calls=True,
        tool_choice="auto",
        tools=[],
        output=[
            ResponseFunctionWebSearch(
                id="ws_1",
                type="web_search_call",
                status="completed",
                action={
                    "type": "search",
                    "query": "boiling point",
                    "sources": [{"type": "url", "url": "https://b.org/unread"}],
                },
            ),
            ResponseOutputMessage(
                id="msg_1",
                type="message",
                role="assistant",
                status="completed",
                content=[
                    ResponseOutputText(
                        type="output_text",
                        text=text,
                        annotations=[
                            AnnotationURLCitation(
                                type="url_citation",
                                start_index=start + 2,
                                end_index=len(text) - 1,
                                url="https://a.org/water?utm_source=openai",
                                title="Water",
                            )
                        ],
                    )
                ],
            ),
        ],
    )
    answer = import_response(response, answer_id="water")
    (claim,) = answer.claim_list
    assert claim.claim == "Water boils at 100 °C at sea level."
    assert [c.url for c in claim.citations] == ["https://a.org/water"]
    assert answer.response_id == "resp_1"


def test_chat_completion_built_with_the_sdk() -> None:
    from openai.types.chat import ChatCompletion

    text = "Ruby 4.0 came out on Christmas 2025. ([r.org](https://r.org/4))"
    start = text.index("(")
    completion = ChatCompletion.model_validate(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o-search-preview",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {
                        "role": "assistant",
                        "content": text,
                        "annotations": [
                            {
                                "type": "url_citation",
                                "url_citation": {
                                    "start_index": start,
                                    "end_index": len(text),
                                    "url": "https://r.org/4",
                                    "title": "r",
                                },
                            }
                        ],
                    },
                }
            ],
        }
    )
    (claim,) = import_response(completion).claim_list
    assert (claim.claim, claim.citations[0].url) == (
        "Ruby 4.0 came out on Christmas 2025.",
        "https://r.org/4",
    )


def test_anthropic_message_built_with_the_sdk() -> None:
    from anthropic.types import CitationsWebSearchResultLocation, Message, TextBlock, Usage

    message = Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        stop_reason="end_turn",
        usage=Usage(input_tokens=1, output_tokens=1),
        content=[
            TextBlock(
                type="text",
                text="Water boils at 100 °C",
                citations=[
                    CitationsWebSearchResultLocation(
                        type="web_search_result_location",
                        url="https://a.org/water",
                        title="Water",
                        cited_text="boils at 100 degrees Celsius",
                        encrypted_index="x",
                    )
                ],
            ),
            TextBlock(type="text", text=" at sea level."),
        ],
    )
    (claim,) = import_response(message).claim_list
    assert claim.claim == "Water boils at 100 °C at sea level."
    assert (claim.citations[0].url, claim.citations[0].quote) == (
        "https://a.org/water",
        "boils at 100 degrees Celsius",
    )


def gemini_response(text: str, cited: str, chunk: Any, response_id: str | None = None) -> Any:
    """A google-genai response whose one grounding support ties ``cited`` to ``chunk``."""
    from google.genai import types

    return types.GenerateContentResponse(
        response_id=response_id,
        candidates=[
            types.Candidate(
                content=types.Content(role="model", parts=[types.Part(text=text)]),
                grounding_metadata=types.GroundingMetadata(
                    grounding_chunks=[chunk],
                    grounding_supports=[
                        types.GroundingSupport(
                            segment=types.Segment(
                                start_index=0, end_index=len(cited.encode()), text=cited
                            ),
                            grounding_chunk_indices=[0],
                        )
                    ],
                ),
            )
        ],
    )


def test_gemini_response_built_with_the_sdk() -> None:
    from google.genai import types

    text = "Water boils at 100 °C at sea level. It freezes at 0 °C."
    first = "Water boils at 100 °C at sea level."
    web = types.GroundingChunkWeb(
        uri="https://vertexaisearch.cloud.google.com/grounding-api-redirect/A", title="a.org"
    )
    response = gemini_response(text, first, types.GroundingChunk(web=web), response_id="r1")
    answer = import_response(response, answer_id="water")
    assert [c.claim for c in answer.claim_list] == [first]
    assert [s.text for s in answer.uncited] == ["It freezes at 0 °C."]
    assert answer.response_id == "r1"


def test_gemini_image_chunks_cite_the_page_the_image_is_on() -> None:
    from google.genai import types

    text = "The bridge is painted International Orange."
    image = types.GroundingChunkImage(
        source_uri="https://example.org/golden-gate",
        image_uri="https://img.example.org/gg.jpg",
        title="Golden Gate",
    )
    answer = import_response(
        gemini_response(text, text, types.GroundingChunk(image=image)), answer_id="a"
    )
    assert [(c.claim, [x.url for x in c.citations]) for c in answer.claim_list] == [
        (text, ["https://example.org/golden-gate"])
    ]
