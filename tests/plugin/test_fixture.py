"""The ``citecheck`` fixture: claims verified inside ordinary tests join the totals."""

from __future__ import annotations

import pytest

from tests.plugin.fakes import CONFTEST

TEST_MODULE = """
def test_answer_cites_its_sources(citecheck):
    result = citecheck.verify(
        "Water boils at 100 C.",
        ["https://example.com/boiling", "https://example.com/gone"],
    )
    assert result.label == "supported"
    assert [v.label for v in result.verdicts] == ["supported", "unreachable"]


def test_a_bad_answer(citecheck):
    result = citecheck.verify("Water boils at 50 C.", ["https://example.com/boiling"])
    assert result.label == "contradicted"
"""


def test_fixture_results_join_the_gate_and_record_per_test(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_answers=TEST_MODULE)
    result = pytester.runpytest("--citecheck-record=once")
    # The tests' own assertions pass; the contradicted citation still fails the gate.
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "2 claims, 3 citations: citation precision 0.3333 (1/3), reachable precision "
            "0.5000 (1/2)",
            "*CONTRADICTED*test_answers.py::test_a_bad_answer*",
            "citecheck gate FAILED: 1 citation contradicted*",
        ]
    )
    cassettes = pytester.path / "cassettes" / "test_answers"
    assert sorted(p.name for p in cassettes.iterdir()) == [
        "test_a_bad_answer.yaml",
        "test_answer_cites_its_sources.yaml",
    ]
    # Replay (the default record mode) reads the same cassettes.
    replayed = pytester.runpytest()
    replayed.assert_outcomes(passed=2)
    replayed.stdout.fnmatch_lines(["2 claims, 3 citations: citation precision 0.3333 (1/3)*"])
