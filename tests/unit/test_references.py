"""Comments and docstrings point at what a contributor can open: this repository.

(A data set's location, such as the WiCE file bench/ reads, is an input path, not a citation.)

A reference to a design note, a wire-format note or an issue tracker entry that is
not in the repository ("DESIGN §3", "WIRE §1.6", "issue 10 item 15") is rewritten
to explain itself or to point at docs/architecture.md, a module or a test.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("pytest_citecheck", "tests", "bench", "scripts")
OUTSIDE = re.compile(
    r"\bDESIGN\b|\bWIRE\b|\bNATIVE_CITATIONS\b|shared/(?:reference|DESIGN|STYLE)"
    r"|\bSTYLE(?:\.md)? ?§?\d|\b[Ii]ssues? \d+|§"
)


def sources() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))


def test_the_scan_finds_the_sources() -> None:
    names = {p.name for p in sources()}
    assert {"core.py", "test_references.py", "idle.py"} <= names


@pytest.mark.parametrize("text", ["see DESIGN §3", "(issue 10 item 15)", "WIRE.md §1.6"])
def test_the_pattern_catches_an_outside_reference(text: str) -> None:
    assert OUTSIDE.search(text)


def test_no_source_cites_a_document_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sources()
        if path.name != "test_references.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == []
