"""The session gate, each bar with and without pytest-xdist."""

from __future__ import annotations

import json

import pytest

from tests.plugin.fakes import (
    CONFTEST,
    CONTRADICTED,
    NOT_FOUND,
    REVIEW,
    SUPPORTED,
    UNREACHABLE,
    claims_yaml,
)

XDIST_MODES = [[], ["-n", "0"], ["-n", "2"]]
# A bar that reads the same totals as another one needs no workers of its own: the
# precision floor, a contradiction, the baseline, a partial run and the answer
# figures are where results cross from workers to the controller.
IN_PROCESS = pytest.mark.parametrize("xdist", XDIST_MODES[:2], ids=["no-xdist", "n0"])


@pytest.fixture(params=XDIST_MODES, ids=["no-xdist", "n0", "n2"])
def xdist(request: pytest.FixtureRequest) -> list[str]:
    args: list[str] = request.param
    return args


def run(pytester: pytest.Pytester, xdist: list[str], *args: str) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    # Record mode writes the retrieval choices of the in-process fakes; no HTTP is made.
    return pytester.runpytest("--citecheck", "--citecheck-record=all", *xdist, *args)


def test_precision_floor_fails_with_the_margin(pytester: pytest.Pytester, xdist: list[str]) -> None:
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND, UNREACHABLE))
    result = run(pytester, xdist, "--citecheck-min-precision=0.5")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*3 claims, 3 citations: citation precision 0.3333 (1/3), reachable precision "
            "0.5000 (1/2)*",
            "citecheck gate FAILED: citation precision 0.3333 is below citecheck_min_precision "
            "0.5000 (short by 0.1667)",
        ]
    )


@IN_PROCESS
def test_reachable_precision_floor(pytester: pytest.Pytester, xdist: list[str]) -> None:
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND, UNREACHABLE))
    result = run(pytester, xdist, "--citecheck-min-reachable-precision=0.5")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["citecheck gate passed"])
    result = run(pytester, xdist, "--citecheck-min-reachable-precision=0.6")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*reachable precision 0.5000 is below*0.6000 (short by 0.1000)"])


def test_contradicted_fails_item_and_session(pytester: pytest.Pytester, xdist: list[str]) -> None:
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, CONTRADICTED))
    result = run(pytester, xdist)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*citecheck: 1 citation contradicted*",
            "*CONTRADICTED*citecheck_a.yaml::boils-50*https://example.com/boiling",
            '*"Water boils at 100 degrees Celsius"',
            "citecheck gate FAILED: 1 citation contradicted*",
        ]
    )


@IN_PROCESS
def test_allow_contradicted_ini_and_expect(pytester: pytest.Pytester, xdist: list[str]) -> None:
    pytester.makeini("[pytest]\ncitecheck_allow_contradicted = true\n")
    expected = (*CONTRADICTED[:3], "contradicted")
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, expected))
    result = run(pytester, xdist)
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK


@IN_PROCESS
def test_expect_mismatch_fails_the_item(pytester: pytest.Pytester, xdist: list[str]) -> None:
    wrong = (*SUPPORTED[:3], "not_found")
    pytester.makefile(".yaml", citecheck_a=claims_yaml(wrong))
    result = run(pytester, xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*claim label is supported, expected not_found*"])


def test_baseline_drop(pytester: pytest.Pytester, xdist: list[str]) -> None:
    baseline = pytester.path / "baseline.json"
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND))
    result = run(pytester, xdist, f"--citecheck-report={baseline}")
    assert result.ret == pytest.ExitCode.OK
    assert json.loads(baseline.read_text())["totals"]["citation_precision"] == 0.5
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND, UNREACHABLE))
    result = run(pytester, xdist, f"--citecheck-baseline={baseline}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "baseline precision 0.5000 -> 0.3333 (-0.1667)",
            "citecheck gate FAILED: citation precision fell by 0.1667, from the baseline 0.5000 "
            "to 0.3333 (citecheck_max_drop 0.0000)",
        ]
    )
    result = run(pytester, xdist, f"--citecheck-baseline={baseline}", "--citecheck-max-drop=0.2")
    assert result.ret == pytest.ExitCode.OK


@IN_PROCESS
def test_strict_review(pytester: pytest.Pytester, xdist: list[str]) -> None:
    pytester.makefile(".yaml", citecheck_a=claims_yaml(REVIEW))
    result = run(pytester, xdist)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["review (a person should look):", "*0.50*unsure*  [[]low confidence]"]
    )
    result = run(pytester, xdist, "--citecheck-strict-review")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["citecheck gate FAILED: 1 verdict below the confidence gate*"])


def test_flag_wins_over_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncitecheck_min_precision = 0.9\n")
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND))
    assert run(pytester, []).ret == pytest.ExitCode.TESTS_FAILED
    assert run(pytester, [], "--citecheck-min-precision=0.5").ret == pytest.ExitCode.OK


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--citecheck-min-precision=1.5"], "", "*'1.5' is not between 0 and 1*"),
        (["--citecheck-max-drop=abc"], "", "*'abc' is not a number between 0 and 1*"),
        (["--citecheck-record=sometimes"], "", "*invalid choice: 'sometimes'*"),
        (["--citecheck-judge=gpt4"], "", "*'gpt4' is not PROVIDER:MODEL*"),
        ([], "citecheck_min_precision = high", "*ini option citecheck_min_precision*"),
    ],
)
def test_bad_settings_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], ini: str, message: str
) -> None:
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    result = pytester.runpytest("--citecheck", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_unknown_judge_provider_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    result = pytester.runpytest("--citecheck", "--citecheck-judge=gemini:pro")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--citecheck-judge gemini:pro:*openai*anthropic*ollama*"])


def test_recording_without_a_key_is_a_usage_error_naming_the_variable(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    result = pytester.runpytest(
        "--citecheck", "--citecheck-record=once", "--citecheck-judge=openai:gpt-4o-mini"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*OPENAI_API_KEY*"])


ANSWER_FILE = """\
answers:
  - {id: water, response: water.md, format: markdown}
  - {id: cats, response: cats.md, format: markdown}
"""


ANSWER_LINE = "2 answers, 4 sentences, 2 uncited: answer support 0.5000 (1/2 claims)"
# Per answer: water 1 of 2 sentences supported (the other uncited), cats 0 of 2; ALCE's
# figures over the run are the means over the two answers.
ALCE_LINE = "ALCE citation recall 0.2500, citation precision 0.5000 (mean over 2 answers)"


@pytest.mark.parametrize(
    ("ini", "failure", "passing_flag"),
    [
        (
            "citecheck_min_answer_support = 0.9",
            "citecheck gate FAILED: answer support 0.5000 (1/2 claims of 2 answers) is below "
            "citecheck_min_answer_support 0.9000 (short by 0.4000)",
            "--citecheck-min-answer-support=0.5",
        ),
        (
            "citecheck_min_citation_recall = 0.3",
            "citecheck gate FAILED: ALCE citation recall 0.2500 (mean over 2 answers) is below "
            "citecheck_min_citation_recall 0.3000 (short by 0.0500)",
            "--citecheck-min-citation-recall=0.25",
        ),
    ],
    ids=["answer-support", "citation-recall"],
)
def test_answer_floor_flag_wins_over_ini(
    pytester: pytest.Pytester, xdist: list[str], ini: str, failure: str, passing_flag: str
) -> None:
    # Two imported answers: one supported cited sentence, one not_found, two uncited.
    pytester.makefile(
        ".md",
        water="Water boils at 100 C.[1] Kettles whistle.\n\n[1]: https://example.com/boiling\n",
        cats="Cats bark.[1] Dogs purr.\n\n[1]: https://example.com/other\n",
    )
    pytester.makefile(".yaml", citecheck_answers=ANSWER_FILE)
    pytester.makeini(f"[pytest]\n{ini}\n")
    result = run(pytester, xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([ANSWER_LINE, ALCE_LINE, failure])
    result = run(pytester, xdist, passing_flag)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["citecheck gate passed"])


def test_a_run_without_answers_has_no_answer_line_and_no_answer_bar(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND))
    result = run(
        pytester, [], "--citecheck-min-answer-support=0.9", "--citecheck-min-citation-recall=0.9"
    )
    assert result.ret == pytest.ExitCode.OK
    assert "answer" not in result.stdout.str().split("== citecheck ==")[-1]


def test_a_partial_run_says_it_judged_a_part_and_compares_the_same_claims(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND, UNREACHABLE))
    baseline = pytester.path / "baseline.json"
    run(pytester, xdist, f"--citecheck-report={baseline}").assert_outcomes(passed=3)
    # The baseline's whole run has precision 1/3; its figure over `cats-bark` alone is 0/1.
    result = run(pytester, xdist, "-k", "cats", f"--citecheck-baseline={baseline}")
    # (pytest-xdist's controller does not count deselected items in its outcomes.)
    result.assert_outcomes(passed=1, deselected=0 if "2" in xdist else 2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "1 claim, 1 citation: citation precision 0.0000 (0/1)*",
            "gate over 1 of 3 claims (2 deselected)",
            "baseline precision 0.0000 -> 0.0000 (+0.0000) (the baseline over the same 1 claim)",
            "citecheck gate passed",
        ]
    )
    # The whole run is compared with the whole baseline, and says nothing about a part.
    whole = run(pytester, xdist, f"--citecheck-baseline={baseline}")
    whole.stdout.fnmatch_lines(["baseline precision 0.3333 -> 0.3333 (+0.0000)"])
    whole.stdout.no_fnmatch_line("gate over *")
    whole.stdout.no_fnmatch_line("*the baseline over the same*")


@IN_PROCESS
def test_a_part_of_the_suite_shows_the_floors_it_misses_without_failing_on_them(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND))
    pytester.makefile(".yaml", citecheck_b=claims_yaml(("b-100", *SUPPORTED[1:])))
    pytester.makeini("[pytest]\ncitecheck_min_precision = 0.9\n")
    floor = (
        "  citation precision 0.5000 is below citecheck_min_precision 0.9000 (short by 0.4000): "
        "not applied to a part of the suite (--citecheck-gate=full applies it)"
    )
    # One claim file named, and -k: the same rule.
    for args, scope in (
        (("citecheck_a.yaml",), "gate over the 2 claims of the files named (a part of the suite)"),
        (("-k", "boils or cats"), "gate over 2 of 3 claims (1 deselected)"),
    ):
        part = run(pytester, xdist, *args)
        assert part.ret == pytest.ExitCode.OK, part.stdout.str()
        part.stdout.fnmatch_lines([scope, floor, "citecheck gate passed"])
        full = run(pytester, xdist, *args, "--citecheck-gate=full")
        assert full.ret == pytest.ExitCode.TESTS_FAILED
        full.stdout.fnmatch_lines(
            ["citecheck gate FAILED: citation precision 0.5000 is below citecheck_min_precision*"]
        )
    # The whole suite is gated as before, whatever the scope.
    whole = run(pytester, xdist)
    assert whole.ret == pytest.ExitCode.TESTS_FAILED
    whole.stdout.no_fnmatch_line("gate over *")
    whole.stdout.fnmatch_lines(["citecheck gate FAILED: citation precision 0.6667 is below*"])
