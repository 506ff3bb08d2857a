"""Inside GitHub Actions, the example suites annotate each failing claim once and
each claim with review items once, as docs/gate-ci.md shows."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_example_suite import FAILING, SUITE, run


def annotations(suite: Path) -> list[str]:
    result = run(suite.parent, suite.name, extra_env={"GITHUB_ACTIONS": "true"})
    return [line for line in result.stdout.splitlines() if line.startswith("::")]


def test_the_failing_suite_gets_one_error_per_failing_claim_and_a_warning_per_review() -> None:
    found = annotations(FAILING)
    # In file order; the review of charlie-russell-death is the number floor's (its
    # evidence lacks "May 7, 2018"); the paywalled obituary (HTTP 402) is for review too.
    kinds = ["::warning", "::error", "::warning", "::warning", "::notice"]
    assert [c.split(" ", 1)[0] for c in found] == kinds, found
    assert "title=citecheck%3A review::charlie-russell-death:" in found[0]
    assert "charlie-russell-cause-of-death" in found[1]
    assert "title=citecheck%3A review::charlie-russell-kamchatka:" in found[2]
    assert "title=citecheck%3A review::charlie-russell-paywalled-obituary:" in found[3]


def test_review_items_of_claims_that_pass_as_expected_are_still_warned_about() -> None:
    found = annotations(SUITE)
    warned = [c.split("::")[2].split(":")[0] for c in found if c.startswith("::warning")]
    assert warned == [
        "essex-volleyball-2019",
        "charlie-russell-death",
        "crater-lake-winter-closures",
        "winslet-five-oscar-nominations",
        "liz-patterson-death",
        "better-call-saul-renewal",
        "michelle-collins-siriusxm",
        "charlie-russell-kamchatka-bears",
    ], found
    assert not [c for c in found if c.startswith("::error")]
