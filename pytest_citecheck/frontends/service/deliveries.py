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
process holds it longer than :data:`STORE_BUSY_WAIT`, the disk is full) is 503: the
Crawler delivers again later. Statuses, from the headers or a JSON body, are read by one
rule (:func:`_status`); a JSON body's lone surrogates become U+FFFD (:func:`_text`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import sqlite3
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, ValidationError
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
    STORE_FILE,
    Delivery,
    DeliveryOutcome,
    JobStore,
    valid_job_name,
)

log = logging.getLogger("pytest_citecheck.service")

PATH = "/crawler/deliveries"
# The Crawler's monitor bot sends this User-Agent (then a version, "1.0").
MONITOR_AGENT = "crawlbase monitoring bot"
# The response header that tells an acknowledged delivery from a repeated one.
OUTCOME_HEADER = "Citecheck-Delivery"
# Decompressed bytes produced per step while measuring a body, and compressed bytes
# handed to the decompressor at a time.
_INFLATE_STEP = 256 * 1024
_INFLATE_INPUT = 64 * 1024
# Bodies up to this size (as sent) are measured on the writer thread with the store's
# insert (well under a millisecond each); larger ones on a thread of their own, so that
# one large page never holds up the acknowledgements queued behind it.
_INLINE_BODY_BYTES = 32 * 1024
# Seconds a delivery's write waits for a store another process holds before it is
# answered 503. A batch waits at most this long and the deliveries arriving meanwhile
# are the next batch, so a delivery to a held store is answered within about twice
# this, inside the Crawler's 200 ms; the job's runner holds its store for a few
# milliseconds at a time.
STORE_BUSY_WAIT = 0.06


class JsonDelivery(BaseModel):
    """A ``format=json`` delivery's body (statuses may come as strings; read by the
    same rule as the headers')."""

    model_config = ConfigDict(extra="ignore")

    pc_status: object = None
    original_status: object = None
    rid: str | None = None
    url: str | None = None
    body: str


def is_monitor(request: Request) -> bool:
    return request.headers.get("user-agent", "").strip().lower().startswith(MONITOR_AGENT)


def inflate(data: bytes, limit: int, *, keep: bool) -> bytes:
    """``data`` decompressed as gzip (every member, as :func:`gzip.decompress` reads
    it), stopped as soon as it exceeds ``limit`` bytes (413); not a whole gzip
    stream is 400. Returns the decompressed bytes when ``keep``, else nothing.

    Linear in the body's size however many members it has: the input is handed over
    in slices of a memoryview, so what zlib copies back (a member's ``unused_data``,
    a step's ``unconsumed_tail``) is never more than one slice."""
    corrupt = Rejected(400, "the body is not a whole gzip stream")
    if not data:
        raise corrupt
    view = memoryview(data)
    parts: list[bytes] = []
    size = 0
    fed = 0  # bytes of ``data`` handed to the decompressor so far
    stream = zlib.decompressobj(wbits=31)  # gzip framing only
    pending: bytes | memoryview = b""
    try:
        while True:
            if not pending:
                if fed == len(data):
                    break  # the input ran out before the member ended
                pending = view[fed : fed + _INFLATE_INPUT]
                fed += len(pending)
            chunk = stream.decompress(pending, _INFLATE_STEP)
            size += len(chunk)
            if size > limit:
                raise Rejected(413, f"the body decompresses to more than {limit} bytes")
            if keep and chunk:
                parts.append(chunk)
            if stream.eof:
                # The member ended: what it left of the slice starts the next one.
                fed -= len(stream.unused_data)
                if fed == len(data):
                    return b"".join(parts)
                stream = zlib.decompressobj(wbits=31)
                pending = b""
            else:
                pending = stream.unconsumed_tail
    except zlib.error:
        raise corrupt from None
    raise corrupt


# One rule for a delivery's statuses, from a header or a JSON body: an HTTP-like
# number of at most 4 digits, else unknown (None), never an error.
_MAX_STATUS = 9999


def _status(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= _MAX_STATUS else None
    text = value.strip() if isinstance(value, str) else ""
    if text.isascii() and text.isdigit() and len(text) <= 4:
        return int(text)
    return None


def _text(value: str) -> str:
    """``value`` with any lone surrogate (JSON's ``"\\ud800"`` reads as one, and it
    has no UTF-8 form) replaced by U+FFFD, as bad bytes in a page are."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


def _is_json(request: Request) -> bool:
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return kind in ("gzip/json", "application/json")


def parse_delivery(request: Request, body: bytes, config: ServiceConfig) -> Delivery:
    """The delivery ``body`` (as received) and its headers carry, or :class:`Rejected`."""
    headers = request.headers
    rid, url = headers.get("rid"), headers.get("url")
    pc_status = _status(headers.get("pc-status"))
    original_status = _status(headers.get("original-status"))
    stored = body
    if _is_json(request):
        page = inflate(body, config.max_delivery_page_bytes, keep=True)
        try:
            # json's C parser: a page of megabytes parses in milliseconds, and nesting
            # too deep for it is a RecursionError, not a crash.
            envelope = JsonDelivery.model_validate(json.loads(page))
        except ValidationError as exc:  # (a ValueError too: caught first)
            where = next((e["loc"] for e in exc.errors() if e["loc"]), ("body",))
            field = where[0] if where[0] in JsonDelivery.model_fields else "body"
            raise Rejected(
                422,
                f"the JSON delivery is not an object with a string `body` "
                f"(`{field}` is missing or not a string)",
            ) from None
        except (ValueError, RecursionError) as exc:
            why = truncate(str(exc), 120) if isinstance(exc, ValueError) else "nested too deep"
            raise Rejected(422, f"the JSON delivery cannot be read: {why}") from None
        rid = _text(envelope.rid) if envelope.rid else rid
        url = _text(envelope.url) if envelope.url else url
        # The JSON's statuses win where they are statuses at all (the same rule).
        pc_status = _status(envelope.pc_status) or pc_status
        original_status = _status(envelope.original_status) or original_status
        # Kept as the page alone, compressed (quickly: the Crawler is waiting).
        stored = zlib.compress(_text(envelope.body).encode("utf-8"), 1, wbits=31)
    else:
        inflate(body, config.max_delivery_page_bytes, keep=False)
    if not rid:
        raise Rejected(422, "the delivery has no rid (header `rid`, or `rid` in a JSON body)")
    return Delivery(
        rid=rid,
        url=url or "",
        original_status=original_status,
        pc_status=pc_status,
        body_gzip=stored,
        received_at=time.time(),
    )


# A delivery waiting for its job's writer: how to read it, the echoed citation id.
_Item = tuple[Callable[[], Delivery], str | None]
# What became of it: the delivery read and what its store did with it (None: no such
# job), or why not.
_Kept = tuple[Delivery, DeliveryOutcome | None]
# A store file's identity: a job folder deleted (or moved) and made again holds a
# new file at the same path.
_Identity = tuple[int, int]


def _identity(path: Path) -> _Identity | None:
    try:
        found = path.stat()
    except FileNotFoundError:
        return None
    return (found.st_dev, found.st_ino)


class _Lane:
    """One job's writer: a thread of its own, the job's store as last opened, and the
    deliveries waiting for it. Only its thread touches the store."""

    def __init__(self, root: Path, job: str) -> None:
        self.path = root / job / STORE_FILE
        self.root, self.job = root, job
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="citecheck-deliveries")
        self.store: JobStore | None = None
        self.identity: _Identity | None = None
        self.waiting: list[tuple[_Item, asyncio.Future[_Kept]]] = []
        self.handing: asyncio.Task[None] | None = None

    def current_store(self) -> JobStore | None:
        """The job's store as its file is now (on the lane's thread): opened again when
        the file was replaced, None (and the old one closed) when it went. SQLite does
        not checkpoint a moved or deleted file on close, so closing the old store never
        touches the new file's log."""
        for _ in range(3):  # a file replaced while it was being opened: look again
            now = _identity(self.path)
            if self.store is not None and now != self.identity:
                self.close_store()
            if now is None:
                return None
            if self.store is not None:
                return self.store
            store = JobStore.open(self.root, self.job, busy_timeout=STORE_BUSY_WAIT)
            if store is None:
                return None
            try:
                store.connect()  # the file opened now, so its identity is the one read
                opened = _identity(self.path) == now
            except BaseException:
                store.close()
                raise
            if opened:
                self.store, self.identity = store, now
                return store
            store.close()
        raise OSError(f"{self.path} was replaced while it was being opened")  # 503

    def close_store(self) -> None:
        if self.store is not None:
            self.store.close()
        self.store, self.identity = None, None

    def record_all(self, items: list[_Item]) -> list[_Kept | Exception]:
        """On the lane's thread: each delivery read and kept, or why it was not."""
        out: list[_Kept | Exception] = []
        for read, _ in items:
            try:
                out.append((read(), None))
            except Exception as exc:  # handed to the delivery's own request
                out.append(exc)
        positions = [i for i, kept in enumerate(out) if not isinstance(kept, Exception)]
        if not positions:
            return out
        try:
            store = self.current_store()
            if store is None:
                return out  # no such job (any more): each answered 404
            with store.batch():
                for i in positions:
                    kept = out[i]
                    assert not isinstance(kept, Exception)
                    try:
                        out[i] = (kept[0], store.record_delivery(kept[0], items[i][1]))
                    except Exception as exc:
                        out[i] = exc
        except Exception as exc:  # the batch could not start or commit: none kept
            for i in positions:
                out[i] = exc
        return out


class Receiver:
    """The jobs' stores, each written by a thread of its own, in arrival order.

    Deliveries for a job that arrive while its writer is busy wait for it together
    and are handed over as one batch: under a storm the event loop pays one hand-over
    per batch, not one per delivery, and the store commits the batch once (each
    delivery still kept or refused on its own). The writer also reads each delivery
    (the bounded decompression that measures it): zlib and SQLite let go of the GIL,
    so that work runs beside the event loop instead of on it. One job's writer never
    waits for another's: a store another process holds (a runner's transaction, a
    backup's lock) waits :data:`STORE_BUSY_WAIT` and answers 503, its job alone.

    Each batch looks at the job's file first: a job folder deleted or moved away is
    no job (404, the old store closed), one made again is opened anew."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lanes: dict[str, _Lane] = {}

    def has_job(self, job: str) -> bool:
        return valid_job_name(job) and (self.root / job / STORE_FILE).is_file()

    async def _hand_over(self, lane: _Lane) -> None:
        loop = asyncio.get_running_loop()
        try:
            while lane.waiting:
                batch, lane.waiting = lane.waiting, []
                batch = [(item, done) for item, done in batch if not done.done()]
                items = [item for item, _ in batch]
                try:
                    results: list[_Kept | Exception] = await loop.run_in_executor(
                        lane.writer, lane.record_all, items
                    )
                except Exception as exc:  # the writer is gone (shutting down)
                    results = [exc] * len(batch)
                for (_, done), result in zip(batch, results, strict=True):
                    if done.done():  # its sender hung up meanwhile
                        continue
                    if isinstance(result, Exception):
                        done.set_exception(result)
                    else:
                        done.set_result(result)
        finally:
            lane.handing = None
            if lane.store is None and self._lanes.get(lane.job) is lane:
                # No store open (the job went, or its file could not be opened): the
                # lane's thread ends; a later delivery starts a lane again.
                del self._lanes[lane.job]
                lane.writer.shutdown(wait=False)

    async def record(self, job: str, read: Callable[[], Delivery], echoed: str | None) -> _Kept:
        """The delivery ``read()`` returns (on the job's writer thread; it may raise
        :class:`Rejected`) and what the job's store did with it (None: no such job)."""
        loop = asyncio.get_running_loop()
        lane = self._lanes.get(job)
        if lane is None:
            lane = self._lanes[job] = _Lane(self.root, job)
        done: asyncio.Future[_Kept] = loop.create_future()
        lane.waiting.append(((read, echoed), done))
        if lane.handing is None:
            lane.handing = loop.create_task(self._hand_over(lane))
        return await done

    def close(self) -> None:
        lanes, self._lanes = list(self._lanes.values()), {}
        for lane in lanes:
            lane.writer.submit(lane.close_store).result()
            lane.writer.shutdown()


def _refused(exc: Rejected, job: str | None, rid: str | None) -> Response:
    reason = exc.detail if isinstance(exc.detail, str) else "invalid body"
    log.warning(
        "crawler delivery refused (%d): %s [job %r, rid %r]",
        exc.status,
        reason,
        truncate(job, 70) or None,
        truncate(rid, 70) or None,
    )
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
        if len(body) <= _INLINE_BODY_BYTES:  # read on the writer thread, beside the loop
            read = functools.partial(parse_delivery, request, body, config)
        else:  # a large page: read on a thread of its own, never holding up the others
            parsed = await run_in_threadpool(parse_delivery, request, body, config)
            read = functools.partial(_same, parsed)
        delivery, outcome = await receiver.record(job, read, request.headers.get(CITATION_HEADER))
        rid = delivery.rid
        if outcome is None:
            raise Rejected(404, "no such job in this service's --jobs-dir")
        if outcome == DeliveryOutcome.UNKNOWN:
            raise Rejected(404, "no citation of this job matches the rid or the echoed id")
    except Rejected as exc:
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
