"""A Crawler delivery's handling, with no web framework: its body read (a bounded gzip
inflate, a ``format=json`` envelope opened), its statuses by one rule, and the
:class:`Receiver` that keeps each job's deliveries in its store on a writer thread of
its own, batch by batch.

The service's ``POST /crawler/deliveries`` (frontends/service/webhook_route.py) checks
each request, then hands its body here; a :class:`Refused` becomes its 4xx answer.
Statuses, from the headers or a JSON body, are read by one rule (:func:`_status`); a
JSON body's lone surrogates become U+FFFD (:func:`_text`).
"""

from __future__ import annotations

import asyncio
import json
import time
import zlib
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from pytest_citecheck.core.text import truncate
from pytest_citecheck.large_audit.job_store import (
    STORE_FILE,
    Delivery,
    DeliveryOutcome,
    JobStore,
    valid_job_name,
)

# Decompressed bytes produced per step while measuring a body, and compressed bytes
# handed to the decompressor at a time.
_INFLATE_STEP = 256 * 1024
_INFLATE_INPUT = 64 * 1024
# Seconds a delivery's write waits for a store another process holds before it is
# answered 503. A batch waits at most this long and the deliveries arriving meanwhile
# are the next batch, so a delivery to a held store is answered within about twice
# this, inside the Crawler's 200 ms. How long the job's own runner holds its store
# (BEGIN IMMEDIATE to COMMIT, every write of the batch process timed in the Crawler
# chain and JavaScript tests, 3 x 244 transactions, two CPU burners beside them, load
# 12-16): median 0.1 ms, p99 2.6-7.6 ms, longest 24.1 ms. Three times the longest
# hold, so a runner's write never makes the receiver answer 503 (the Crawler would
# deliver again), and twice it (150 ms) still inside the 200 ms.
STORE_BUSY_WAIT = 0.075


class Refused(Exception):
    """A delivery that is not kept: the HTTP ``status`` it is answered with and why."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(status, detail)
        self.status = status
        self.detail = detail


class JsonDelivery(BaseModel):
    """A ``format=json`` delivery's body (statuses may come as strings; read by the
    same rule as the headers')."""

    model_config = ConfigDict(extra="ignore")

    pc_status: object = None
    original_status: object = None
    rid: str | None = None
    url: str | None = None
    body: str


def inflate(data: bytes, limit: int, *, keep: bool) -> bytes:
    """``data`` decompressed as gzip (every member, as :func:`gzip.decompress` reads
    it), stopped as soon as it exceeds ``limit`` bytes (413); not a whole gzip
    stream is 400. Returns the decompressed bytes when ``keep``, else nothing.

    Linear in the body's size however many members it has: the input is handed over
    in slices of a memoryview, so what zlib copies back (a member's ``unused_data``,
    a step's ``unconsumed_tail``) is never more than one slice."""
    corrupt = Refused(400, "the body is not a whole gzip stream")
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
                raise Refused(413, f"the body decompresses to more than {limit} bytes")
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


def is_json(content_type: str) -> bool:
    """Whether a delivery's ``Content-Type`` says it is a ``format=json`` one."""
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind in ("gzip/json", "application/json")


def parse_delivery(headers: Mapping[str, str], body: bytes, page_limit: int) -> Delivery:
    """The delivery ``body`` (as received) and its ``headers`` (looked up by lower-case
    name) carry, or :class:`Refused`; the page is at most ``page_limit`` bytes."""
    rid, url = headers.get("rid"), headers.get("url")
    pc_status = _status(headers.get("pc-status"))
    original_status = _status(headers.get("original-status"))
    stored = body
    if is_json(headers.get("content-type", "")):
        page = inflate(body, page_limit, keep=True)
        try:
            # json's C parser: a page of megabytes parses in milliseconds, and nesting
            # too deep for it is a RecursionError, not a crash.
            envelope = JsonDelivery.model_validate(json.loads(page))
        except ValidationError as exc:  # (a ValueError too: caught first)
            where = next((e["loc"] for e in exc.errors() if e["loc"]), ("body",))
            field = where[0] if where[0] in JsonDelivery.model_fields else "body"
            raise Refused(
                422,
                f"the JSON delivery is not an object with a string `body` "
                f"(`{field}` is missing or not a string)",
            ) from None
        except (ValueError, RecursionError) as exc:
            why = truncate(str(exc), 120) if isinstance(exc, ValueError) else "nested too deep"
            raise Refused(422, f"the JSON delivery cannot be read: {why}") from None
        rid = _text(envelope.rid) if envelope.rid else rid
        url = _text(envelope.url) if envelope.url else url
        # The JSON's statuses win where they are statuses at all (the same rule).
        pc_status = _status(envelope.pc_status) or pc_status
        original_status = _status(envelope.original_status) or original_status
        # Kept as the page alone, compressed (quickly: the Crawler is waiting).
        stored = zlib.compress(_text(envelope.body).encode("utf-8"), 1, wbits=31)
    else:
        inflate(body, page_limit, keep=False)
    if not rid:
        raise Refused(422, "the delivery has no rid (header `rid`, or `rid` in a JSON body)")
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
        :class:`Refused`) and what the job's store did with it (None: no such job)."""
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
