"""``citecheck serve``: verification over HTTP, a thin front end over the engine.

- ``GET /health`` -- 200 ``{"status": "ok"}``; with the key (or when the
  service runs without one), also the version, the judge, the slots in use and
  which tokens and keys are configured, by variable name only (never a value);
- ``POST /verify {"claim", "urls", "judge"?}`` -- the claim label and one
  verdict per URL (url, label, reason, evidence_quote, confidence, final_url,
  original_status, rid);
- OpenAPI at ``/docs`` (and ``/openapi.json``).

The service spends the operator's credits, so every request is checked before
anything is spent, in this order:

1. the ``Host`` header is one of ``allowed_hosts`` (400): a DNS-rebinding page
   cannot reach a loopback service under its own name;
2. ``Authorization: Bearer <key>`` when the service has a key (401, compared in
   constant time); :func:`binding_problem` makes a key mandatory off loopback;
3. the body is ``application/json`` (415): a cross-site form or ``text/plain``
   post cannot be sent without a CORS preflight, which this service never grants;
4. the body arrives within ``read_timeout`` (408) and is at most
   ``max_body_bytes`` (413);
5. the JSON has no duplicate keys and no deep nesting, the claim and URLs
   follow the claim files' schema, at most ``max_urls`` URLs and
   ``max_claim_chars`` characters (422);
6. the judge is one a provider serves (422) and one the operator allows (403);
7. every URL passes the URL policy (422, ``url_refused``;
   :mod:`pytest_citecheck.stages.url_policy`);
8. tokens and keys are configured (503 naming the variable; replaying a recorded
   request needs none) and the audit index can be written now (503);
9. a verification slot frees up within ``queue_wait`` seconds (503 with
   ``Retry-After``; at most ``concurrency`` claims are verified at once).

With ``record_mode`` and ``cassettes`` (``--record MODE --cassettes DIR``) each
request records into or replays from its own cassette, named by what it verifies
(:func:`~pytest_citecheck.recording.recorder.request_cassette_name`); requests for
one cassette take turns (:mod:`pytest_citecheck.recording.lock`), so it is recorded
once. A request with no recording to replay is 404, one whose recording does not fit
it 409, the detail naming the cassette inside the folder and the fix.

A failure after the spending (the audit index locked meanwhile) still answers
the verdicts, with ``audit_problem`` saying what was not recorded. Details
never show an internal URL (:func:`~pytest_citecheck.stages.url_policy.hide_internal_urls`).
Slow request headers are cut off by :func:`uvicorn_config`'s protocol; a client
that hangs up mid-body is one log line. With ``audit`` set, each request's
citations are appended to the audit index (one run id per server process; the
claim id is the request id returned in the response).

Needs the ``service`` extra (FastAPI, uvicorn); nothing here is imported by
the plugin.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import secrets
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from pytest_citecheck import __version__
from pytest_citecheck.claims.loader import ClaimValidationError, parse_claim
from pytest_citecheck.claims.models import (
    Claim,
    ClaimResult,
    Label,
    Reason,
    Verdict,
    check_judge,
)
from pytest_citecheck.core.defaults import DEFAULT_CONCURRENCY, DEFAULT_JUDGE, DEFAULT_REVIEW_BELOW
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.core.option_table import OPTIONS, cli_terms, composed_fields
from pytest_citecheck.core.prices import Prices, money
from pytest_citecheck.core.record_mode import LIVE, RecordMode
from pytest_citecheck.core.secrets import SECRET_ENV_VARS, scrub
from pytest_citecheck.core.terms import JUDGE_FROM_CLAIM, JUDGE_FROM_FLAG, Terms
from pytest_citecheck.engine import settings_map
from pytest_citecheck.engine.core import Engine, EngineSettings
from pytest_citecheck.frontends.service_defaults import (
    DEFAULT_AUDIT_WAIT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CLAIM_CHARS,
    DEFAULT_MAX_URLS,
    DEFAULT_QUEUE_WAIT,
    DEFAULT_READ_TIMEOUT,
    LOOPBACK_HOSTS,
    MAX_CONNECTIONS,
    MAX_JSON_DEPTH,
    RETRY_AFTER_SECONDS,
)
from pytest_citecheck.recording.recorder import request_cassette_name
from pytest_citecheck.reports.audit import AuditError, AuditIndex
from pytest_citecheck.reports.finish import AuditRun
from pytest_citecheck.stages.judges import parse_judge_spec
from pytest_citecheck.stages.url_policy import PUBLIC, check, hide_internal_urls

if TYPE_CHECKING:
    import uvicorn

log = logging.getLogger("pytest_citecheck.service")

# Variables /health reports as configured or not (names only).
HEALTH_ENV_VARS = (*SECRET_ENV_VARS, "OLLAMA_HOST", "CITECHECK_JUDGE_BASE_URL")


@dataclass(frozen=True)
class ServiceConfig:
    """What ``citecheck serve`` was started with."""

    judge: str | None = None
    judge_base_url: str | None = None
    ranker: str | None = None
    review_below: float | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    audit: Path | None = None
    max_urls: int = DEFAULT_MAX_URLS
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_claim_chars: int = DEFAULT_MAX_CLAIM_CHARS
    # The bearer key clients must send; None: no key (allowed on loopback only,
    # see binding_problem).
    api_key: str | None = None
    # Host header names accepted ("*" any, "*.example.com" a domain and its subdomains).
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    # Judges a caller may name besides the service's own (judge, else DEFAULT_JUDGE).
    allowed_judges: tuple[str, ...] = ()
    url_policy: str = PUBLIC
    queue_wait: float = DEFAULT_QUEUE_WAIT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    audit_wait: float = DEFAULT_AUDIT_WAIT
    # The spending cap of this service run (pytest_citecheck.engine.budget) and the
    # prices it counts money at.
    prices: Prices = field(default_factory=Prices)
    max_cost: float | None = None
    max_credits: float | None = None
    # Record into / replay from DIR/<request_cassette_name>.yaml, as batch's --record;
    # None: live, nothing recorded.
    record_mode: RecordMode | None = None
    cassettes: Path | None = None

    def __post_init__(self) -> None:
        # An API caller may name the mode ("once"); the service holds a RecordMode.
        if self.record_mode is not None:
            object.__setattr__(self, "record_mode", RecordMode(self.record_mode))

    def engine_settings(self) -> EngineSettings:
        """The service's one mapping onto the engine's settings (``citecheck serve``'s
        flags reach this class through ``cli.service_config``): every field the option
        table says sets an engine setting; what it leaves out is listed, with why, in
        the table and in tests/integration/test_settings_mapping.py."""
        composed = composed_fields("engine")
        values = {
            option.name: getattr(self, option.service)
            for option in OPTIONS
            if option.target == "engine"
            and isinstance(option.service, str)
            and option.target_field not in composed
        }
        if values.get("review_below") is None:
            values["review_below"] = DEFAULT_REVIEW_BELOW
        return settings_map.engine_settings(
            values,
            # The judge is each request's (or the service's default), never a run-wide one.
            judge=None,
            # Without cassettes the service is live: nothing is recorded or replayed.
            record_mode=self.record_mode if self.record_mode and self.cassette_folder else LIVE,
            prices=self.prices,
            terms=service_terms(self.cassettes if self.cassette_folder else None),
        )

    @property
    def cassette_folder(self) -> bool:
        """Whether requests record into / replay from :attr:`cassettes`."""
        return self.cassettes is not None and self.record_mode is not None

    def cassette_for(self, claim: Claim, judges: Sequence[str]) -> Path | None:
        """The cassette of a request's claim (None: the service is live)."""
        if self.cassettes is None or self.record_mode is None:
            return None
        targets = [c.target for c in claim.citations]
        return self.cassettes / request_cassette_name(claim.claim, targets, judges)


# -- the wire: request and response models (they are the OpenAPI schema) ----------------


class VerifyRequest(BaseModel):
    """``POST /verify``: one claim and the URLs an LLM cited for it."""

    model_config = ConfigDict(extra="forbid")

    claim: str = Field(description="The sentence the LLM claimed.")
    urls: list[str] = Field(description="The http(s) URLs it cited for the claim (at least one).")
    judge: str | None = Field(
        default=None,
        description="PROVIDER:MODEL; default: the server's --judge. Only judges the operator "
        "allows (--allow-judge).",
    )

    @field_validator("urls")
    @classmethod
    def _urls(cls, urls: list[str]) -> list[str]:
        if not urls:
            raise ValueError("no URLs: cite at least one http(s) URL for the claim")
        return urls

    @field_validator("judge")
    @classmethod
    def _judge(cls, judge: str | None) -> str | None:
        return None if judge is None else check_judge(judge)


class CitationVerdict(BaseModel):
    """The outcome for one URL."""

    url: str
    label: Label
    reason: str | None = None
    evidence_quote: str | None = None
    confidence: float | None = None
    final_url: str | None = None
    original_status: int | None = None
    rid: str | None = Field(
        default=None, description="Re-read the page with `citecheck audit page RID`."
    )
    review: bool = False
    detail: str | None = None


class VerifyResponse(BaseModel):
    """The claim label and one verdict per URL, in request order."""

    id: str = Field(description="The request id (the claim id in the audit index).")
    claim: str
    label: Label
    verdicts: list[CitationVerdict]
    audit_problem: str | None = Field(
        default=None,
        description="Set when the verdicts could not be written to the audit index "
        "(they are answered all the same).",
    )


class Health(BaseModel):
    """``status`` for anyone; the rest only with the key (or on a service without one)."""

    status: str
    version: str | None = None
    judge: str | None = None
    allowed_judges: list[str] | None = None
    concurrency: int | None = None
    busy: int | None = Field(default=None, description="Verification slots in use.")
    audit: bool | None = None
    url_policy: str | None = None
    record: str | None = Field(
        default=None,
        description="The record mode of --record (none: replays only); absent: live.",
    )
    configured: dict[str, bool] | None = Field(
        default=None,
        description="Environment variables the service can use: set or not (never values).",
    )


class Problem(BaseModel):
    """An error body: FastAPI's shape, ``detail`` a sentence or a list of problems."""

    detail: str | list[dict[str, Any]]


# -- the app ------------------------------------------------------------------------------


class Rejected(Exception):
    """A request answered with an error status before any verification."""

    def __init__(
        self,
        status: int,
        detail: str | list[dict[str, Any]],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(status, detail)
        self.status = status
        self.detail = detail
        self.headers = dict(headers or {})

    def response(self) -> JSONResponse:
        return JSONResponse({"detail": self.detail}, status_code=self.status, headers=self.headers)


class _Disconnected(Exception):
    """The client hung up before its body arrived: nothing to answer."""


def _host_name(header: str) -> str:
    """The Host header without its port, lower case, IPv6 brackets removed."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def host_allowed(header: str | None, allowed: Sequence[str]) -> bool:
    if not header:
        return False
    name = _host_name(header).rstrip(".")
    for pattern in allowed:
        pattern = pattern.strip().lower().strip("[]").rstrip(".")
        if pattern == "*" or pattern == name:
            return True
        if pattern.startswith("*.") and (name == pattern[2:] or name.endswith(pattern[1:])):
            return True
    return False


class HostAllowList:
    """ASGI middleware: any request (docs and 404s included) whose Host header is not
    allowed is 400, before routing."""

    def __init__(self, app: ASGIApp, allowed: Sequence[str]) -> None:
        self.app = app
        self.allowed = tuple(allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            host = headers.get(b"host", b"").decode("latin-1")
            if not host_allowed(host, self.allowed):
                reply = JSONResponse(
                    {
                        "detail": "this service does not answer to that Host header; the "
                        "operator allows more names with --allowed-host"
                    },
                    status_code=400,
                )
                await reply(scope, receive, send)
                return
        await self.app(scope, receive, send)


def authorised(request: Request, api_key: str | None) -> bool:
    """Whether the request carries the key (always, on a service without one)."""
    if api_key is None:
        return True
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return False
    return secrets.compare_digest(given.strip().encode(), api_key.encode())


def _require_key(request: Request, api_key: str | None) -> None:
    if not authorised(request, api_key):
        raise Rejected(
            401,
            "missing or wrong service key: send `Authorization: Bearer <key>`",
            headers={"WWW-Authenticate": "Bearer"},
        )


def _require_json(request: Request) -> None:
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise Rejected(
            415,
            f"the body must be application/json, not {kind[:80] or 'untyped'}: send "
            "`Content-Type: application/json`",
        )


async def _read_body(request: Request, limit: int, timeout: float | None = None) -> bytes:
    """The body, or :class:`Rejected`: 413 as soon as it is known to exceed ``limit``,
    408 when it has not all arrived within ``timeout`` seconds."""
    too_large = Rejected(413, f"the request body is larger than {limit} bytes")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise too_large
                chunks.append(chunk)
    except TimeoutError:
        raise Rejected(
            408,
            f"the request body did not arrive within {timeout:g} s",
            headers={"Connection": "close"},
        ) from None
    except ClientDisconnect:
        raise _Disconnected from None
    return b"".join(chunks)


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen.add(key)
    return dict(pairs)


def _depth(body: bytes) -> int:
    """How deeply the JSON in ``body`` nests arrays and objects (strings skipped)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def parse_json(body: bytes) -> Any:
    """The body's JSON, or :class:`Rejected` (422): not JSON, a key given twice (claim
    files refuse those too), or nested deeper than :data:`MAX_JSON_DEPTH`."""

    def refuse(msg: str, kind: str) -> Rejected:
        return Rejected(422, [{"loc": ["body"], "msg": msg, "type": kind}])

    # Checked before parsing: json (and pydantic after it) would recurse into any depth
    # and raise RecursionError.
    if _depth(body) > MAX_JSON_DEPTH:
        raise refuse(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep", "json_invalid")
    try:
        return json.loads(body, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise refuse(
            f"the key {exc.args[0]!r} is given twice; give each key once", "json_invalid"
        ) from None
    except ValueError as exc:
        raise refuse(f"invalid JSON: {exc}", "json_invalid") from None


def _problems(exc: ValidationError, fields: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Pydantic's errors without the echoed input (it may be large), with the
    schema's fix where it gives one: a validator's own words (without pydantic's
    ``Value error, `` in front), and for an unknown key close to one of ``fields``
    (the body's), the key it was probably meant to be."""
    import difflib

    known = list(fields)
    out = []
    for err in exc.errors(include_url=False, include_input=False):
        ctx = err.get("ctx", {})
        msg = str(ctx["error"]) if err["type"] == "value_error" and "error" in ctx else err["msg"]
        problem: dict[str, Any] = {"loc": ["body", *err["loc"]], "msg": msg}
        fix = ctx.get("fix")
        if err["type"] == "extra_forbidden" and err["loc"]:
            close = difflib.get_close_matches(str(err["loc"][-1]), known, n=1, cutoff=0.6)
            if close:
                fix = f'did you mean "{close[0]}"?'
                problem["msg"] = f'unknown field "{err["loc"][-1]}": {fix}'
        if fix:
            problem["fix"] = fix
        out.append({**problem, "type": err["type"]})
    return out


def to_claim(
    request: VerifyRequest, claim_id: str, max_claim_chars: int = DEFAULT_MAX_CLAIM_CHARS
) -> Claim:
    """The request as a claim, checked by the claim files' own schema, the length cap
    included (raises :class:`~pytest_citecheck.claims.loader.ClaimValidationError`)."""
    claim = parse_claim(
        {"id": claim_id, "claim": request.claim, "citations": request.urls},
        max_claim_chars=max_claim_chars,
        terms=SERVICE_TERMS,
    )
    # The judge is a file-level setting in claim files; the request carries it beside the claim.
    return claim.model_copy(update={"judge": request.judge}) if request.judge else claim


def _schema_problems(exc: ClaimValidationError) -> list[dict[str, Any]]:
    """The schema's problems, located in the request's own terms (``urls``, not ``citations``)."""
    out = []
    for problem in exc.problems:
        loc: list[str | int] = list(problem.loc)
        if loc[:1] == ["citations"]:
            # A URL citation is a plain string in the request: urls[i], not citations[i].url.
            loc = ["urls", *loc[1:2]]
        out.append(
            {
                "loc": ["body", *loc],
                "msg": problem.problem,
                "fix": problem.fix,
                "type": "value_error",
            }
        )
    return out


def to_response(request_id: str, result: ClaimResult) -> VerifyResponse:
    return VerifyResponse(
        id=request_id,
        claim=result.claim,
        label=result.label,
        verdicts=[
            CitationVerdict(
                url=v.url,
                label=v.label,
                reason=v.reason,
                evidence_quote=v.evidence_quote,
                confidence=v.confidence,
                final_url=v.final_url,
                original_status=v.original_status,
                rid=v.rid,
                review=v.review,
                detail=public_detail(v.detail) if v.detail else None,
            )
            for v in result.verdicts
        ],
    )


def public_detail(text: str) -> str:
    """A message as a caller may see it: no secret, no internal URL."""
    return hide_internal_urls(scrub(text))


# How the service's replies name what a caller can change: the request's judge,
# the flags ``citecheck serve`` was started with. Live, it records and replays nothing.
SERVICE_TERMS = Terms(
    options={**cli_terms("serve", prefix="the server's "), "judge": "the request's judge"},
    judge_origins={
        JUDGE_FROM_FLAG: "the server's --judge",
        JUDGE_FROM_CLAIM: "the request's judge",
    },
)


def budget_detail(engine: Engine) -> str:
    """The 503 detail once the service's spending cap is reached."""
    budget = engine.budget
    spent = []
    if budget.max_cost is not None:
        spent.append(f"spent {money(budget.spent_cost)} of {money(budget.max_cost)}")
    if budget.max_credits is not None:
        spent.append(f"{budget.spent_credits:g} of {budget.max_credits:g} credits")
    options = " / ".join(
        SERVICE_TERMS.option(name)
        for name, cap in (("max_cost", budget.max_cost), ("max_credits", budget.max_credits))
        if cap is not None
    )
    return (
        f"the service's spending cap ({budget.describe()}) is reached ({', '.join(spent)}): "
        f"nothing was fetched or judged for this request, and no request is verified until "
        f"the operator restarts the service with a higher cap ({options})"
    )


def service_terms(cassettes: Path | None) -> Terms:
    """:data:`SERVICE_TERMS`; with a cassette folder, also how a recording is made
    (the operator restarts the service with ``--record``) and a cassette named by its
    file name in that folder, never by a path of the server's."""
    if cassettes is None:
        return SERVICE_TERMS

    def record(request_id: str, mode: str) -> str:
        return (
            f"citecheck serve --record {mode} --cassettes DIR (the operator, DIR being this "
            "service's cassette folder, with the tokens and keys set)"
        )

    def cassette(path: Path) -> str:
        try:
            name = path.relative_to(cassettes).as_posix()
        except ValueError:
            name = path.name
        return f"{name} in the service's cassette folder"

    return replace(
        SERVICE_TERMS, record=record, replay="the server's --record none", cassette=cassette
    )


def unconfigured_detail(message: str) -> str:
    """A 503 detail: one line per missing variable joined with "; "."""
    lines = [line.strip().removeprefix("- ") for line in message.splitlines() if line.strip()]
    return scrub("; ".join(lines))


def same_judge(a: str, b: str) -> bool:
    """Whether two judge specs name the same judge (the provider in any case)."""
    pa, _, ma = a.strip().partition(":")
    pb, _, mb = b.strip().partition(":")
    return pa.lower() == pb.lower() and ma == mb


def claim_from_body(
    body: bytes,
    request_id: str,
    config: ServiceConfig,
    allowed_judges: Sequence[str] | None = None,
    judge_problem: Callable[[str], str | None] | None = None,
) -> Claim:
    """The claim a ``/verify`` body asks about, or :class:`Rejected` saying which rule
    it breaks: JSON, the request's shape and caps, the claim files' schema (422), a
    judge nobody can build (422, ``judge_problem`` says why), the judge allow-list
    (403), then the URL policy (422). ``allowed_judges`` None: any."""
    try:
        wanted = VerifyRequest.model_validate(parse_json(body))
    except ValidationError as exc:
        raise Rejected(422, _problems(exc, VerifyRequest.model_fields)) from None
    if len(wanted.urls) > config.max_urls:
        msg = f"{len(wanted.urls)} URLs; at most {config.max_urls} per request"
        raise Rejected(422, [{"loc": ["body", "urls"], "msg": msg, "type": "too_long"}])
    if wanted.judge is None and config.judge is not None:
        wanted = wanted.model_copy(update={"judge": config.judge})
    try:
        claim = to_claim(wanted, request_id, config.max_claim_chars)
    except ClaimValidationError as exc:
        raise Rejected(422, _schema_problems(exc)) from None
    judge = claim.judge or DEFAULT_JUDGE
    unknown = judge_problem(judge) if judge_problem is not None else None
    if unknown is not None:
        msg = public_detail(unknown)
        raise Rejected(422, [{"loc": ["body", "judge"], "msg": msg, "type": "value_error"}])
    if allowed_judges is not None and not any(same_judge(judge, a) for a in allowed_judges):
        raise Rejected(
            403,
            f"judge {judge!r} is not allowed on this service; it allows "
            f"{', '.join(allowed_judges)} (the operator adds more with --allow-judge)",
        )
    problems = []
    for i, citation in enumerate(claim.citations):
        why = check(config.url_policy, citation.url or "", extra_hosts=config.allowed_hosts)
        if why is not None:
            problems.append(
                {
                    "loc": ["body", "urls", i],
                    "msg": f"the URL is refused: {why}",
                    "fix": "cite a public http(s) page; nothing was fetched",
                    "type": "url_refused",
                }
            )
    if problems:
        raise Rejected(422, problems)
    return claim


def create_app(
    config: ServiceConfig | None = None,
    engine: Engine | None = None,
    environ: Mapping[str, str] | None = None,
) -> FastAPI:
    """The FastAPI app. ``engine`` defaults to one built from ``config``; the app
    closes an engine it built when it shuts down."""
    config = config or ServiceConfig()
    env: Mapping[str, str] = os.environ if environ is None else environ
    owned = engine is None
    engine = engine or Engine.from_settings(config.engine_settings(), environ=env)
    # One run id per server process: every request's rows are one run.
    audit = (
        AuditRun(AuditIndex(config.audit, busy_timeout=config.audit_wait), "service")
        if config.audit is not None
        else None
    )
    request_ids = itertools.count(1)
    default_judge = config.judge or engine.settings.judge or DEFAULT_JUDGE
    allowed_judges = [default_judge] + [
        j for j in config.allowed_judges if not same_judge(j, default_judge)
    ]
    slots = asyncio.Semaphore(config.concurrency)

    def judge_problem(spec: str) -> str | None:
        """Why no judge can be built for ``spec`` (an unknown provider), else None.

        An allowed judge is built by the engine, so a custom one (StageHooks) counts;
        any other is only parsed, so a caller's made-up names never build (or keep)
        a judge before the allow-list refuses them."""
        try:
            if any(same_judge(spec, a) for a in allowed_judges):
                engine.judge(spec)
            else:
                parse_judge_spec(spec)
        except ValueError as exc:
            return str(exc)
        except ConfigurationError:
            return None  # a missing key or base URL: preflight answers 503 naming it
        return None

    busy = [0]

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        if owned:
            engine.close()

    app = FastAPI(
        title="citecheck",
        version=__version__,
        description="Checks that cited pages support the claims an LLM made (pytest-citecheck).",
        lifespan=lifespan,
    )
    app.add_middleware(HostAllowList, allowed=config.allowed_hosts)

    @app.get("/health", response_model=Health, response_model_exclude_none=True)
    def health(request: Request) -> Health:
        if not authorised(request, config.api_key):
            return Health(status="ok")
        return Health(
            status="ok",
            version=__version__,
            judge=default_judge,
            allowed_judges=allowed_judges,
            concurrency=config.concurrency,
            busy=busy[0],
            audit=audit is not None,
            url_policy=config.url_policy,
            record=config.record_mode if config.cassette_folder else None,
            configured={name: bool(env.get(name)) for name in HEALTH_ENV_VARS},
        )

    def check_audit() -> None:
        """The audit index can take a row now (raises :class:`Rejected`, 503)."""
        if audit is None:
            return
        try:
            audit.index.check(write=True)
        except (AuditError, OSError, sqlite3.Error) as exc:
            log.warning("audit index %s cannot be written: %s", config.audit, exc)
            raise Rejected(
                503,
                "the service's audit index cannot be written right now, so nothing was "
                "verified; the operator sees why in the service log",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            ) from None

    def record(request_id: str, result: ClaimResult) -> str | None:
        """Write the audit rows; after the spending a failure is reported, not raised."""
        if audit is None:
            return None
        problem = audit.record({request_id: result})
        if problem is None:
            return None
        log.warning("request %s: audit rows not written: %s", request_id, problem)
        return (
            "the verdicts could not be written to the service's audit index (the "
            "operator sees why in the service log)"
        )

    async def take_slot() -> Callable[[], None]:
        try:
            await asyncio.wait_for(slots.acquire(), timeout=config.queue_wait)
        except TimeoutError:
            raise Rejected(
                503,
                f"all {config.concurrency} verification slots have been busy for "
                f"{config.queue_wait:g} s: try again in {RETRY_AFTER_SECONDS} s",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            ) from None
        busy[0] += 1

        def release() -> None:
            busy[0] -= 1
            slots.release()

        return release

    @app.post(
        "/verify",
        response_model=VerifyResponse,
        responses={
            401: {"model": Problem, "description": "The service key is missing or wrong."},
            403: {"model": Problem, "description": "The judge is not one the service allows."},
            404: {
                "model": Problem,
                "description": "Replaying (--record none): the request has no recording.",
            },
            408: {"model": Problem, "description": "The body did not arrive in time."},
            409: {
                "model": Problem,
                "description": "Replaying: the request's recording does not fit it (stale "
                "or corrupt).",
            },
            413: {"model": Problem, "description": "The body is larger than the limit."},
            415: {"model": Problem, "description": "The body is not application/json."},
            422: {
                "model": Problem,
                "description": "The body breaks a claim-file rule, a cap or the URL policy, "
                "or names a judge no provider serves.",
            },
            503: {
                "model": Problem,
                "description": "A token or key is not configured, the audit index cannot be "
                "written, every slot is busy (with Retry-After), or the service's spending "
                "cap is reached.",
            },
        },
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": VerifyRequest.model_json_schema()}},
            }
        },
    )
    async def verify(request: Request) -> Any:
        request_id = f"r{next(request_ids):06d}"
        try:
            _require_key(request, config.api_key)
            _require_json(request)
            body = await _read_body(request, config.max_body_bytes, config.read_timeout)
            claim = claim_from_body(body, request_id, config, allowed_judges, judge_problem)
        except Rejected as exc:
            return exc.response()
        except _Disconnected:
            client = request.client.host if request.client else "a client"
            log.info("request %s: %s disconnected before sending its body", request_id, client)
            return Response(status_code=400)
        cassette = config.cassette_for(claim, engine.settings.specs_for(claim))
        try:
            # Replaying (--record none, or a cassette `once` will not change) needs no
            # token or key: preflight asks the engine which claims will record.
            engine.preflight([claim], cassette_for=lambda _: cassette)
        except ConfigurationError as exc:
            detail = public_detail(unconfigured_detail(str(exc)))
            return JSONResponse({"detail": detail}, status_code=503)
        try:
            await run_in_threadpool(check_audit)
            release = await take_slot()
        except Rejected as exc:
            return exc.response()
        try:
            result = await asyncio.wrap_future(engine.submit(claim, cassette, request_id))
        finally:
            release()
        if any(v.reason == Reason.BUDGET_EXHAUSTED for v in result.verdicts):
            # Nothing was fetched or judged: no verdict to report or audit.
            return JSONResponse({"detail": budget_detail(engine)}, status_code=503)
        unanswered = _unanswered(result)
        audit_problem = await run_in_threadpool(record, request_id, result)
        if unanswered is not None:
            status, verdict = unanswered
            return JSONResponse({"detail": public_detail(verdict.detail or "")}, status_code=status)
        reply = to_response(request_id, result)
        return reply.model_copy(update={"audit_problem": audit_problem}) if audit_problem else reply

    return app


# Verdict reasons that mean the service could not answer the request at all, and the
# status it answers instead of the verdicts: not configured (e.g. a page that needs
# CRAWLBASE_JS_TOKEN, a token the API refused), no recording of the request to replay,
# a recording that does not fit it.
_UNANSWERED = {
    Reason.CONFIGURATION: 503,
    Reason.NO_RECORDING: 404,
    Reason.STALE_RECORDING: 409,
    Reason.CORRUPT_RECORDING: 409,
}


def _unanswered(result: ClaimResult) -> tuple[int, Verdict] | None:
    """The status and the verdict that explains it, when the result is no answer."""
    for reason, status in _UNANSWERED.items():
        found = next((v for v in result.verdicts if v.reason == reason), None)
        if found is not None:
            return status, found
    return None


def uvicorn_config(app: ASGIApp, config: ServiceConfig, **kwargs: Any) -> uvicorn.Config:
    """uvicorn's configuration for ``app``: its HTTP protocol closes a connection whose
    request headers have not all arrived within ``config.read_timeout`` seconds."""
    import h11
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    timeout = config.read_timeout

    class HeaderDeadline(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()  # the next request on this connection gets its own deadline

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            if not self.transport.is_closing():
                self._header_timer = self.loop.call_later(timeout, self._headers_late)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_late(self) -> None:
            self._header_timer = None
            # IDLE: the request line and headers have not all arrived.
            if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
                return
            if self.conn.trailing_data[0]:
                client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
                log.info("%s sent no complete request headers within %g s", client, timeout)
                self.transport.write(
                    b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n"
                    b"connection: close\r\n\r\n"
                )
            self.transport.close()

    if "log_config" not in kwargs:
        # The service's own lines (a client that hung up, an audit problem) beside uvicorn's.
        import copy

        from uvicorn.config import LOGGING_CONFIG

        logging_config = copy.deepcopy(LOGGING_CONFIG)
        logging_config["loggers"]["pytest_citecheck"] = {
            "handlers": ["default"],
            "level": "INFO",
            "propagate": False,
        }
        kwargs["log_config"] = logging_config
    kwargs.setdefault("timeout_keep_alive", max(1, min(5, int(timeout))))
    # Connections (idle ones included) beyond this get uvicorn's immediate 503.
    kwargs.setdefault("limit_concurrency", MAX_CONNECTIONS)
    return uvicorn.Config(app, http=HeaderDeadline, **kwargs)
