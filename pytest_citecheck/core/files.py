"""Output files: checked before a run starts, replaced whole when written.

A report is written to a temporary file beside it and renamed over the old one
(``os.replace``, atomic on POSIX and Windows), so a run killed at any moment
leaves either the previous complete report or the new complete one -- never a
truncated or empty file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


def unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written as a file, or None (nothing is created)."""
    if path.is_dir():
        return "is a folder; give a file name inside it"
    if path.exists():
        return None if os.access(path, os.W_OK) else "the file is not writable"
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is a file, so nothing can be written under it"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"the folder {parent} is not writable"
    return None


@dataclass(frozen=True)
class FolderProblem:
    """Why files cannot be written into a folder: ``cause`` and ``fix`` in words;
    ``where`` is the folder that was probed (the folder itself, or the nearest
    existing one above it, where it would be created)."""

    where: Path
    cause: str
    fix: str


def free_bytes(folder: Path) -> int:
    """The bytes free on the file system holding ``folder`` (the probe a test replaces)."""
    return shutil.disk_usage(folder).free


def folder_problem(folder: Path, min_free: int) -> FolderProblem | None:
    """Why files cannot be written into ``folder`` (created when missing), or None.

    The folder, or the nearest existing one above it, must be a folder; a file is
    created in it and removed again (permission bits do not tell: root ignores
    them, and a read-only mount or a full quota refuses anyway); and its file system
    must have ``min_free`` bytes free. Nothing is left behind, not even a new
    modification time on the folder (a replay that records nothing writes nothing)."""
    existing = folder
    while not existing.is_dir() and existing != existing.parent:
        if existing.exists() or existing.is_symlink():
            return FolderProblem(
                existing,
                "is not a folder, so nothing can be written under it",
                "move that file away or choose another folder",
            )
        existing = existing.parent
    times = existing.stat()
    try:
        fd, name = tempfile.mkstemp(prefix=".citecheck-probe.", suffix=".tmp", dir=existing)
    except OSError as exc:
        return FolderProblem(
            existing,
            f"is not writable ({exc.strerror or type(exc).__name__})",
            "make it writable for this user (or mount it read-write)",
        )
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)
        os.utime(existing, ns=(times.st_atime_ns, times.st_mtime_ns))
    try:
        free = free_bytes(existing)
    except OSError:
        return None  # no figure to go by: the write above succeeded
    if free < min_free:
        return FolderProblem(
            existing,
            f"has {_mib(free)} free on its disk, and recording needs at least {_mib(min_free)}",
            "free some space on that disk",
        )
    return None


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file and a rename.

    A character UTF-8 cannot encode (a lone surrogate from a judge's reply) is
    written as a backslash escape rather than failing the whole file. The new
    file gets the old one's permissions (or the umask's, for a new file).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(name, _mode_for(path))
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    sweep_stale_temporaries(path)


# A writer killed between mkstemp and the rename (kill -9, a power cut) leaves its
# temporary file behind; one this old belongs to no writer that is still running.
STALE_TEMPORARY_SECONDS = 600.0


def sweep_stale_temporaries(path: Path) -> None:
    """Remove ``path``'s own leftover temporaries (``.<name>.*.tmp``, what every
    writer here names them) older than :data:`STALE_TEMPORARY_SECONDS`; a concurrent
    writer's fresh one is left alone. Reports, cassettes and cached embeddings call
    it after each write, so a killed run's debris goes with the next one."""
    strays = _stale_by_name(path.parent).get(path.name, [])
    _remove_older(strays, time.time() - STALE_TEMPORARY_SECONDS)


class TemporarySweeper:
    """:func:`sweep_stale_temporaries` for a writer of many files into one folder (a
    batch's thousands of cassettes): each folder is listed once, at its first write,
    instead of at every write (a listing per write made a run's writes cost the
    square of their number); the stale temporaries that listing found go as their
    own files are written. One per run: a later run lists again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # folder -> {file name: its temporaries that were stale when listed}
        self._stale: dict[Path, dict[str, list[Path]]] = {}

    def __call__(self, path: Path) -> None:
        folder = path.parent
        with self._lock:
            found = self._stale.get(folder)
            if found is None:
                found = self._stale[folder] = _stale_by_name(folder)
            strays = found.pop(path.name, [])
        _remove_older(strays, time.time() - STALE_TEMPORARY_SECONDS)


def _stale_by_name(folder: Path) -> dict[str, list[Path]]:
    """``folder``'s temporaries older than :data:`STALE_TEMPORARY_SECONDS`, by the
    name of the file each was written for (``.<name>.<random>.tmp``)."""
    cutoff = time.time() - STALE_TEMPORARY_SECONDS
    out: dict[str, list[Path]] = {}
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            name = entry.name
            if not (name.startswith(".") and name.endswith(".tmp")):
                continue
            target = name[1:-4].rpartition(".")[0]
            with contextlib.suppress(OSError):
                if target and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    out.setdefault(target, []).append(Path(entry.path))
    return out


def _remove_older(strays: Iterable[Path], cutoff: float) -> None:
    for stray in strays:
        with contextlib.suppress(OSError):
            if stray.stat().st_mtime < cutoff:
                stray.unlink()


def append_text(path: Path, text: str) -> None:
    """Append ``text`` to ``path`` (a file another program owns, e.g. a CI step summary)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8", errors="backslashreplace") as f:
        f.write(text)


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def generated_file_main(
    argv: Sequence[str] | None, prog: str, default: Path, render: Callable[[], str], noun: str
) -> int:
    """The command of a file generated from code (``render``): write it, or with
    ``--check`` exit 1 when the file on disk differs (a stale generated file)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument(noun, nargs="?", type=Path, default=default)
    parser.add_argument(
        "--check", action="store_true", help=f"exit 1 when the {noun} differs from the table."
    )
    args = parser.parse_args(argv)
    path: Path = getattr(args, noun)
    text = render()
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is stale: run {prog}", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    return 0
