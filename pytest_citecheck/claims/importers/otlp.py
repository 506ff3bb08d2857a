"""Traces in: answers read from an OTLP JSON export of GenAI or OpenInference spans.

An OTLP JSON trace export (``{"resourceSpans": [...]}``, one such request a line as the
collector's file exporter writes them) holds the answers an application gave as spans.
Each trace is a conversation: its spans in the order they ended, every span that
returned answer text one assistant turn (``<conversation>-tN``), every tool span what the
conversation's tools returned (so a cited URL no tool returned is ``url_not_retrieved``,
as in :mod:`~pytest_citecheck.claims.importers.conversation`).

- OpenTelemetry GenAI spans (docs/opentelemetry.md names the conventions' version): the
  answer is the text parts of ``gen_ai.output.messages``; its response id
  ``gen_ai.response.id``, its conversation ``gen_ai.conversation.id`` (else the trace);
  tool results are ``gen_ai.tool.call.result`` of an ``execute_tool`` span and the
  ``tool_call_response`` parts of ``gen_ai.input.messages``.
- OpenInference spans (``openinference.span.kind``): an ``LLM`` span's answer is
  ``llm.output_messages.N.message.content`` (or its ``contents``), else ``output.value``;
  a ``TOOL`` or ``RETRIEVER`` span's ``output.value`` is what its tool returned. An
  ``output.value`` that is a provider's saved response (its JSON) is imported as that
  response, native citations included.

An answer spoken by an agent span and the model span inside it is one answer: the first
span (in end order) with the text keeps it. The answer's text is read as markdown (its
links are its citations) unless its span saved the provider's response. Each answer
keeps its trace and span ids, so the OpenTelemetry export parents its evaluation events
to that span (reports/otel.py).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_citecheck.claims.importers import AUTO, detect_format, import_response
from pytest_citecheck.claims.importers.answer import ImportedAnswer, Reader
from pytest_citecheck.claims.importers.conversation import marked_turn, turn_answer_id
from pytest_citecheck.claims.importers.markdown import FORMAT as MARKDOWN
from pytest_citecheck.claims.importers.retrieved import urls_in
from pytest_citecheck.claims.importers.turns import Turn

__all__ = ["FORMAT", "import_traces", "is_otlp_traces", "merged"]

FORMAT = "otlp"
_SAVE = "export the trace as OTLP JSON (a collector's file exporter, or the SDK's JSON encoding)"
_NO_TOOLS = "the trace holds no tool results before this answer"


def is_otlp_traces(data: object) -> bool:
    """Whether ``data`` is an OTLP JSON trace export (an ``ExportTraceServiceRequest``)."""
    return isinstance(data, dict) and isinstance(data.get("resourceSpans"), list)


def merged(requests: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several export requests (one a line) as one: a trace may span lines."""
    return {"resourceSpans": [rs for r in requests for rs in r["resourceSpans"]]}


@dataclass
class _Span:
    trace_id: str
    span_id: str
    name: str
    end: int
    attributes: dict[str, Any]
    where: str


@dataclass
class _Trace:
    spans: list[_Span] = field(default_factory=list)


def import_traces(
    data: object, *, name: str = "trace", prefix: str | None = None
) -> list[ImportedAnswer]:
    """One :class:`ImportedAnswer` per span that answered, trace by trace, in end order.

    ``prefix`` names conversations without their own ``gen_ai.conversation.id``
    (``<prefix>-<trace id's first 8 digits>``); ``name`` is how errors name the file."""
    reader = Reader(name)
    if not is_otlp_traces(data):
        raise reader.fail("", "not an OTLP JSON trace export (no resourceSpans)", _SAVE)
    assert isinstance(data, dict)
    traces: dict[str, _Trace] = {}
    for span in _spans(data, reader):
        traces.setdefault(span.trace_id, _Trace()).spans.append(span)
    out: list[ImportedAnswer] = []
    for trace_id, trace in traces.items():
        out += _trace_answers(trace_id, trace, prefix or "trace", name)
    if not out:
        raise reader.fail(
            "",
            f"no span of the {len(traces)} trace(s) holds answer text "
            "(gen_ai.output.messages, or an OpenInference LLM span's output)",
            "export the spans with their content (OTEL_INSTRUMENTATION_GENAI_CAPTURE_"
            "MESSAGE_CONTENT=true for GenAI instrumentations)",
        )
    return out


def _spans(data: dict[str, Any], reader: Reader) -> list[_Span]:
    out: list[_Span] = []
    for r, resource in enumerate(reader.items(data["resourceSpans"], "resourceSpans")):
        rwhere = f"resourceSpans[{r}]"
        resource = reader.mapping(resource, rwhere)
        scopes = reader.optional_items(resource.get("scopeSpans"), f"{rwhere}.scopeSpans")
        for s, scope in enumerate(scopes):
            swhere = f"{rwhere}.scopeSpans[{s}]"
            scope = reader.mapping(scope, swhere)
            for n, span in enumerate(reader.optional_items(scope.get("spans"), f"{swhere}.spans")):
                where = f"{swhere}.spans[{n}]"
                span = reader.mapping(span, where)
                trace_id = _hex_id(span.get("traceId"), 32)
                span_id = _hex_id(span.get("spanId"), 16)
                if trace_id is None or span_id is None:
                    raise reader.fail(
                        where, "the span has no usable traceId and spanId (hex ids)", _SAVE
                    )
                out.append(
                    _Span(
                        trace_id=trace_id,
                        span_id=span_id,
                        name=str(span.get("name") or ""),
                        end=_int(span.get("endTimeUnixNano")),
                        attributes=_attributes(span.get("attributes")),
                        where=where,
                    )
                )
    out.sort(key=lambda s: s.end)  # stable: spans that ended together keep file order
    return out


def _trace_answers(trace_id: str, trace: _Trace, prefix: str, name: str) -> list[ImportedAnswer]:
    retrieved: set[str] = set()
    tools_seen = False
    seen_texts: set[str] = set()
    out: list[ImportedAnswer] = []
    conversation = next(
        (
            str(s.attributes["gen_ai.conversation.id"])
            for s in trace.spans
            if s.attributes.get("gen_ai.conversation.id")
        ),
        f"{prefix}-{trace_id[:8]}",
    )
    for span in trace.spans:
        given, returned = _given(span.attributes)
        retrieved |= urls_in(given) | urls_in(returned)
        tools_seen = tools_seen or bool(returned)
        answer = _answer(span.attributes)
        if answer is None or answer.strip() in seen_texts:
            continue
        seen_texts.add(answer.strip())
        number = len(out) + 1
        answer_id = turn_answer_id(conversation, number)
        turn_name = f"{name} trace {trace_id} span {span.span_id} ({span.name or span.where})"
        body, fmt = _as_response(answer)
        imported = import_response(body, format=fmt, answer_id=answer_id, name=turn_name)
        turn = Turn(
            number=number,
            where=span.where,
            body={},
            retrieved=set(retrieved),
            unknown=None if tools_seen else _NO_TOOLS,
        )
        imported = marked_turn(imported, turn, conversation)
        response_id = span.attributes.get("gen_ai.response.id") or imported.response_id
        out.append(
            imported.model_copy(
                update={
                    "format": f"{FORMAT}+{imported.format}",
                    "response_id": str(response_id) if response_id else None,
                    "trace_id": trace_id,
                    "span_id": span.span_id,
                }
            )
        )
    return out


def _as_response(text: str) -> tuple[object, str]:
    """What to import: a saved provider response (JSON) as itself, else markdown."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except (ValueError, RecursionError):
            return text, MARKDOWN
        if detect_format(value) is not None:
            return value, AUTO
    return text, MARKDOWN


# -- what a span says --------------------------------------------------------------------


def _answer(attributes: dict[str, Any]) -> str | None:
    """The answer text a span returned, or None."""
    messages = _json(attributes.get("gen_ai.output.messages"))
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
                text = "\n\n".join(
                    str(part.get("content"))
                    for part in message.get("parts") or []
                    if isinstance(part, dict) and part.get("type") == "text" and part.get("content")
                )
                if text.strip():
                    return text  # the first choice
        return None
    if str(attributes.get("openinference.span.kind", "")).upper() != "LLM":
        return None
    content = attributes.get("llm.output_messages.0.message.content")
    if isinstance(content, str) and content.strip():
        return content
    parts = [
        str(attributes[key])
        for key in sorted(k for k in attributes if _is_oi_text_part(k))
        if attributes[key]
    ]
    if parts:
        return "\n\n".join(parts)
    value = attributes.get("output.value")
    return value if isinstance(value, str) and value.strip() else None


def _is_oi_text_part(key: str) -> bool:
    return key.startswith("llm.output_messages.0.message.contents.") and key.endswith(
        ".message_content.text"
    )


def _given(attributes: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """What the span was given (user text, tool responses it read) and what a tool
    span returned."""
    given: list[Any] = []
    returned: list[Any] = []
    inputs = _json(attributes.get("gen_ai.input.messages"))
    if isinstance(inputs, list):
        for message in inputs:
            if not isinstance(message, dict):
                continue
            for part in message.get("parts") or []:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "tool_call_response":
                    returned.append(part.get("response", part.get("result")))
                elif message.get("role") in ("user", "system") and part.get("type") == "text":
                    given.append(part.get("content"))
    if attributes.get("gen_ai.operation.name") == "execute_tool":
        returned.append(attributes.get("gen_ai.tool.call.result"))
    kind = str(attributes.get("openinference.span.kind", "")).upper()
    if kind in ("TOOL", "RETRIEVER"):
        returned.append(attributes.get("output.value"))
        returned += [v for k, v in attributes.items() if k.startswith("retrieval.documents.")]
    if kind == "LLM":
        returned += [
            v
            for k, v in attributes.items()
            if k.startswith("llm.input_messages.")
            and ".message.role" not in k
            and _is_tool_message(attributes, k)
        ]
    return given, [r for r in returned if r is not None]


def _is_tool_message(attributes: dict[str, Any], key: str) -> bool:
    """An OpenInference input message attribute of a ``tool`` message."""
    head = key.split(".message.", 1)[0]
    return attributes.get(f"{head}.message.role") == "tool"


def _json(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip()[:1] in "[{":
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value


def _attributes(value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not isinstance(value, list):
        return out
    for item in value:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = _value(item.get("value"))
    return out


def _value(value: Any) -> Any:
    """An OTLP JSON ``AnyValue`` as Python."""
    if not isinstance(value, dict):
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return _int(value["intValue"])
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value:
        return [_value(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return _attributes((value["kvlistValue"] or {}).get("values"))
    return None


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _hex_id(value: Any, digits: int) -> str | None:
    """A trace or span id: hex as OTLP JSON writes it (base64, as a protobuf JSON
    mapping would, is read too)."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().lower()
    if len(text) != digits or any(c not in "0123456789abcdef" for c in text):
        try:
            raw = base64.b64decode(value, validate=True)
        except ValueError:
            return None
        if len(raw) * 2 != digits:
            return None
        text = raw.hex()
    return text if int(text, 16) != 0 else None
