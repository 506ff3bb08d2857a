"""What every part of the claim-file reader shares: the problems it collects, each
with its line, the error that lists them, and the markers that stop a cascade."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_citecheck.claims.schema import Loc
from pytest_citecheck.core.defaults import DEFAULT_MAX_CLAIM_CHARS
from pytest_citecheck.core.errors import CitecheckError
from pytest_citecheck.core.terms import Terms

# --- errors ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a claim file, where it is and how to fix it."""

    line: int | None
    problem: str
    fix: str


class ClaimFileError(CitecheckError):
    """A claim file cannot be used; ``str()`` lists every problem with its fix.

    ``line``/``problem``/``fix`` are the problem found first (the main one);
    ``problems`` all of them, in line order (a file's own, with no line, last).
    """

    def __init__(
        self,
        path: Path,
        line: int | None,
        problem: str,
        fix: str,
        more: Sequence[Problem] = (),
    ) -> None:
        # Everything goes to Exception.args so the error pickles (pytest-xdist workers).
        super().__init__(path, line, problem, fix, tuple(more))
        self.path = path
        self.line = line
        self.problem = problem
        self.fix = fix
        # Listed in line order (stable): the checks run in passes, and a later pass
        # finds earlier lines; a problem of the whole file, with no line, last.
        self.problems = sorted(
            [Problem(line, problem, fix), *more],
            key=lambda p: (p.line is None, p.line or 0),
        )

    def __str__(self) -> str:
        out = []
        for p in self.problems:
            where = f"{self.path}:{p.line}" if p.line is not None else f"{self.path}"
            out.append(f"{where}: {p.problem}\n  fix: {p.fix}")
        return "\n".join(out)


class _Broken:
    """Stands for a value already reported (a refused tag, a bad merge): no cascade."""


_BROKEN = _Broken()


def _has_broken(data: Any) -> bool:
    if isinstance(data, _Broken):
        return True
    if isinstance(data, dict):
        return any(_has_broken(v) for v in data.values())
    if isinstance(data, list):
        return any(_has_broken(v) for v in data)
    return False


class _Invalid(Exception):
    """Stops reading a file whose structure gives nothing more to check."""


class ReaderCore:
    """One claim file being read: its settings, the problems found so far and the
    line of every value (by location)."""

    def __init__(
        self,
        path: Path,
        roots: Sequence[Path] | None,
        terms: Terms,
        max_claim_chars: int = DEFAULT_MAX_CLAIM_CHARS,
    ) -> None:
        self.path = path
        self.roots = roots
        self.terms = terms
        self.max_claim_chars = max_claim_chars
        self.problems: list[Problem] = []
        # Line of each value, by location (key line for mapping values).
        self.lines: dict[Loc, int] = {}
        # Case-folded id -> (id as written, line): duplicates and case-only clashes.
        self._ids: dict[str, tuple[str, int]] = {}
        # The file-level judge panel (``judges:``), given to every claim of the file.
        self._file_judges: tuple[str, ...] | None = None
        # With ``answers_apart``: the saved answers that failed, each with its own error.
        self.answers_apart = False
        self.failed_answers: list[tuple[str, ClaimFileError]] = []

    def add(self, line: int | None, problem: str, fix: str) -> None:
        self.problems.append(Problem(line, problem, fix))

    def stop(self, line: int | None, problem: str, fix: str) -> _Invalid:
        self.add(line, problem, fix)
        return _Invalid()

    def line_of(self, loc: Loc) -> int | None:
        while loc not in self.lines and loc:
            loc = loc[:-1]
        return self.lines.get(loc)
