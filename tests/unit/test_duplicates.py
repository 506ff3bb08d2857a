"""The package repeats itself in at most 20 places: ``duplicates --repo
pytest_citecheck`` (the workplace's duplicate finder, where it is installed) lists at
most 20 pairs of places sharing six or more lines of the same shape.

A pair over the limit is a place to make one piece of code serve where the logic is
the same; the message shows the rows the tool printed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_PAIRS = 20
_COUNT = re.compile(r"^(?:(?P<n>\d+) pairs? of places|no duplicates)", re.M)


def pair_count(output: str) -> int:
    """The number of pairs in the tool's first line (``no duplicates``: 0)."""
    match = _COUNT.search(output)
    if match is None:
        raise ValueError(f"duplicates printed no count of pairs:\n{output}")
    return int(match["n"] or 0)


def test_the_count_is_read_from_the_tools_first_line() -> None:
    assert pair_count("22 pairs of places (150 files read), each sharing runs\nD1 a.py") == 22
    assert pair_count("1 pair of places (3 files read)") == 1
    assert pair_count("no duplicates (150 files read)") == 0
    with pytest.raises(ValueError, match="no count of pairs"):
        pair_count("incomplete: ...")


@pytest.mark.skipif(shutil.which("duplicates") is None, reason="duplicates is not installed")
@pytest.mark.xfail(
    strict=True,
    reason="22 pairs on main after the PDF, conversation, rates, OpenTelemetry and Inspect "
    "merges (15 of them marked boilerplate by the tool: field declarations and keyword "
    "arguments; 7 not, 9 when the bar was set at 20); remove this mark when it holds again",
)
def test_the_package_has_at_most_20_duplicate_pairs() -> None:
    tool = shutil.which("duplicates")
    assert tool is not None
    done = subprocess.run(
        [tool, "--repo", "pytest_citecheck", "--most", "40", "--seconds", "60"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "incomplete:" not in done.stdout, done.stdout
    pairs = pair_count(done.stdout)
    assert pairs <= MAX_PAIRS, (
        f"duplicates --repo pytest_citecheck lists {pairs} pairs, more than {MAX_PAIRS}: "
        f"make one piece of code serve where the logic is the same\n{done.stdout}"
    )
