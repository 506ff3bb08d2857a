"""pytest-xdist: the controller aggregates; a dead worker's claims count as errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.plugin.session import crashed_result
from tests.plugin.fakes import CONFTEST, NOT_FOUND, SUPPORTED, UNREACHABLE, claims_yaml

CRASHING = (
    CONFTEST
    + """
import os

_fetch = FakeFetcher.fetch

def crash_on_doom(self, url):
    if url == "https://example.com/doom":
        os._exit(3)  # the worker process dies mid-claim
    return _fetch(self, url)

FakeFetcher.fetch = crash_on_doom
"""
)


def test_same_totals_with_and_without_xdist(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND))
    pytester.makefile(".yaml", citecheck_b=claims_yaml(UNREACHABLE, SUPPORTED))
    reports = []
    for args in ([], ["-n", "2"]):
        report = pytester.path / f"report{len(reports)}.json"
        result = pytester.runpytest(
            "--citecheck", "--citecheck-record=all", f"--citecheck-report={report}", *args
        )
        result.assert_outcomes(passed=4)
        result.stdout.fnmatch_lines(
            [
                "4 claims, 4 citations: citation precision 0.5000 (2/4), reachable precision "
                "0.6667 (2/3)"
            ]
        )
        reports.append(json.loads(report.read_text()))
    assert reports[0]["totals"] == reports[1]["totals"]
    assert reports[0]["claims"] == reports[1]["claims"]


def test_crashed_worker_counts_its_claim_as_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CRASHING)
    doomed = (
        "doomed",
        "Water boils at 100 C.",
        ["https://example.com/doom", "https://example.com/boiling"],
        None,
    )
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, doomed, NOT_FOUND))
    report = pytester.path / "report.json"
    result = pytester.runpytest(
        "--citecheck", "--citecheck-record=all", "-n", "2", f"--citecheck-report={report}"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*3 claims, 4 citations:*",
            "*ERROR*citecheck_a.yaml::doomed*https://example.com/doom*worker_crashed*",
            "citecheck gate FAILED: 2 citations could not be verified (error)*",
        ]
    )
    data = json.loads(report.read_text())
    doomed_result = next(c for c in data["claims"] if c["id"] == "doomed")
    assert [v["label"] for v in doomed_result["verdicts"]] == ["error", "error"]


def test_a_crashed_claim_whose_file_no_longer_reads_is_still_an_error(tmp_path: Path) -> None:
    # A fixture test (no claim file), and a claim file deleted while its worker died.
    for nodeid in ("tests/test_app.py::test_answer[0]", "gone/citecheck_x.yaml::q1"):
        result = crashed_result(nodeid, tmp_path)
        assert result.label == Label.ERROR
        [verdict] = result.verdicts
        assert verdict.reason == "worker_crashed" and nodeid in (verdict.detail or "")
        assert nodeid in result.claim
