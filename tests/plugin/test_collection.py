"""--citecheck, claim-file collection, invalid files, -k, -p no:citecheck."""

from __future__ import annotations

import pytest

from tests.plugin.fakes import CONFTEST, NOT_FOUND, SUPPORTED, claims_yaml


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_water=claims_yaml(SUPPORTED, NOT_FOUND))
    return pytester


def test_without_flag_claim_files_are_not_collected(suite: pytest.Pytester) -> None:
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["collected 0 items"])
    result.stdout.no_fnmatch_line("*citecheck_water*")


def test_each_claim_is_an_item_named_by_its_id(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--citecheck", "--citecheck-record=once", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        ["citecheck_water.yaml::boils-100", "citecheck_water.yaml::cats-bark"]
    )


def test_k_selects_claims_by_id(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--citecheck", "--citecheck-record=once", "-k", "boils")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["*1 claim, 1 citation: citation precision 1.0000 (1/1)*"])


def test_plugin_can_be_disabled(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-p", "no:citecheck")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result = suite.runpytest("-p", "no:citecheck", "--citecheck")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_bad_file_names_line_and_fix_while_others_run(suite: pytest.Pytester) -> None:
    suite.makefile(
        ".yaml",
        citecheck_broken="claims:\n  - id: a\n    claim: x\n    citations: []\n    colour: red\n",
    )
    result = suite.runpytest("--citecheck", "--citecheck-record=once")
    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*citecheck_broken.yaml:5: *colour*", "*fix:*"])


def test_custom_pattern_ini(suite: pytest.Pytester) -> None:
    suite.makeini("[pytest]\ncitecheck_patterns = claims_*.yml\n")
    suite.makefile(".yml", claims_more=claims_yaml(SUPPORTED))
    result = suite.runpytest("--citecheck", "--citecheck-record=once", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["claims_more.yml::boils-100"])
    result.stdout.no_fnmatch_line("citecheck_water.yaml*")


def test_jsonl_batch_file(suite: pytest.Pytester) -> None:
    suite.makefile(
        ".jsonl",
        citecheck_batch='{"id": "b1", "claim": "Water boils at 100 C.", '
        '"urls": ["https://example.com/boiling", "https://example.com/gone"]}\n',
    )
    result = suite.runpytest("--citecheck", "--citecheck-record=once", "-k", "b1")
    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.fnmatch_lines(["*supported 1 | *unreachable 1*"])


def test_help_lists_the_record_option_in_the_first_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        ["citation checking (pytest-citecheck):", "*--citecheck-record=*", "*default: none*"]
    )


@pytest.mark.parametrize(
    "name",
    ["citecheck_a.yaml", "xcitecheck_a.yaml", "citecheck_.jsonl", "answers.yaml", "a.yaml.bak"],
)
def test_the_compiled_patterns_match_what_fnmatch_matches(name: str) -> None:
    import fnmatch

    from pytest_citecheck.plugin.options import _patterns_regex

    patterns = ("citecheck_*.yaml", "citecheck_*.jsonl", "answers.yaml", "[!x]*.yml")
    expected = any(fnmatch.fnmatch(name, p) for p in patterns)
    assert (_patterns_regex(patterns).match(name) is not None) is expected
    assert _patterns_regex(()).match(name) is None
