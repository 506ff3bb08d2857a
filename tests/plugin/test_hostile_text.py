"""Text from cited pages and claim files never drives the terminal, and one bad
claim costs only its own file: the summary and the report still appear."""

from __future__ import annotations

import json

import pytest

from tests.plugin.fakes import CONFTEST

PAGE = "\x1b[2J\x1b[31mWater boils at 100 degrees Celsius\x1b[0m\x07 at sea level."
HOSTILE = CONFTEST.replace(
    '"Water boils at 100 degrees Celsius at sea level.\\n\\nIt freezes at 0."',
    repr(PAGE),
).replace(
    '"Water boils at 50 C.": ("contradicted", "Water boils at 100 degrees Celsius", 0.9),',
    f'"Water boils at 50 C.": ("contradicted", {PAGE[:-14]!r}, 0.9),',
)

CLAIMS = """\
claims:
  - id: boils-50
    claim: Water boils at 50 C.
    citations: [https://example.com/boiling]
"""


def test_control_sequences_from_a_page_do_not_reach_the_terminal(
    pytester: pytest.Pytester,
) -> None:
    assert HOSTILE != CONFTEST
    pytester.makeconftest(HOSTILE)
    pytester.makefile(".yaml", citecheck_a=CLAIMS)
    result = pytester.runpytest("--citecheck", "--citecheck-record=all", "--color=no")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "contradicted" in out
    # The quote is shown (failure table and summary), without what would drive the terminal.
    assert out.count("Water boils at 100 degrees Celsius") >= 2
    assert "\x1b" not in out and "\x07" not in out and "[2J" not in out


def test_a_bad_escape_in_one_claim_file_keeps_the_summary_and_the_report(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(
        ".yaml",
        citecheck_good="claims:\n  - id: boils\n    claim: Water boils at 100 C.\n"
        "    citations: [https://example.com/boiling]\n",
        citecheck_bad='claims:\n  - id: bad\n    claim: "Water \\ud800 boils."\n'
        "    citations: [https://example.com/boiling]\n",
    )
    result = pytester.runpytest(
        "--citecheck", "--citecheck-record=all", "--citecheck-report=report.json"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*citecheck_bad.yaml:3: claim text is not usable text: it holds a lone surrogate*",
            "1 claim, 1 citation: citation precision 1.0000 (1/1)*",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert [c["id"] for c in report["claims"]] == ["boils"]


def test_the_claim_length_cap_is_an_ini_option_and_a_flag(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\ncitecheck_max_claim_chars = 10\n")
    pytester.makefile(
        ".yaml",
        citecheck_a="claims:\n  - id: boils\n    claim: Water boils at 100 C.\n"
        "    citations: [https://example.com/boiling]\n",
    )
    result = pytester.runpytest("--citecheck", "--citecheck-record=all")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*citecheck_a.yaml:3: claim text is 21 characters long (at most 10)",
            "*fix: *(or raise --citecheck-max-claim-chars or the ini option "
            "citecheck_max_claim_chars; 0 lifts the cap)",
        ]
    )
    result = pytester.runpytest(
        "--citecheck", "--citecheck-record=all", "--citecheck-max-claim-chars=0"
    )
    result.assert_outcomes(passed=1)
