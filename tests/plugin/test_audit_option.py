"""--citecheck-audit=PATH: the plugin appends one audit row per citation."""

from __future__ import annotations

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


def test_an_unusable_audit_file_fails_the_gate_with_the_reason(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    (pytester.path / "audit.db").write_text("not a database", encoding="utf-8")
    result = pytester.runpytest(
        "--citecheck", "--citecheck-record=all", "--citecheck-audit=audit.db"
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines(["citecheck gate FAILED: --citecheck-audit: audit file audit.db*"])
