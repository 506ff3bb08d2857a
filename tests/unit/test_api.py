"""What the docs tell scripts to import exists: every ``from pytest_citecheck... import``
in a docs page's code and every ``pytest_citecheck.api.NAME`` it mentions."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
FROM_IMPORT = re.compile(r"^from (pytest_citecheck[\w.]*) import ([\w, ]+)$", re.M)
API_NAME = re.compile(r"pytest_citecheck\.api\.(\w+)")


def documented_imports() -> list[tuple[str, str, str]]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for module, names in FROM_IMPORT.findall(text):
            found += [(page.name, module, n.strip()) for n in names.split(",")]
        found += [(page.name, "pytest_citecheck.api", n) for n in API_NAME.findall(text)]
    return found


DOCUMENTED = documented_imports()


# The doors for users: the API, and the Inspect AI scorer (docs/inspect.md).
DOORS = {"pytest_citecheck.api", "pytest_citecheck.inspect"}


def test_the_docs_import_scripts_names_from_the_public_api() -> None:
    # Scripts reach the package through its doors: no page names an internal module.
    modules = {module for _, module, _ in DOCUMENTED}
    assert "pytest_citecheck.api" in modules
    assert modules <= DOORS, sorted(modules)


@pytest.mark.parametrize("page,module,name", DOCUMENTED, ids=lambda v: str(v))
def test_every_documented_name_imports(page: str, module: str, name: str) -> None:
    if module == "pytest_citecheck.inspect":
        pytest.importorskip("inspect_ai", reason="the inspect extra is not installed")
    assert hasattr(importlib.import_module(module), name), f"{page}: {module}.{name}"


def test_the_public_api_lists_only_what_it_has() -> None:
    api = importlib.import_module("pytest_citecheck.api")
    assert [name for name in api.__all__ if not hasattr(api, name)] == []
