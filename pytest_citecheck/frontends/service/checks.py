"""What a request is checked for before anything is spent: the Host header, the key,
the content type, the body's size and arrival, its JSON, the claim files' schema,
the judge and the URL policy. A failed check is :class:`Rejected` with its status."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from pytest_citecheck.claims.loader import ClaimValidationError, parse_claim
from pytest_citecheck.claims.models import Claim
from pytest_citecheck.core.defaults import DEFAULT_JUDGE, DEFAULT_MAX_CLAIM_CHARS
from pytest_citecheck.core.urls import fetch_url
from pytest_citecheck.frontends.service.config import ServiceConfig
from pytest_citecheck.frontends.service.defaults import MAX_JSON_DEPTH
from pytest_citecheck.frontends.service.terms import SERVICE_TERMS, public_detail
from pytest_citecheck.frontends.service.wire import VerifyRequest
from pytest_citecheck.stages.url_policy import check


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


def _same_key(given: str, api_key: str) -> bool:
    """Whether ``given`` is the key, compared in constant time."""
    return secrets.compare_digest(given.strip().encode(), api_key.encode())


def authorised(request: Request, api_key: str | None, *, query_key: bool = False) -> bool:
    """Whether the request carries the key (always, on a service without one): as
    ``Authorization: Bearer <key>``, or with ``query_key`` also as ``?key=<key>``
    (for a caller that cannot send headers, such as a webhook sender)."""
    if api_key is None:
        return True
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and _same_key(given, api_key):
        return True
    if query_key:
        return _same_key(request.query_params.get("key", ""), api_key)
    return False


def _require_key(request: Request, api_key: str | None, *, query_key: bool = False) -> None:
    if not authorised(request, api_key, query_key=query_key):
        how = "`?key=<key>` in the URL or " if query_key else ""
        raise Rejected(
            401,
            f"missing or wrong service key: send {how}`Authorization: Bearer <key>`",
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
        # The URL checked is the URL fetched: its fetch key.
        fetched = fetch_url(citation.url or "")
        why = check(config.url_policy, fetched, extra_hosts=config.allowed_hosts)
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
