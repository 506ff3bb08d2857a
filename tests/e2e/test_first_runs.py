"""A newcomer's first experiments on the example suite: one file, then the docs' claims."""

from __future__ import annotations

import re

from tests.e2e.test_example_suite import SUITE, run

REPO = SUITE.parent


def test_running_one_example_file_passes_and_says_it_gated_a_part() -> None:
    result = run(SUITE, "citecheck_boiling.yaml")
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert "gate over the 2 claims of the files named (a part of the suite)" in lines
    assert "citecheck gate passed" in lines
    # The figures docs/gate-ci.md shows are the ones the run prints.
    docs = (REPO / "docs" / "gate-ci.md").read_text(encoding="utf-8")
    shown = [line for line in lines if "not applied to a part of the suite" in line]
    assert len(shown) == 1 and shown[0] in docs


def test_the_example_pytest_ini_quotes_the_precision_the_suite_reaches() -> None:
    ini = (SUITE / "pytest.ini").read_text(encoding="utf-8")
    quoted = re.search(r"precision is (\d\.\d{4}) \((\d+) of (\d+) citations", ini)
    assert quoted, ini
    out = run(REPO, "example_suite").stdout
    figures = re.search(r"citation precision (\d\.\d{4}) \((\d+)/(\d+)\)", out)
    assert figures, out
    assert quoted.groups() == figures.groups()
