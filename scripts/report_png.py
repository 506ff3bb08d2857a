#!/usr/bin/env python
"""Regenerate ``docs/report.png``, the screenshot of the example suite's HTML report.

    python scripts/report_png.py                 # writes docs/report.png
    python scripts/report_png.py --out shot.png

Runs README's example-suite command (offline replay) with the HTML and JSON
reports, opens the HTML report in Debian's chromium through Playwright (no browser
download; ``CITECHECK_CHROMIUM`` overrides the executable), filters it with the
header's ``contradicted`` chip, expands the claim ``boiling-point-50-degrees`` on
its highlighted quote, and saves a 1280x1400
screenshot. The run's totals go into the PNG as a ``tEXt`` chunk
(``citecheck-totals``), so ``tests/e2e/test_report_png.py`` can tell when the image no
longer shows what the suite prints.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "docs" / "report.png"
CHROMIUM = Path(os.environ.get("CITECHECK_CHROMIUM", "/usr/bin/chromium"))
CHUNK_KEY = b"citecheck-totals"
CLAIM = "boiling-point-50-degrees"
SIZE = {"width": 1280, "height": 1400}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run_example(out: Path) -> dict[str, Any]:
    """README's command with both reports; returns the JSON report."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--citecheck",
            "example_suite",
            f"--citecheck-html={out / 'report.html'}",
            f"--citecheck-report={out / 'report.json'}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if run.returncode != 0:
        raise SystemExit(f"the example suite failed:\n{run.stdout}{run.stderr}")
    report: dict[str, Any] = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return report


def screenshot(html: Path) -> bytes:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport=SIZE)
            page.goto(html.as_uri())
            # The header's contradicted chip filters the table; one click on the claim
            # opens it on the citation that decided it.
            page.locator('button.chip[data-filter="contradicted"]').click()
            row = page.locator("tbody.claim", has=page.locator("button.toggle", has_text=CLAIM))
            row.locator("button.toggle").click()
            page.evaluate("window.scrollTo(0, 0)")
            row.locator("tr.detail mark").first.wait_for(state="visible")
            shot: bytes = page.screenshot()
        finally:
            browser.close()
    return shot


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def with_totals(png: bytes, totals: dict[str, Any]) -> bytes:
    """``png`` with a ``tEXt`` chunk holding ``totals`` (JSON), just before IEND."""
    if not png.startswith(PNG_SIGNATURE) or png[-12:-8] != b"\x00\x00\x00\x00":
        raise ValueError("not a PNG ending in IEND")
    text = CHUNK_KEY + b"\x00" + json.dumps(totals, sort_keys=True).encode("latin-1")
    return png[:-12] + _chunk(b"tEXt", text) + png[-12:]


def chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """The PNG's chunks as (type, data)."""
    if not png.startswith(PNG_SIGNATURE):
        raise ValueError("not a PNG")
    out, at = [], len(PNG_SIGNATURE)
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        out.append((png[at + 4 : at + 8], png[at + 8 : at + 8 + length]))
        at += 12 + length
    return out


def png_totals(png: bytes) -> dict[str, Any] | None:
    """The totals :func:`with_totals` stored, or None."""
    for kind, data in chunks(png):
        key, _, value = data.partition(b"\x00")
        if kind == b"tEXt" and key == CHUNK_KEY:
            totals: dict[str, Any] = json.loads(value.decode("latin-1"))
            return totals
    return None


def png_size(png: bytes) -> tuple[int, int]:
    kind, data = chunks(png)[0]
    assert kind == b"IHDR"
    width, height = struct.unpack(">II", data[:8])
    return width, height


def render(out: Path) -> dict[str, Any]:
    """Run the example suite, screenshot its report into ``out``; returns the totals."""
    with tempfile.TemporaryDirectory() as folder:
        report = run_example(Path(folder))
        png = screenshot(Path(folder) / "report.html")
    totals: dict[str, Any] = report["totals"]
    out.write_bytes(with_totals(png, totals))
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the PNG")
    args = parser.parse_args()
    totals = render(args.out)
    print(f"wrote {args.out}: {totals['claims']} claims, {totals['citations']} citations")


if __name__ == "__main__":
    main()
