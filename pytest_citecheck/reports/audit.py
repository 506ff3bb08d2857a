"""The audit index: one SQLite row per verified citation.

Every decision gets a row -- run id, time, claim, url, label, reason,
confidence, evidence quote, final url, original status, the ``rid`` of the
page the Crawling API stored and the token kind that stored it (``rid_token``:
storage may be kept per token, so ``citecheck audit page`` asks that token
first) -- so an auditor can re-read, weeks later, the exact page text a verdict
was based on (``citecheck audit page RID``). A citation with no stored page (a
PDF, an error) still gets its row, with an empty rid.

Only the rid is kept, never the ``storage_url`` (it carries the token): a value
that is not shaped like a rid is dropped, and every text column is scrubbed.

The file is in WAL mode and every append is one ``BEGIN IMMEDIATE``
transaction on its own connection, so the batch CLI's threads, the service's
requests and other processes can append to the same file at once; readers never
block writers.
"""

from __future__ import annotations

import re
import secrets
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.core.files import unwritable
from pytest_citecheck.core.providers import TokenKind, token_kind
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.core.terms import NEUTRAL, Terms

DEFAULT_AUDIT_PATH = Path("citecheck-audit.db")
AUDIT_ENV = "CITECHECK_AUDIT"
SCHEMA_VERSION = 2
# Schema 1 had no rid_token column: an older file gains it (empty: token unknown).
_MIGRATE_FROM_1 = "ALTER TABLE citations ADD COLUMN rid_token TEXT NOT NULL DEFAULT ''"
# How long a writer waits for another one's transaction before giving up.
BUSY_TIMEOUT_SECONDS = 30.0

# Crawlbase rids are short opaque tokens; anything else (a URL, a query string)
# is refused rather than stored.
_RID = re.compile(r"[A-Za-z0-9_.-]{1,128}")

_CREATE = """
CREATE TABLE IF NOT EXISTS citations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    time TEXT NOT NULL,
    source TEXT NOT NULL,
    claim_id TEXT NOT NULL,
    claim TEXT NOT NULL,
    url TEXT NOT NULL,
    label TEXT NOT NULL,
    reason TEXT NOT NULL,
    confidence REAL,
    evidence_quote TEXT NOT NULL,
    final_url TEXT NOT NULL,
    original_status INTEGER,
    rid TEXT NOT NULL,
    rid_token TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS citations_run ON citations (run_id);
CREATE INDEX IF NOT EXISTS citations_label ON citations (label);
CREATE INDEX IF NOT EXISTS citations_rid ON citations (rid);
"""

COLUMNS = (
    "run_id",
    "time",
    "source",
    "claim_id",
    "claim",
    "url",
    "label",
    "reason",
    "confidence",
    "evidence_quote",
    "final_url",
    "original_status",
    "rid",
    "rid_token",
)


class AuditError(Exception):
    """The audit file cannot be used; the message says which file and why."""


@dataclass(frozen=True)
class AuditRow:
    """One citation's decision, as stored."""

    run_id: str
    time: str
    source: str
    claim_id: str
    claim: str
    url: str
    label: str
    reason: str
    confidence: float | None
    evidence_quote: str
    final_url: str
    original_status: int | None
    rid: str
    # "normal" or "javascript": the token kind whose crawl stored the page ("" unknown).
    rid_token: str = ""


def new_run_id(now: datetime | None = None) -> str:
    """A sortable, unique id for one batch run, pytest session or service process."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(3)}"


def safe_rid(rid: str | None) -> str:
    """The rid if it is shaped like one, else ``""`` (never a storage URL)."""
    return rid if rid is not None and _RID.fullmatch(rid) else ""


def audit_page_command(rid: str, stored_with: str | None = None) -> str:
    """The command that re-reads ``rid``, naming the JavaScript token when it stored the
    page (the Normal token is asked first otherwise)."""
    js = " --crawled-with javascript" if token_kind(stored_with) == "javascript" else ""
    return f"citecheck audit page {rid}{js}"


def rows_for(
    results: Mapping[str, ClaimResult], run_id: str, source: str, now: datetime | None = None
) -> list[AuditRow]:
    """One row per citation of ``results``, keyed by how the front end names each
    claim (a pytest node id, ``file::id`` in a batch, the request id in the
    service). A claim with no citation has no row."""
    time = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    return [
        AuditRow(
            run_id=run_id,
            time=time,
            source=source,
            claim_id=key,
            claim=_text(result.claim),
            url=_text(verdict.url),
            label=verdict.label.value,
            reason=verdict.reason or "",
            confidence=verdict.confidence,
            evidence_quote=_text(verdict.evidence_quote or ""),
            final_url=_text(verdict.final_url or ""),
            original_status=verdict.original_status,
            rid=safe_rid(verdict.rid),
            rid_token=(verdict.stored_with() or "") if safe_rid(verdict.rid) else "",
        )
        for key, result in results.items()
        for verdict in result.verdicts
    ]


def _text(value: str) -> str:
    """Scrubbed, and storable: SQLite cannot encode a lone surrogate (a judge may
    quote one), so it is stored as "?" instead of losing the row."""
    return scrub(value).encode("utf-8", "replace").decode("utf-8")


class AuditIndex:
    """An audit file. Cheap to create: every call opens its own connection."""

    def __init__(
        self, path: Path, busy_timeout: float = BUSY_TIMEOUT_SECONDS, terms: Terms = NEUTRAL
    ) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        # How a message names the option that writes an audit file (the front end's words).
        self.terms = terms

    @contextmanager
    def _connect(self, create: bool) -> Iterator[sqlite3.Connection]:
        if not create and not self.path.exists():
            raise AuditError(
                f"{self.path} does not exist: write one with {self.terms.option('audit')}"
            )
        if create:
            problem = unwritable(self.path)
            if problem is not None:
                raise AuditError(f"cannot write the audit file {self.path}: {problem}")
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        except (sqlite3.Error, OSError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise AuditError(f"cannot open the audit file {self.path}: {reason}") from None
        with closing(connection):
            try:
                if create:
                    self._prepare(connection)
                yield connection
            except (sqlite3.Error, OSError) as exc:
                raise AuditError(f"audit file {self.path}: {exc}") from None

    def _use_wal(self, connection: sqlite3.Connection) -> None:
        """Switch the file to WAL once. SQLite answers "database is locked" at once,
        without its busy handler, when two connections make the switch together (the
        first requests to a fresh file): wait for the other one, within ``busy_timeout``."""
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() != "wal":
                    connection.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)

    def _prepare(self, connection: sqlite3.Connection) -> None:
        # WAL is a property of the file: set once, it stays. Readers then never
        # block writers, and writers queue on the busy timeout.
        self._use_wal(connection)
        connection.execute("PRAGMA synchronous=NORMAL")
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version not in (0, 1, SCHEMA_VERSION):
            raise AuditError(
                f"{self.path} has audit schema {version}; this citecheck writes "
                f"{SCHEMA_VERSION}: use another --audit file"
            )
        connection.execute("BEGIN IMMEDIATE")
        try:
            # Another writer may have prepared the file while this one waited.
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version == 1:
                connection.execute(_MIGRATE_FROM_1)
            for statement in _CREATE.split(";"):
                if statement.strip():
                    connection.execute(statement)
            connection.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def check(self, write: bool = False) -> None:
        """Create the file if needed and check it can be written (raises :class:`AuditError`),
        so a bad ``--audit`` path is a usage error before any work is done. ``write``:
        also take the write lock (waiting at most ``busy_timeout``), so a file another
        writer holds is known before anything is spent."""
        with self._connect(create=True) as connection:
            if write:
                connection.execute("BEGIN IMMEDIATE")
                connection.execute("ROLLBACK")

    def append(self, rows: Iterable[AuditRow]) -> int:
        """Append ``rows`` in one transaction; returns how many were written."""
        batch = [tuple(getattr(row, c) for c in COLUMNS) for row in rows]
        if not batch:
            return 0
        placeholders = ", ".join("?" for _ in COLUMNS)
        with self._connect(create=True) as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.executemany(
                    f"INSERT INTO citations ({', '.join(COLUMNS)}) VALUES ({placeholders})",
                    batch,
                )
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        return len(batch)

    def record(self, results: Mapping[str, ClaimResult], run_id: str, source: str) -> int:
        """Append one row per citation of ``results``."""
        return self.append(rows_for(results, run_id, source))

    def rows(
        self,
        *,
        label: str | None = None,
        run_id: str | None = None,
        rid: str | None = None,
        limit: int | None = None,
    ) -> list[AuditRow]:
        """Stored rows, oldest first, filtered by label, run and rid."""
        where: list[str] = []
        args: list[object] = []
        for column, value in (("label", label), ("run_id", run_id), ("rid", rid)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if limit is not None:
            args.append(limit)
        with self._connect(create=False) as connection:
            if not self._has_table(connection):
                return []
            # A schema-1 file (no rid_token) is read as it is; only a writer migrates it.
            present = {str(r[1]) for r in connection.execute("PRAGMA table_info(citations)")}
            columns = [c for c in COLUMNS if c in present]
            query = self._select(columns, where, limit is not None)
            return [AuditRow(*row) for row in connection.execute(query, args)][::-1]

    @staticmethod
    def _select(columns: list[str], where: list[str], limited: bool) -> str:
        query = f"SELECT {', '.join(columns)} FROM citations"
        if where:
            query += " WHERE " + " AND ".join(where)
        # Newest first, so a limit keeps the latest rows; shown oldest first.
        query += " ORDER BY id DESC"
        return query + " LIMIT ?" if limited else query

    def stored_with(self, rid: str) -> TokenKind | None:
        """The token kind that stored the page under ``rid``, as its newest row says
        (None: no row, or none knows). A missing file knows nothing."""
        if not self.path.exists():
            return None
        kinds = [token_kind(row.rid_token) for row in self.rows(rid=rid)]
        return next((kind for kind in reversed(kinds) if kind is not None), None)

    def count(self) -> int:
        with self._connect(create=False) as connection:
            if not self._has_table(connection):
                return 0
            return int(connection.execute("SELECT COUNT(*) FROM citations").fetchone()[0])

    @staticmethod
    def _has_table(connection: sqlite3.Connection) -> bool:
        found = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'citations'"
        ).fetchone()
        return found is not None
