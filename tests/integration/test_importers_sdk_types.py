"""Recordings and built responses checked against the provider SDKs' own types
(botocore, cohere, perplexity, mistralai): Bedrock Converse, Cohere v2 streams,
Perplexity's Agent API and Mistral, of which no public recording exists for the
last two. Importing the SDKs takes seconds, so these are not unit tests; the
formats' other cases are in tests/unit/test_importers_new.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_citecheck.claims.importers import ResponseImportError, detect_format, import_response
from tests.unit.test_importers_new import NATIVE, load, targets


def test_bedrock_recordings_fit_botocores_converse_output_shape() -> None:
    botocore = pytest.importorskip("botocore.session")
    from botocore.validate import ParamValidator

    model = botocore.get_session().get_service_model("bedrock-runtime")
    output_shape = model.operation_model("Converse").output_shape.members["output"]
    for path in sorted((NATIVE / "bedrock_converse").glob("*.json")):
        if path.name.endswith(".stream.json"):
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        report = ParamValidator().validate(data["output"], output_shape)
        assert not report.has_errors(), report.generate_report()


def test_cohere_stream_events_fit_the_sdk_types() -> None:
    cohere = pytest.importorskip("cohere")
    from pydantic import TypeAdapter

    events = load("ruby_llm__command-a-plus_documents_earlier.stream")
    adapter: TypeAdapter[Any] = TypeAdapter(cohere.V2ChatStreamResponse)
    kinds = {type(adapter.validate_python(e)).__name__ for e in events}
    assert "CitationStartV2ChatStreamResponse" in kinds


def agent_response(text: str, annotations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An Agent API body as the perplexity SDK types define it (checked against them)."""
    body = {
        "id": "resp_1",
        "created_at": 1760000000,
        "model": "perplexity/sonar",
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "search_results",
                "queries": ["water boiling point"],
                "results": [
                    # ids are not positions: the first result has id 7.
                    {"id": 7, "url": "https://a.org/water", "title": "A", "snippet": "..."},
                    {"id": 2, "url": "https://b.org/altitude", "title": "B", "snippet": "..."},
                    {"id": 3, "url": "https://c.org/unused", "title": "C", "snippet": "..."},
                ],
            },
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": text, "annotations": annotations or []}
                ],
            },
        ],
    }
    perplexity = pytest.importorskip("perplexity.types")
    perplexity.ResponseCreateResponse.model_validate(body)
    return body


def test_perplexity_agent_markers_name_results_by_id_and_do_not_glue_sentences() -> None:
    body = agent_response(
        "Water boils at 100 °C at sea level.[7] It boils at a lower temperature higher up.[2][7]"
    )
    assert detect_format(body) == "perplexity-agent"
    answer = import_response(body, answer_id="a")
    assert answer.format == "perplexity-agent"
    assert targets(answer) == {
        "Water boils at 100 °C at sea level.": [("https://a.org/water", None)],
        "It boils at a lower temperature higher up.": [
            ("https://b.org/altitude", None),
            ("https://a.org/water", None),
        ],
    }
    assert [s.url for s in answer.unattached] == ["https://c.org/unused"]
    assert not answer.warnings


def test_perplexity_agent_sdk_object_and_annotations() -> None:
    from perplexity.types import ResponseCreateResponse

    text = "Water boils at 100 °C at sea level.[7]"
    body = agent_response(
        text,
        [
            {
                "type": "url_citation",
                "url": "https://a.org/water",
                "title": "A",
                "start_index": text.index("[7]"),
                "end_index": len(text),
            }
        ],
    )
    answer = import_response(ResponseCreateResponse.model_validate(body), answer_id="a")
    # The annotation and the [7] it covers are one citation, not two.
    assert [len(c.sources) for c in answer.claims] == [1]
    assert targets(answer) == {
        "Water boils at 100 °C at sea level.": [("https://a.org/water", None)]
    }


def test_perplexity_agent_without_search_results_is_still_the_agent_api() -> None:
    body = agent_response("Water boils at 100 °C at sea level.")
    body["output"] = body["output"][1:]
    assert detect_format(body) == "perplexity-agent"  # by its provider-named model


def test_perplexity_agent_marker_with_no_such_id_is_an_error() -> None:
    body = agent_response("Water boils at 100 °C at sea level.[1]")
    with pytest.raises(ResponseImportError, match=r"the marker \[1\] names no search result"):
        import_response(body, answer_id="a")


def test_an_agent_response_read_as_openai_responses_is_never_silently_uncited() -> None:
    body = agent_response("Water boils at 100 °C at sea level.[7]")
    answer = import_response(body, format="openai-responses", answer_id="a")
    assert answer.claims == []
    (warning,) = answer.warnings
    assert warning.startswith("read as openai-responses (as asked): no sentence is cited")
    assert "3 source(s)" in warning and "all 3 are ignored" in warning


def test_mistral_conversation_tool_references_cite_the_text_before_them() -> None:
    models = pytest.importorskip("mistralai.client.models")
    response = models.ConversationResponse(
        conversation_id="conv_1",
        object="conversation.response",
        usage=models.ConversationUsageInfo(prompt_tokens=1, completion_tokens=1, total_tokens=2),
        outputs=[
            models.MessageOutputEntry(
                object="entry",
                type="message.output",
                role="assistant",
                content=[
                    models.TextChunk(type="text", text="Water boils at 100 °C at sea level."),
                    models.ToolReferenceChunk(
                        type="tool_reference",
                        tool="web_search",
                        title="A",
                        url="https://a.org/water",
                    ),
                    models.TextChunk(type="text", text=" It freezes at 0 °C."),
                    models.ToolReferenceChunk(
                        type="tool_reference", tool="document_library", title="notes.pdf"
                    ),
                ],
            )
        ],
    )
    data = response.model_dump(mode="json", by_alias=True)
    assert detect_format(data) == "mistral"
    answer = import_response(response, answer_id="a")
    assert targets(answer) == {
        "Water boils at 100 °C at sea level.": [("https://a.org/water", None)]
    }
    assert [s.text for s in answer.uncited] == ["It freezes at 0 °C."]
    assert answer.notes == ["1 tool_reference chunk(s) have no URL (a library document): not cited"]


def test_mistral_chat_reference_chunks_name_the_requests_documents() -> None:
    models = pytest.importorskip("mistralai.client.models")
    response = models.ChatCompletionResponse(
        id="c1",
        object="chat.completion",
        model="mistral-large-latest",
        created=1,
        usage=models.UsageInfo(prompt_tokens=1, completion_tokens=1, total_tokens=2),
        choices=[
            models.ChatCompletionChoice(
                index=0,
                finish_reason="stop",
                message=models.AssistantMessage(
                    role="assistant",
                    content=[
                        models.TextChunk(type="text", text="Ruby was created in 1993."),
                        models.ReferenceChunk(type="reference", reference_ids=[1]),
                    ],
                ),
            )
        ],
    )
    answer = import_response(response, answer_id="a", documents=["a.txt", "facts.txt"])
    assert answer.format == "mistral"
    assert targets(answer) == {"Ruby was created in 1993.": [("facts.txt", None)]}
    unnamed = import_response(response, answer_id="a")
    assert targets(unnamed) == {"Ruby was created in 1993.": [("reference-1", None)]}
