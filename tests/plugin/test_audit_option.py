"""--citecheck-audit=PATH: the plugin appends one audit row per citation."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.plugin.fakes import CONFTEST, SUPPORTED, UNREACHABLE, claims_yaml


def audit_rows(pytester: pytest.Pytester) -> list[tuple[str, str, str, str]]:
    with sqlite3.connect(pytester.path / "audit.db") as connection:
        return connection.execute(
            "SELECT source, claim_id, url, label FROM citations ORDER BY id"
        ).fetchall()


@pytest.mark.parametrize("workers", [None, "0", "2"])
def test_every_citation_gets_a_row(pytester: pytest.Pytester, workers: str | None) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, UNREACHABLE))
    args = ["--citecheck", "--citecheck-record=all", "--citecheck-audit=audit.db"]
    if workers is not None:
        args += ["-n", workers]
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=2)
    assert sorted(audit_rows(pytester)) == [
        ("pytest", "citecheck_a.yaml::boils-100", "https://example.com/boiling", "supported"),
        ("pytest", "citecheck_a.yaml::gone", "https://example.com/gone", "unreachable"),
    ]


def test_runs_append_with_their_own_run_id(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    for _ in range(2):
        pytester.runpytest("--citecheck", "--citecheck-record=all", "--citecheck-audit=audit.db")
    with sqlite3.connect(pytester.path / "audit.db") as connection:
        runs = connection.execute("SELECT DISTINCT run_id FROM citations").fetchall()
    assert len(runs) == 2


def test_an_unusable_audit_file_is_a_usage_error_before_any_claim_runs(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    (pytester.path / "audit.db").write_text("not a database", encoding="utf-8")
    (pytester.path / "afile").write_text("a file, not a folder", encoding="utf-8")
    for path, why in (("audit.db", "file is not a database"), ("afile/x.db", "afile")):
        result = pytester.runpytest(
            "--citecheck", "--citecheck-record=all", f"--citecheck-audit={path}"
        )
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"ERROR: --citecheck-audit: *{path}*{why}*"])
        assert "Traceback" not in result.stdout.str() + result.stderr.str()
        assert "citation precision" not in result.stdout.str()


def test_an_audit_file_that_breaks_during_the_run_fails_the_gate_and_keeps_the_rest(
    pytester: pytest.Pytester,
) -> None:
    # Passes the start-up check, then is overwritten while the run goes on.
    pytester.makeconftest(
        CONFTEST + "\n\n@pytest.hookimpl(trylast=True)\n"
        "def pytest_sessionstart(session):\n"
        "    (session.config.rootpath / 'audit.db').write_text('not a database')\n"
    )
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    result = pytester.runpytest(
        "--citecheck",
        "--citecheck-record=all",
        "--citecheck-audit=audit.db",
        "--citecheck-report=report.json",
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "1 claim, 1 citation: citation precision 1.0000 (1/1)*",
            "citecheck gate FAILED: --citecheck-audit: audit file audit.db*",
        ]
    )
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["totals"]["claims"] == 1
