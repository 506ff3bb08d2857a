"""A claim's cassette path is computed in one place (``recording.recorder.cassette_path``).

The plugin, the ``citecheck`` fixture, ``citecheck batch`` and ``citecheck recheck`` each used
to spell ``<root>/<file stem>/<claim id>.yaml`` themselves; a change to one (a new suffix, a
slug) would have left the others replaying a different file than the one recorded.
"""

from __future__ import annotations

import ast
from pathlib import Path

from pytest_citecheck.recording.recorder import cassette_path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_citecheck"
HOME = PACKAGE / "recording" / "recorder.py"


def test_beside_the_claim_file_by_default() -> None:
    claims = Path("suite") / "citecheck_facts.yaml"
    assert cassette_path(claims, "boiling") == Path("suite/cassettes/citecheck_facts/boiling.yaml")


def test_under_the_folder_given() -> None:
    claims = Path("suite") / "citecheck_facts.jsonl"
    root = Path("/tmp/recorded")
    assert cassette_path(claims, "boiling", root) == root / "citecheck_facts" / "boiling.yaml"


def cassette_spellings(path: Path) -> list[int]:
    """Lines of ``path`` that build a ``....yaml`` name with an f-string or join a
    ``"cassettes"`` folder with ``/``: the rule written again."""
    lines: list[int] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.JoinedStr) and node.values:
            last = node.values[-1]
            if isinstance(last, ast.Constant) and str(last.value).endswith(".yaml"):
                lines.append(node.lineno)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            sides = (node.left, node.right)
            if any(isinstance(s, ast.Constant) and s.value == "cassettes" for s in sides):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_the_rule_is_written_once() -> None:
    found = {
        str(path.relative_to(PACKAGE.parent)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != HOME and (lines := cassette_spellings(path))
    }
    assert found == {}, f"call recording.recorder.cassette_path instead: {found}"


def test_the_check_sees_a_second_spelling(tmp_path: Path) -> None:
    copy = tmp_path / "batch.py"
    copy.write_text(
        "def where(path, claim):\n"
        '    return path.parent / "cassettes" / path.stem / f"{claim}.yaml"\n',
        encoding="utf-8",
    )
    assert cassette_spellings(copy) == [2]
