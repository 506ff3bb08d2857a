"""The outputs the docs quote are the ones the example suite prints today.

The recording page shows a dry run of the example suite line for line, and the judges
page quotes the summary's confirmation line and its count: both are compared with a
real run, so a change to what the commands print fails here until the docs follow.
"""

from __future__ import annotations

import re

from tests.e2e.test_example_suite import SUITE, run

REPO = SUITE.parent
DRY_RUN = "pytest --citecheck --citecheck-record=all --citecheck-dry-run example_suite"


def block(page: str, first_line: str) -> list[str]:
    """The lines of the ``text`` block of ``page`` that starts with ``first_line``."""
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    (found,) = [
        body
        for body in re.findall(r"```text\n(.*?)\n```", text, re.S)
        if body.startswith(first_line)
    ]
    return found.splitlines()


def test_the_recording_page_shows_the_dry_run_the_example_suite_prints() -> None:
    command, *shown = block("recording.md", f"$ {DRY_RUN}")
    assert command == f"$ {DRY_RUN}"
    result = run(REPO, "example_suite", "--citecheck-record=all", "--citecheck-dry-run")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    start = lines.index("citecheck dry run (record mode all): nothing was sent")
    end = next(i for i, line in enumerate(lines) if line.startswith("dry run: claims="))
    assert shown == lines[start : end + 1]
    # The confirmation calls are on their own line and on the last one.
    assert any(line.startswith("  confirmation calls: ") for line in shown)
    assert "confirm_calls=" in shown[-1]


def test_the_judges_page_quotes_the_confirmation_line_and_count_a_run_prints() -> None:
    result = run(REPO, "example_suite")
    assert result.returncode == 0, result.stdout + result.stderr
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("confirmation: ")]
    calls = re.match(r"confirmation: (\d+) judge calls on the quote alone", line)
    assert calls, line
    judges = (REPO / "docs" / "judges.md").read_text(encoding="utf-8")
    flat = " ".join(judges.split())
    assert f"`{line}`" in flat
    # Every count of confirmation calls the page gives for the example suite is this one.
    counts = re.findall(r"(\d+) (?:confirmation calls|judge calls on the quote alone)", flat)
    assert counts and set(counts) == {calls.group(1)}, counts
