"""Inside GitHub Actions, failing claims are annotated on their line of the claim file."""

from __future__ import annotations

import re

import pytest

from tests.plugin.fakes import CONFTEST, CONTRADICTED, REVIEW, SUPPORTED, UNREACHABLE, claims_yaml

# One of ours: a level, optional file and line, a citecheck title, then the message.
OURS = re.compile(r"::(error|warning|notice) (file=[^,:\s]+,line=\d+,)?title=citecheck[^:]*::\S")


def commands(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("::")]


def test_failing_claims_are_annotated_on_their_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(
        ".yaml", citecheck_a=claims_yaml(SUPPORTED, CONTRADICTED, REVIEW, UNREACHABLE)
    )
    result = pytester.runpytest("--citecheck", "--citecheck-record=all")
    result.assert_outcomes(passed=3, failed=1)
    # claims_yaml writes each claim in 4 lines after `claims:`: ids on lines 2, 6, 10, 14.
    assert commands(result.stdout.str()) == [
        "::error file=citecheck_a.yaml,line=6,title=citecheck%3A contradicted::"
        "boils-50: Water boils at 50 C.%0A"
        "citation 1 https://example.com/boiling: contradicted%0A"
        'the source says: "Water boils at 100 degrees Celsius"',
        "::warning file=citecheck_a.yaml,line=10,title=citecheck%3A review::"
        "unsure: Unsure claim.%0A"
        "citation 1 https://example.com/other: supported at confidence 0.50, "
        "below the review gate: a human should look at it",
        "::notice title=citecheck gate failed::"
        "citecheck gate FAILED: 1 citation contradicted "
        "(allow with citecheck_allow_contradicted)%0A"
        "4 claims, 4 citations, citation precision 0.5000",
    ]


def test_a_passing_run_gets_a_notice_and_no_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    result = pytester.runpytest("--citecheck", "--citecheck-record=all")
    result.assert_outcomes(passed=1)
    assert commands(result.stdout.str()) == [
        "::notice title=citecheck gate passed::citecheck gate passed: "
        "1 claim, 1 citation, citation precision 1.0000"
    ]


def test_no_workflow_commands_outside_github_actions(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, CONTRADICTED))
    result = pytester.runpytest("--citecheck", "--citecheck-record=all")
    result.assert_outcomes(passed=1, failed=1)
    assert commands(result.stdout.str()) == []
    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    assert commands(pytester.runpytest("--citecheck").stdout.str()) == []


EVIL_PAGE = "Fine text.\\n\\n::error file=x.py,line=1::page-injected %0A ::stop-commands::t"
EVIL_CONFTEST = (
    CONFTEST
    + f"""
PAGES["https://example.com/evil"] = "{EVIL_PAGE}"
SCRIPT["Evil claim.\\n::error::claim-injected"] = (
    "contradicted", "::error file=x.py,line=1::page-injected %0A ::stop-commands::t", 0.9
)
"""
)
EVIL_CLAIMS = """\
claims:
  - id: evil
    claim: |
      Evil claim.
      ::error::claim-injected
    citations:
      - https://example.com/evil
"""


def test_a_claim_or_page_with_colons_and_newlines_cannot_inject_a_command(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    pytester.makeconftest(EVIL_CONFTEST)
    pytester.makefile(".yaml", citecheck_evil=EVIL_CLAIMS)
    result = pytester.runpytest("--citecheck", "--citecheck-record=all")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    # The texts are shown (in the failure report and inside our annotation) ...
    assert "claim-injected" in out and "page-injected" in out
    # ... but every line that GitHub would read as a command is one of ours.
    found = commands(out)
    assert [c.split(" ", 1)[0] for c in found] == ["::error", "::notice"], out
    for command in found:
        assert OURS.match(command), command
    error = found[0]
    assert error.startswith(
        "::error file=citecheck_evil.yaml,line=2,title=citecheck%3A contradicted::"
    )
    assert "Evil claim.%0A::error::claim-injected%0A" in error
    assert "page-injected %250A ::stop-commands::t" in error


def test_sarif_log_places_each_failing_and_review_claim_on_its_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, CONTRADICTED, REVIEW))
    path = pytester.path / "out" / "citecheck.sarif"
    result = pytester.runpytest(
        "--citecheck", "--citecheck-record=all", f"--citecheck-sarif={path}"
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([f"citecheck SARIF log: {path.as_uri()}"])
    assert commands(result.stdout.str()) == []  # SARIF does not need GitHub Actions
    log = json.loads(path.read_text(encoding="utf-8"))
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    assert run["tool"]["driver"]["name"] == "citecheck"
    rules = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    placed = [
        (
            r["ruleId"],
            r["level"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in run["results"]
    ]
    assert placed == [
        ("citecheck/contradicted", "error", "citecheck_a.yaml", 6),
        ("citecheck/review", "warning", "citecheck_a.yaml", 10),
    ]
    assert rules == {"citecheck/contradicted", "citecheck/review"}
    assert run["results"][0]["message"]["text"].startswith("boils-50: Water boils at 50 C.\n")


def test_an_unwritable_sarif_path_is_a_usage_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "taken").mkdir()
    result = pytester.runpytest("--citecheck", "--citecheck-sarif=taken")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--citecheck-sarif taken: is a folder*"])


def _many(
    prefix: str, text: str, urls: list[str], n: int
) -> list[tuple[str, str, list[str], None]]:
    return [(f"{prefix}-{i:02d}", text, urls, None) for i in range(n)]


def test_one_error_per_failing_claim_with_its_citations_inside(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    pytester.makeconftest(CONFTEST)
    two = ("boils-twice", "Water boils at 50 C.", ["https://example.com/boiling"] * 2, None)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(two))
    result = pytester.runpytest("--citecheck", "--citecheck-record=all")
    result.assert_outcomes(failed=1)
    errors = [c for c in commands(result.stdout.str()) if c.startswith("::error")]
    assert len(errors) == 1, errors
    assert "citation 1 https://example.com/boiling: contradicted" in errors[0]
    assert "citation 2 https://example.com/boiling: contradicted" in errors[0]


def test_annotations_stop_at_githubs_per_step_limit_and_say_how_many_more(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    pytester.makeconftest(CONFTEST)
    claims = _many("bad", "Water boils at 50 C.", ["https://example.com/boiling"], 13)
    claims += _many("unsure", "Unsure claim.", ["https://example.com/other"], 11)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(*claims))
    result = pytester.runpytest("--citecheck", "--citecheck-record=all")
    result.assert_outcomes(passed=11, failed=13)
    found = commands(result.stdout.str())
    levels = [c.split(" ", 1)[0] for c in found]
    assert levels.count("::error") == 10 and levels.count("::warning") == 10, found
    (more,) = [c for c in found if "more annotations" in c]
    assert more.endswith(
        "::3 failing claims and 1 warning more: GitHub shows 10 errors and 10 warnings per "
        "step; see the citecheck summary in this step's log"
    ), more
    assert found[-1].startswith("::notice title=citecheck gate failed::")
