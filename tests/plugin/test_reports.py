"""--citecheck-report, --citecheck-csv, --junitxml properties and the failure table."""

from __future__ import annotations

import csv
import json
import platform
import sys
import xml.etree.ElementTree as ET
from datetime import datetime

import pytest

from pytest_citecheck import __version__
from tests.plugin.fakes import CONFTEST, CONTRADICTED, REVIEW, SUPPORTED, UNREACHABLE, claims_yaml

INVENTED = ("invented", "Invented quote.", ["https://example.com/other"], None)


@pytest.fixture
def result(pytester: pytest.Pytester) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(
        ".yaml", citecheck_a=claims_yaml(SUPPORTED, CONTRADICTED, UNREACHABLE, REVIEW, INVENTED)
    )
    return pytester.runpytest(
        "--citecheck",
        "--citecheck-record=all",
        "--citecheck-report=out/report.json",
        "--citecheck-csv=out/report.csv",
        "--junitxml=out/junit.xml",
    )


def test_terminal_summary_puts_contradictions_first_then_review(result: pytest.RunResult) -> None:
    result.stdout.fnmatch_lines(
        [
            "*= citecheck =*",
            "5 claims, 5 citations: citation precision 0.4000 (2/5), reachable precision "
            "0.5000 (2/4)",
            "supported 2 | contradicted 1 | fabricated 0 | not_found 1 | unreachable 1 | error 0",
            "crawling API credits 0, judge tokens 40 in / 8 out",
            "contradicted and fabricated:",
            "  CONTRADICTED citecheck_a.yaml::boils-50  https://example.com/boiling",
            '      "Water boils at 100 degrees Celsius"',
            "review (a person should look):",
            "*0.50  citecheck_a.yaml::unsure*",
            "*citecheck_a.yaml::invented*",
        ]
    )


def test_failure_shows_a_table_of_citations(result: pytest.RunResult) -> None:
    result.stdout.fnmatch_lines(
        [
            "*citecheck: boils-50*",
            "citecheck: 1 citation contradicted*",
            "claim 'boils-50': Water boils at 50 C.",
            "claim label: contradicted",
            "#  label*reason*conf*final URL / source*quote",
            "1  contradicted*-*0.90*https://example.com/boiling*Water boils at 100 degrees Celsius",
        ]
    )


def test_guard_downgrade_is_visible(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    data = json.loads((pytester.path / "out" / "report.json").read_text())
    invented = next(c for c in data["claims"] if c["id"] == "invented")
    verdict = invented["verdicts"][0]
    assert verdict["label"] == "not_found"
    assert verdict["reason"] == "evidence_quote_not_in_source"
    assert verdict["confidence"] == 0.0


def test_json_report_is_the_baseline_format(
    pytester: pytest.Pytester, result: pytest.RunResult
) -> None:
    data = json.loads((pytester.path / "out" / "report.json").read_text())
    assert data["totals"]["citation_precision"] == 0.4
    assert data["totals"]["by_label"]["unreachable"] == 1
    assert data["gate"]["passed"] is False
    assert {c["nodeid"] for c in data["claims"]} == {
        f"citecheck_a.yaml::{i}" for i in ("boils-100", "boils-50", "gone", "unsure", "invented")
    }
    supported = next(c for c in data["claims"] if c["id"] == "boils-100")["verdicts"][0]
    assert supported["evidence_quote"] == "Water boils at 100 degrees Celsius"
    assert supported["passages"][0]["text"].startswith("Water boils at 100")


def test_csv_has_a_row_per_citation(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    with (pytester.path / "out" / "report.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["claim_id"], r["label"]) for r in rows] == [
        ("boils-100", "supported"),
        ("boils-50", "contradicted"),
        ("gone", "unreachable"),
        ("unsure", "supported"),
        ("invented", "not_found"),
    ]
    assert rows[2]["reason"] == "http_404"


def test_junit_has_per_citation_properties(
    pytester: pytest.Pytester, result: pytest.RunResult
) -> None:
    tree = ET.parse(pytester.path / "out" / "junit.xml")
    case = next(c for c in tree.iter("testcase") if c.get("name") == "boils-50")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["citecheck.claim_label"] == "contradicted"
    assert props["citecheck.citation.1.label"] == "contradicted"
    assert props["citecheck.citation.1.quote"] == "Water boils at 100 degrees Celsius"


def test_json_report_has_run_metadata_files_and_outcomes_in_file_order(
    pytester: pytest.Pytester, result: pytest.RunResult
) -> None:
    data = json.loads((pytester.path / "out" / "report.json").read_text())
    run = data["run"]
    assert run["plugin_version"] == __version__
    assert run["judges"] == ["fake:judge"]
    assert run["prompt_version"] is None  # a custom judge: the built-in prompt is not known
    assert run["record_mode"] == "all"
    assert run["python"] == platform.python_version()
    assert run["platform"].startswith(sys.platform)
    started = datetime.fromisoformat(run["started"])
    assert started.tzinfo is not None and started <= datetime.fromisoformat(run["finished"])
    assert [(c["id"], c["passed"]) for c in data["claims"]] == [
        ("boils-100", True),
        ("boils-50", False),
        ("gone", True),
        ("unsure", True),
        ("invented", True),
    ]
    assert list(data["files"]) == ["citecheck_a.yaml"]
    assert data["files"]["citecheck_a.yaml"]["citations"] == 5
    assert data["files"]["citecheck_a.yaml"]["failed"] == 1
