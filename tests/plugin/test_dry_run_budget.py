"""--citecheck-dry-run, prices in the reports, and a budget that fails the gate (pytester)."""

from __future__ import annotations

import json

import pytest

from tests.plugin.fakes import CONFTEST, NOT_FOUND, SUPPORTED, claims_yaml

COUNT_CALLS = """

def pytest_sessionfinish(session):
    print(f"FETCHED {len(FakeFetcher.calls)}")
"""
TWO_URLS = (
    "both",
    "Water boils at 100 C.",
    ["https://example.com/boiling", "https://example.com/other"],
    None,
)


def test_the_dry_run_lists_the_recording_and_runs_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CRAWLBASE_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST + COUNT_CALLS)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND, TWO_URLS))
    result = pytester.runpytest_subprocess(
        "--citecheck", "--citecheck-record=once", "--citecheck-dry-run", "-s"
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "citecheck dry run (record mode once): nothing was sent",
            "  claims: 3 to record, 0 already recorded (replayed, free)",
            "  crawls: 4 (at most 16 with readability and JavaScript retries)",
            "  judge calls: 4 at most (fake:judge 4)",
            "  credits: 6 (at most 32)",
            "  cost: set citecheck_price_credit and citecheck_prices to see it in money",
            "dry run: claims=3 crawls=16 judge_calls=4 confirm_calls=4 joint_calls=2 credits=32",
            "FETCHED 0",
            "*no tests ran*",
        ]
    )
    assert not (pytester.path / "cassettes").exists()


def test_prices_from_ini_put_the_spend_in_every_report(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makeini(
        "[pytest]\ncitecheck_price_credit = 0.001\ncitecheck_prices = fake:judge=1000/5000\n"
    )
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND))
    result = pytester.runpytest(
        "--citecheck",
        "--citecheck-record=all",
        "--citecheck-report=r.json",
        "--citecheck-md=r.md",
        "--citecheck-html=r.html",
    )
    # Two judge calls of 10 in / 2 out tokens, and the confirmation of the supported one:
    # 3 x (10 x 1000 + 2 x 5000) / 1e6 = 0.06.
    result.stdout.fnmatch_lines(
        [
            "crawling API credits 0, judge tokens 20 in / 4 out, cost 0.06",
            "confirmation: 1 judge call on the quote alone, tokens 10 in / 2 out *",
        ]
    )
    spend = json.loads((pytester.path / "r.json").read_text())["spend"]
    assert spend["cost"] == pytest.approx(0.06)
    assert spend["judges"]["fake:judge"]["input_tokens"] == 30
    assert "cost 0.06" in (pytester.path / "r.md").read_text()
    assert "0.06</b>" in (pytester.path / "r.html").read_text()


def test_a_bad_price_names_the_option_and_the_form(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncitecheck_prices = openai:gpt-4o-mini=cheap\n")
    result = pytester.runpytest("--citecheck")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*ini option citecheck_prices: *PROVIDER:MODEL=INPUT/OUTPUT*openai:gpt-4o-mini=0.15/0.60*"]
    )


def test_a_spent_budget_fails_the_gate_and_names_the_command(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST + COUNT_CALLS)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND))
    # The worst case of one claim is 8 credits: a budget of 5 records nothing.
    result = pytester.runpytest(
        "--citecheck", "--citecheck-record=all", "--citecheck-max-credits=5", "-s"
    )
    result.assert_outcomes(failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*budget_exhausted*",
            "*not recorded: the recording budget (max credits 5) ran out*record it with: "
            "pytest --citecheck --citecheck-record=once citecheck_a.yaml::cats-bark*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*citecheck gate FAILED: 2 claims not recorded: the recording budget*"]
    )
    result.stdout.fnmatch_lines(["*FETCHED 0"])


def test_the_dry_run_in_replay_mode_records_nothing(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    result = pytester.runpytest("--citecheck", "--citecheck-dry-run")
    result.stdout.fnmatch_lines(
        [
            "  claims: 0 to record, 0 replayed, 1 no recording (mode none records nothing: "
            "choose a record mode with --citecheck-record)",
            "dry run: claims=0 crawls=0 judge_calls=0 confirm_calls=0 joint_calls=0 credits=0",
        ]
    )


def test_the_dry_run_counts_the_claims_without_a_recording_apart_from_the_replayed(
    pytester: pytest.Pytester,
) -> None:
    """The real replay fails every claim without a cassette (no_recording): the dry
    run says so, not that they are replayed."""
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND))
    pytester.runpytest("--citecheck", "--citecheck-record=once").assert_outcomes(passed=2)
    pytester.makefile(".yaml", citecheck_b=claims_yaml(SUPPORTED, NOT_FOUND, TWO_URLS))
    result = pytester.runpytest("--citecheck", "--citecheck-dry-run")
    result.stdout.fnmatch_lines(
        [
            "  claims: 0 to record, 2 replayed, 3 no recording (mode none records nothing: "
            "choose a record mode with --citecheck-record)",
        ]
    )
    recording = pytester.runpytest("--citecheck", "--citecheck-record=once", "--citecheck-dry-run")
    recording.stdout.fnmatch_lines(["  claims: 3 to record, 2 already recorded (replayed, free)"])


LOCAL = """claims:
  - id: invented
    claim: Water boils at 50 C.
    citations:
      - document: notes.txt
        quote: Water boils at 50 degrees.
"""


def test_the_dry_run_names_the_claims_to_record_and_not_those_decided_locally(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".txt", notes="Water boils at 100 degrees Celsius at sea level.")
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED, NOT_FOUND), citecheck_b=LOCAL)
    result = pytester.runpytest("--citecheck", "--citecheck-record=once", "--citecheck-dry-run")
    result.stdout.fnmatch_lines(
        [
            "  claims: 2 to record, 0 already recorded (replayed, free), 1 decided locally "
            "(document quotes and sections, no request)",
            "  to record:",
            "    citecheck_a.yaml::boils-100",
            "    citecheck_a.yaml::cats-bark",
            "dry run: claims=2 *",
        ]
    )
    assert "invented" not in result.stdout.str()


def test_the_dry_run_lists_up_to_ten_claims_and_all_with_v(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    claims = [(f"c{i:02d}", *SUPPORTED[1:]) for i in range(12)]
    pytester.makefile(".yaml", citecheck_a=claims_yaml(*claims))
    brief = pytester.runpytest("--citecheck", "--citecheck-record=all", "--citecheck-dry-run")
    brief.stdout.fnmatch_lines(
        ["    citecheck_a.yaml::c09", "    ... and 2 more (-v lists them all)", "dry run:*"]
    )
    assert "c10" not in brief.stdout.str()
    full = pytester.runpytest("--citecheck", "--citecheck-record=all", "--citecheck-dry-run", "-v")
    full.stdout.fnmatch_lines(["    citecheck_a.yaml::c10", "    citecheck_a.yaml::c11"])
    assert "more (-v" not in full.stdout.str()


def test_the_dry_run_says_where_the_budget_stops_the_recording(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    claims = [(f"c{i}", *SUPPORTED[1:]) for i in range(4)]
    pytester.makefile(".yaml", citecheck_a=claims_yaml(*claims))
    # Each claim: one crawl, 1.5 credits, 8 at most; a claim starts when its 8 fit.
    args = ("--citecheck", "--citecheck-record=all", "--citecheck-dry-run")
    stops = pytester.runpytest(*args, "--citecheck-max-credits=10")
    stops.stdout.fnmatch_lines(
        [
            "  budget (max credits 10): stops the recording after 2 of 4 claims "
            "(after 1 if pages need the retries), leaving:",
            "    citecheck_a.yaml::c2",
            "    citecheck_a.yaml::c3",
            "dry run:*",
        ]
    )
    enough = pytester.runpytest(*args, "--citecheck-max-credits=32")
    enough.stdout.fnmatch_lines(
        ["  budget (max credits 32): enough for all 4 claims, even at the most they could take"]
    )
