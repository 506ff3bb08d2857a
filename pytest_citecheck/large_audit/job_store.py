"""A large audit's state, in one place: which citations were pushed, delivered, judged.

A job verifies many citations through Crawlbase's Crawler instead of one synchronous
Crawling API call each: citations are *pushed* (each push answers at once with a
``rid``), the Crawler crawls them on its own fleet and POSTs each page to a webhook
(the *delivery*), and verification runs as deliveries arrive. The pusher, the
webhook receiver and the verifier may be different processes, and any of them may
be killed and restarted; this store is what they share. It is one SQLite file per
job (``<jobs folder>/<job>/job.sqlite``) in WAL mode, so the receiver's writes never
wait for a verifier's reads, and every state change is one committed transaction.

A citation moves ``queued -> pushing -> pushed -> delivered -> judged`` (or
``failed`` from any state). ``pushing`` is committed *before* the push request is
sent, so after a kill a citation whose push may have reached Crawlbase is never
pushed again by a resume: its delivery still finds it, because every push carries
the job and citation ids in its callback headers (echoed back on the delivery),
and :meth:`JobStore.record_delivery` binds such a delivery to its citation even
when the push's ``rid`` was never written down.

A taken citation may wait (the push rate, a connection) before its request goes
out, so :meth:`JobStore.mark_sending` is committed as late as possible, when the
request is about to be written: a citation a dead pusher took but never sent is
certainly not at Crawlbase, and
:meth:`JobStore.recover_unsent` puts it back in the queue. Only one runner works
on a job at a time (:meth:`JobStore.lock`), so "taken, not sent" on resume always
means "by a process that is gone".

A page that needs JavaScript is pushed again, to the job's JavaScript Crawler, as a
citation of its own (:func:`js_citation_id`: the citation's id and ``.js``), so it
moves through the same states, binds its delivery the same way and is never pushed
twice either. A job without a JavaScript Crawler notes such a page instead
(:meth:`JobStore.note_needs_javascript`), so its status can say how many there were.

Delivered pages are kept as the Crawler sent them (gzip-compressed bytes), so
acknowledging a delivery costs one insert, not a decompression.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pytest_citecheck.core.argtypes import JOB_NAME
from pytest_citecheck.large_audit.job_file import BUSY_TIMEOUT, JobFile

# The callback headers a push asks the Crawler to echo on its delivery
# (``callback_headers=Citecheck-Job:JOB|Citecheck-Citation:ID``).
JOB_HEADER = "Citecheck-Job"
CITATION_HEADER = "Citecheck-Citation"

STORE_FILE = "job.sqlite"
LOCK_FILE = "runner.lock"


class JobBusy(Exception):
    """Another process is running this job."""


class JobState(StrEnum):
    QUEUED = "queued"
    PUSHING = "pushing"
    PUSHED = "pushed"
    DELIVERED = "delivered"
    JUDGED = "judged"
    FAILED = "failed"


class DeliveryOutcome(StrEnum):
    """What :meth:`JobStore.record_delivery` did with a delivery."""

    ACCEPTED = "accepted"  # the first delivery for its citation
    DUPLICATE = "duplicate"  # its citation already had one: kept the first, acknowledged
    UNKNOWN = "unknown"  # no citation of this job matches its rid or echoed id: refused


def citation_id(claim_id: str, position: int) -> str:
    """A citation's id inside a job: its claim's id and its 1-based position."""
    return f"{claim_id}#{position}"


# A JavaScript push's citation id ends with this (a citation's own id ends with a digit).
JS_SUFFIX = ".js"


def js_citation_id(citation: str) -> str:
    """The id of ``citation``'s JavaScript push (its page crawled by a JavaScript Crawler)."""
    return citation + JS_SUFFIX


def is_js_citation(citation: str) -> bool:
    return citation.endswith(JS_SUFFIX)


def valid_job_name(name: str) -> bool:
    return bool(JOB_NAME.match(name))


@dataclass(frozen=True)
class Delivery:
    """A page as the Crawler delivered it."""

    rid: str
    url: str
    original_status: int | None
    pc_status: int | None
    body_gzip: bytes  # the body exactly as it arrived (gzip-compressed)
    received_at: float

    def text(self) -> str:
        """The delivered page, decompressed and decoded (bad bytes replaced)."""
        return gzip.decompress(self.body_gzip).decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Row:
    """One citation of a job and where it stands."""

    citation: str
    url: str
    state: JobState
    rid: str | None
    detail: str | None
    pushes: int


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS citations (
    citation TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    state TEXT NOT NULL,
    rid TEXT UNIQUE,
    detail TEXT,
    pushes INTEGER NOT NULL DEFAULT 0,
    updated REAL NOT NULL,
    -- when the push request was about to be sent (NULL: never sent)
    sending REAL
);
CREATE INDEX IF NOT EXISTS citations_state ON citations (state);
CREATE TABLE IF NOT EXISTS deliveries (
    citation TEXT PRIMARY KEY REFERENCES citations (citation),
    rid TEXT NOT NULL,
    url TEXT NOT NULL,
    original_status INTEGER,
    pc_status INTEGER,
    body_gzip BLOB NOT NULL,
    received_at REAL NOT NULL,
    copies INTEGER NOT NULL DEFAULT 1
);
-- pages a run wanted rendered with JavaScript while the job had no JavaScript Crawler
CREATE TABLE IF NOT EXISTS needs_javascript (citation TEXT PRIMARY KEY, url TEXT NOT NULL);
"""


class _Deliveries(JobFile):
    """The pages the Crawler delivered for a job's citations, and the pages noted as
    needing JavaScript."""

    # -- deliveries --------------------------------------------------------------

    def record_delivery(self, delivery: Delivery, echoed_citation: str | None) -> DeliveryOutcome:
        """Keep a delivery for its citation, found by its rid or, for a push whose
        answer was lost, by the citation id its callback headers echoed (a push
        marked :meth:`mark_sending`; an echo of one never sent is ``unknown``)."""
        with self._write() as db:
            row = db.execute(
                "SELECT citation FROM citations WHERE rid = ?", (delivery.rid,)
            ).fetchone()
            if row is None and echoed_citation is not None:
                # Only a push that may have been sent: one taken but never sent
                # (``sending`` unset) is not at Crawlbase, so no genuine delivery can
                # name it, and keeping one would stop a resume from pushing it.
                row = db.execute(
                    "SELECT citation FROM citations WHERE citation = ? AND rid IS NULL "
                    "AND (state = ? OR (state = ? AND sending IS NOT NULL))",
                    (echoed_citation, JobState.PUSHED.value, JobState.PUSHING.value),
                ).fetchone()
            if row is None:
                return DeliveryOutcome.UNKNOWN
            citation = str(row[0])
            seen = db.execute(
                "UPDATE deliveries SET copies = copies + 1 WHERE citation = ?", (citation,)
            ).rowcount
            if seen:
                return DeliveryOutcome.DUPLICATE
            db.execute(
                "INSERT INTO deliveries (citation, rid, url, original_status, pc_status, "
                "body_gzip, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    citation,
                    delivery.rid,
                    delivery.url,
                    delivery.original_status,
                    delivery.pc_status,
                    delivery.body_gzip,
                    delivery.received_at,
                ),
            )
            db.execute(
                "UPDATE citations SET rid = COALESCE(rid, ?), state = ?, updated = ? "
                "WHERE citation = ? AND state IN (?, ?)",
                (
                    delivery.rid,
                    JobState.DELIVERED.value,
                    time.time(),
                    citation,
                    JobState.PUSHING.value,
                    JobState.PUSHED.value,
                ),
            )
            return DeliveryOutcome.ACCEPTED

    def delivery(self, citation: str) -> Delivery | None:
        row = (
            self._db()
            .execute(
                "SELECT rid, url, original_status, pc_status, body_gzip, received_at "
                "FROM deliveries WHERE citation = ?",
                (citation,),
            )
            .fetchone()
        )
        if row is None:
            return None
        rid, url, original, pc, body, at = row
        return Delivery(str(rid), str(url), original, pc, bytes(body), float(at))

    def copies(self, citation: str) -> int:
        """How many times the Crawler delivered this citation (retries repeat them)."""
        row = (
            self._db()
            .execute("SELECT copies FROM deliveries WHERE citation = ?", (citation,))
            .fetchone()
        )
        return 0 if row is None else int(row[0])

    # -- pages that need JavaScript ------------------------------------------------

    def note_needs_javascript(self, citations: Iterable[tuple[str, str]]) -> None:
        """``(citation id, url)`` pairs whose page a run wanted rendered with JavaScript
        while the job had no JavaScript Crawler (noted once each)."""
        with self._write() as db:
            db.executemany(
                "INSERT OR IGNORE INTO needs_javascript (citation, url) VALUES (?, ?)",
                list(citations),
            )

    def needs_javascript(self) -> int:
        """How many pages :meth:`note_needs_javascript` noted and no JavaScript push
        has been queued for since."""
        try:
            row = (
                self._db()
                .execute(
                    "SELECT COUNT(*) FROM needs_javascript n WHERE NOT EXISTS "
                    "(SELECT 1 FROM citations c WHERE c.citation = n.citation || ?)",
                    (JS_SUFFIX,),
                )
                .fetchone()
            )
        except sqlite3.OperationalError:  # a job file from before pages were noted
            return 0
        return int(row[0])

    def javascript_pushes(self) -> dict[JobState, int]:
        """How many JavaScript pushes are in each state (every state listed)."""
        found = dict(
            self._db()
            .execute(
                "SELECT state, COUNT(*) FROM citations WHERE citation GLOB ? GROUP BY state",
                (f"*{JS_SUFFIX}",),
            )
            .fetchall()
        )
        return {state: int(found.get(state.value, 0)) for state in JobState}


class JobStore(_Deliveries):
    """One job's state file. Safe to share between threads and between processes."""

    @classmethod
    def create(cls, root: Path, job: str) -> JobStore:
        """Open ``root/job``'s store, creating the folder and the file if needed."""
        if not valid_job_name(job):
            raise ValueError(f"job name {job!r}: use letters, digits, '.', '_' or '-' (at most 64)")
        folder = root / job
        folder.mkdir(parents=True, exist_ok=True)
        store = cls(folder / STORE_FILE)
        db = store._db()
        db.executescript(_SCHEMA)  # executescript commits on its own
        columns = {row[1] for row in db.execute("PRAGMA table_info(citations)")}
        if "sending" not in columns:
            # A job file written before pushes were marked sent: its ``pushing`` rows may
            # have been sent, so they count as sent (never pushed twice).
            with store._write() as tx:
                tx.execute("ALTER TABLE citations ADD COLUMN sending REAL")
                tx.execute(
                    "UPDATE citations SET sending = updated WHERE state = ?",
                    (JobState.PUSHING.value,),
                )
        return store

    @classmethod
    def open(cls, root: Path, job: str, busy_timeout: float = BUSY_TIMEOUT) -> JobStore | None:
        """An existing job's store, or None when there is no such job."""
        if not valid_job_name(job):
            return None
        path = root / job / STORE_FILE
        return cls(path, busy_timeout) if path.is_file() else None

    # -- pushing -----------------------------------------------------------------

    def add(self, citations: Iterable[tuple[str, str]]) -> int:
        """Queue ``(citation id, url)`` pairs; ones already in the job are left as
        they are (adding a job's citations again on resume changes nothing).
        Returns how many were new."""
        now = time.time()
        with self._write() as db:
            before = db.total_changes
            db.executemany(
                "INSERT OR IGNORE INTO citations (citation, url, state, updated) "
                "VALUES (?, ?, ?, ?)",
                [(c, u, JobState.QUEUED.value, now) for c, u in citations],
            )
            return db.total_changes - before

    def take_for_push(self, limit: int, javascript: bool | None = None) -> list[tuple[str, str]]:
        """Move up to ``limit`` queued citations to ``pushing`` and return them
        (``javascript`` True or False: only JavaScript pushes, or none of them).

        Committed before any push is sent: a citation taken here is never taken
        again, whatever happens to the process that took it."""
        kind = "" if javascript is None else f"AND (citation GLOB '*{JS_SUFFIX}') = ? "
        args: tuple[object, ...] = (JobState.QUEUED.value,)
        args += () if javascript is None else (int(javascript),)
        with self._write() as db:
            rows = db.execute(
                f"SELECT citation, url FROM citations WHERE state = ? {kind}ORDER BY rowid LIMIT ?",
                (*args, limit),
            ).fetchall()
            db.executemany(
                "UPDATE citations SET state = ?, pushes = pushes + 1, updated = ? "
                "WHERE citation = ?",
                [(JobState.PUSHING.value, time.time(), c) for c, _ in rows],
            )
        return [(str(c), str(u)) for c, u in rows]

    def mark_pushed(self, citation: str, rid: str) -> None:
        """The push was answered with ``rid``. A delivery that arrived first
        (it can) has already moved the citation on; only the rid is added then."""
        with self._write() as db:
            db.execute(
                "UPDATE citations SET rid = COALESCE(rid, ?), updated = ?, "
                "state = CASE WHEN state = ? THEN ? ELSE state END WHERE citation = ?",
                (rid, time.time(), JobState.PUSHING.value, JobState.PUSHED.value, citation),
            )

    def requeue(self, citation: str, detail: str) -> None:
        """A push known *not* to have been accepted (refused, or never sent)
        goes back to the queue, with why."""
        with self._write() as db:
            db.execute(
                "UPDATE citations SET state = ?, detail = ?, sending = NULL, updated = ? "
                "WHERE citation = ? AND state = ?",
                (JobState.QUEUED.value, detail, time.time(), citation, JobState.PUSHING.value),
            )

    def mark_sending(self, citation: str) -> None:
        """Committed when the push request is about to be written: from here on the
        push may have reached Crawlbase, so the citation is never pushed again."""
        with self._write() as db:
            db.execute(
                "UPDATE citations SET sending = ?, updated = ? WHERE citation = ? AND state = ?",
                (time.time(), time.time(), citation, JobState.PUSHING.value),
            )

    def recover_unsent(self) -> int:
        """Put back in the queue every citation taken for a push whose request was
        never sent (its pusher died waiting its turn); call it holding :meth:`lock`.
        Returns how many. Their push count is taken back: nothing was pushed."""
        with self._write() as db:
            return db.execute(
                "UPDATE citations SET state = ?, pushes = MAX(pushes - 1, 0), updated = ?, "
                "detail = 'taken by a pusher that stopped before sending it' "
                "WHERE state = ? AND sending IS NULL",
                (JobState.QUEUED.value, time.time(), JobState.PUSHING.value),
            ).rowcount

    def awaiting_delivery(self) -> list[Row]:
        """Citations whose push was (or may have been) sent and whose page has not
        come: they wait for their delivery, never for a second push."""
        sql = (
            "SELECT citation, url, state, rid, detail, pushes FROM citations "
            "WHERE state = ? OR (state = ? AND rid IS NULL AND sending IS NOT NULL) "
            "ORDER BY rowid"
        )
        args = (JobState.PUSHED.value, JobState.PUSHING.value)
        return [
            Row(str(c), str(u), JobState(st), r, d, int(n))
            for c, u, st, r, d, n in self._db().execute(sql, args)
        ]

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the job for one runner (pusher and verifier): a second one raises
        :class:`JobBusy` at once instead of working beside it. The lock is the
        operating system's (released when the process dies, however it dies);
        without ``fcntl`` (Windows) there is none."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            yield
            return
        path = self.path.parent / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise JobBusy(
                    f"job {self.job!r} is being run by another process "
                    f"(lock {path}); wait for it or stop it, then run again"
                ) from None
            yield
        finally:
            os.close(fd)

    # -- verification ------------------------------------------------------------

    def mark_judged(self, citation: str, label: str) -> None:
        self._set(citation, JobState.JUDGED, label)

    def mark_failed(self, citation: str, detail: str) -> None:
        self._set(citation, JobState.FAILED, detail)

    def _set(
        self, citation: str, state: JobState, detail: str | None, only_from: JobState | None = None
    ) -> None:
        sql = "UPDATE citations SET state = ?, detail = ?, updated = ? WHERE citation = ?"
        args: tuple[object, ...] = (state.value, detail, time.time(), citation)
        if only_from is not None:
            sql += " AND state = ?"
            args += (only_from.value,)
        with self._write() as db:
            db.execute(sql, args)

    # -- reading -----------------------------------------------------------------

    def state(self, citation: str) -> JobState | None:
        row = (
            self._db()
            .execute("SELECT state FROM citations WHERE citation = ?", (citation,))
            .fetchone()
        )
        return None if row is None else JobState(row[0])

    def detail(self, citation: str) -> str | None:
        """Why the citation is where it is (a label, a failure, a requeued push)."""
        row = (
            self._db()
            .execute("SELECT detail FROM citations WHERE citation = ?", (citation,))
            .fetchone()
        )
        return None if row is None or row[0] is None else str(row[0])

    def states(self) -> dict[str, JobState]:
        """Every citation's state, by citation id."""
        return {
            str(c): JobState(s)
            for c, s in self._db().execute("SELECT citation, state FROM citations")
        }

    def changed_since(self, since: float) -> dict[str, JobState]:
        """The state of every citation changed at or after ``since`` (a
        ``time.time()``; every change stamps its row, whichever process made it).
        A watcher asks with a margin before its previous question, so a change
        stamped just before another process committed it is not missed."""
        return {
            str(c): JobState(s)
            for c, s in self._db().execute(
                "SELECT citation, state FROM citations WHERE updated >= ?", (since,)
            )
        }

    def rows(self, state: JobState | None = None) -> list[Row]:
        sql = "SELECT citation, url, state, rid, detail, pushes FROM citations"
        args: tuple[object, ...] = ()
        if state is not None:
            sql += " WHERE state = ?"
            args = (state.value,)
        return [
            Row(str(c), str(u), JobState(s), r, d, int(p))
            for c, u, s, r, d, p in self._db().execute(sql + " ORDER BY rowid", args)
        ]

    def counts(self) -> dict[JobState, int]:
        """How many citations are in each state (every state listed, zeros too)."""
        found = dict(
            self._db().execute("SELECT state, COUNT(*) FROM citations GROUP BY state").fetchall()
        )
        return {state: int(found.get(state.value, 0)) for state in JobState}
