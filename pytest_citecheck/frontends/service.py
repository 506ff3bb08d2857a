"""``citecheck serve``: verification over HTTP, a thin front end over the engine.

- ``GET /health`` -- 200 with the version and which tokens and keys are
  configured, by variable name only (never a value);
- ``POST /verify {"claim", "urls", "judge"?}`` -- the claim label and one
  verdict per URL (url, label, reason, evidence_quote, confidence, final_url,
  original_status, rid);
- OpenAPI at ``/docs`` (and ``/openapi.json``).

A body is read only up to ``max_body_bytes`` (413 past it) and checked by the
same schema as claim files (422 with the rule that was broken). A missing
token or key is 503 whose detail names the environment variable. Every request
shares one engine, whose pool verifies at most ``concurrency`` claims at once;
requests beyond that wait their turn. With ``audit`` set, each request's
citations are appended to the audit index (one run id per server process; the
claim id is the request id returned in the response).

Needs the ``service`` extra (FastAPI, uvicorn); nothing here is imported by
the plugin.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pytest_citecheck import __version__
from pytest_citecheck.claims.loader import ClaimValidationError, parse_claim
from pytest_citecheck.claims.models import Claim, ClaimResult, Label, Reason, check_judge
from pytest_citecheck.core.defaults import DEFAULT_CONCURRENCY, DEFAULT_JUDGE, DEFAULT_REVIEW_BELOW
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.core.secrets import SECRET_ENV_VARS, scrub
from pytest_citecheck.core.terms import JUDGE_FROM_CLAIM, JUDGE_FROM_FLAG, Terms
from pytest_citecheck.engine.core import Engine, EngineSettings
from pytest_citecheck.reports.audit import AuditIndex, new_run_id

DEFAULT_MAX_URLS = 20
DEFAULT_MAX_BODY_BYTES = 65_536
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

    def engine_settings(self) -> EngineSettings:
        # The service is live: nothing is recorded or replayed ("all" + no cassette).
        return EngineSettings(
            record_mode="all",
            judge=None,
            judge_base_url=self.judge_base_url,
            concurrency=self.concurrency,
            ranker=self.ranker,
            review_below=(DEFAULT_REVIEW_BELOW if self.review_below is None else self.review_below),
            terms=SERVICE_TERMS,
        )


# -- the wire: request and response models (they are the OpenAPI schema) ----------------


class VerifyRequest(BaseModel):
    """``POST /verify``: one claim and the URLs an LLM cited for it."""

    model_config = ConfigDict(extra="forbid")

    claim: str = Field(description="The sentence the LLM claimed.")
    urls: list[str] = Field(description="The http(s) URLs it cited for the claim.")
    judge: str | None = Field(
        default=None, description="PROVIDER:MODEL; default: the server's --judge."
    )

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


class Health(BaseModel):
    status: str
    version: str
    judge: str
    concurrency: int
    audit: bool
    configured: dict[str, bool] = Field(
        description="Environment variables the service can use: set or not (never values)."
    )


class Problem(BaseModel):
    """An error body: FastAPI's shape, ``detail`` a sentence or a list of problems."""

    detail: str | list[dict[str, Any]]


# -- the app ------------------------------------------------------------------------------


class Rejected(Exception):
    """A request answered with an error status before any verification."""

    def __init__(self, status: int, detail: str | list[dict[str, Any]]) -> None:
        super().__init__(status, detail)
        self.status = status
        self.detail = detail


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, or :class:`Rejected` (413) as soon as it is known to exceed ``limit``."""
    too_large = Rejected(413, f"the request body is larger than {limit} bytes")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _problems(exc: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors without the echoed input (it may be large), with the
    schema's fix where it gives one."""
    out = []
    for err in exc.errors(include_url=False, include_input=False):
        problem: dict[str, Any] = {"loc": ["body", *err["loc"]], "msg": err["msg"]}
        fix = err.get("ctx", {}).get("fix")
        if fix:
            problem["fix"] = fix
        out.append({**problem, "type": err["type"]})
    return out


def to_claim(request: VerifyRequest, claim_id: str) -> Claim:
    """The request as a claim, checked by the claim files' own schema
    (raises :class:`~pytest_citecheck.claims.loader.ClaimValidationError`)."""
    claim = parse_claim({"id": claim_id, "claim": request.claim, "citations": request.urls})
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
                detail=scrub(v.detail) if v.detail else None,
            )
            for v in result.verdicts
        ],
    )


# How the service's replies name what a caller can change: the request's judge,
# the flags ``citecheck serve`` was started with. It records and replays nothing.
SERVICE_TERMS = Terms(
    options={
        "judge": "the request's judge",
        "judge_base_url": "the server's --judge-base-url",
        "ranker": "the server's --ranker",
        "review_below": "the server's --review-below",
        "concurrency": "the server's --concurrency",
    },
    judge_origins={
        JUDGE_FROM_FLAG: "the server's --judge",
        JUDGE_FROM_CLAIM: "the request's judge",
    },
)


def unconfigured_detail(message: str) -> str:
    """A 503 detail: one line per missing variable joined with "; "."""
    lines = [line.strip().removeprefix("- ") for line in message.splitlines() if line.strip()]
    return scrub("; ".join(lines))


def claim_from_body(body: bytes, request_id: str, config: ServiceConfig) -> Claim:
    """The claim a ``/verify`` body asks about, or :class:`Rejected` (422) saying
    which rule it breaks: JSON, the request's shape, then the claim files' schema."""
    try:
        payload = json.loads(body)
    except ValueError as exc:
        problem = {"loc": ["body"], "msg": f"invalid JSON: {exc}", "type": "json_invalid"}
        raise Rejected(422, [problem]) from None
    try:
        wanted = VerifyRequest.model_validate(payload)
    except ValidationError as exc:
        raise Rejected(422, _problems(exc)) from None
    if len(wanted.urls) > config.max_urls:
        msg = f"{len(wanted.urls)} URLs; at most {config.max_urls} per request"
        raise Rejected(422, [{"loc": ["body", "urls"], "msg": msg, "type": "too_long"}])
    if wanted.judge is None and config.judge is not None:
        wanted = wanted.model_copy(update={"judge": config.judge})
    try:
        return to_claim(wanted, request_id)
    except ClaimValidationError as exc:
        raise Rejected(422, _schema_problems(exc)) from None


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
    audit = AuditIndex(config.audit) if config.audit is not None else None
    run_id = new_run_id()
    request_ids = itertools.count(1)
    default_judge = config.judge or engine.settings.judge or DEFAULT_JUDGE

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

    @app.get("/health", response_model=Health)
    def health() -> Health:
        return Health(
            status="ok",
            version=__version__,
            judge=default_judge,
            concurrency=config.concurrency,
            audit=audit is not None,
            configured={name: bool(env.get(name)) for name in HEALTH_ENV_VARS},
        )

    @app.post(
        "/verify",
        response_model=VerifyResponse,
        responses={
            413: {"model": Problem, "description": "The body is larger than the limit."},
            422: {"model": Problem, "description": "The body breaks a claim-file rule."},
            503: {"model": Problem, "description": "A token or key is not configured."},
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
            body = await _read_body(request, config.max_body_bytes)
            claim = claim_from_body(body, request_id, config)
        except Rejected as exc:
            return JSONResponse({"detail": exc.detail}, status_code=exc.status)
        try:
            engine.preflight([claim])
        except ConfigurationError as exc:
            return JSONResponse({"detail": unconfigured_detail(str(exc))}, status_code=503)
        except ValueError as exc:  # a judge spec that names no known provider
            return JSONResponse(
                {"detail": [{"loc": ["body", "judge"], "msg": str(exc), "type": "value_error"}]},
                status_code=422,
            )
        result = await asyncio.wrap_future(engine.submit(claim))
        unconfigured = next((v for v in result.verdicts if v.reason == Reason.CONFIGURATION), None)
        if audit is not None:
            await run_in_threadpool(audit.record, {request_id: result}, run_id, "service")
        if unconfigured is not None:
            # e.g. a page that needs CRAWLBASE_JS_TOKEN, or a token the API refused.
            return JSONResponse({"detail": scrub(unconfigured.detail or "")}, status_code=503)
        return to_response(request_id, result)

    return app
