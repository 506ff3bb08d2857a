"""Importing the package or loading the plugin never pays for torch, the model, VCR or YAML;
the CLI loads without pytest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("torch", "sentence_transformers", "transformers", "yaml")


def loaded_after(code: str, cwd: Path | None = None) -> list[str]:
    report = f"print('LOADED:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    probe = f"{code}\nimport sys\n{report}"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=cwd
    )
    line = next(x for x in out.stdout.splitlines() if x.startswith("LOADED:"))
    return [m for m in line.removeprefix("LOADED:").split(",") if m]


def test_import_package_is_light() -> None:
    assert loaded_after("import pytest_citecheck") == []


def test_loading_the_plugin_is_light() -> None:
    assert loaded_after("import pytest_citecheck.plugin, pytest_citecheck.stages.retrieval") == []


def test_pytest_help_does_not_load_heavy_modules(tmp_path: Path) -> None:
    # In an empty folder: this repository's own conftest imports vcr on purpose.
    code = "import pytest\npytest.main(['--help', '-p', 'no:cacheprovider'])\n"
    assert loaded_after(code, cwd=tmp_path) == []


@pytest.mark.parametrize("module", ["pytest_citecheck.frontends.cli"])
def test_the_cli_loads_neither_pytest_nor_the_plugin_options(module: str) -> None:
    probe = (
        f"import {module}, sys; "
        "print(sorted(m for m in ('pytest', '_pytest', 'pytest_citecheck.plugin.options') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
