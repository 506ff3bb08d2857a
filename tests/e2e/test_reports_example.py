"""The reports page's excerpts (docs/reports.md) are what the example suite writes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SECTION = "## Reports: HTML, markdown and the verbose listing"


def test_the_reports_page_markdown_and_json_excerpts_match_the_example_suite(
    tmp_path: Path,
) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--citecheck",
            "example_suite",
            f"--citecheck-md={tmp_path / 'summary.md'}",
            f"--citecheck-report={tmp_path / 'report.json'}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    written = (tmp_path / "summary.md").read_text(encoding="utf-8").splitlines()
    readme = (REPO / "docs" / "reports.md").read_text(encoding="utf-8").split(SECTION, 1)[1]
    blocks = dict(re.findall(r"```(markdown|json)\n(.*?)\n```", readme, re.S))
    for line in blocks["markdown"].splitlines():
        if line == "...":
            continue
        if line.endswith("… |"):  # a quote cut for the page
            assert any(w.startswith(line[: -len("… |")]) for w in written), line
        else:
            assert line in written, line
    shown = json.loads("{" + blocks["json"] + "}")["run"]
    actual = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["run"]
    assert set(shown) <= set(actual)
    for key in ("plugin_version", "judges", "prompt_version", "record_mode"):
        assert shown[key] == actual[key]
