"""A claim is recorded at most once per run, whichever process gets to it.

Recording bills Crawling API credits and judge tokens. Under pytest-xdist two
processes can reach the same claim: a worker records the claims queued for it
ahead of running them, and with ``--dist worksteal`` an idle worker may then
steal some of those queued items. Two runs started at once in one checkout can
race the same way.

So a cassette is recorded in a *turn* (:func:`recording_turn`): an exclusive
``flock`` on a small lock file per cassette, held from reading the cassette to
saving it. The lock file records which run last saved the cassette; a process of
the same run (the xdist workers share one run id) that gets its turn afterwards
replays that recording (mode ``none``) instead of recording again. A process of
another run finds the saved cassette and does what its record mode says
(``once`` replays it, ``rewrite`` records again).

The lock files live in the temporary directory (``citecheck-locks-<uid>/``,
one per cassette path), never beside the cassettes: a failed recording still
leaves nothing in the checkout. The operating system releases a ``flock`` when
its process dies, so a killed run never blocks a later one. Without ``fcntl``
(Windows), or where the lock file cannot be created, there is no lock: each
process records as its mode says, as before.

Replay (mode ``none``) takes no lock: a cassette is saved atomically, so a
reader sees the old file or the new one.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pytest_citecheck.core.record_mode import RecordMode


@dataclass
class RecordingTurn:
    """One process's turn at a cassette: the mode to open it with."""

    mode: RecordMode
    run_id: str
    _lock: IO[str] | None = None

    def saved(self) -> None:
        """The cassette was saved in this turn: later turns of this run replay it."""
        if self._lock is None:
            return
        self._lock.seek(0)
        self._lock.truncate()
        self._lock.write(self.run_id)
        self._lock.flush()


def lock_path(cassette: Path) -> Path:
    """The lock file of ``cassette`` (one per real path, in the temporary directory)."""
    digest = hashlib.sha256(os.path.realpath(cassette).encode()).hexdigest()[:32]
    return Path(tempfile.gettempdir()) / f"citecheck-locks-{_user()}" / f"{digest}.lock"


@contextmanager
def recording_turn(cassette: Path, mode: RecordMode | str, run_id: str) -> Iterator[RecordingTurn]:
    """Wait for this process's turn at ``cassette`` and hold it inside the ``with``.

    Yields the mode to open the cassette with: ``mode``, or ``none`` when this
    run (``run_id``) already saved it. Call :meth:`RecordingTurn.saved` after
    saving. Mode ``none``, or no way to lock, yields ``mode`` at once.
    """
    mode = RecordMode(mode)  # a mode's name, from an API caller
    lock = None if mode.replay_only else _acquire(cassette)
    if lock is None:
        yield RecordingTurn(mode, run_id)
        return
    with lock:
        lock.seek(0)
        if lock.read().strip() == run_id and cassette.exists():
            mode = RecordMode.NONE
        yield RecordingTurn(mode, run_id, lock)


def _acquire(cassette: Path) -> IO[str] | None:
    """The cassette's lock file, exclusively locked (released when it is closed or
    the process dies); None where there is no ``flock`` or no lock file."""
    if sys.platform == "win32":
        return None
    import fcntl

    path = lock_path(cassette)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle = os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT, 0o600), "r+", encoding="utf-8")
    except OSError:
        return None
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
    except OSError:
        handle.close()
        return None
    return handle


def _user() -> str:
    """Per user, so one user's lock folder never blocks another's."""
    getuid = getattr(os, "getuid", None)
    return str(getuid()) if getuid is not None else "user"
