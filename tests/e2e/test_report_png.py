"""``docs/report.png`` shows what the example suite prints today.

The image is made by ``scripts/report_png.py``, which stores the run's totals in the
PNG. The first test compares them with a fresh run, so the screenshot cannot drift
from the suite (it once showed 15896 judge input tokens where every run printed
15946); the second regenerates it in the real browser.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("report_png", REPO / "scripts" / "report_png.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


report_png = _script()


@pytest.fixture(scope="module")
def totals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("example")
    found: dict[str, Any] = report_png.run_example(out)["totals"]
    return found


def test_the_docs_screenshot_shows_this_runs_figures(totals: dict[str, Any]) -> None:
    png = (REPO / "docs" / "report.png").read_bytes()
    shown = report_png.png_totals(png)
    assert shown == totals, (
        "docs/report.png shows other figures than the example suite prints: "
        "regenerate it with `python scripts/report_png.py`"
    )
    assert report_png.png_size(png) == (1280, 1400)


def test_the_script_regenerates_the_screenshot_in_chromium(
    tmp_path: Path, totals: dict[str, Any]
) -> None:
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not report_png.CHROMIUM.exists():
        pytest.skip(f"no browser at {report_png.CHROMIUM}: apt-get install chromium")
    out = tmp_path / "report.png"
    run = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "report_png.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    png = out.read_bytes()
    assert report_png.png_totals(png) == totals
    assert report_png.png_size(png) == (1280, 1400)
