"""OpenTelemetry end to end: a trace exported by the SDK imports into claims, the run's
verdicts go out as ``gen_ai.evaluation.result`` events to a loopback OTLP/HTTP receiver,
decoded there with the OpenTelemetry protobuf definitions, parented to the answer's span.

Nothing leaves 127.0.0.1: the Crawling API and the judge are the batch doubles.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from pytest_citecheck.claims.importers import import_response
from pytest_citecheck.claims.importers.files import import_saved_answers, read_saved
from pytest_citecheck.claims.importers.markdown import FORMAT as MARKDOWN
from pytest_citecheck.frontends.cli import main
from tests.doubles.batch import SITE, judge_by_page, use_doubles
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import LLMDouble

ANSWER = (
    f"Water boils at 100 degrees Celsius at sea level [1]({SITE}/articles/boiling). "
    f"The Eiffel Tower is in Paris [2]({SITE}/landmarks/eiffel). "
    f"It was once much smaller [3]({SITE}/gone)."
)
TOOL_RESULT = json.dumps(
    {"results": [{"url": f"{SITE}/articles/boiling"}, {"url": f"{SITE}/landmarks/eiffel"}]}
)


class Receiver:
    """An OTLP/HTTP logs receiver on loopback: every request decoded as protobuf."""

    def __init__(self) -> None:
        self.requests: list[ExportLogsServiceRequest] = []
        self.paths: list[str] = []
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.paths.append(self.path)
                received.requests.append(ExportLogsServiceRequest.FromString(body))
                reply = ExportLogsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def records(self) -> list[Any]:
        return [
            record
            for request in self.requests
            for resource in request.resource_logs
            for scope in resource.scope_logs
            for record in scope.log_records
        ]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.thread.start()
    try:
        yield r
    finally:
        r.server.shutdown()
        r.server.server_close()


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    with CrawlbaseDouble() as api, LLMDouble(judge_by_page) as llm:
        use_doubles(monkeypatch, api, llm, "sk-test-otel-0123456789")
        yield api, llm


def genai_trace() -> tuple[dict[str, Any], str, str]:
    """An agent's trace as the SDK exports it: an agent span, a tool span whose result
    lists two of the pages, a chat span answering with three links. Returns the OTLP
    JSON export and the chat span's trace and span ids (hex)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agent")
    output = [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]
    with tracer.start_as_current_span("invoke_agent research") as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("execute_tool web_search") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "web_search")
            tool.set_attribute("gen_ai.tool.call.result", TOOL_RESULT)
        with tracer.start_as_current_span("chat gpt-4.1") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.response.id", "chatcmpl-otel-1")
            chat.set_attribute("gen_ai.output.messages", json.dumps(output))
            context = chat.get_span_context()
        # The agent span repeats the answer: one answer, kept by the chat span.
        agent.set_attribute("gen_ai.output.messages", json.dumps(output))
    provider.shutdown()
    return otlp_json(memory), f"{context.trace_id:032x}", f"{context.span_id:016x}"


def otlp_json(memory: InMemorySpanExporter) -> dict[str, Any]:
    """The spans in OTLP/JSON, as a collector's file exporter writes them (hex ids)."""
    message = MessageToDict(encode_spans(memory.get_finished_spans()))
    for resource in message["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return message


def test_an_exported_trace_imports_into_the_claims_of_its_answer(tmp_path: Path) -> None:
    trace, trace_id, span_id = genai_trace()
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace), encoding="utf-8")
    (saved,) = read_saved(path)
    assert not isinstance(saved, Exception)
    (answer,) = import_saved_answers(saved)
    plain = import_response(ANSWER, format=MARKDOWN, answer_id=answer.id)
    # The same claims as the answer's own text gives, with their URLs.
    assert [(c.claim.claim, [x.url for x in c.claim.citations]) for c in answer.claims] == [
        (c.claim.claim, [x.url for x in c.claim.citations]) for c in plain.claims
    ]
    got = {c.claim.claim: [(x.url, x.retrieved) for x in c.claim.citations] for c in answer.claims}
    assert got == {
        "Water boils at 100 degrees Celsius at sea level.": [(f"{SITE}/articles/boiling", True)],
        "The Eiffel Tower is in Paris.": [(f"{SITE}/landmarks/eiffel", True)],
        # No tool returned it: url_not_retrieved, found without a request.
        "It was once much smaller.": [(f"{SITE}/gone", False)],
    }
    assert (answer.trace_id, answer.span_id, answer.response_id) == (
        trace_id,
        span_id,
        "chatcmpl-otel-1",
    )
    assert answer.turn == 1 and answer.format == "otlp+markdown"


def test_a_run_sends_one_evaluation_event_per_citation_parented_to_the_answer_span(
    world: tuple[CrawlbaseDouble, LLMDouble],
    receiver: Receiver,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    trace, trace_id, span_id = genai_trace()
    (tmp_path / "trace.json").write_text(json.dumps(trace), encoding="utf-8")
    claims = tmp_path / "claims.yaml"
    assert main(["import", str(tmp_path / "trace.json"), "-o", str(claims)]) == 0
    text = claims.read_text(encoding="utf-8")
    assert f'trace_id: "{trace_id}"' in text and f'span_id: "{span_id}"' in text
    otlp_file = tmp_path / "events.json"
    code = main(
        [
            "batch",
            str(claims),
            "--record",
            "live",
            "--otel-endpoint",
            receiver.url,
            "--otel-file",
            str(otlp_file),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"citecheck OpenTelemetry events: 3 sent to {receiver.url}/v1/logs" in out
    assert receiver.paths == ["/v1/logs"]
    records = receiver.records()
    assert len(records) == 3  # one per citation
    events = {}
    for record in records:
        assert record.event_name == "gen_ai.evaluation.result"
        # Parented to the chat span that produced the answer.
        assert (record.trace_id.hex(), record.span_id.hex()) == (trace_id, span_id)
        attrs = {a.key: MessageToDict(a.value) for a in record.attributes}
        events[attrs["citecheck.citation.url"]["stringValue"]] = attrs
    boiling = events[f"{SITE}/articles/boiling"]
    assert boiling["gen_ai.evaluation.name"] == {"stringValue": "citecheck.citation"}
    assert boiling["gen_ai.evaluation.score.label"] == {"stringValue": "supported"}
    assert boiling["gen_ai.evaluation.score.value"] == {"doubleValue": 1.0}
    assert boiling["gen_ai.response.id"] == {"stringValue": "chatcmpl-otel-1"}
    gone = events[f"{SITE}/gone"]
    assert gone["gen_ai.evaluation.score.label"] == {"stringValue": "unreachable"}
    assert "gen_ai.evaluation.score.value" not in gone
    assert gone["gen_ai.evaluation.explanation"]["stringValue"].startswith("http_410")
    # The same events in the OTLP JSON file, hex ids as OTLP/JSON writes them.
    (line,) = otlp_file.read_text(encoding="utf-8").splitlines()
    written = json.loads(line)
    logs = written["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert len(logs) == 3
    assert {(r["traceId"], r["spanId"]) for r in logs} == {(trace_id, span_id)}
    assert {r["eventName"] for r in logs} == {"gen_ai.evaluation.result"}


def test_a_collector_that_is_not_there_fails_the_run_saying_so(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The exporter retries a collector that is down until its timeout (10 s by default).
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    records = tmp_path / "claims.jsonl"
    records.write_text(
        json.dumps(
            {
                "id": "boiling",
                "claim": "Water boils at 100 degrees Celsius at sea level.",
                "urls": [f"{SITE}/articles/boiling"],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    receiver = Receiver()  # bound, never served: the port refuses nothing, answers nothing
    receiver.server.server_close()
    code = main(["batch", str(records), "--record", "live", "--otel-endpoint", receiver.url])
    out = capsys.readouterr().out
    assert code == 1
    assert f"OpenTelemetry events: the collector at {receiver.url}/v1/logs" in out


def test_openinference_spans_import_with_their_tool_results(tmp_path: Path) -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("openinference")
    with tracer.start_as_current_span("agent") as agent:
        agent.set_attribute("openinference.span.kind", "AGENT")
        with tracer.start_as_current_span("search") as tool:
            tool.set_attribute("openinference.span.kind", "TOOL")
            tool.set_attribute("tool.name", "search")
            tool.set_attribute("output.value", TOOL_RESULT)
        with tracer.start_as_current_span("ChatCompletion") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("llm.output_messages.0.message.role", "assistant")
            llm.set_attribute("llm.output_messages.0.message.content", ANSWER)
    provider.shutdown()
    path = tmp_path / "phoenix.json"
    path.write_text(json.dumps(otlp_json(memory)), encoding="utf-8")
    (saved,) = read_saved(path)
    assert not isinstance(saved, Exception)
    (answer,) = import_saved_answers(saved)
    got = {c.claim.claim: [(x.url, x.retrieved) for x in c.claim.citations] for c in answer.claims}
    assert got["It was once much smaller."] == [(f"{SITE}/gone", False)]
    assert got["The Eiffel Tower is in Paris."] == [(f"{SITE}/landmarks/eiffel", True)]
