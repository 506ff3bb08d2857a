"""A loopback double of the providers' batch APIs, answering as :class:`LLMDouble` does.

:class:`LLMBatchDouble` is an :class:`~tests.doubles.llm.LLMDouble` (the same server
still answers synchronous calls) that also serves, from the vendors' documentation and
the SDK types (``openai.types.Batch``/``FileObject``, ``anthropic.types.messages.MessageBatch``
/``MessageBatchIndividualResponse``):

=============================================  ==========================================
``POST /v1/files`` (multipart, purpose batch)   OpenAI: upload the JSONL input file
``POST /v1/batches``                            OpenAI: create (``validating``)
``GET /v1/batches/{id}``                        OpenAI: status; ``completed`` after
                                                ``rounds`` looks (``in_progress`` before)
``GET /v1/files/{id}/content``                  OpenAI: the output and error files
``POST /v1/batches/{id}/cancel``                OpenAI: ``cancelling``, then ``cancelled``
``POST /v1/messages/batches``                   Anthropic: create (``in_progress``)
``GET /v1/messages/batches/{id}``               Anthropic: ``ended`` after ``rounds`` looks,
                                                with its ``results_url``
``GET /v1/messages/batches/{id}/results``       Anthropic: the JSONL results
``POST /v1/messages/batches/{id}/cancel``       Anthropic: ``canceling``, then ``ended``
=============================================  ==========================================

A batch's requests are answered when it ends, each exactly as a synchronous call with
that body would be (the scripted answers, the responder, the confirmation echo, the
``rejects``), so the same script answers both. What the double can play:

- ``rounds``: the looks at a batch's status before it ends (polling takes a few rounds);
- ``fail_claims``: the requests about these claims fail in the batch (OpenAI: an error
  file line ``request_timeout``, no response; Anthropic: ``errored``, ``api_error``);
- ``expire``: the batch expires instead of completing: OpenAI ``expired`` with every
  request in the error file as ``batch_expired``, Anthropic ``ended`` with every result
  ``expired``;
- ``never_end``: the batch stays in progress (until cancelled).

Every batch created is logged in :attr:`LLMBatchDouble.batches` (provider, id, the
requests' bodies), every status look in :attr:`LLMBatchDouble.looks`, and the
synchronous calls are counted in :attr:`LLMBatchDouble.sync_requests`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.doubles.llm import (
    Answer,
    Fault,
    JudgeCall,
    LLMDouble,
    Provider,
    Raw,
    Responder,
    ToolCalls,
    _Handler,
    render_answer,
    render_fault,
    render_rejection,
    render_tool_calls,
)

CREATED = 1735689600


@dataclass
class BatchJob:
    """One batch the double holds."""

    provider: Provider
    id: str
    # custom_id -> request body, in the order sent.
    requests: dict[str, bytes]
    headers: dict[str, str]
    input_file_id: str | None = None
    looks: int = 0
    cancelled: bool = False
    ended: bool = False
    expired: bool = False
    # custom_id -> the result line (as the provider writes it).
    lines: dict[str, dict[str, Any]] = field(default_factory=dict)
    output_file_id: str | None = None
    error_file_id: str | None = None


class LLMBatchDouble(LLMDouble):
    """The judge double with the OpenAI and Anthropic batch APIs (see the module doc)."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        rounds: int = 2,
        fail_claims: Collection[str] = (),
        expire: bool = False,
        never_end: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(responder, **kwargs)
        self.rounds = rounds
        self.fail_claims = set(fail_claims)
        self.expire = expire
        self.never_end = never_end
        self.batches: list[BatchJob] = []
        self.looks = 0
        self.files: dict[str, bytes] = {}
        # Requests to the synchronous endpoints (a batch's items are not among them).
        self.sync_requests = 0
        self._batch_lock = threading.Lock()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return type("_BatchHandler", (_BatchHandler,), {"double": self})

    # -- what the handler asks -----------------------------------------------------------

    def upload(self, content: bytes) -> dict[str, Any]:
        with self._batch_lock:
            file_id = f"file-citecheck{len(self.files) + 1:04d}"
            self.files[file_id] = content
        return _file_object(file_id, len(content), "batch")

    def create_openai(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        content = self.files[body["input_file_id"]]
        requests = {}
        for line in content.decode("utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                assert item["method"] == "POST" and item["url"] == body["endpoint"], item
                requests[item["custom_id"]] = json.dumps(item["body"]).encode("utf-8")
        job = self._add("openai", "batch_citecheck", requests, headers)
        job.input_file_id = body["input_file_id"]
        return self.openai_batch(job)

    def create_anthropic(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        requests = {
            r["custom_id"]: json.dumps(r["params"]).encode("utf-8") for r in body["requests"]
        }
        return self.anthropic_batch(self._add("anthropic", "msgbatch_citecheck", requests, headers))

    def _add(
        self, provider: Provider, prefix: str, requests: dict[str, bytes], headers: dict[str, str]
    ) -> BatchJob:
        with self._batch_lock:
            job = BatchJob(provider, f"{prefix}{len(self.batches) + 1:04d}", requests, headers)
            self.batches.append(job)
        return job

    def job(self, batch_id: str) -> BatchJob | None:
        return next((j for j in self.batches if j.id == batch_id), None)

    def look(self, job: BatchJob) -> None:
        """One look at the batch's status: it ends after ``rounds`` looks."""
        with self._batch_lock:
            self.looks += 1
            job.looks += 1
            due = job.cancelled or (not self.never_end and job.looks >= self.rounds)
        if due and not job.ended:
            self._end(job)

    def _end(self, job: BatchJob) -> None:
        for cid, body in job.requests.items():
            call = JudgeCall(job.provider, "POST", _SYNC_PATH[job.provider], job.headers, body)
            if job.cancelled or self.expire:
                job.lines[cid] = _unanswered(
                    job.provider, cid, "cancelled" if job.cancelled else "expired"
                )
            elif (call.claim or "") in self.fail_claims:
                job.lines[cid] = _failed(job.provider, cid)
            else:
                job.lines[cid] = _answered(job.provider, cid, self._answer(call))
        if job.provider == "openai":
            ok = [line for line in job.lines.values() if line["error"] is None]
            bad = [line for line in job.lines.values() if line["error"] is not None]
            job.output_file_id = self._file(ok) if ok else None
            job.error_file_id = self._file(bad) if bad else None
        job.expired = self.expire and not job.cancelled
        job.ended = True

    def _answer(self, call: JudgeCall) -> Raw:
        """What a synchronous call with this body gets (never a dropped connection)."""
        rejected = render_rejection(call, self.rejects, self.json_schema_status)
        if rejected is not None:
            return rejected
        item, n = self._next(call)
        if isinstance(item, Answer):
            return render_answer(call, n, item)
        if isinstance(item, ToolCalls):
            return render_tool_calls(call, n, item)
        if isinstance(item, Fault):
            raw = render_fault(call, n, item)
            return (
                raw if raw is not None else render_fault(call, n, Fault("server_error")) or Raw(500)
            )
        return item

    def _file(self, lines: list[dict[str, Any]]) -> str:
        content = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
        with self._batch_lock:
            file_id = f"file-citecheck{len(self.files) + 1:04d}"
            self.files[file_id] = content.encode("utf-8")
        return file_id

    # -- the providers' batch objects --------------------------------------------------

    def openai_batch(self, job: BatchJob) -> dict[str, Any]:
        if job.ended:
            status = "cancelled" if job.cancelled else "expired" if job.expired else "completed"
        elif job.cancelled:
            status = "cancelling"
        else:
            status = "in_progress" if job.looks else "validating"
        failed = sum(1 for line in job.lines.values() if line["error"] is not None)
        return {
            "id": job.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": None,
            "input_file_id": job.input_file_id,
            "completion_window": "24h",
            "status": status,
            "output_file_id": job.output_file_id,
            "error_file_id": job.error_file_id,
            "created_at": CREATED,
            "in_progress_at": CREATED + 1 if job.looks else None,
            "expires_at": CREATED + 86400,
            "finalizing_at": None,
            "completed_at": CREATED + 60 if status == "completed" else None,
            "failed_at": None,
            "expired_at": CREATED + 86400 if status == "expired" else None,
            "cancelling_at": CREATED + 30 if job.cancelled else None,
            "cancelled_at": CREATED + 31 if status == "cancelled" else None,
            "request_counts": {
                "total": len(job.requests),
                "completed": len(job.lines) - failed,
                "failed": failed,
            },
            "metadata": None,
        }

    def anthropic_batch(self, job: BatchJob) -> dict[str, Any]:
        kinds = [line["result"]["type"] for line in job.lines.values()]
        counts = {k: kinds.count(k) for k in ("succeeded", "errored", "canceled", "expired")}
        status = "ended" if job.ended else "canceling" if job.cancelled else "in_progress"
        return {
            "id": job.id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": {"processing": 0 if job.ended else len(job.requests), **counts},
            "ended_at": "2025-01-01T00:01:00Z" if job.ended else None,
            "created_at": "2025-01-01T00:00:00Z",
            "expires_at": "2025-01-02T00:00:00Z",
            "archived_at": None,
            "cancel_initiated_at": "2025-01-01T00:00:30Z" if job.cancelled else None,
            "results_url": f"{self.root}/v1/messages/batches/{job.id}/results"
            if job.ended
            else None,
        }


_SYNC_PATH: dict[Provider, str] = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}


def _file_object(file_id: str, size: int, purpose: str) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": CREATED,
        "filename": "input.jsonl",
        "purpose": purpose,
        "status": "processed",
    }


def _answered(provider: Provider, cid: str, raw: Raw) -> dict[str, Any]:
    body = json.loads(raw.body)
    if provider == "openai":
        # OpenAI writes a request that got a non-2xx reply to the error file.
        error = None if raw.status < 400 else body.get("error")
        return {
            "id": f"batch_req_{cid[:12]}",
            "custom_id": cid,
            "response": {"status_code": raw.status, "request_id": f"req_{cid[:12]}", "body": body},
            "error": error,
        }
    if raw.status < 400:
        return {"custom_id": cid, "result": {"type": "succeeded", "message": body}}
    return {"custom_id": cid, "result": {"type": "errored", "error": body}}


def _failed(provider: Provider, cid: str) -> dict[str, Any]:
    if provider == "openai":
        error = {
            "code": "request_timeout",
            "message": "The underlying call to the model timed out.",
        }
        return {"id": f"batch_req_{cid[:12]}", "custom_id": cid, "response": None, "error": error}
    error = {
        "type": "error",
        "error": {"type": "api_error", "message": "Internal server error"},
        "request_id": None,
    }
    return {"custom_id": cid, "result": {"type": "errored", "error": error}}


def _unanswered(provider: Provider, cid: str, why: str) -> dict[str, Any]:
    if provider == "openai":
        code = "batch_expired" if why == "expired" else "batch_cancelled"
        message = (
            "This request could not be executed before the completion window expired."
            if why == "expired"
            else "The batch was cancelled before this request executed."
        )
        error = {"code": code, "message": message}
        return {"id": f"batch_req_{cid[:12]}", "custom_id": cid, "response": None, "error": error}
    return {"custom_id": cid, "result": {"type": "canceled" if why == "cancelled" else "expired"}}


class _BatchHandler(_Handler):
    double: LLMBatchDouble

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        parts = path.strip("/").split("/")
        double = self.double
        if parts[:2] == ["v1", "batches"] and len(parts) == 3:
            job = double.job(parts[2])
            if job is not None:
                double.look(job)
                return self._json(200, double.openai_batch(job))
        if parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content":
            content = double.files.get(parts[2])
            if content is not None:
                return self._reply(Raw(200, content, {"content-type": "application/octet-stream"}))
        if parts[:3] == ["v1", "messages", "batches"] and len(parts) in (4, 5):
            job = double.job(parts[3])
            if job is not None and len(parts) == 4:
                double.look(job)
                return self._json(200, double.anthropic_batch(job))
            if job is not None and parts[4] == "results" and job.ended:
                lines = "".join(json.dumps(x) + "\n" for x in job.lines.values())
                return self._reply(Raw(200, lines, {"content-type": "application/binary"}))
        if path.startswith(("/v1/batches", "/v1/files", "/v1/messages/batches")):
            return self._json(404, {"error": {"message": f"no such object: {path}"}})
        super().do_GET()

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        parts = path.strip("/").split("/")
        double = self.double
        if path == "/v1/files":
            upload = self._upload()
            double.paid(f"POST {path}", upload)  # a batch's requests, billed when run
            return self._json(200, double.upload(upload))
        if path == "/v1/batches":
            return self._json(200, double.create_openai(self._body(path), self._headers()))
        if path == "/v1/messages/batches":
            return self._json(200, double.create_anthropic(self._body(path), self._headers()))
        if (
            len(parts) >= 3
            and parts[-1] == "cancel"
            and path.startswith(("/v1/batches/", "/v1/messages/batches/"))
        ):
            self._body()
            job = double.job(parts[-2])
            if job is not None:
                job.cancelled = True
                batch = double.openai_batch if job.provider == "openai" else double.anthropic_batch
                return self._json(200, batch(job))
        with double._batch_lock:
            double.sync_requests += 1
        super().do_POST()

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _raw_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _body(self, paid: str | None = None) -> dict[str, Any]:
        """The JSON body; ``paid``: the path of a paid request, counted in PAID."""
        raw = self._raw_body()
        if paid is not None:
            self.double.paid(f"POST {paid}", raw)
        value = json.loads(raw) if raw else {}
        return value if isinstance(value, dict) else {}

    def _upload(self) -> bytes:
        """The ``file`` part of the SDK's multipart upload."""
        head = f"Content-Type: {self.headers.get('content-type')}\r\n\r\n".encode()
        message = BytesParser(policy=HTTP).parsebytes(head + self._raw_body())
        for part in message.iter_parts():  # type: ignore[attr-defined]
            if part.get_param("name", header="content-disposition") == "file":
                payload = part.get_payload(decode=True)
                return payload if isinstance(payload, bytes) else b""
        return b""

    def _json(self, status: int, body: Any) -> None:
        self._reply(Raw(status, json.dumps(body), {"content-type": "application/json"}))
