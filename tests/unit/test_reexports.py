"""Names are imported from the module that defines them; only the public face re-exports.

``from a import X as X`` inside the package makes a second address for ``X``: importers
drift to it, and moving ``X`` then means keeping a shim.
The package's one door for users is ``pytest_citecheck.api``; a pytest hook imported into a
plugin module (``pytest_addoption``) is how pytest finds it, not a re-export.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_citecheck"
PUBLIC_FACE = PACKAGE / "api.py"


def reexports(path: Path) -> list[str]:
    """Each re-export in ``path`` as ``line: name``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom | ast.Import):
            for alias in node.names:
                hook = path.parent.name == "plugin" and alias.name.startswith("pytest_")
                if alias.asname is not None and alias.asname == alias.name and not hook:
                    found.append(f"{node.lineno}: {alias.name} as {alias.asname}")
    return found


def test_no_reexport_inside_the_package() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{where}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PUBLIC_FACE
        for where in reexports(path)
    ]
    assert offenders == [], (
        "import these names from the module that defines them (re-export only in "
        f"pytest_citecheck/api.py): {offenders}"
    )


def test_the_check_catches_each_kind(tmp_path: Path) -> None:
    plain = tmp_path / "plain.py"
    plain.write_text("from x import A as A\nimport y as y\nfrom z import B\n", encoding="utf-8")
    hook = tmp_path / "plugin" / "__init__.py"
    hook.parent.mkdir()
    hook.write_text("from p import pytest_addoption as pytest_addoption\n", encoding="utf-8")
    assert reexports(plain) == ["1: A as A", "2: y as y"]
    assert reexports(hook) == []


def test_the_public_face_still_reexports() -> None:
    assert "Engine" in {
        alias.name
        for node in ast.walk(ast.parse(PUBLIC_FACE.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
