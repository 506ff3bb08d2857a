"""The plugin over the engine: start-up key checks, the recording progress line, the
concurrency option."""

from __future__ import annotations

import re

import pytest

from tests.plugin.fakes import CONFTEST, NOT_FOUND, SUPPORTED, UNREACHABLE, claims_yaml

URL_CLAIMS = """\
claims:
  - id: a
    claim: Water boils.
    citations:
      - https://example.com/a
"""


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "CRAWLBASE_TOKEN", "CRAWLBASE_JS_TOKEN", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_missing_keys_are_one_usage_error_before_anything_runs(
    pytester: pytest.Pytester, no_keys: None, xdist: list[str]
) -> None:
    pytester.makefile(".yaml", citecheck_a=URL_CLAIMS)
    pytester.makefile(".yaml", citecheck_b="judge: anthropic:claude-x\n" + URL_CLAIMS)
    result = pytester.runpytest("--citecheck", "--citecheck-record=once", *xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: citecheck cannot record:",
            "*set OPENAI_API_KEY*default judge*",
            "*set ANTHROPIC_API_KEY*claude-x comes from a claim file's judge:*",
            "*CRAWLBASE_TOKEN is not set*",
        ]
    )
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output
    assert not (pytester.path / "cassettes").exists()


def test_an_ini_judge_is_named_with_its_option(pytester: pytest.Pytester, no_keys: None) -> None:
    pytester.makeini("[pytest]\ncitecheck_judge = anthropic:claude-x\n")
    pytester.makefile(".yaml", citecheck_a=URL_CLAIMS)
    result = pytester.runpytest("--citecheck", "--citecheck-record=all")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ANTHROPIC_API_KEY*from the ini option citecheck_judge*"])


def test_replay_checks_no_key(pytester: pytest.Pytester, no_keys: None) -> None:
    pytester.makefile(".yaml", citecheck_a=URL_CLAIMS)
    result = pytester.runpytest("--citecheck")
    result.assert_outcomes(failed=1)  # no recording, reported per claim
    result.stdout.fnmatch_lines(["*no_recording*"])


@pytest.mark.parametrize(
    ("where", "flags"),
    [
        ("file", []),
        ("flag", ["--citecheck-judge=anthropic:claude-x"]),
        ("ini", []),
    ],
)
def test_the_no_recording_hint_names_the_judge_that_would_record_and_its_key(
    pytester: pytest.Pytester, no_keys: None, where: str, flags: list[str]
) -> None:
    """Nothing was judged (no recording): the hint names the judge that records,
    chosen by the file, the flag or the ini, never the default judge and its key."""
    head = "judge: anthropic:claude-x\n" if where == "file" else ""
    if where == "ini":
        pytester.makeini("[pytest]\ncitecheck_judge = anthropic:claude-x\n")
    pytester.makefile(".yaml", citecheck_a=head + URL_CLAIMS)
    result = pytester.runpytest("--citecheck", *flags)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "citecheck: 1 citation in 1 claim has no recording; record it with: *"
            "(recording needs CRAWLBASE_TOKEN, ANTHROPIC_API_KEY for the judge "
            "anthropic:claude-x and the embed or bm25 extra); -v lists each"
        ]
    )
    assert "OPENAI_API_KEY" not in result.stdout.str()


def test_the_no_recording_hint_names_a_panel_s_judges(
    pytester: pytest.Pytester, no_keys: None
) -> None:
    pytester.makefile(".yaml", citecheck_a=URL_CLAIMS)
    result = pytester.runpytest(
        "--citecheck", "--citecheck-judges=anthropic:claude-x,ollama:llama3", "-n", "2"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*(recording needs CRAWLBASE_TOKEN, ANTHROPIC_API_KEY for the judge anthropic:claude-x "
            "and the embed or bm25 extra)*"
        ]
    )


def test_a_file_naming_the_default_judge_is_not_told_it_is_the_default(
    pytester: pytest.Pytester, no_keys: None
) -> None:
    pytester.makefile(".yaml", citecheck_a="judge: openai:gpt-4o-mini\n" + URL_CLAIMS)
    result = pytester.runpytest("--citecheck", "--citecheck-record=once")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*set OPENAI_API_KEY*(judge openai:gpt-4o-mini comes from a claim file's judge:)"]
    )
    assert "default judge" not in result.stderr.str()


def test_recording_shows_progress_unless_quiet(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND, UNREACHABLE))
    result = pytester.runpytest(
        "--citecheck", "--citecheck-record=all", "--citecheck-concurrency=2"
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["citecheck: 3/3 claims, 3 citations, 0 credits, *s"])
    quiet = pytester.runpytest("--citecheck", "--citecheck-record=all", "-q")
    quiet.assert_outcomes(passed=3)
    assert "citecheck: 3/3" not in quiet.stdout.str()


def test_a_bad_concurrency_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--citecheck", "--citecheck-concurrency=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--citecheck-concurrency*'0' is not at least 1*"])
    pytester.makeini("[pytest]\ncitecheck_timeout = soon\n")
    result = pytester.runpytest("--citecheck")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option citecheck_timeout*"])


def test_recording_progress_is_one_line_counting_each_claim_once(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND))
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("--citecheck", "--citecheck-record=all")
    result.assert_outcomes(passed=3)
    lines = result.stdout.lines
    progress = [i for i, line in enumerate(lines) if line.startswith("citecheck: ")]
    assert [lines[i].split(", 0 credits")[0] for i in progress] == [
        "citecheck: 2/2 claims, 2 citations"
    ]
    # The file's test line follows it, whole, with no blank line between.
    (at,) = progress
    assert re.fullmatch(r"citecheck_a\.yaml \.\. +\[ 66%\]", lines[at + 1]), lines
    assert re.fullmatch(r"test_plain\.py \. +\[100%\]", lines[at + 2]), lines


def test_a_failed_gate_adds_no_letter_after_the_last_progress_mark(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND))
    result = pytester.runpytest(
        "--citecheck", "--citecheck-record=all", "--citecheck-min-precision=0.9"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (last,) = [line for line in result.stdout.lines if line.startswith("citecheck_a.yaml ..")]
    assert last.endswith("[100%]"), last
    # "2 passed, 1 citecheck gate failed" (a warnings count may sit between the two).
    result.stdout.fnmatch_lines(["*2 passed, *1 citecheck gate failed in *"])


def test_help_types_the_numeric_ini_options(pytester: pytest.Pytester) -> None:
    out = pytester.runpytest("--help").stdout.str()
    for name, kind in (
        ("citecheck_concurrency", "int"),
        ("citecheck_timeout", "float"),
        ("citecheck_max_page_bytes", "int"),
        ("citecheck_quote_similarity", "float"),
        ("citecheck_min_precision", "float"),
    ):
        assert f"  {name} ({kind}):" in out, name
    pytester.makeini("[pytest]\ncitecheck_concurrency = 2.5\n")
    result = pytester.runpytest("--citecheck")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option citecheck_concurrency*"])
