"""The providers' batch APIs: many judge requests in one job, answered within 24 h at half price.

- OpenAI's Batch API: the requests as a JSONL file uploaded to ``/v1/files``
  (``purpose=batch``), one line ``{"custom_id", "method": "POST", "url":
  "/v1/chat/completions", "body"}`` each; ``POST /v1/batches`` (``endpoint
  /v1/chat/completions``, ``completion_window 24h``); ``GET /v1/batches/{id}`` until
  ``completed``, ``failed``, ``expired`` or ``cancelled``; the answers are the lines of
  the ``output_file_id`` file and, for requests that failed, of the ``error_file_id``
  file (``{"custom_id", "response": {"status_code", "body"} | null, "error": {"code",
  "message"} | null}``).
- Anthropic's Message Batches: ``POST /v1/messages/batches`` with ``requests:
  [{custom_id, params}]``; ``GET /v1/messages/batches/{id}`` until ``processing_status``
  is ``ended``; the answers are the JSONL lines at ``results_url``, ``result.type``
  ``succeeded`` (``result.message``), ``errored``, ``canceled`` or ``expired``.

Both are reached with the vendors' SDKs (``openai``, ``anthropic``), imported only when
a batch is sent, at the base URL and with the key the synchronous judge uses, so a
loopback double of either serves both. A request's ``custom_id`` is the digest of its
body (:func:`custom_id`): the same body asked twice is one request, and its answer
serves every claim that asks it.

An answer is what a synchronous call would have got (:class:`BatchAnswer` with
``status`` and ``body``: the judge parses it, a 4xx it can act on included), or why there
is none (``failure``: the item errored, expired or was cancelled, the batch failed or did
not end within the wait). A failure is that citation's ``error`` verdict, never a label.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from pytest_citecheck.core.retry import TRANSIENT_STATUSES
from pytest_citecheck.core.secrets import scrub

# The response header that marks a judge reply as answered through a batch (its value
# names the provider and the batch); recorded with the reply, so a replay bills the same.
BATCH_HEADER = "citecheck-judge-batch"
OPENAI_ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
# Statuses of a batch that no longer changes.
OPENAI_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
# What one batch may hold: OpenAI 50,000 requests and a 200 MB file, Anthropic 100,000
# requests and 256 MB (a margin kept under each size for the JSON framing).
LIMITS = {"openai": (50_000, 190_000_000), "anthropic": (100_000, 250_000_000)}


def custom_id(body: bytes) -> str:
    """The id a judge request goes by in a batch: the SHA-256 of its body (64 hex
    characters, within both providers' ``custom_id`` limits)."""
    return hashlib.sha256(body).hexdigest()


@dataclass(frozen=True)
class BatchAnswer:
    """A batch's answer to one request: the reply (``status``, ``body``) or ``failure``."""

    status: int = 0
    body: bytes = b""
    failure: str | None = None
    # ``provider batch-id``, sent with the reply in :data:`BATCH_HEADER`.
    source: str = ""


@dataclass
class Submitted:
    """One batch sent: its id and the requests it holds."""

    api: BatchAPI
    batch_id: str
    ids: list[str]
    status: str = "submitted"
    ended: bool = False
    answers: dict[str, BatchAnswer] = field(default_factory=dict)
    # The judge endpoint its requests were asked of (a resumed job finds its API by it).
    endpoint: str = ""


class BatchAPI(Protocol):
    """One provider's batch API at one base URL, with one key."""

    @property
    def provider(self) -> str:
        """``openai`` or ``anthropic``."""
        ...

    def limit(self) -> tuple[int, int]:
        """The most requests and bytes of request bodies one batch may hold."""
        ...

    def submit(self, requests: Mapping[str, bytes]) -> str:
        """Send one batch of ``{custom_id: request body}``; its id."""
        ...

    def poll(self, batch_id: str) -> tuple[str, bool]:
        """The batch's status and whether it has ended."""
        ...

    def answers(self, batch_id: str) -> dict[str, BatchAnswer]:
        """The answers of an ended batch, by custom_id (requests without one are absent)."""
        ...

    def cancel(self, batch_id: str) -> None: ...

    def transient(self, exc: Exception) -> bool:
        """Whether the SDK's error may pass (no connection, a timeout, a 5xx, a 429):
        a batch is looked at again rather than given up."""
        ...


def _loads(body: bytes) -> dict[str, Any]:
    value = json.loads(body)
    if not isinstance(value, dict):
        raise ValueError("a judge request body is a JSON object")
    return value


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _error_text(error: Any) -> str:
    """``code: message`` of an error object (OpenAI ``{"code", "message"}``, Anthropic
    ``{"type": "error", "error": {"type", "message"}}``)."""
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]
    if not isinstance(error, dict):
        return str(error)
    code = error.get("code") or error.get("type")
    message = error.get("message")
    return ": ".join(str(x) for x in (code, message) if x) or "no reason given"


@dataclass
class _SDKBatches:
    """A provider's batch API through its SDK (imported when first used), at
    ``base_url`` with ``api_key``."""

    base_url: str
    api_key: str | None
    timeout: float = 60.0
    # The provider: the SDK's module, its LIMITS entry.
    provider: ClassVar[str] = ""
    _client: Any = field(default=None, init=False, repr=False)

    def _module(self) -> Any:
        return importlib.import_module(self.provider)

    def _sdk(self) -> Any:
        if self._client is None:
            make = getattr(self._module(), SDK_CLIENTS[self.provider])
            self._client = make(
                api_key=self.api_key or "", base_url=self.base_url, timeout=self.timeout
            )
        return self._client

    def limit(self) -> tuple[int, int]:
        return LIMITS[self.provider]

    def transient(self, exc: Exception) -> bool:
        status = getattr(exc, "status_code", None)
        if isinstance(status, int):
            return status in TRANSIENT_STATUSES
        return isinstance(exc, self._module().APIConnectionError)


# The SDK client class of each provider.
SDK_CLIENTS = {"openai": "OpenAI", "anthropic": "Anthropic"}


@dataclass
class OpenAIBatches(_SDKBatches):
    """OpenAI's Batch API (the ``openai`` SDK) for Chat Completions requests."""

    provider: ClassVar[str] = "openai"

    def submit(self, requests: Mapping[str, bytes]) -> str:
        lines = [
            _dumps({"custom_id": cid, "method": "POST", "url": OPENAI_ENDPOINT, "body": _loads(b)})
            for cid, b in requests.items()
        ]
        client = self._sdk()
        upload = client.files.create(
            file=("citecheck-judge-batch.jsonl", b"\n".join(lines) + b"\n"), purpose="batch"
        )
        batch = client.batches.create(
            input_file_id=upload.id,
            endpoint=OPENAI_ENDPOINT,
            completion_window=COMPLETION_WINDOW,
        )
        return str(batch.id)

    def poll(self, batch_id: str) -> tuple[str, bool]:
        batch = self._sdk().batches.retrieve(batch_id)
        status = str(batch.status)
        if status == "failed" and batch.errors is not None and batch.errors.data:
            status += f" ({'; '.join(f'{e.code}: {e.message}' for e in batch.errors.data)})"
        return status, batch.status in OPENAI_ENDED

    def answers(self, batch_id: str) -> dict[str, BatchAnswer]:
        client = self._sdk()
        batch = client.batches.retrieve(batch_id)
        source = f"openai {batch_id}"
        out: dict[str, BatchAnswer] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            text = client.files.content(file_id).text
            for line in text.splitlines():
                if line.strip():
                    cid, answer = _openai_line(json.loads(line), source)
                    out[cid] = answer
        return out

    def cancel(self, batch_id: str) -> None:
        self._sdk().batches.cancel(batch_id)


def _openai_line(line: dict[str, Any], source: str) -> tuple[str, BatchAnswer]:
    cid = str(line.get("custom_id", ""))
    response = line.get("response")
    response = response if isinstance(response, dict) else {}
    status = response.get("status_code")
    if isinstance(status, int) and status not in TRANSIENT_STATUSES:
        # The reply a synchronous call would have got, a 4xx the judge can act on included.
        return cid, BatchAnswer(status, _dumps(response.get("body")), None, source)
    error = line.get("error")
    if isinstance(status, int):
        # Asking the batch's answer again cannot change it: no retry, the reason.
        error = {"code": f"HTTP {status}", "message": _error_text(response.get("body"))}
    why = f"the request failed in the batch ({_error_text(error)})"
    return cid, BatchAnswer(failure=why, source=source)


@dataclass
class AnthropicBatches(_SDKBatches):
    """Anthropic's Message Batches (the ``anthropic`` SDK)."""

    provider: ClassVar[str] = "anthropic"

    def submit(self, requests: Mapping[str, bytes]) -> str:
        batch = self._sdk().messages.batches.create(
            requests=[{"custom_id": cid, "params": _loads(b)} for cid, b in requests.items()]
        )
        return str(batch.id)

    def poll(self, batch_id: str) -> tuple[str, bool]:
        batch = self._sdk().messages.batches.retrieve(batch_id)
        return str(batch.processing_status), batch.processing_status == "ended"

    def answers(self, batch_id: str) -> dict[str, BatchAnswer]:
        source = f"anthropic {batch_id}"
        out: dict[str, BatchAnswer] = {}
        for item in self._sdk().messages.batches.results(batch_id):
            result = item.result.model_dump(mode="json", exclude_unset=True)
            out[item.custom_id] = _anthropic_result(result, source)
        return out

    def cancel(self, batch_id: str) -> None:
        self._sdk().messages.batches.cancel(batch_id)


def _anthropic_result(result: dict[str, Any], source: str) -> BatchAnswer:
    kind = result.get("type")
    if kind == "succeeded":
        return BatchAnswer(200, _dumps(result.get("message")), None, source)
    if kind == "errored":
        error = result.get("error") or {}
        inner = error.get("error") if isinstance(error, dict) else None
        if isinstance(inner, dict) and inner.get("type") == "invalid_request_error":
            # What a synchronous call gets as HTTP 400: the judge may ask again without
            # a feature the model refuses.
            return BatchAnswer(400, _dumps(error), None, source)
        why = f"the request errored in the batch ({_error_text(error)})"
    elif kind == "expired":
        why = "the batch expired before this request was answered (24 h)"
    elif kind == "canceled":
        why = "the batch was cancelled before this request was answered"
    else:
        why = f"the batch answered an unknown result type {kind!r}"
    return BatchAnswer(failure=why, source=source)


def batch_api(provider: str, url: str, api_key: str | None, timeout: float) -> BatchAPI | None:
    """The batch API beside the judge endpoint ``url`` (same base URL, same key); None
    for a provider without one (Ollama, an OpenAI-compatible server)."""
    if provider == "openai" and url.endswith("/chat/completions"):
        return OpenAIBatches(url.removesuffix("/chat/completions"), api_key, timeout)
    if provider == "anthropic" and url.endswith("/v1/messages"):
        return AnthropicBatches(url.removesuffix("/v1/messages"), api_key, timeout)
    return None


def chunks(api: BatchAPI, requests: Mapping[str, bytes]) -> Iterable[dict[str, bytes]]:
    """``requests`` in batches the provider accepts (count and size)."""
    most, size_cap = api.limit()
    chunk: dict[str, bytes] = {}
    size = 0
    for cid, body in requests.items():
        if chunk and (len(chunk) >= most or size + len(body) > size_cap):
            yield chunk
            chunk, size = {}, 0
        chunk[cid] = body
        size += len(body)
    if chunk:
        yield chunk


def failure_text(exc: BaseException, secrets: Sequence[str]) -> str:
    """An SDK error as one line, with no key in it."""
    status = getattr(exc, "status_code", None)
    said = f"HTTP {status}: {exc}" if status is not None else f"{type(exc).__name__}: {exc}"
    return scrub(said, [s for s in secrets if s])
