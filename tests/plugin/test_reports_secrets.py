"""A judge that echoes a secret must not put it in any report.

The page and the judge's quote carry the real values of ``CRAWLBASE_TOKEN`` and
``OPENAI_API_KEY`` (planted through the environment, shaped like no known
token so only the exact-value scrubbing can catch them).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.plugin.hostile import PLANTED, write_suite


@pytest.fixture
def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.RunResult:
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    write_suite(pytester.path)
    return pytester.runpytest(
        "--citecheck",
        "--citecheck-record=all",
        "--junitxml=out/junit.xml",
        "-o",
        "junit_logging=all",
        "--citecheck-report=out/r.json",
        "--citecheck-csv=out/r.csv",
        "--citecheck-md=out/r.md",
        "--citecheck-html=out/r.html",
        "-rA",
        "-v",
    )


def test_the_judge_did_echo_the_secrets(run: pytest.RunResult) -> None:
    # Otherwise the tests below would pass for the wrong reason.
    run.assert_outcomes(passed=1, failed=1)
    run.stdout.fnmatch_lines(["*echoes-secret FAILED [[]contradicted[]]*"])


def test_junit_quote_property_is_scrubbed(pytester: pytest.Pytester, run: pytest.RunResult) -> None:
    tree = ET.parse(pytester.path / "out" / "junit.xml")
    case = next(c for c in tree.iter("testcase") if c.get("name") == "echoes-secret")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["citecheck.citation.1.quote"] == (
        "The crawl token is REDACTED and the key is REDACTED here."
    )
    xml = (pytester.path / "out" / "junit.xml").read_text(encoding="utf-8")
    for value in PLANTED.values():
        assert value not in xml


def test_failure_table_and_summary_are_scrubbed(run: pytest.RunResult) -> None:
    run.stdout.fnmatch_lines(
        [
            "claim 'echoes-secret': The judge repeats a secret.",
            "*contradicted*The crawl token is REDACTED and the key is REDACTED here.",
        ]
    )
    run.stdout.fnmatch_lines(
        ["contradicted and fabricated:", "*", '      "The crawl token is REDACTED*']
    )
    printed = run.stdout.str() + run.stderr.str()
    for value in PLANTED.values():
        assert value not in printed


def test_no_report_file_holds_a_secret(pytester: pytest.Pytester, run: pytest.RunResult) -> None:
    written = [p for p in (pytester.path / "out").iterdir() if p.is_file()]
    assert sorted(p.name for p in written) == ["junit.xml", "r.csv", "r.html", "r.json", "r.md"]
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert "REDACTED" in text, path.name
        for value in PLANTED.values():
            assert value not in text, path.name


def test_step_summary_is_scrubbed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    write_suite(pytester.path)
    pytester.runpytest("--citecheck", "--citecheck-record=all")
    text = summary.read_text(encoding="utf-8")
    assert "The crawl token is REDACTED and the key is REDACTED here." in text
    for value in PLANTED.values():
        assert value not in text
