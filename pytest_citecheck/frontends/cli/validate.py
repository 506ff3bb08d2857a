"""``citecheck validate``: claim files checked against the schema, offline.

A folder is searched as ``pytest --citecheck`` collects it: every file matching
``citecheck_patterns`` below it, skipping ``norecursedirs`` and virtual environments;
no path is the current folder (or the ini's ``testpaths``). The patterns and
folders are read from the project's ini file as pytest finds it (``pytest.ini``,
``.pytest.ini``, ``pyproject.toml``, ``tox.ini``, ``setup.cfg``), pytest's defaults
otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import TextIO

from pytest_citecheck.core.defaults import DEFAULT_PATTERNS
from pytest_citecheck.core.text import plural as _plural
from pytest_citecheck.frontends.cli.common import EXIT_GATE_FAILED, EXIT_OK

# pytest's own default of ``norecursedirs``.
NORECURSEDIRS = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")


def run_validate(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Every problem of every file, worded as collection words it; exit 1 if any."""
    from pytest_citecheck.claims.loader import ClaimFileError, load_claim_file

    out = out or sys.stdout
    here = Path.cwd()
    roots = [here, *args.document_root]
    ini = Collection.read(here)
    # Relative, as the paths in the messages: no path is this folder (or testpaths).
    named: list[Path] = list(args.files) or [Path(p) for p in ini.testpaths] or [Path(".")]
    paths = list(dict.fromkeys(ini.claim_files(named)))
    folders = [p for p in named if p.is_dir()]
    if not paths:
        where = " and ".join(str(p) if str(p) != "." else "the current folder" for p in folders)
        print(
            f"citecheck validate: no claim files ({' '.join(ini.patterns)}) under {where}",
            file=out,
        )
        return EXIT_OK
    bad = problems = claims = 0
    for path in paths:
        try:
            claims += len(load_claim_file(path, roots=roots).claims)
        except ClaimFileError as exc:
            bad += 1
            problems += len(exc.problems)
            print(exc, file=out)
    files = len(paths)
    if problems:
        print(
            f"citecheck validate: {_plural(problems, 'problem')} in {bad} of "
            f"{_plural(files, 'file')}",
            file=out,
        )
        return EXIT_GATE_FAILED
    print(
        f"citecheck validate: {_plural(files, 'file')}, {_plural(claims, 'claim')}, no problems",
        file=out,
    )
    return EXIT_OK


@dataclass(frozen=True)
class Collection:
    """What pytest collects claim files by: the patterns, the folders it skips, the
    folders it searches when none is named."""

    patterns: tuple[str, ...] = DEFAULT_PATTERNS
    norecursedirs: tuple[str, ...] = NORECURSEDIRS
    testpaths: tuple[str, ...] = ()

    @classmethod
    def read(cls, start: Path) -> Collection:
        """The settings of the first ini file pytest would use, from ``start`` up."""
        for folder in (start, *start.parents):
            found = _ini_section(folder)
            if found is not None:
                return cls(
                    patterns=tuple(found.get("citecheck_patterns") or DEFAULT_PATTERNS),
                    norecursedirs=tuple(found.get("norecursedirs") or NORECURSEDIRS),
                    testpaths=tuple(found.get("testpaths") or ()),
                )
        return cls()

    def claim_files(self, paths: Sequence[Path]) -> Iterator[Path]:
        """A named file as it is; a folder's claim files, in path order."""
        for path in paths:
            if not path.is_dir():
                yield path
                continue
            yield from sorted(self._walk(path))

    def _walk(self, folder: Path) -> Iterator[Path]:
        for child in folder.iterdir():
            if child.is_dir():
                if _in_venv(child) or any(fnmatch(child.name, p) for p in self.norecursedirs):
                    continue
                yield from self._walk(child)
            elif any(fnmatch(child.name, p) for p in self.patterns):
                yield child


def _in_venv(folder: Path) -> bool:
    """A virtual environment, which pytest never searches (its ``_in_venv``)."""
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta" / "history").is_file()


def _ini_section(folder: Path) -> dict[str, list[str]] | None:
    """The pytest section of ``folder``'s ini file, its values split as pytest splits
    ``args`` options (None: no file pytest would take for its ini here)."""
    import shlex
    import tomllib

    for name in ("pytest.ini", ".pytest.ini"):
        path = folder / name
        if path.is_file():  # pytest takes this file even without a [pytest] section
            return _ini_file_section(path, "pytest") or {}
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
            data = {}
        tool = data.get("tool", {}).get("pytest", {})
        options = tool.get("ini_options", tool) if isinstance(tool, dict) else None
        if isinstance(options, dict) and options:
            return {
                k: [str(x) for x in v] if isinstance(v, list) else shlex.split(str(v))
                for k, v in options.items()
            }
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        path = folder / name
        found = _ini_file_section(path, section) if path.is_file() else None
        if found is not None:  # pytest passes over this file without its section
            return found
    return None


def _ini_file_section(path: Path, section: str) -> dict[str, list[str]] | None:
    """``section`` of the ini file ``path``, split as pytest splits ``args`` options
    (None: no such section, or a file that cannot be read)."""
    import configparser
    import shlex

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return None
    if not parser.has_section(section):
        return None
    return {k: shlex.split(v) for k, v in parser.items(section)}
