"""A first run on answers that have no recordings yet: one line says what to do.

The example suite's saved LLM responses are imported into a fresh folder (no
cassettes), and pytest runs them as a new user would. However many citations lack a
recording, one line names how many and the single command that records them with
what it needs; the command is not repeated per claim unless ``-v`` asks for each.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_example_suite import SUITE, run

COMMAND = "pytest --citecheck --citecheck-record=once"
# A citation's row in its claim's failure table: "1  error  no_recording  https://..."
TABLE_ROW = re.compile(r"^\d+\s+error\s+no_recording\s+\S")


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fresh")
    for answer in (SUITE / "answers").glob("*.*"):
        if answer.suffix in (".json", ".md"):
            shutil.copy(answer, root / answer.name)
    command = ["import", "--from", "auto", ".", "-o", "citecheck_answers.yaml"]
    subprocess.run(
        [sys.executable, "-m", "pytest_citecheck.frontends.cli", *command],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return root


def test_one_line_says_how_many_lack_a_recording_and_the_one_command(imported: Path) -> None:
    result = run(imported, ".")
    out = result.stdout
    assert result.returncode == 1, out
    lines = [line for line in out.splitlines() if COMMAND in line]
    assert lines == [
        "citecheck: 16 citations in 12 claims have no recording; record them with: "
        f"{COMMAND} citecheck_answers.yaml (recording needs CRAWLBASE_TOKEN, OPENAI_API_KEY "
        "for the judge openai:gpt-4o-mini and the embed or bm25 extra); -v lists each"
    ], out
    # Each citation still fails on its own, in its claim's table, naming its reason.
    rows = [line for line in out.splitlines() if TABLE_ROW.match(line)]
    elsewhere = [line for line in out.splitlines() if "no_recording" in line and line not in rows]
    assert len(rows) == 16, (elsewhere, out)
    assert not elsewhere, (elsewhere, out)


def test_verbose_lists_each_claim_with_its_own_command(imported: Path) -> None:
    out = run(imported, ".", "-v").stdout
    # Once in each claim's failure, once in the error list, once in the summary line.
    assert out.count(COMMAND) == 16 + 16 + 1, (
        [line for line in out.splitlines() if COMMAND in line],
        out,
    )
    assert "-v lists each" not in out
    assert "does not exist" in out


def test_on_ci_each_claim_table_prints_once_and_the_summary_names_the_problem(
    imported: Path,
) -> None:
    # CI=true (GitHub Actions sets it): pytest stops trimming short-summary lines.
    out = run(imported, ".", extra_env={"CI": "true"}).stdout
    assert len([line for line in out.splitlines() if TABLE_ROW.match(line)]) == 16, out
    summary = out[out.index("short test summary info") :].splitlines()[1:-2]
    assert len(summary) == 12, out
    for line in summary:
        assert line.startswith("FAILED [error] citecheck_answers.yaml::"), line
        assert line.endswith(" could not be verified (error); an error never counts as verified"), (
            line
        )
