"""The FastAPI app: ``GET /health``, ``POST /verify`` and ``POST /crawler/deliveries``,
assembled by :func:`create_app` from named pieces (the audit writer, the judge checks,
the verification slots, the Crawler deliveries' receiver)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from pytest_citecheck import __version__
from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.claims.results import ClaimResult, Verdict
from pytest_citecheck.core.defaults import DEFAULT_JUDGE
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.core.secrets import SECRET_ENV_VARS
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.frontends.service.checks import (
    HostAllowList,
    Rejected,
    _Disconnected,
    _read_body,
    _require_json,
    _require_key,
    authorised,
    claim_from_body,
    same_judge,
)
from pytest_citecheck.frontends.service.config import ServiceConfig
from pytest_citecheck.frontends.service.defaults import RETRY_AFTER_SECONDS
from pytest_citecheck.frontends.service.terms import (
    budget_detail,
    public_detail,
    unconfigured_detail,
)
from pytest_citecheck.frontends.service.webhook_route import add_deliveries
from pytest_citecheck.frontends.service.wire import (
    Health,
    Problem,
    VerifyRequest,
    VerifyResponse,
    to_response,
)
from pytest_citecheck.large_audit.webhook import Receiver
from pytest_citecheck.reports.audit import AuditError, AuditIndex
from pytest_citecheck.reports.finish import AuditRun
from pytest_citecheck.stages.judges import parse_judge_spec

log = logging.getLogger("pytest_citecheck.service")

# Variables /health reports as configured or not (names only).
HEALTH_ENV_VARS = (*SECRET_ENV_VARS, "OLLAMA_HOST", "CITECHECK_JUDGE_BASE_URL")


def _audit_run(config: ServiceConfig) -> AuditRun | None:
    """The audit index the service writes (None without ``audit``)."""
    # One run id per server process: every request's rows are one run.
    audit = (
        AuditRun(AuditIndex(config.audit, busy_timeout=config.audit_wait), "service")
        if config.audit is not None
        else None
    )
    return audit


def _judges(config: ServiceConfig, engine: Engine) -> tuple[str, list[str]]:
    """The default judge, and every judge a request may name (the default first)."""
    default_judge = config.judge or engine.settings.judge or DEFAULT_JUDGE
    allowed_judges = [default_judge] + [
        j for j in config.allowed_judges if not same_judge(j, default_judge)
    ]
    return default_judge, allowed_judges


def _judge_checker(engine: Engine, allowed_judges: Sequence[str]) -> Callable[[str], str | None]:
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

    return judge_problem


def _audit_writer(
    config: ServiceConfig, audit: AuditRun | None
) -> tuple[Callable[[], None], Callable[[str, ClaimResult], str | None]]:
    """Before the spending, whether the audit index can take a row; after it, the rows."""

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

    return check_audit, record


def _slot_taker(
    config: ServiceConfig, busy: list[int]
) -> Callable[[], Awaitable[Callable[[], None]]]:
    """A verification slot within ``queue_wait`` (else 503); ``busy`` counts those taken."""
    slots = asyncio.Semaphore(config.concurrency)

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

    return take_slot


def _add_health(
    app: FastAPI,
    config: ServiceConfig,
    env: Mapping[str, str],
    default_judge: str,
    allowed_judges: list[str],
    audit: AuditRun | None,
    busy: list[int],
) -> None:
    """``GET /health``: the status for anyone; the details with the key."""

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


def _add_verify(
    app: FastAPI,
    config: ServiceConfig,
    engine: Engine,
    allowed_judges: Sequence[str],
    judge_problem: Callable[[str], str | None],
    check_audit: Callable[[], None],
    record: Callable[[str, ClaimResult], str | None],
    take_slot: Callable[[], Awaitable[Callable[[], None]]],
) -> None:
    """``POST /verify``: the checks before any spending, then the claim verified."""
    request_ids = itertools.count(1)

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
    audit = _audit_run(config)
    default_judge, allowed_judges = _judges(config, engine)
    judge_problem = _judge_checker(engine, allowed_judges)
    check_audit, record = _audit_writer(config, audit)
    busy = [0]
    take_slot = _slot_taker(config, busy)
    receiver = Receiver(config.jobs_dir) if config.jobs_dir is not None else None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        if receiver is not None:
            receiver.close()
        if owned:
            engine.close()

    app = FastAPI(
        title="citecheck",
        version=__version__,
        description="Checks that cited pages support the claims an LLM made (pytest-citecheck).",
        lifespan=lifespan,
    )
    add_deliveries(app, config, receiver)
    # Added last, so it runs first: the Host check comes before every route, the
    # deliveries' too.
    app.add_middleware(HostAllowList, allowed=config.allowed_hosts)
    _add_health(app, config, env, default_judge, allowed_judges, audit, busy)
    _add_verify(app, config, engine, allowed_judges, judge_problem, check_audit, record, take_slot)
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
