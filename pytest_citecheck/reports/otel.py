"""The OpenTelemetry export: one ``gen_ai.evaluation.result`` event per citation.

A run's verdicts become OpenTelemetry events as the GenAI semantic conventions define
``gen_ai.evaluation.result`` (the conventions of the ``semantic-conventions-genai``
repository, Development status, whose attribute names ``opentelemetry-semantic-conventions``
0.66b2 ships; docs/opentelemetry.md): the evaluation's name, its score label and value,
the explanation (the verdict's reason), the id of the response judged, and, for an answer
read from a trace (``citecheck import`` of an OTLP JSON export), the trace and span it came
from, so each event is parented to the span that produced the answer.

The events are built by the OpenTelemetry SDK (a ``LoggerProvider``) and sent through its
OTLP/HTTP exporter to a collector (``otel_endpoint``), or encoded the same way and written as
an OTLP JSON file (``otel_file``). The SDK is the ``otel`` extra, imported only here and
only when an export is asked for: the base install does not need it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from pytest_citecheck import __version__
from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.reports.outputs import write_report

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import ReadableLogRecord

__all__ = [
    "EVALUATION_NAME",
    "EVENT_NAME",
    "SCORES",
    "EvaluationEvent",
    "evaluation_events",
    "export_endpoint",
    "logs_url",
    "missing_sdk",
    "otlp_json",
    "shown_url",
    "write_otlp_json",
]

EVENT_NAME = "gen_ai.evaluation.result"
# One name for every citation's evaluation: low cardinality, as the conventions ask.
EVALUATION_NAME = "citecheck.citation"
# gen_ai.evaluation.score.value of each label the judge or the page settled; an
# unreachable page or a failed run has no score (its label says why, error.type too).
SCORES: dict[Label, float] = {
    Label.SUPPORTED: 1.0,
    Label.CONTRADICTED: 0.0,
    Label.FABRICATED: 0.0,
    Label.NOT_FOUND: 0.0,
}
INSTALL = "pip install 'pytest-citecheck[otel]'"
# What the OTLP/HTTP path of the logs signal is, under a collector's base URL.
LOGS_PATH = "/v1/logs"


class EvaluationEvent(BaseModel):
    """One citation's verdict as a ``gen_ai.evaluation.result`` event."""

    model_config = ConfigDict(frozen=True)

    claim_id: str
    url: str
    label: Label
    score: float | None
    explanation: str | None
    response_id: str | None = None
    conversation: str | None = None
    trace_id: str | None = None
    span_id: str | None = None

    def attributes(self) -> dict[str, str | float]:
        """The event's attributes: the conventions' names, then citecheck's own."""
        # Each only when there is one (the score 0.0 is one).
        optional: dict[str, str | float | None] = {
            "gen_ai.evaluation.score.value": self.score,
            "gen_ai.evaluation.explanation": self.explanation or None,
            "gen_ai.response.id": self.response_id or None,
            "gen_ai.conversation.id": self.conversation or None,
            "error.type": "_OTHER" if self.label is Label.ERROR else None,
        }
        return {
            "gen_ai.evaluation.name": EVALUATION_NAME,
            "gen_ai.evaluation.score.label": self.label.value,
            **{name: value for name, value in optional.items() if value is not None},
            "citecheck.claim.id": self.claim_id,
            "citecheck.citation.url": self.url,
        }


def evaluation_events(results: Iterable[ClaimResult]) -> list[EvaluationEvent]:
    """One event per citation of every claim, in the claims' order."""
    out: list[EvaluationEvent] = []
    for result in results:
        answer = result.answer
        for verdict in result.verdicts:
            reason = verdict.reason or None
            if verdict.detail:
                reason = f"{reason}: {verdict.detail}" if reason else verdict.detail
            out.append(
                EvaluationEvent(
                    claim_id=result.id,
                    url=verdict.url,
                    label=verdict.label,
                    score=SCORES.get(verdict.label),
                    explanation=reason,
                    response_id=answer.response_id if answer else None,
                    conversation=answer.conversation if answer else None,
                    trace_id=answer.trace_id if answer else None,
                    span_id=answer.span_id if answer else None,
                )
            )
    return out


def missing_sdk() -> str | None:
    """Why the export cannot run here (the SDK or its exporter is not installed), or None:
    checked before a run starts, so a missing extra costs no verification."""
    import importlib.util

    for module in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return f"the OpenTelemetry export needs {module}, which is not installed: {INSTALL}"
    return None


def logs_url(endpoint: str) -> str:
    """The logs URL of a collector: ``endpoint`` as given when it names ``/v1/logs``, else
    that path under it (``http://localhost:4318`` -> ``http://localhost:4318/v1/logs``),
    as ``OTEL_EXPORTER_OTLP_ENDPOINT`` is read."""
    base = endpoint.strip()
    if base.rstrip("/").endswith(LOGS_PATH):
        return base
    return base.rstrip("/") + LOGS_PATH


def shown_url(url: str) -> str:
    """A collector URL as messages print it: any user and password in it left out."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def _service() -> dict[str, str]:
    """The resource's service name: ``citecheck`` unless the OTEL_* variables name one."""
    import os

    named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    return {} if named else {"service.name": "citecheck"}


def _records(events: Sequence[EvaluationEvent]) -> Sequence[ReadableLogRecord]:
    """The events emitted through the SDK, each in its answer's span when it has one."""
    try:
        from opentelemetry import trace
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import (
            InMemoryLogRecordExporter,
            SimpleLogRecordProcessor,
        )
        from opentelemetry.sdk.resources import Resource
    except ImportError as exc:
        raise ConfigurationError(
            f"the OpenTelemetry export needs the OpenTelemetry SDK ({exc.name} is not "
            f"installed): {INSTALL}"
        ) from None
    provider = LoggerProvider(resource=Resource.create(_service()), shutdown_on_exit=False)
    memory = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = provider.get_logger("pytest_citecheck", __version__)
    for event in events:
        context = None
        if event.trace_id and event.span_id:
            parent = trace.SpanContext(
                trace_id=int(event.trace_id, 16),
                span_id=int(event.span_id, 16),
                is_remote=True,
                trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
            )
            context = trace.set_span_in_context(trace.NonRecordingSpan(parent))
        logger.emit(event_name=EVENT_NAME, attributes=event.attributes(), context=context)
    provider.force_flush()
    records = memory.get_finished_logs()
    provider.shutdown()
    return records


def export_endpoint(events: Sequence[EvaluationEvent], endpoint: str) -> None:
    """Send the events to the collector at ``endpoint`` through the SDK's OTLP/HTTP
    exporter (protobuf; ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_EXPORTER_OTLP_TIMEOUT`` and
    the other ``OTEL_*`` variables are read by the exporter, which retries a collector
    that is down until its timeout, 10 s by default). A collector that does not take them
    is an OSError naming the URL (as a report file that cannot be written is one)."""
    records = _records(events)
    try:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs.export import LogRecordExportResult
    except ImportError as exc:
        raise ConfigurationError(
            f"the OTLP export needs the OTLP/HTTP exporter ({exc.name} is not installed): {INSTALL}"
        ) from None
    url = logs_url(endpoint)
    exporter = OTLPLogExporter(endpoint=url)
    try:
        result = exporter.export(records)
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]
    if result is not LogRecordExportResult.SUCCESS:
        raise OSError(f"the collector at {shown_url(url)} did not take the {len(records)} event(s)")


def otlp_json(events: Sequence[EvaluationEvent]) -> dict[str, Any]:
    """The events as one OTLP JSON ``ExportLogsServiceRequest`` (the protobuf the exporter
    sends, in the OTLP/JSON mapping: hex trace and span ids, enums as numbers)."""
    records = _records(events)
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

    message: dict[str, Any] = MessageToDict(encode_logs(records), use_integers_for_enums=True)
    for resource in message.get("resourceLogs", []):
        for scope in resource.get("scopeLogs", []):
            for record in scope.get("logRecords", []):
                for key in ("traceId", "spanId"):
                    if key in record:
                        record[key] = base64.b64decode(record[key]).hex()
    return message


def write_otlp_json(events: Sequence[EvaluationEvent], path: Path) -> None:
    """The OTLP JSON file: one request a line (the OpenTelemetry file exporter's format),
    which a collector's ``otlpjsonfile`` receiver reads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_report(path, json.dumps(otlp_json(events), ensure_ascii=False) + "\n")
