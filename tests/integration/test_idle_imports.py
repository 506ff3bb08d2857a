"""Installed but idle (no ``--citecheck``, no fixture used): the plugin imports nothing
beyond its hooks and options. ``bench/idle.py`` measures the time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

IDLE_FORBIDDEN = (
    "pydantic",
    "httpx",
    "yaml",
    "pytest_citecheck.claims.models",
    "pytest_citecheck.plugin.session",
    "pytest_citecheck.stages.judges",
)


def modules_after_run(tmp_path: Path, *args: str) -> set[str]:
    (tmp_path / "test_plain.py").write_text("def test_one():\n    assert True\n")
    (tmp_path / "conftest.py").write_text(
        "import sys\n\ndef pytest_unconfigure(config):\n"
        "    print('MODULES:' + ','.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-p",
            "no:hypothesispytest",
            "-p",
            "no:anyio",
            *args,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    line = next(x for x in out.stdout.splitlines() if x.startswith("MODULES:"))
    return set(line.removeprefix("MODULES:").split(","))


def test_an_idle_run_imports_only_the_hooks(tmp_path: Path) -> None:
    loaded = modules_after_run(tmp_path)
    assert "pytest_citecheck.plugin" in loaded  # the plugin is active
    leaked = sorted(m for m in loaded if m.split(".")[0] in IDLE_FORBIDDEN or m in IDLE_FORBIDDEN)
    assert leaked == []
