"""What every HTTP judge shares: sending, retrying, and turning failures into errors.

A provider is two pure functions -- build the request body, parse a 2xx
reply -- plus its endpoint and auth header. Everything that decides whether a
reply can be believed lives here, once, so it cannot differ between providers:

- a reply that is not valid JSON of the verdict schema, a refusal or a
  truncated reply raises :class:`StageFailed` with its reason -- never a
  silent ``not_found`` or ``supported``;
- 401/403, and "out of quota", raise :class:`ConfigurationError` naming the
  environment variable, never its value;
- other HTTP failures (after retries) are ``judge_http_error``, transport
  failures ``judge_unavailable`` (saying whether the server could not be
  reached or was reached and never answered);
- a reply whose error names a request feature the server does not take
  (``temperature`` on a reasoning model, ``json_schema`` on llama-cpp-python's
  server, Anthropic's ``strict``, Ollama's ``think``) is asked again once,
  without that feature: the provider's :meth:`HTTPJudge.fallback_body` says
  which. The fallback is decided per call, never remembered across calls, so
  a claim's recording does not depend on which claims were recorded before it
  (replaying one claim alone, or under xdist, sends exactly what was recorded);
- a reply that refuses a feature the user asked for explicitly (``json_schema``
  set by ``citecheck_judge_response_format``) is not retried: the error says
  what to set instead (:meth:`HTTPJudge.refusal_hint`).

Every text that leaves this module goes through :func:`pytest_citecheck.core.secrets.scrub`
with the judge's own key added, because a provider may echo the key it got
(OpenAI's 401 does).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import ssl
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from pydantic import ValidationError

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.claims.results import JointReply, Usage
from pytest_citecheck.core.errors import ConfigurationError, StageFailed
from pytest_citecheck.core.retry import (
    GaveUp,
    IsFinal,
    RetryPolicy,
    Sent,
    send,
    transport_text,
    unresolved_host,
)
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.core.text import truncate
from pytest_citecheck.stages.judges.base import JudgeReply
from pytest_citecheck.stages.judges.batch import BATCH_HEADER
from pytest_citecheck.stages.judges.compat import json_text
from pytest_citecheck.stages.judges.joint import joint_ask
from pytest_citecheck.stages.judges.prompt import (
    PROMPT_VERSION,
    VERDICT_NAME,
    Ask,
    dump_body,
    verdict_ask,
)

# What a question's answer is parsed into: a verdict, or a joint judgment's reply.
R = TypeVar("R", JudgeReply, JointReply)

# Error codes that mean "the account cannot pay": retrying cannot help and the
# user has to act (OpenAI insufficient_quota, Anthropic spend limit / billing).
QUOTA_CODES = frozenset({"insufficient_quota", "enforced_spend_limit_reached", "billing_error"})

log = logging.getLogger("pytest_citecheck")

_DETAIL_CHARS = 200
# A provider's own error message is where the useful part is (which field, which
# value); it is cut only when it is very long.
_ERROR_CHARS = 1000
# How many features one call may drop after the server named them (see fallback_body).
_MAX_FALLBACKS = 3


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle costs ~25 ms; the clients judges open share one.
    return httpx.create_ssl_context()


def shorten(text: str, limit: int = _DETAIL_CHARS) -> str:
    """A judge's words on one line, as long as a verdict's detail keeps."""
    return truncate(text, limit, flatten=True)


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def error_fields(payload: Any) -> tuple[set[str], str | None]:
    """Codes and message of a provider error envelope (OpenAI, Anthropic, Ollama).

    OpenAI ``{"error": {"message", "type", "code"}}``; Anthropic ``{"type":
    "error", "error": {"type", "message", "details": {"error_code"}}}``;
    Ollama ``{"error": "text"}``; a FastAPI server's own validation error (a local
    server whose 422 nothing rewrote) ``{"detail": [{"loc", "msg"}, ...]}``.
    """
    if not isinstance(payload, dict):
        return set(), None
    error = payload.get("error")
    if isinstance(error, str):
        return set(), error
    if error is None and "detail" in payload:
        return set(), _fastapi_detail(payload["detail"])
    if not isinstance(error, dict):
        return set(), None
    codes = {str(error[k]) for k in ("type", "code") if isinstance(error.get(k), str)}
    details = error.get("details")
    if isinstance(details, dict) and isinstance(details.get("error_code"), str):
        codes.add(details["error_code"])
    message = error.get("message")
    return codes, message if isinstance(message, str) else None


def _fastapi_detail(detail: Any) -> str | None:
    """``body.response_format.type: Input should be 'text' or 'json_object'; ...``"""
    if isinstance(detail, str):
        return detail
    if not isinstance(detail, list):
        return None
    problems = []
    for item in detail:
        if isinstance(item, dict) and isinstance(item.get("msg"), str):
            loc = item.get("loc")
            where = ".".join(map(str, loc)) if isinstance(loc, list) else ""
            problems.append(f"{where}: {item['msg']}" if where else item["msg"])
    return "; ".join(problems) or None


def verdict_from_object(value: Any) -> JudgeReply:
    """Validate a decoded verdict against the schema (strictly: "0.9" is not a number)."""
    reply = _validated(value, JudgeReply, ("label", "quote", "confidence"), "reply")
    if reply.label == "not_found" and reply.quote is not None:
        # The prompt asks for null: a quote given with "not_found" decides
        # nothing, so it is not reported as evidence.
        reply = reply.model_copy(update={"quote": None})
    return reply


def joint_from_object(value: Any) -> JointReply:
    """Validate a decoded joint answer (:mod:`pytest_citecheck.stages.judges.joint`) as
    strictly as a verdict."""
    return _validated(value, JointReply, ("label", "quotes", "confidence"), "joint reply")


def _validated(value: Any, model: type[R], names: tuple[str, ...], what: str) -> R:
    """``value`` as ``model``, only the schema's fields ``names`` read (a model cannot
    smuggle in ``usage``); a confidence off the 0-1 scale kept apart (:func:`off_scale`)."""
    if not isinstance(value, dict):
        raise StageFailed(
            Reason.JUDGE_SCHEMA_MISMATCH,
            f"the judge answered a JSON {type(value).__name__}, not an object",
        )
    fields = {k: value[k] for k in names if k in value}
    raw = off_scale(fields.get("confidence"))
    if raw is not None:
        fields["confidence"] = 0.0
    try:
        reply = model.model_validate(fields, strict=True)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'reply'}: {err['msg']}"
            for err in exc.errors()
        )
        raise StageFailed(
            Reason.JUDGE_SCHEMA_MISMATCH,
            shorten(f"the judge's {what} breaks the schema: {problems}"),
        ) from None
    return reply.model_copy(update={"confidence_raw": raw}) if raw is not None else reply


def off_scale(confidence: Any) -> float | None:
    """A confidence that is a number outside [0, 1] (a model grading 0-10 or 0-100),
    else None. The label stands; the number is kept but not read as a confidence."""
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        return None
    if math.isnan(confidence) or 0.0 <= confidence <= 1.0:
        return None
    return float(confidence)


def verdict_from_text(text: str | None) -> JudgeReply:
    """Parse a JSON verdict the model wrote as text (see :func:`json_text`)."""
    return answer_from_text(text, verdict_from_object)


def answer_from_text(text: str | None, parse: Callable[[Any], R]) -> R:
    """Parse a JSON answer the model wrote as text (see :func:`json_text`) with
    ``parse`` (:func:`verdict_from_object`, or the joint judgment's)."""
    if text is None or not text.strip():
        raise StageFailed(Reason.JUDGE_INVALID_JSON, "the judge's reply was empty")
    unwrapped = json_text(text)
    if not unwrapped:
        raise StageFailed(Reason.JUDGE_INVALID_JSON, "the judge's reply held no JSON")
    try:
        value = json.loads(unwrapped)
    except ValueError:
        raise StageFailed(
            Reason.JUDGE_INVALID_JSON, shorten(f"the judge's reply is not JSON: {text!r}")
        ) from None
    return parse(value)


def usage_of(data: Any, input_key: str, output_key: str) -> Usage | None:
    """Token counts from a reply's usage fields (None when the server sent none)."""
    if not isinstance(data, dict):
        return None
    tokens_in, tokens_out = data.get(input_key), data.get(output_key)
    if not isinstance(tokens_in, int) and not isinstance(tokens_out, int):
        return None
    return Usage(
        input_tokens=tokens_in if isinstance(tokens_in, int) else 0,
        output_tokens=tokens_out if isinstance(tokens_out, int) else 0,
    )


@dataclass(eq=False)
class HTTPJudge(ABC):
    """A judge reached over HTTP (JSON in, JSON out). Subclasses: one per wire format."""

    provider: str
    model: str
    # The full endpoint URL (``.../chat/completions``, ``.../v1/messages``, ``.../api/chat``).
    url: str
    # Named in configuration errors; the value never is.
    key_env: str
    api_key: str | None = field(default=None, repr=False)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout: float = 60.0
    client: httpx.Client | None = field(default=None, repr=False)
    # How messages name options (the front end's words).
    terms: Terms = field(default=NEUTRAL, repr=False)
    _own_client: httpx.Client | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _hinted: set[str] = field(default_factory=set, init=False, repr=False)
    # ``url`` parsed, with the text it was parsed from (every call goes to it).
    _endpoint: tuple[str, httpx.URL] | None = field(default=None, init=False, repr=False)

    prompt_version: str = field(default=PROMPT_VERSION, init=False)

    @property
    def name(self) -> str:
        """``provider:model``, as shown in reports."""
        return f"{self.provider}:{self.model}"

    # -- what a provider defines ---------------------------------------------

    @abstractmethod
    def body_for(self, ask: Ask) -> dict[str, Any]:
        """The JSON body that asks ``ask`` (deterministic)."""

    @abstractmethod
    def auth_headers(self) -> dict[str, str]:
        """Headers carrying ``api_key``; empty when there is none (replay)."""

    @abstractmethod
    def parse_answer(self, payload: Any, name: str, parse: Callable[[Any], R]) -> R:
        """A 2xx reply body (decoded JSON) -> the answer to the question named ``name``
        (its schema's name, the forced tool's), decoded by ``parse``; or
        :class:`StageFailed`."""

    def request_body(self, claim: str, passages: Sequence[str]) -> dict[str, Any]:
        return self.body_for(verdict_ask(claim, passages))  # one judge call's body

    def parse_reply(self, payload: Any) -> JudgeReply:
        return self.parse_answer(payload, VERDICT_NAME, verdict_from_object)  # a verdict

    def fallback_body(
        self, body: dict[str, Any], status: int, payload: Any
    ) -> tuple[dict[str, Any], str] | None:
        """``body`` without the feature a failed reply (``status``, decoded
        ``payload``) names as unsupported, and a hint for the user; None when
        the failure is not about a feature this judge can do without."""
        return None

    def answered_with(self, body: dict[str, Any]) -> None:
        """The server answered ``body`` (a 2xx): what a judge may learn from the form
        it took (the OpenAI wire's response format). Nothing, by default."""
        return None

    def refusal_hint(self, body: dict[str, Any], status: int, payload: Any) -> str | None:
        """When a failed reply refuses a request feature the user chose explicitly
        (so no fallback applies): what to set instead. Retrying the same body cannot
        help, so such a reply is not retried and the error says it at once."""
        return None

    # -- shared ----------------------------------------------------------------

    def build_request(self, claim: str, passages: Sequence[str]) -> httpx.Request:
        """The exact request one call sends first (also what a recording is matched on)."""
        return self._request(self.request_body(claim, passages))

    def _request(self, body: dict[str, Any]) -> httpx.Request:
        headers = {
            "content-type": "application/json",
            "accept": "application/json",
            **self.auth_headers(),
        }
        return httpx.Request(
            "POST",
            self._url(),
            content=dump_body(body),
            headers=headers,
            # Per request, so a caller's client cannot make it wait forever.
            extensions={"timeout": httpx.Timeout(self.timeout).as_dict()},
        )

    def _url(self) -> httpx.URL:
        """``url`` parsed once (again only if it was changed)."""
        endpoint = self._endpoint
        if endpoint is None or endpoint[0] != self.url:
            endpoint = self._endpoint = (self.url, httpx.URL(self.url))
        return endpoint[1]

    def judge(self, claim: str, passages: Sequence[str]) -> JudgeReply:
        """Ask the judge; see :class:`pytest_citecheck.stages.judges.base.Judge` for errors."""
        return self.ask(verdict_ask(claim, passages), verdict_from_object)

    def judge_jointly(self, claim: str, sources: Sequence[Sequence[str]]) -> JointReply:
        """``claim`` on several sources' passages at once (stages/judges/joint.py)."""
        return self.ask(joint_ask(claim, sources), joint_from_object)

    def ask(self, ask: Ask, parse: Callable[[Any], R]) -> R:
        """Send ``ask``, decode its answer with ``parse``: the one way every question
        goes (retries, fallbacks, failures as :meth:`judge` describes them)."""
        body = self.body_for(ask)
        asked_again: list[str] = []
        for _ in range(_MAX_FALLBACKS + 1):
            try:
                sent = send(
                    self._sync_client(), self._request(body), self.retry, self._final_for(body)
                )
            except GaveUp as exc:
                raise self._unavailable(exc) from None
            if sent.unanswered:
                self._warn_once(
                    "unanswered",
                    "%s: a request reached %s but its answer never came; it was sent again "
                    "(counted as billed, unanswered)",
                    self.url,
                )
            found = self._fallback(body, sent.response)
            if found is None:
                break
            body, said = found
            asked_again.append(said)
        if sent.response.is_success:
            self.answered_with(body)
        reply = self._handle(sent, body, ask.name, parse)
        if sent.unanswered:
            # The provider received (and may bill) each cut try: counted, not hidden.
            usage = (reply.usage or Usage()).with_unanswered(sent.unanswered)
            reply = reply.model_copy(update={"usage": usage})
        if asked_again:
            # Carried to the verdict, so the run's summary says it once per judge.
            reply = reply.model_copy(update={"fallback": "; ".join(asked_again)})
        return reply

    def close(self) -> None:
        """Close the client this judge opened itself (a caller's client is left alone)."""
        with self._lock:
            if self._own_client is not None:
                self._own_client.close()
                self._own_client = None

    def __enter__(self) -> HTTPJudge:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _sync_client(self) -> httpx.Client:
        if self.client is not None:
            return self.client
        with self._lock:  # the batch runner judges from several threads
            if self._own_client is None:
                client = httpx.Client(timeout=self.timeout, verify=_ssl_context())
                # Kept for connection reuse; closed with the judge even if nobody
                # calls close(), so no socket is left to a ResourceWarning.
                weakref.finalize(self, client.close)
                self._own_client = client
            return self._own_client

    def _scrub(self, text: str) -> str:
        return scrub(text, [self.api_key] if self.api_key else [])

    def _is_final(self, response: httpx.Response) -> bool:
        """A transient status that retrying cannot fix (out of quota)."""
        codes, _ = error_fields(_json_or_none(response))
        return bool(codes & QUOTA_CODES)

    def _final_for(self, body: dict[str, Any]) -> IsFinal:
        """Not retried as is: out of quota, or a feature to drop (llama-cpp-python
        answers an unsupported ``response_format`` with HTTP 500)."""

        def is_final(response: httpx.Response) -> bool:
            return (
                self._is_final(response)
                or self._fallback(body, response) is not None
                or self._refusal(body, response) is not None
            )

        return is_final

    def _refusal(self, body: dict[str, Any], response: httpx.Response) -> str | None:
        if response.is_success:
            return None
        return self.refusal_hint(body, response.status_code, _json_or_none(response))

    def _fallback(
        self, body: dict[str, Any], response: httpx.Response
    ) -> tuple[dict[str, Any], str] | None:
        """The body to ask again with and what was done, in words; None: no fallback."""
        if response.is_success:
            return None
        found = self.fallback_body(body, response.status_code, _json_or_none(response))
        if found is None or found[0] == body:
            return None
        retry_body, hint = found
        # Once per judge in the log: every call of this judge will do the same.
        self._warn_once(
            hint,
            "%s: the server answered HTTP %d to %s; asking again %s",
            response.status_code,
            self.url,
            hint,
        )
        return retry_body, f"the server answered HTTP {response.status_code}; asked again {hint}"

    def _warn_once(self, key: str, message: str, *args: object) -> None:
        """Log ``message`` (its first argument is this judge's name) once per judge."""
        with self._lock:
            first = key not in self._hinted
            self._hinted.add(key)
        if first:
            log.warning(message, self.name, *args)

    def _unavailable(self, exc: GaveUp) -> StageFailed:
        what = unavailable_text(self.name, self.url, self.timeout, exc)
        return StageFailed(Reason.JUDGE_UNAVAILABLE, self._scrub(what))

    def _handle(self, sent: Sent, body: dict[str, Any], name: str, parse: Callable[[Any], R]) -> R:
        response = sent.response
        payload = _json_or_none(response)
        if response.is_success:
            if payload is None:
                raise StageFailed(
                    Reason.JUDGE_HTTP_ERROR,
                    f"the {self.name} judge answered HTTP {response.status_code} "
                    "with a body that is not JSON",
                )
            try:
                reply = self.parse_answer(payload, name, parse)
            except StageFailed as exc:
                exc.detail = self._scrub(exc.detail)
                exc.args = (exc.detail,)
                raise
            if reply.usage is not None and response.headers.get(BATCH_HEADER):
                # Answered through the provider's batch API: billed at its price.
                reply = reply.model_copy(
                    update={"usage": reply.usage.model_copy(update={"batch": True})}
                )
            if reply.confidence_raw is not None:
                self._warn_once(
                    "confidence_scale",
                    "%s answered confidence %g, outside 0 to 1: the label is kept, the "
                    "confidence read as unknown and the verdict sent to review",
                    reply.confidence_raw,
                )
            return reply
        hint = self._refusal(body, response)
        raise self._http_failure(response, payload, sent.attempts, hint, sent.stopped)

    def _http_failure(
        self,
        response: httpx.Response,
        payload: Any,
        attempts: int,
        hint: str | None = None,
        stopped: str | None = None,
    ) -> Exception:
        status = response.status_code
        codes, message = error_fields(payload)
        code_text = f", {', '.join(sorted(codes))}" if codes else ""
        if status in (401, 403):
            # The provider's message is left out: it may quote the key.
            if not self.api_key:
                why = f"needs an API key and {self.key_env} is not set"
            elif status == 401:
                why = f"rejected the API key in {self.key_env}"
            else:
                why = f"denied the API key in {self.key_env} access to this model"
            return ConfigurationError(
                f"The {self.name} judge {why} (HTTP {status}{code_text}). "
                f"Set {self.key_env} to a valid key with access to {self.model!r}."
            )
        if status == 402 or codes & QUOTA_CODES:
            return ConfigurationError(
                f"The {self.name} judge refused the call for billing reasons "
                f"(HTTP {status}{code_text}): the account behind {self.key_env} is out of "
                "quota or over its spend limit."
            )
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        said = f": {shorten(message, _ERROR_CHARS)}" if message else ""
        if stopped is not None:
            # Why it was not retried first: the provider's words repeat the status.
            said = f" ({stopped}){said}"
        if hint is not None:
            # The fix first: the server's own words can be long.
            said = f" (not retried: {hint}){said}"
        return StageFailed(
            Reason.JUDGE_HTTP_ERROR,
            self._scrub(f"the {self.name} judge answered HTTP {status}{code_text}{tries}{said}"),
        )


def bearer(api_key: str | None) -> dict[str, str]:
    """An ``authorization: Bearer`` header, or none without a key."""
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


def field_of(payload: Mapping[str, Any], *path: str | int) -> Any:
    """``payload[a][b]...`` or None when any step is missing or of the wrong kind."""
    node: Any = payload
    for step in path:
        if isinstance(step, int):
            if not isinstance(node, list) or len(node) <= step:
                return None
        elif not isinstance(node, dict):
            return None
        node = node[step] if isinstance(step, int) else node.get(step)
    return node


def unavailable_text(name: str, url: str, timeout: float, exc: GaveUp) -> str:
    """Why the judge ``name`` at ``url`` gave no answer, for ``judge_unavailable``:
    never sent, no answer in time, a closed connection, an unknown host, no connection."""
    error = exc.error
    tries = f"{exc.attempts} attempt(s)"
    if exc.attempts == 0:
        # Never sent: the deadline ran out while it waited for a slot.
        what = f"the {name} judge was not asked: {error}"
    elif isinstance(error, httpx.TimeoutException) and not isinstance(
        error, httpx.ConnectTimeout | httpx.PoolTimeout
    ):
        what = (
            f"the {name} judge at {url} accepted the connection but sent no "
            f"answer within {timeout:g} s ({type(error).__name__}, {tries})"
        )
    elif isinstance(error, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        what = (
            f"the {name} judge at {url} accepted the connection but closed it "
            f"without answering ({type(error).__name__}, {tries})"
        )
    elif unresolved_host(error) is not None:
        what = f"could not reach the {name} judge at {url}: {transport_text(error)} ({tries})"
    else:
        what = (
            f"could not reach the {name} judge at {url}: no connection "
            f"({type(error).__name__}, {tries})"
        )
    return what
