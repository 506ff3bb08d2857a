"""Saved streams and what an import says: a Gemini Interactions stream (vercel's SDK
fixture, one event a line) imports as one response; the responses of one file that fail
alike are one line with their count; an Anthropic stream with one index for every
block, or a Mistral ``tool_reference`` with a url that is no text, is refused by name;
a hostile response's control characters are named in every message, never printed."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.claims.importers import ResponseImportError, detect_format, import_response
from pytest_citecheck.claims.importers.answer import Reader
from pytest_citecheck.claims.importers.files import import_saved, one_line_each, read_saved
from pytest_citecheck.claims.importers.streams import reassemble

NATIVE = Path(__file__).parent.parent / "data" / "native"
CHUNKS = NATIVE / "gemini_interactions" / "vercel-ai__interactions-google-search.chunks.txt"
REDIRECT = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/"


def events() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CHUNKS.read_text(encoding="utf-8").splitlines()]


# -- Gemini Interactions streams ---------------------------------------------------------------


def test_a_gemini_interactions_stream_is_one_response_with_its_citations(tmp_path: Path) -> None:
    saved = events()
    assert len(saved) == 27
    assert detect_format(saved) == "gemini-interactions"
    body = reassemble(saved, "gemini-interactions", Reader("s"))
    (answer_step,) = [s for s in body["steps"] if s["type"] == "model_output"]
    (item,) = answer_step["content"]
    assert len(item["annotations"]) == 14
    assert item["text"].startswith("Here's a notable AI development from this past week:")
    assert body["id"].startswith("v1_") and body["status"] == "completed"

    answer = import_response(saved, answer_id="news")
    assert answer.format == "gemini-interactions"
    claims = {c.claim: c.citations for c in answer.claim_list}
    assert len(claims) == 8
    spacex = next(c for text, c in claims.items() if "partnership with SpaceX" in text)
    assert len(spacex) == 3 and all(c.url and c.url.startswith(REDIRECT) for c in spacex)
    assert answer.uncited  # the headings and the sentences no annotation spans
    # Saved as the fixture is (.txt), as .jsonl and as one JSON array: one response each.
    for suffix, text in (
        (".txt", CHUNKS.read_text(encoding="utf-8")),
        (".jsonl", CHUNKS.read_text(encoding="utf-8")),
        (".json", json.dumps(saved)),
    ):
        path = tmp_path / f"news{suffix}"
        path.write_text(text, encoding="utf-8")
        (one,) = read_saved(path)
        assert not isinstance(one, ResponseImportError)
        assert import_saved(one).claim_list == import_response(saved, answer_id="news").claim_list


def test_an_interactions_stream_whose_completed_event_carries_the_steps_reads_them() -> None:
    whole = json.loads(
        (NATIVE / "gemini_interactions/vercel-ai__interactions-google-search.json").read_text()
    )
    saved = [
        {"event_type": "interaction.created", "interaction": {"id": whole["id"]}},
        {"event_type": "interaction.completed", "interaction": whole},
    ]
    streamed = import_response(saved, answer_id="a")
    assert streamed.claim_list == import_response(whole, answer_id="a").claim_list
    assert streamed.claims
    with pytest.raises(ResponseImportError, match="the stream has no step"):
        import_response(saved[:1], answer_id="a")


def test_a_gemini_interactions_stream_out_of_order_is_refused() -> None:
    saved = events()
    with pytest.raises(ResponseImportError, match="out of order"):
        import_response(list(reversed(saved)), answer_id="a")
    one_index = copy.deepcopy(saved)
    for event in one_index:
        if "index" in event:
            event["index"] = 0
    with pytest.raises(ResponseImportError, match="after that block's stop") as caught:
        import_response(one_index, answer_id="a")
    assert caught.value.where == "event 5.index"


def test_the_responses_of_one_file_failing_alike_are_one_line_with_their_count(
    tmp_path: Path,
) -> None:
    # A stream of events no reader knows, one a line: 27 "cannot tell which API"
    # failures were printed, one per event.
    unknown = [{**e, "event_type": "x." + e["event_type"]} for e in events()]
    path = tmp_path / "unknown.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in unknown) + "\n", encoding="utf-8")
    failures: list[ResponseImportError] = []
    for saved in read_saved(path):
        assert not isinstance(saved, ResponseImportError)
        with pytest.raises(ResponseImportError) as caught:
            import_saved(saved)
        failures.append(caught.value)
    assert len(failures) == 27
    (line,) = one_line_each(failures)
    assert line.response == str(path)
    assert "cannot tell which API" in line.problem
    assert "all 27 responses of this file alike: lines 1, 2, 3 ... 27" in line.problem
    # Failures that differ stay apart.
    other = ResponseImportError(f"{path}:30", "", "invalid JSON: x", "fix it")
    assert len(one_line_each([*failures, other])) == 2


# -- Anthropic and Mistral ---------------------------------------------------------------------


def test_an_anthropic_stream_with_one_index_for_every_block_is_refused() -> None:
    (path,) = NATIVE.glob("*/ruby_llm__web_search_haiku-4-5.stream.json")
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert import_response(saved, answer_id="a").claims
    for event in saved:
        if "index" in event:
            event["index"] = 0
    with pytest.raises(ResponseImportError) as caught:
        import_response(saved, answer_id="a")
    assert caught.value.where.startswith("event ") and caught.value.where.endswith(".index")
    assert "block 0" in caught.value.problem


def test_a_cohere_stream_with_one_index_or_reversed_is_refused() -> None:
    (path,) = NATIVE.glob("*/ruby_llm__command-a-plus_documents_earlier.stream.json")
    saved = json.loads(path.read_text(encoding="utf-8"))
    documents = ["ruby.txt", "python.txt"]
    assert import_response(saved, answer_id="a", documents=documents).claims
    one_index = copy.deepcopy(saved)
    for event in one_index:
        if event.get("type", "").startswith("content-"):
            event["index"] = 0
    with pytest.raises(ResponseImportError, match="one index is used for two blocks") as caught:
        import_response(one_index, answer_id="a", documents=documents)
    assert caught.value.where == "event 31.index"
    with pytest.raises(ResponseImportError, match="out of order"):
        import_response(list(reversed(saved)), answer_id="a", documents=documents)


def _mistral(url: object) -> dict[str, Any]:
    return {
        "object": "chat.completion",
        "model": "mistral-medium-latest",
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Paris is the capital of France."},
                        {"type": "tool_reference", "tool": "web_search", "title": "P", "url": url},
                    ],
                }
            }
        ],
    }


@pytest.mark.parametrize("url", [5, ["https://example.com/"], {"href": "x"}, "   "])
def test_a_mistral_tool_reference_url_that_is_no_text_is_a_malformed_url(url: object) -> None:
    with pytest.raises(ResponseImportError) as caught:
        import_response(_mistral(url), answer_id="a")
    assert caught.value.where == "choices[0].message.content[1].url"
    assert "url is malformed" in caught.value.problem
    assert "library document" not in caught.value.problem


def test_a_mistral_tool_reference_without_url_is_still_a_library_document() -> None:
    answer = import_response(_mistral(None), answer_id="a")
    assert answer.claims == []
    assert any("library document" in note for note in answer.notes)
    (claim,) = import_response(_mistral("https://example.com/p"), answer_id="b").claim_list
    assert claim.citations[0].url == "https://example.com/p"


# -- hostile text ------------------------------------------------------------------------------

HOSTILE = "https://example.com/a\x1b[2J\x1b]0;owned\x07\x00b"
TEXT = "Paris is big [x](https://a.com/). Lyon is small."


def _openai_responses() -> dict[str, Any]:
    annotation = {"type": "url_citation", "url": HOSTILE, "start_index": 13, "end_index": 31}
    return {
        "output": [
            {
                "type": "message",
                "content": [{"type": "output_text", "text": TEXT, "annotations": [annotation]}],
            }
        ]
    }


def _xai() -> dict[str, Any]:
    citation = {"web_citation": {"url": HOSTILE}, "start_index": 13, "end_index": 31}
    return {
        "object": "response",
        "model": "grok-4",
        "outputs": [{"message": {"content": TEXT, "citations": [citation]}}],
    }


@pytest.mark.parametrize("body", [_openai_responses(), _xai()], ids=["openai", "xai"])
def test_a_hostile_annotation_url_is_named_in_the_message_never_printed(
    body: dict[str, Any],
) -> None:
    with pytest.raises(ResponseImportError) as caught:
        import_response(body, answer_id="a", name="resp\x1b[31m.json")
    message = str(caught.value)
    assert not any(ch in message for ch in "\x1b\x07\x00")
    assert "<U+001B>[2J" in message and "<U+0007>" in message and "<U+0000>" in message
    assert caught.value.response == "resp<U+001B>[31m.json"
    # The error still pickles (xdist workers) with the named text.
    assert str(pickle.loads(pickle.dumps(caught.value))) == message


def test_a_hostile_answer_id_or_file_name_never_reaches_a_message_raw(tmp_path: Path) -> None:
    body = _openai_responses()
    body["output"][0]["content"][0]["annotations"][0]["url"] = "https://a.com/"
    lines = tmp_path / "answers.jsonl"
    lines.write_text(
        json.dumps({"id": "a\x1b[2Jb", "response": body}) + "\n" + json.dumps(body) + "\n",
        encoding="utf-8",
    )
    first, second = read_saved(lines)
    assert not isinstance(first, ResponseImportError)
    assert not isinstance(second, ResponseImportError)
    with pytest.raises(ResponseImportError) as caught:
        import_saved(first)
    assert caught.value.where == "id"
    assert "control character U+001B" in caught.value.problem
    assert import_saved(second).claims  # the file's other response is imported
    named = tmp_path / "n\x1b[2Jame"
    named.mkdir()
    path = named / "ok.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    (saved,) = read_saved(path)
    assert not isinstance(saved, ResponseImportError)
    assert "\x1b" not in saved.name and "<U+001B>[2Jame" in saved.name
