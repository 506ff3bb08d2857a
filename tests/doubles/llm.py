"""A loopback double of the judge providers: OpenAI (and OpenAI-compatible), Anthropic, Ollama.

One HTTP server on ``127.0.0.1`` (an ephemeral port) answers all three wire
formats of the OpenAI, Anthropic and Ollama chat APIs, chosen by path:

=================================  =============  ==================================
path                               provider       ``base_url(provider)``
=================================  =============  ==================================
``POST /v1/chat/completions``      ``openai``     ``http://127.0.0.1:PORT/v1``
``POST /v1/messages``              ``anthropic``  ``http://127.0.0.1:PORT``
``POST /api/chat``                 ``ollama``     ``http://127.0.0.1:PORT``
=================================  =============  ==================================

(``openai-compatible`` is the ``openai`` wire; use ``base_url("openai")``.)

What it answers is scripted. Each request takes the next item of the queue
(:meth:`LLMDouble.script`); when the queue is empty, :attr:`LLMDouble.responder`
decides (default :func:`quote_first_passage`). An item is one of:

- :class:`Answer` -- the model answers this JSON value (any value: schema-breaking
  ones too). :func:`verdict` builds the usual one.
- :class:`Fault` -- a failure, rendered in the provider's exact envelope:
  ``rate_limited`` (429 + ``retry-after-ms``), ``server_error`` (500),
  ``overloaded`` (Anthropic 529, OpenAI/Ollama 503), ``unauthorized`` (401; OpenAI's
  message quotes the key it got, as the real API does), ``forbidden`` (403),
  ``quota_exhausted`` (OpenAI 429 ``insufficient_quota``, Anthropic 429
  ``enforced_spend_limit_reached``), ``model_not_found`` (404), ``bad_request`` (400),
  ``refusal``, ``truncated``, ``invalid_json``, ``schema_breaking`` (200 replies),
  ``drop`` (the connection closes with no response) and ``hang`` (waits
  ``seconds``, then drops: a client timeout).
- :class:`Raw` -- exactly this status, headers and body.
- :class:`ToolCalls` -- (Anthropic) one reply holding several ``tool_use`` blocks.

Real servers differ from the defaults in ways the double can play
(``LLMDouble(rejects=..., served_model=...)``), each in the server's own shape:

- ``rejects={"temperature"}`` -- an OpenAI reasoning model: a body with
  ``temperature`` other than 1 gets 400 ``unsupported_value``, ``param: "temperature"``;
- ``rejects={"json_schema"}`` -- llama-cpp-python's server: ``response_format``
  ``json_schema`` gets HTTP 500 with FastAPI's validation text (``'text' or
  'json_object'``), while ``{"type": "json_object", "schema": ...}`` is answered;
  ``json_schema_status=422`` answers it as FastAPI does by default (422, ``{"detail":
  [...]}``), any other 4xx in OpenAI's error envelope with the same text: the
  refusal a server gives when its validation error is not caught as a 500;
- ``rejects={"strict"}`` -- an Anthropic model without strict tool use: 400
  naming ``tools.0.strict`` (the wording is the double's guess);
- ``rejects={"think"}`` -- an Ollama model or server without ``think``: 400
  ``"... does not support thinking"`` (the wording is the double's guess);
- ``served_model="/path/to/model.gguf"`` -- the ``model`` field of every reply,
  as llama-cpp-python reports the file it loaded.

A rejected request is logged in :attr:`LLMDouble.calls` but takes no scripted item.

Every request is logged, headers included, in :attr:`LLMDouble.calls`
(:class:`JudgeCall`: ``provider``, ``headers``, ``json()``, ``claim``, ``passages``),
except the confirmation calls that follow a supported/contradicted answer (the same
claim, one passage: the sentence(s) holding the quote): they are logged in
:attr:`LLMDouble.confirmations`, take no scripted item, and are answered by
``confirm_responder``, else by an explicit ``responder``, else with the answer they
confirm.

The joint judgment of a claim's sources (``pytest_citecheck.stages.judges.joint``:
passages tagged ``<passage source="2" n="1">``, answer ``{"label", "quotes",
"confidence"}``) is logged in :attr:`LLMDouble.joint_calls` (its confirmation too: a
joint call whose sources hold one passage each), takes no scripted item, and is answered
by ``joint_responder`` (default :func:`joint_not_found`; :func:`joint_verdict` builds
an answer). :attr:`JudgeCall.sources` gives each source's passages.

Replies are deterministic (fixed ids and timestamps numbered per call), so a
recording made against the double is stable.

Example::

    with LLMDouble() as llm:
        llm.script(Fault("rate_limited"), verdict("supported", "boils at 100", 0.93))
        judge = make_judge("openai:gpt-4o-mini", base_url=llm.base_url("openai"),
                           environ={"OPENAI_API_KEY": "sk-test"},
                           retry=RetryPolicy(sleep=lambda s: None))
        judge.judge("Water boils at 100 C.", ["Water boils at 100 C at sea level."])
        assert llm.calls[-1].headers["authorization"] == "Bearer sk-test"
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

from tests.doubles import PAID, LoopbackServer, QuietHandler

Provider = Literal["openai", "anthropic", "ollama"]
ROUTES: dict[str, Provider] = {
    "/v1/chat/completions": "openai",
    "/v1/messages": "anthropic",
    "/api/chat": "ollama",
}

FaultKind = Literal[
    "rate_limited",
    "server_error",
    "overloaded",
    "unauthorized",
    "forbidden",
    "quota_exhausted",
    "model_not_found",
    "bad_request",
    "refusal",
    "truncated",
    "invalid_json",
    "schema_breaking",
    "drop",
    "hang",
]
FAULT_KINDS: tuple[FaultKind, ...] = FaultKind.__args__  # type: ignore[attr-defined]

# What a schema-breaking reply says: a label outside the three, a string confidence.
SCHEMA_BREAKING: dict[str, Any] = {"label": "maybe", "quote": None, "confidence": "high"}
REFUSAL_TEXT = "I'm sorry, but I can't help with that request."
TRUNCATED_JSON = '{"label":"supported","quote":"The passage says'
INVALID_JSON_TEXT = 'Sure! {"label": supported, "quote": none}'


@dataclass(frozen=True)
class Answer:
    """The model answers ``value`` (a JSON value; a ``str`` is sent as raw model text)."""

    value: Any
    input_tokens: int = 120
    output_tokens: int = 18


def verdict(
    label: str = "supported",
    quote: str | None = None,
    confidence: float = 0.9,
    *,
    input_tokens: int = 120,
    output_tokens: int = 18,
) -> Answer:
    """The usual answer: a verdict that fits the schema."""
    return Answer(
        {"label": label, "quote": quote, "confidence": confidence}, input_tokens, output_tokens
    )


@dataclass(frozen=True)
class Fault:
    """A failure, in the envelope of whichever provider was called (see the module doc)."""

    kind: FaultKind
    # Retry headers sent with the error (rate_limited defaults to retry-after-ms: 10).
    retry_after_ms: int | None = None
    retry_after: str | None = None
    # ``hang``: how long to wait before dropping the connection.
    seconds: float = 1.0

    def retry_headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        ms = self.retry_after_ms
        if ms is None and self.retry_after is None and self.kind == "rate_limited":
            ms = 10
        if ms is not None:
            headers["retry-after-ms"] = str(ms)
        if self.retry_after is not None:
            headers["retry-after"] = self.retry_after
        return headers


@dataclass(frozen=True)
class Raw:
    """Exactly this response."""

    status: int
    body: str | bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolCalls:
    """(Anthropic) one reply with a ``tool_use`` block per input, in this order.

    ``names`` gives each block's tool name (default: the forced tool's)."""

    inputs: tuple[Any, ...]
    names: tuple[str, ...] = ()


Scripted = Answer | Fault | Raw | ToolCalls

Rejected = Literal["temperature", "json_schema", "strict", "think"]


@dataclass(frozen=True)
class JudgeCall:
    """One request the double received."""

    provider: Provider | None  # None: a path no provider serves (answered 404)
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes
    # What replies report as ``model`` instead of the requested one (LLMDouble(served_model=)).
    served_model: str | None = None

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def model(self) -> str | None:
        if self.served_model is not None:
            return self.served_model
        data = self.json()
        return data.get("model") if isinstance(data, dict) else None

    @property
    def user_text(self) -> str:
        """The user message (claim and passages, as the judge prompt lays them out)."""
        data = self.json()
        messages = data.get("messages", []) if isinstance(data, dict) else []
        for message in reversed(messages):
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                return str(message["content"])
        return ""

    @property
    def claim(self) -> str | None:
        match = re.search(r"<claim>\n(.*?)\n</claim>", self.user_text, re.S)
        return match.group(1) if match else None

    @property
    def passages(self) -> list[str]:
        return re.findall(r'<passage n="\d+">\n(.*?)\n</passage>', self.user_text, re.S)

    @property
    def joint(self) -> bool:
        """A joint judgment: its passages are tagged with their source (every wire says
        so in the user message; Ollama's ``format`` and the ``json_object`` form name no
        schema)."""
        return '<passage source="' in self.user_text

    @property
    def sources(self) -> list[list[str]]:
        """A joint call's passages, one list per source (in source order)."""
        found: dict[int, list[str]] = {}
        for source, text in re.findall(
            r'<passage source="(\d+)" n="\d+">\n(.*?)\n</passage>', self.user_text, re.S
        ):
            found.setdefault(int(source), []).append(text)
        return [found[k] for k in sorted(found)]


Responder = Callable[[JudgeCall], Scripted]


def joint_verdict(
    label: str = "supported",
    quotes: Mapping[int, str] | None = None,
    confidence: float = 0.9,
    *,
    input_tokens: int = 300,
    output_tokens: int = 40,
) -> Answer:
    """A joint answer: ``quotes`` maps a source number (from 1) to its quote."""
    items = [{"source": k, "quote": v} for k, v in (quotes or {}).items()]
    return Answer(
        {"label": label, "quotes": items, "confidence": confidence}, input_tokens, output_tokens
    )


def joint_not_found(call: JudgeCall) -> Scripted:
    """Default joint responder: the sources together do not state the claim."""
    return joint_verdict("not_found", {}, 0.8)


def quote_first_passage(call: JudgeCall) -> Scripted:
    """Default responder: ``supported``, quoting the start of the first passage
    (verbatim, cut at a word boundary); ``not_found`` when there is no passage."""
    if not call.passages:
        return verdict("not_found", None, 0.9)
    text = call.passages[0].strip()
    if len(text) > 120:
        cut = text[:120]
        text = cut[: cut.rfind(" ")] if " " in cut else cut
    return verdict("supported", text, 0.9)


class LLMDouble(LoopbackServer):
    """The judge double; a context manager that serves while inside the ``with``."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        api_key: str | None = None,
        rejects: Collection[Rejected] = (),
        served_model: str | None = None,
        json_schema_status: int = 500,
        confirm_responder: Responder | None = None,
        joint_responder: Responder | None = None,
    ) -> None:
        """``api_key``: when set, a request that does not carry it (bearer or
        ``x-api-key``) gets the provider's 401, as the real API would answer.
        ``rejects``, ``json_schema_status`` and ``served_model``: see the module doc."""
        super().__init__()
        self.responder: Responder = responder or quote_first_passage
        # Confirmation calls (see _confirming): the explicit responder's, else an echo.
        self.confirm_responder: Responder | None = confirm_responder or responder
        self.confirmations: list[JudgeCall] = []
        # Joint judgments (and their confirmations): see the module doc.
        self.joint_responder: Responder = joint_responder or joint_not_found
        self.joint_calls: list[JudgeCall] = []
        self._awaiting: dict[str, tuple[dict[str, Any], list[str]]] = {}
        self.api_key = api_key
        self.rejects = frozenset(rejects)
        self.json_schema_status = json_schema_status
        self.served_model = served_model
        self.calls: list[JudgeCall] = []
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return type("_Handler", (_Handler,), {"double": self})

    # -- addresses -----------------------------------------------------------------

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def base_url(self, provider: str) -> str:
        """What to pass as ``make_judge(..., base_url=)`` for ``provider``."""
        if provider in ("openai", "openai-compatible"):
            return f"{self.root}/v1"
        if provider in ("anthropic", "ollama"):
            return self.root
        raise ValueError(f"no such provider: {provider!r}")

    # -- scripting -------------------------------------------------------------------

    def script(self, *items: Scripted) -> LLMDouble:
        """Queue answers; each request takes the next one, then the responder decides."""
        with self._lock:
            self._queue.extend(items)
        return self

    def reset(self) -> LLMDouble:
        """Forget the scripted answers not used yet and the logged calls."""
        with self._lock:
            self._queue.clear()
            self.calls.clear()
            self.confirmations.clear()
            self.joint_calls.clear()
            self._awaiting.clear()
        PAID.forget(self.ledger_name)
        return self

    @property
    def pending(self) -> int:
        """Scripted answers not used yet."""
        with self._lock:
            return len(self._queue)

    def _next(self, call: JudgeCall) -> tuple[Scripted, int]:
        item: Scripted | None = None
        if call.joint:
            with self._lock:
                self.joint_calls.append(call)
                number = len(self.calls) + len(self.confirmations) + len(self.joint_calls)
            return self.joint_responder(call), number
        with self._lock:
            awaited = self._confirming(call)
            if awaited is not None:
                self.confirmations.append(call)
                number = len(self.calls) + len(self.confirmations)
            else:
                self.calls.append(call)
                number = len(self.calls) + len(self.confirmations)
                item = self._queue.popleft() if self._queue else None
        if awaited is not None:
            if self.confirm_responder is not None:
                return self.confirm_responder(call), number
            return Answer(awaited), number
        answer = item if item is not None else self.responder(call)
        self._remember(call, answer)
        return answer, number

    def _confirming(self, call: JudgeCall) -> dict[str, Any] | None:
        """The answer a confirmation call confirms, or None for a first reading.

        The pipeline confirms a supported/contradicted answer with a second call about
        the same claim whose one passage is the sentence(s) holding the quote
        (``pytest_citecheck.stages.confirm``). Such calls are logged in
        :attr:`confirmations` (not :attr:`calls`), never take a scripted item, and are
        answered by ``confirm_responder``, else the explicit ``responder``, else with
        the answer they confirm (a consistent judge)."""
        awaited = self._awaiting.get(call.claim or "")
        if awaited is None or len(call.passages) != 1:
            return None
        value, shown = awaited
        evidence = " ".join(call.passages[0].split())
        quote = " ".join(str(value.get("quote") or "").split())
        if not quote or quote not in evidence:
            return None
        if evidence not in " ".join(" ".join(p.split()) for p in shown):
            return None
        del self._awaiting[call.claim or ""]
        return value

    def _remember(self, call: JudgeCall, answer: Scripted) -> None:
        value = answer.value if isinstance(answer, Answer) else None
        with self._lock:
            if (
                isinstance(value, dict)
                and value.get("label") in ("supported", "contradicted")
                and value.get("quote")
            ):
                self._awaiting[call.claim or ""] = (value, call.passages)
            else:
                self._awaiting.pop(call.claim or "", None)

    def _authorised(self, call: JudgeCall) -> bool:
        if self.api_key is None:
            return True
        sent = call.headers.get("x-api-key") or call.headers.get("authorization", "")
        return sent in (self.api_key, f"Bearer {self.api_key}")


# -- rendering: one function per provider and answer kind ---------------------------


def _sent_key(call: JudgeCall) -> str:
    auth = call.headers.get("authorization", "")
    return call.headers.get("x-api-key") or auth.removeprefix("Bearer ")


def _model_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _openai_ok(
    call: JudgeCall,
    n: int,
    content: str | None,
    *,
    refusal: str | None = None,
    finish: str = "stop",
    tokens: tuple[int, int] = (120, 18),
) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-citecheck{n:04d}",
        "object": "chat.completion",
        "created": 1735689600 + n,
        "model": call.model or "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": content,
                    "refusal": refusal,
                    "annotations": [],
                },
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1],
            "total_tokens": tokens[0] + tokens[1],
        },
        "service_tier": "default",
        "system_fingerprint": "fp_citecheck",
    }


def _anthropic_ok(
    call: JudgeCall,
    n: int,
    content: list[dict[str, Any]],
    stop: str,
    tokens: tuple[int, int] = (120, 18),
) -> dict[str, Any]:
    return {
        "id": f"msg_citecheck{n:04d}",
        "type": "message",
        "role": "assistant",
        "model": call.model or "claude-sonnet-4-6",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": tokens[0],
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": tokens[1],
            "service_tier": "standard",
        },
    }


def _tool_name(call: JudgeCall) -> str:
    choice = call.json().get("tool_choice") or {}
    return str(choice.get("name", "record_verdict"))


def _anthropic_tool(call: JudgeCall, n: int, value: Any) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": f"toolu_citecheck{n:04d}",
        "name": _tool_name(call),
        "input": value,
    }


def _ollama_ok(
    call: JudgeCall,
    n: int,
    content: str,
    *,
    done_reason: str = "stop",
    tokens: tuple[int, int] = (120, 18),
) -> dict[str, Any]:
    return {
        "model": call.model or "llama3.1",
        "created_at": f"2024-12-06T00:46:{n % 60:02d}.265747Z",
        "message": {"role": "assistant", "content": content},
        "done_reason": done_reason,
        "done": True,
        "total_duration": 2254970291,
        "load_duration": 574751416,
        "prompt_eval_count": tokens[0],
        "prompt_eval_duration": 1502000000,
        "eval_count": tokens[1],
        "eval_duration": 175000000,
    }


def render_answer(call: JudgeCall, n: int, answer: Answer) -> Raw:
    """A 200 whose model output is ``answer.value``."""
    tokens = (answer.input_tokens, answer.output_tokens)
    if call.provider == "openai":
        body = _openai_ok(call, n, _model_text(answer.value), tokens=tokens)
    elif call.provider == "anthropic":
        if isinstance(answer.value, str):  # raw text: no tool call
            body = _anthropic_ok(
                call, n, [{"type": "text", "text": answer.value}], "end_turn", tokens
            )
        else:
            body = _anthropic_ok(
                call, n, [_anthropic_tool(call, n, answer.value)], "tool_use", tokens
            )
    else:
        body = _ollama_ok(call, n, _model_text(answer.value), tokens=tokens)
    return _json(200, body, {"x-request-id": f"req_citecheck{n:04d}"})


def render_tool_calls(call: JudgeCall, n: int, item: ToolCalls) -> Raw:
    """An Anthropic reply with several tool_use blocks (other providers cannot say this)."""
    if call.provider != "anthropic":
        raise ValueError("ToolCalls is an Anthropic reply")
    names = item.names or (_tool_name(call),) * len(item.inputs)
    blocks = [
        {"type": "tool_use", "id": f"toolu_citecheck{n:04d}_{i}", "name": name, "input": value}
        for i, (name, value) in enumerate(zip(names, item.inputs, strict=True))
    ]
    return _json(200, _anthropic_ok(call, n, blocks, "tool_use"), {"request-id": f"req_{n:04d}"})


# llama-cpp-python's server: FastAPI's RequestValidationError, caught by its
# RouteErrorHandler and answered as a 500 "internal_server_error" (its errors.py).
LLAMA_CPP_PYTHON_RESPONSE_FORMAT_ERROR = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  Endpoint: POST "
    "/v1/chat/completions"
)


# The same validation error as FastAPI answers it when nothing catches it (422).
LLAMA_CPP_PYTHON_RESPONSE_FORMAT_DETAIL = [
    {
        "type": "literal_error",
        "loc": ["body", "response_format", "type"],
        "msg": "Input should be 'text' or 'json_object'",
        "input": "json_schema",
        "ctx": {"expected": "'text' or 'json_object'"},
    }
]


def render_rejection(
    call: JudgeCall, rejects: frozenset[str], json_schema_status: int = 500
) -> Raw | None:
    """The error a real server answers to a body it does not take, or None."""
    body = call.json()
    if not isinstance(body, dict):
        return None
    if call.provider == "openai":
        if "temperature" in rejects and body.get("temperature", 1) != 1:
            return _openai_error(
                400,
                "invalid_request_error",
                "unsupported_value",
                f"Unsupported value: 'temperature' does not support {body['temperature']} with "
                "this model. Only the default (1) value is supported.",
                {},
                param="temperature",
            )
        response_format = body.get("response_format")
        if (
            "json_schema" in rejects
            and isinstance(response_format, dict)
            and response_format.get("type") not in ("text", "json_object")
        ):
            if json_schema_status == 422:
                return _json(422, {"detail": LLAMA_CPP_PYTHON_RESPONSE_FORMAT_DETAIL})
            kind = "internal_server_error" if json_schema_status >= 500 else "invalid_request_error"
            return _openai_error(
                json_schema_status, kind, None, LLAMA_CPP_PYTHON_RESPONSE_FORMAT_ERROR, {}
            )
    if call.provider == "anthropic" and "strict" in rejects:
        tools = body.get("tools") or []
        for i, tool in enumerate(tools):
            if isinstance(tool, dict) and "strict" in tool:
                return _anthropic_error(
                    400,
                    "invalid_request_error",
                    f"tools.{i}.custom.strict: Extra inputs are not permitted",
                    0,
                    {},
                )
    if call.provider == "ollama" and "think" in rejects and "think" in body:
        return _json(400, {"error": f'"{body.get("model")}" does not support thinking'})
    return None


def _json(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Raw:
    return Raw(
        status,
        json.dumps(body, separators=(",", ":")),
        {"content-type": "application/json", **(headers or {})},
    )


# status, OpenAI (type, code, message), Anthropic (type, message), Ollama message
_ERRORS: dict[str, tuple[int, tuple[str, str | None, str], tuple[str, str], str]] = {
    "rate_limited": (
        429,
        (
            "requests",
            "rate_limit_exceeded",
            "Rate limit reached for gpt-4o-mini in organization org-citecheck on requests per "
            "min (RPM): Limit 500, Used 500, Requested 1. Please try again in 10ms.",
        ),
        (
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50 requests "
            "per minute.",
        ),
        "too many requests",
    ),
    "server_error": (
        500,
        (
            "server_error",
            None,
            "The server had an error while processing your request. Sorry about that!",
        ),
        ("api_error", "Internal server error"),
        "llama runner process has terminated: exit status 2",
    ),
    "forbidden": (
        403,
        (
            "invalid_request_error",
            "unsupported_country_region_territory",
            "Country, region, or territory not supported",
        ),
        (
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        "forbidden",
    ),
    "bad_request": (
        400,
        ("invalid_request_error", None, "Invalid schema for response_format 'record_verdict'."),
        ("invalid_request_error", "tools.0.input_schema: JSON schema is invalid"),
        'invalid format: expected "json" or a JSON schema',
    ),
}


def render_fault(call: JudgeCall, n: int, fault: Fault) -> Raw | None:
    """The response for ``fault`` (None: ``drop``/``hang``, no response at all)."""
    provider, model = call.provider, call.model or "the-model"
    if fault.kind in ("drop", "hang"):
        return None
    if fault.kind == "schema_breaking":
        return render_answer(call, n, Answer(SCHEMA_BREAKING))
    if fault.kind == "invalid_json":
        return render_answer(call, n, Answer(INVALID_JSON_TEXT))
    if fault.kind == "refusal":
        if provider == "openai":
            return _json(200, _openai_ok(call, n, None, refusal=REFUSAL_TEXT))
        if provider == "anthropic":
            return _json(200, _anthropic_ok(call, n, [], "refusal"))
        return _json(200, _ollama_ok(call, n, REFUSAL_TEXT))
    if fault.kind == "truncated":
        if provider == "openai":
            return _json(200, _openai_ok(call, n, TRUNCATED_JSON, finish="length"))
        if provider == "anthropic":
            # Cut while writing the tool input: the block is there, its input is not.
            return _json(200, _anthropic_ok(call, n, [_anthropic_tool(call, n, {})], "max_tokens"))
        return _json(200, _ollama_ok(call, n, TRUNCATED_JSON, done_reason="length"))

    headers = fault.retry_headers()
    if fault.kind == "overloaded":
        if provider == "anthropic":
            headers.setdefault("x-should-retry", "true")
            return _anthropic_error(529, "overloaded_error", "Overloaded", n, headers)
        if provider == "openai":
            return _openai_error(
                503,
                "server_error",
                None,
                "The engine is currently overloaded, please try again later.",
                headers,
            )
        return _json(
            503,
            {"error": "server busy, please try again.  maximum pending requests exceeded"},
            headers,
        )
    if fault.kind == "unauthorized":
        if provider == "openai":
            # The real API quotes the key it got (short keys in full).
            return _openai_error(
                401,
                "invalid_request_error",
                "invalid_api_key",
                f"Incorrect API key provided: {_sent_key(call)}. You can find "
                "your API key at https://platform.openai.com/account/api-keys.",
                headers,
            )
        if provider == "anthropic":
            return _anthropic_error(401, "authentication_error", "invalid x-api-key", n, headers)
        return _json(401, {"error": "unauthorized"}, headers)
    if fault.kind == "quota_exhausted":
        if provider == "openai":
            return _openai_error(
                429,
                "insufficient_quota",
                "insufficient_quota",
                "You exceeded your current quota, please check your plan and billing details.",
                headers,
            )
        if provider == "anthropic":
            return _anthropic_error(
                429,
                "rate_limit_error",
                "You have reached your specified workspace API usage limits.",
                n,
                headers,
                details={"error_code": "enforced_spend_limit_reached"},
            )
        return _json(429, {"error": "you have reached your weekly usage limit"}, headers)
    if fault.kind == "model_not_found":
        if provider == "openai":
            return _openai_error(
                404,
                "invalid_request_error",
                "model_not_found",
                f"The model `{model}` does not exist or you do not have access to it.",
                headers,
            )
        if provider == "anthropic":
            return _anthropic_error(404, "not_found_error", f"model: {model}", n, headers)
        return _json(404, {"error": f'model "{model}" not found, try pulling it first'}, headers)

    status, (o_type, o_code, o_msg), (a_type, a_msg), ollama_msg = _ERRORS[fault.kind]
    if provider == "openai":
        return _openai_error(status, o_type, o_code, o_msg, headers)
    if provider == "anthropic":
        return _anthropic_error(status, a_type, a_msg, n, headers)
    return _json(status, {"error": ollama_msg}, headers)


def _openai_error(
    status: int,
    type_: str,
    code: str | None,
    message: str,
    headers: Mapping[str, str],
    param: str | None = None,
) -> Raw:
    body = {"error": {"message": message, "type": type_, "param": param, "code": code}}
    return _json(status, body, {"x-request-id": "req_citecheck_error", **headers})


def _anthropic_error(
    status: int,
    type_: str,
    message: str,
    n: int,
    headers: Mapping[str, str],
    details: dict[str, str] | None = None,
) -> Raw:
    error: dict[str, Any] = {"type": type_, "message": message}
    if details:
        error["details"] = details
    request_id = f"req_citecheck{n:04d}"
    body = {"type": "error", "error": error, "request_id": request_id}
    return _json(status, body, {"request-id": request_id, **headers})


class _Handler(QuietHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without this, Nagle + delayed ACK
    # add ~40 ms to every reply.
    disable_nagle_algorithm = True
    double: LLMDouble  # set on the per-double subclass

    def version_string(self) -> str:
        return "citecheck-llm-double"

    def do_GET(self) -> None:
        self._reply(Raw(404, "404 page not found", {"content-type": "text/plain"}))

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        call = JudgeCall(
            provider=ROUTES.get(path),
            method="POST",
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        if call.provider is None:
            self.double.calls.append(call)
            self._reply(Raw(404, "404 page not found", {"content-type": "text/plain"}))
            return
        self.double.paid(f"POST {path}", body)
        rejected = render_rejection(call, self.double.rejects, self.double.json_schema_status)
        if rejected is not None:
            with self.double._lock:
                self.double.calls.append(call)
            self._reply(rejected)
            return
        item, n = self.double._next(call)
        if self.double.served_model is not None:
            call = replace(call, served_model=self.double.served_model)
        if not self.double._authorised(call):
            item = Fault("unauthorized")
        if isinstance(item, Answer):
            response: Raw | None = render_answer(call, n, item)
        elif isinstance(item, ToolCalls):
            response = render_tool_calls(call, n, item)
        elif isinstance(item, Fault):
            if item.kind == "hang":
                time.sleep(item.seconds)
            response = render_fault(call, n, item)
        else:
            response = item
        if response is None:  # drop: close without a byte of response
            self.close_connection = True
            return
        self._reply(response)

    def _reply(self, raw: Raw) -> None:
        data = raw.body.encode("utf-8") if isinstance(raw.body, str) else raw.body
        self.send_response(raw.status)
        for name, value in raw.headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
