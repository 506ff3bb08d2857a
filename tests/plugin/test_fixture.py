"""The ``citecheck`` fixture: claims verified inside ordinary tests join the totals."""

from __future__ import annotations

import re
from pathlib import Path

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


# The fixture example of docs/python.md, run as written.
DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "python.md"
_SECTION = DOCS_PAGE.read_text(encoding="utf-8").split("## The `citecheck` fixture", 1)[1]
_BLOCK = re.search(r"```python\n(.*?)```", _SECTION, re.S)
assert _BLOCK, "docs/python.md has no python block under its fixture section"
DOCS_EXAMPLE = _BLOCK.group(1)
KEYS = ("CRAWLBASE_TOKEN", "CRAWLBASE_JS_TOKEN", "OPENAI_API_KEY", "CITECHECK_JUDGE_API_KEY")


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["no-xdist", "n2"])
def test_recording_without_tokens_is_the_usage_error_and_tries_no_network(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    """The documented fixture example, recorded with no token set: the start-up check's
    message, not four tries per service ending in crawl_failed / judge_unavailable.
    (An xdist worker cannot stop the session: there the test fails with it.)"""
    from tests.doubles.crawlbase import CrawlbaseDouble
    from tests.doubles.llm import LLMDouble

    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_answers=DOCS_EXAMPLE)
    (pytester.path / "sources").mkdir()
    (pytester.path / "sources" / "handbook.md").write_text("Water boils at 100 degrees.\n")
    with CrawlbaseDouble() as api, LLMDouble() as llm:
        monkeypatch.setenv("CITECHECK_CRAWLBASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url("openai"))
        result = pytester.runpytest("--citecheck-record=once", *xdist)
        assert api.calls == [] and llm.calls == []
    if xdist:
        result.assert_outcomes(failed=1)
    else:
        assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    out = result.stdout.str() + result.stderr.str()
    assert "citecheck cannot record:" in out
    assert "CRAWLBASE_TOKEN is not set" in out
    assert "set OPENAI_API_KEY" in out
    assert "crawl_failed" not in out and "judge_unavailable" not in out
    assert not (pytester.path / "cassettes").exists()


def test_a_failed_label_assertion_shows_the_citations_and_the_record_command(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_answers="""
def test_boiling(citecheck):
    result = citecheck.verify(
        "Water boils at 50 C.", ["https://example.com/boiling", "https://example.com/gone"]
    )
    assert result.label == "supported"
"""
    )
    result = pytester.runpytest("--citecheck-record=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       *assert 'contradicted' == 'supported'",
            "E         claim 'claim-1' is contradicted: Water boils at 50 C.",
            'E           1. contradicted (0.90) https://example.com/boiling: "Water boils at 100 '
            'degrees Celsius"',
            "E           2. unreachable [[]http_404[]] https://example.com/gone",
            "E         if the sources changed, record the test again: pytest --citecheck "
            "--citecheck-record=rewrite test_answers.py::test_boiling",
        ]
    )


def test_a_missing_recording_names_the_cassette_path_and_the_command(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_answers=DOCS_EXAMPLE)
    (pytester.path / "sources").mkdir()
    (pytester.path / "sources" / "handbook.md").write_text("Water boils at 100 degrees.\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       *assert 'error' == 'supported'",
            "E         claim 'claim-1' is error: Water boils at 100 degrees Celsius at sea level.",
            "E           1. error [[]no_recording[]] https://example.com/articles/water-boiling-point",
            "E           2. error [[]no_recording[]] sources/handbook.md",
            "E         no recording (cassettes/test_answers/test_answer_cites_its_sources.yaml "
            "does not exist); record it with: pytest --citecheck --citecheck-record=once "
            "test_answers.py::test_answer_cites_its_sources",
        ]
    )
    assert (pytester.path / "cassettes" / "test_answers").exists() is False
