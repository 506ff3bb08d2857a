"""``POST /crawler/deliveries``: the webhook Crawlbase's Crawler delivers crawled pages to.

A large audit pushes its citations to the Crawler with the job and citation ids in
``callback_headers`` (:data:`~pytest_citecheck.large_audit.job_store.JOB_HEADER`,
:data:`~pytest_citecheck.large_audit.job_store.CITATION_HEADER`); the Crawler crawls each
page and POSTs it here, gzip-compressed, with the headers ``rid``, ``url``,
``Original-Status`` and ``PC-Status`` and those ids echoed. Each delivery is kept
in its job's store (``<jobs_dir>/<job>/job.sqlite``) and acknowledged with 204.

The Crawler wants its answer within 200 ms, and anything but 200/201/204 makes it
crawl the page again and deliver it again -- charged. So the handler does little,
and it is answered ahead of FastAPI's routing (:class:`DeliveriesRoute`): checks,
then, on its job's writer thread, one bounded decompression to measure the body
and one insert, the deliveries that arrived meanwhile committed together (so
deliveries never wait on each other's SQLite lock, and a storm pays one commit per
batch). An acknowledged delivery writes no access-log line. What it checks, in
order (a refusal is a 4xx with a short reason and one log line, never the key):

1. the ``Host`` header (400, before routing, as for every route);
2. the service key, when the service has one (401): the Crawler cannot send an
   ``Authorization`` header, so the webhook URL it is given carries the key as
   ``?key=<key>`` (compared in constant time; the access log drops query strings);
3. the Crawler's monitor bot (``User-Agent: Crawlbase Monitoring Bot ...``) is
   answered 200 here, touching no store. It comes after the key on purpose: with a
   wrong key in the webhook URL the monitor fails too, and the Crawler pauses and
   emails its owner instead of delivering (and charging) pages that would be refused;
4. the service keeps jobs (``--jobs-dir``; else 404) and the echoed
   ``Citecheck-Job`` names one of them (422 without it, 404 for an unknown job, or one
   whose folder was deleted or moved since: the file is looked at for every batch);
5. ``Content-Encoding: gzip`` (415): the Crawler always compresses (only Zapier
   hooks get plain bodies, and Zapier is not a citecheck service); a body that
   arrives uncompressed has been decompressed by a proxy on the way, which the
   reply says, rather than kept in a form its readers do not expect;
6. the body is at most ``max_delivery_bytes`` as sent (413) and arrives within
   ``read_timeout`` (408); decompressed -- streamed, stopped at the cap -- it is a
   whole gzip stream (400) of at most ``max_delivery_page_bytes`` (413: a gzip
   bomb inflates no further than the cap);
7. a JSON delivery (``format=json``: ``Content-Type: gzip/json``) is one JSON
   object with a string ``body`` (422); its page is taken out of it and stored
   compressed, so a job's deliveries read the same whatever the format;
8. a ``rid`` (422), and a citation of the job that it or the echoed
   ``Citecheck-Citation`` names (404: the store's ``unknown``; an echoed citation
   counts only once its push may have been sent).

A repeated delivery (the Crawler retries, and may deliver twice) is acknowledged
(204) and the first copy kept. A store that cannot be written right now (another
process holds it longer than
:data:`~pytest_citecheck.large_audit.webhook.STORE_BUSY_WAIT`, the disk is full) is
503: the Crawler delivers again later. Statuses, from the headers or a JSON body, are read by one
rule (:func:`~pytest_citecheck.large_audit.webhook._status`); a JSON body's lone surrogates
become U+FFFD. The body's reading and the per-job stores and writers are the large-audit
wing's (:mod:`pytest_citecheck.large_audit.webhook`); this module is the route's glue.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from pytest_citecheck.core.text import truncate
from pytest_citecheck.frontends.service.checks import (
    Rejected,
    _Disconnected,
    _read_body,
    _require_key,
)
from pytest_citecheck.frontends.service.config import ServiceConfig
from pytest_citecheck.frontends.service.defaults import RETRY_AFTER_SECONDS
from pytest_citecheck.frontends.service.wire import Problem
from pytest_citecheck.large_audit.job_store import (
    CITATION_HEADER,
    JOB_HEADER,
    Delivery,
    DeliveryOutcome,
)
from pytest_citecheck.large_audit.webhook import Receiver, Refused, parse_delivery

log = logging.getLogger("pytest_citecheck.service")

PATH = "/crawler/deliveries"
# The Crawler's monitor bot sends this User-Agent (then a version, "1.0").
MONITOR_AGENT = "crawlbase monitoring bot"
# The response header that tells an acknowledged delivery from a repeated one.
OUTCOME_HEADER = "Citecheck-Delivery"
# Bodies up to this size (as sent) are measured on the writer thread with the store's
# insert (well under a millisecond each); larger ones on a thread of their own, so that
# one large page never holds up the acknowledgements queued behind it.
_INLINE_BODY_BYTES = 32 * 1024


def is_monitor(request: Request) -> bool:
    return request.headers.get("user-agent", "").strip().lower().startswith(MONITOR_AGENT)


def _refused(exc: Rejected | Refused, job: str | None, rid: str | None) -> Response:
    reason = exc.detail if isinstance(exc.detail, str) else "invalid body"
    log.warning(
        "crawler delivery refused (%d): %s [job %r, rid %r]",
        exc.status,
        reason,
        truncate(job, 70) or None,
        truncate(rid, 70) or None,
    )
    if isinstance(exc, Refused):
        return Rejected(exc.status, exc.detail).response()
    return exc.response()


# What each refusal means, for the OpenAPI schema.
_REFUSALS = {
    400: "The body is not a whole gzip stream.",
    401: "The service key is missing or wrong.",
    404: "No such job, or no citation of the job matches the delivery.",
    408: "The body did not arrive in time.",
    413: "The body, or the page in it, is too large.",
    415: "The body is not gzip-compressed.",
    422: "No job header or no rid, or a JSON delivery that is malformed.",
    503: "The job's store cannot be written right now.",
}


async def answer(
    request: Request, config: ServiceConfig, receiver: Receiver | None
) -> Response | DeliveryOutcome:
    """A delivery's answer (see the module's docstring): a kept or repeated delivery's
    outcome (acknowledged with 204), else the answer to send."""
    job = request.headers.get(JOB_HEADER)
    rid = request.headers.get("rid")
    try:
        _require_key(request, config.api_key, query_key=True)
        if is_monitor(request):
            return Response(status_code=200)
        if receiver is None:
            raise Rejected(404, "this service keeps no Crawler jobs: start it with --jobs-dir DIR")
        if not job:
            raise Rejected(
                422,
                f"no {JOB_HEADER} header: push with callback_headers={JOB_HEADER}:<job>|"
                f"{CITATION_HEADER}:<citation>",
            )
        if not receiver.has_job(job):
            raise Rejected(404, "no such job in this service's --jobs-dir")
        if request.headers.get("content-encoding", "").strip().lower() != "gzip":
            raise Rejected(
                415,
                "the body must be gzip-compressed (Content-Encoding: gzip), as the "
                "Crawler sends it; a proxy in front must pass request bodies unchanged",
            )
        body = await _read_body(request, config.max_delivery_bytes, config.read_timeout)
        page_limit = config.max_delivery_page_bytes
        if len(body) <= _INLINE_BODY_BYTES:  # read on the writer thread, beside the loop
            read = functools.partial(parse_delivery, request.headers, body, page_limit)
        else:  # a large page: read on a thread of its own, never holding up the others
            parsed = await run_in_threadpool(parse_delivery, request.headers, body, page_limit)
            read = functools.partial(_same, parsed)
        delivery, outcome = await receiver.record(job, read, request.headers.get(CITATION_HEADER))
        rid = delivery.rid
        if outcome is None:
            raise Rejected(404, "no such job in this service's --jobs-dir")
        if outcome == DeliveryOutcome.UNKNOWN:
            raise Rejected(404, "no citation of this job matches the rid or the echoed id")
    except (Rejected, Refused) as exc:
        return _refused(exc, job, rid)
    except _Disconnected:
        log.info("crawler delivery: the sender hung up before its body arrived")
        return Response(status_code=400)
    except (sqlite3.Error, OSError) as exc:  # locked too long, disk full, a broken file
        log.error(
            "crawler delivery for job %r not kept (the Crawler delivers it again): %s: %s",
            truncate(job, 70),
            type(exc).__name__,
            truncate(str(exc), 200),
        )
        return Rejected(
            503,
            "the job's store cannot be written right now; the operator sees why in the service log",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        ).response()
    if outcome == DeliveryOutcome.DUPLICATE:
        log.info(
            "crawler delivery repeated (kept the first) [job %r, rid %r]",
            job,
            truncate(rid, 70),
        )
    return outcome


# An acknowledgement's headers, by what the store did with the delivery.
_ACKS = {
    outcome: [(OUTCOME_HEADER.lower().encode(), outcome.value.encode())]
    for outcome in (DeliveryOutcome.ACCEPTED, DeliveryOutcome.DUPLICATE)
}


def _same(delivery: Delivery) -> Delivery:
    return delivery


class DeliveriesRoute:
    """ASGI middleware that answers ``POST /crawler/deliveries`` itself, in front of
    FastAPI's routing, dependency and validation machinery (which cost more than the
    delivery's own work, and a storm of deliveries must each be answered within
    200 ms); every other request goes on to the app. Placed behind the Host check."""

    def __init__(self, app: ASGIApp, config: ServiceConfig, receiver: Receiver | None) -> None:
        self.app = app
        self.config = config
        self.receiver = receiver

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != PATH:
            await self.app(scope, receive, send)
            return
        if scope["method"] != "POST":
            reply: Response | DeliveryOutcome = JSONResponse(
                {"detail": "Method Not Allowed"}, status_code=405, headers={"Allow": "POST"}
            )
        else:
            reply = await answer(Request(scope, receive), self.config, self.receiver)
        if isinstance(reply, DeliveryOutcome):
            # The acknowledgement as its two ASGI messages: a Response object costs
            # about as much as the rest of the answer.
            await send({"type": "http.response.start", "status": 204, "headers": _ACKS[reply]})
            await send({"type": "http.response.body", "body": b""})
        else:
            await reply(scope, receive, send)


def acks_unlogged(record: logging.LogRecord) -> bool:
    """A logging filter for ``uvicorn.access``: no line for an acknowledged delivery
    (204). A storm writes thousands a second and the line costs about as much as the
    rest of the acknowledgement; a refused delivery still gets its access line and the
    receiver's own line saying why, a repeated one the receiver's line, the monitor bot
    its access line."""
    args = record.args
    if isinstance(args, tuple) and len(args) == 5 and args[1] == "POST" and args[4] == 204:
        path = args[2]
        return not (isinstance(path, str) and path.partition("?")[0] == PATH)
    return True


def _operation() -> dict[str, Any]:
    """The webhook's entry in the OpenAPI schema."""
    problem = {
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    }
    responses: dict[str, dict[str, Any]] = {
        "200": {"description": "The Crawler's monitor bot: alive (no store is touched)."},
        "204": {
            "description": f"Delivery kept (`{OUTCOME_HEADER}: accepted`), or a repeat of "
            f"one already kept (`{OUTCOME_HEADER}: duplicate`)."
        },
    }
    for status, description in _REFUSALS.items():
        responses[str(status)] = {"description": description, **problem}
    return {
        "summary": "Crawler deliveries",
        "description": "The webhook Crawlbase's Crawler delivers crawled pages to "
        "(gzip-compressed; the service key as `?key=`).",
        "operationId": "crawler_deliveries",
        "parameters": [
            {"name": "key", "in": "query", "required": False, "schema": {"type": "string"}}
        ],
        "requestBody": {
            "required": True,
            "content": {"application/octet-stream": {"schema": {"type": "string"}}},
        },
        "responses": responses,
    }


def add_deliveries(app: FastAPI, config: ServiceConfig, receiver: Receiver | None) -> None:
    """``POST /crawler/deliveries`` (see the module's docstring), answered by
    :class:`DeliveriesRoute` and described in the app's OpenAPI schema. Call it
    before adding the Host check: middleware added later runs first."""
    app.add_middleware(DeliveriesRoute, config=config, receiver=receiver)
    schema_of_routes = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = schema_of_routes()
            schema["paths"][PATH] = {"post": _operation()}
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components.setdefault("Problem", Problem.model_json_schema())
        return app.openapi_schema or schema_of_routes()

    app.openapi = openapi  # type: ignore[method-assign]
