"""A job's SQLite file, shared by threads and processes: one connection per thread, in WAL
mode (the receiver's writes never wait for a verifier's reads), every change one committed
transaction (or a savepoint of :meth:`JobFile.batch`'s), and the job's metadata.

What the file holds and how a citation moves through it is
:class:`~pytest_citecheck.large_audit.job_store.JobStore`'s.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

# Seconds a store's write waits for another process's lock (a runner's, a backup's).
BUSY_TIMEOUT = 30.0


class JobFile:
    """One job's SQLite file: connections, transactions, metadata."""

    def __init__(self, path: Path, busy_timeout: float = BUSY_TIMEOUT) -> None:
        self.path = path
        # How long a write waits for another process's lock before it fails
        # (sqlite3.OperationalError "database is locked").
        self.busy_timeout = busy_timeout
        self._local = threading.local()

    @property
    def job(self) -> str:
        """The job's name: its folder's."""
        return self.path.parent.name

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction; inside another one (:meth:`batch`), a savepoint of it:
        its changes are undone alone when it fails, and committed with the others."""
        db = self._db()
        if db.in_transaction:
            db.execute("SAVEPOINT change")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK TO change")
                db.execute("RELEASE change")
                raise
            db.execute("RELEASE change")
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        try:
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # a failed commit can leave it open: nothing is kept
                db.execute("ROLLBACK")
            raise

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Changes made inside committed together, in one transaction (one write of
        the log instead of one each); each change still all or nothing on its own.
        Nothing is kept when the commit itself fails."""
        with self._write():
            yield

    def connect(self) -> None:
        """Open the file now (else its first use opens it); raises sqlite3.Error."""
        self._db()

    def close(self) -> None:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    # -- metadata ----------------------------------------------------------------

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def meta(self, key: str) -> str | None:
        row = self._db().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])
