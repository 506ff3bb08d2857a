"""OTLP JSON trace exports in: what a span answered, what its tools returned, and the
problems named (no OpenTelemetry package needed: the export is JSON)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.claims.importers import import_response
from pytest_citecheck.claims.importers.answer import ResponseImportError
from pytest_citecheck.claims.importers.files import import_saved_answers, read_saved
from pytest_citecheck.claims.importers.otlp import import_traces

TRACE = "0af7651916cd43dd8448eb211c80319c"
EXAMPLE = Path(__file__).parents[2] / "example_suite" / "answers"


def span(span_id: str, end: int, **attributes: Any) -> dict[str, Any]:
    return {
        "traceId": TRACE,
        "spanId": span_id,
        "name": f"span {span_id}",
        "endTimeUnixNano": str(end),
        "attributes": [
            {"key": key.replace("__", "."), "value": {"stringValue": value}}
            for key, value in attributes.items()
        ],
    }


def export(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def chat(span_id: str, end: int, text: str) -> dict[str, Any]:
    messages = [{"role": "assistant", "parts": [{"type": "text", "content": text}]}]
    return span(span_id, end, gen_ai__output__messages=json.dumps(messages))


def test_a_span_that_saved_the_provider_response_keeps_its_native_citations() -> None:
    saved = (EXAMPLE / "charlie-russell.openai-responses.json").read_text(encoding="utf-8")
    direct = import_response(json.loads(saved), answer_id="x")
    (answer,) = import_traces(
        export(span("b7ad6b7169203331", 2, openinference__span__kind="LLM", output__value=saved))
    )
    assert answer.format == "otlp+openai-responses"
    assert answer.response_id == direct.response_id
    assert [(c.claim.claim, [x.url for x in c.claim.citations]) for c in answer.claims] == [
        (c.claim.claim, [x.url for x in c.claim.citations]) for c in direct.claims
    ]
    # No tool span before it: whether a tool returned the URL is not known, and said so.
    assert {x.retrieved for c in answer.claims for x in c.claim.citations} == {None}


def test_a_trace_split_over_lines_is_one_conversation(tmp_path: Path) -> None:
    tool = span(
        "00f067aa0ba902b7",
        1,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__call__result="see https://example.com/a",
    )
    answer_span = chat(
        "b7ad6b7169203331",
        2,
        "A is true [1](https://example.com/a). B is true [2](https://example.com/b).",
    )
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(export(answer_span)) + "\n" + json.dumps(export(tool)) + "\n")
    (saved,) = read_saved(path)
    assert not isinstance(saved, ResponseImportError)
    (answer,) = import_saved_answers(saved)
    got = {c.claim.claim: [x.retrieved for x in c.claim.citations] for c in answer.claims}
    assert got == {"A is true.": [True], "B is true.": [False]}
    assert answer.conversation == f"traces-{TRACE[:8]}" and answer.id.endswith("-t1")
    assert any("url_not_retrieved" in note for note in answer.notes)


def test_turns_of_a_trace_are_numbered_and_a_repeated_answer_is_one() -> None:
    first = chat("1111111111111111", 1, "A is true [1](https://example.com/a).")
    second = chat("2222222222222222", 3, "B is true [1](https://example.com/b).")
    agent = chat("3333333333333333", 4, "B is true [1](https://example.com/b).")
    answers = import_traces(export(agent, second, first), prefix="run")
    assert [(a.turn, a.span_id) for a in answers] == [
        (1, "1111111111111111"),
        (2, "2222222222222222"),
    ]


def test_a_trace_without_answer_text_says_what_to_export() -> None:
    tool = span("00f067aa0ba902b7", 1, gen_ai__operation__name="execute_tool")
    with pytest.raises(ResponseImportError) as caught:
        import_traces(export(tool), name="traces.json")
    assert "no span of the 1 trace(s) holds answer text" in str(caught.value)
    assert "CAPTURE_MESSAGE_CONTENT" in str(caught.value)


def test_a_span_without_ids_is_named_by_where_it_is() -> None:
    broken = chat("b7ad6b7169203331", 1, "A [1](https://example.com/a).")
    broken["spanId"] = "zz"
    with pytest.raises(ResponseImportError) as caught:
        import_traces(export(broken), name="traces.json")
    assert "resourceSpans[0].scopeSpans[0].spans[0]" in str(caught.value)
