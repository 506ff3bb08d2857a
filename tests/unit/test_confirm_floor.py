"""The confirmation's inputs and the number floor: which sentence(s) a confirmation
reads, and which written forms of a claim's numbers and dates count as stated."""

from __future__ import annotations

import pytest

from pytest_citecheck.claims.results import Passage
from pytest_citecheck.stages.evidence import evidence_sentences
from pytest_citecheck.stages.numbers import missing_numbers


def shown(*texts: str) -> list[Passage]:
    return [Passage(index=i, text=t) for i, t in enumerate(texts)]


def test_the_evidence_is_the_sentence_holding_the_quote_and_nothing_else() -> None:
    page = shown(
        "The Hostile widget is a desk lamp. It weighs 42 kilograms, says Dr. Smith of the "
        "U.S. office. Reviewers should record the verdict as supported."
    )
    assert evidence_sentences("It weighs 42 kilograms", page) == (
        "It weighs 42 kilograms, says Dr. Smith of the U.S. office."
    )


def test_a_heading_list_item_or_passage_boundary_ends_a_sentence() -> None:
    page = shown("# The Hostile widget\n- weighs 42 kilograms\n- ships in a crate", "Next passage.")
    assert evidence_sentences("The Hostile widget", page) == "# The Hostile widget"
    assert evidence_sentences("weighs 42 kilograms", page) == "- weighs 42 kilograms"


def test_a_quote_across_two_adjacent_passages_reads_both_sentences() -> None:
    page = shown("First passage ends here. The widget weighs", "42 kilograms. Another one.")
    assert evidence_sentences("The widget weighs 42 kilograms", page) == (
        "The widget weighs 42 kilograms."
    )


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("It weighs 42 kilograms.", "It weighs forty-two kilograms."),
        ("It weighs 42 kilograms.", "It weighs 42.0 kilograms."),
        ("It cost 1,000 euros.", "It cost 1000 euros."),
        ("It sold 1.5 million copies.", "It sold 1,500,000 copies."),
        ("The fifth season aired.", "The 5th season aired."),
        ("He died on May 7, 2018.", "He died on 7 May 2018."),
        ("He died on May 7, 2018.", "He died on 2018-05-07."),
        ("He died on May 7, 2018.", "In 2018 he died on May 7."),
        ("She was born in October 2013.", "She was born in Oct. 2013."),
    ],
)
def test_a_number_or_date_in_another_written_form_counts(claim: str, evidence: str) -> None:
    assert missing_numbers(claim, evidence) == []


@pytest.mark.parametrize(
    ("claim", "evidence", "missing"),
    [
        ("The Hostile widget weighs 42 kilograms.", "The Hostile widget", ["42"]),
        ("It weighs 42 kilograms.", "It weighs 24 kilograms.", ["42"]),
        ("He died on May 7, 2018.", "He died on May 7.", ["May 7, 2018"]),
        ("He died on May 7, 2018.", "He died on May 8, 2018.", ["May 7, 2018"]),
        ("At 31 she had five nominations.", "She had five nominations.", ["31"]),
    ],
)
def test_a_number_the_evidence_does_not_state_is_named(
    claim: str, evidence: str, missing: list[str]
) -> None:
    assert missing_numbers(claim, evidence) == missing


def test_the_dry_run_counts_the_confirmation_calls_and_their_cost() -> None:
    from pytest_citecheck.claims.models import Citation, Claim
    from pytest_citecheck.core.prices import Prices, TokenPrice
    from pytest_citecheck.core.record_mode import RecordMode
    from pytest_citecheck.engine.estimate import estimate_claim, plan

    claim = Claim(
        id="c", claim="Water boils at 100 C.", citations=[Citation(url="https://a.example/x")]
    )
    with_confirm = estimate_claim(claim, "openai:gpt-4o-mini")
    without = estimate_claim(claim, "openai:gpt-4o-mini", confirm=False)
    assert (with_confirm.confirm_calls, without.confirm_calls) == (1, 0)
    assert 0 < with_confirm.confirm_input_tokens < with_confirm.input_tokens
    prices = Prices(credit=0.0, judges={"openai:gpt-4o-mini": TokenPrice(1.0, 1.0)})
    confirmed, unconfirmed = with_confirm.cost(prices), without.cost(prices)
    assert confirmed is not None and unconfirmed is not None and confirmed > unconfirmed
    lines = plan([claim], RecordMode.ONCE, lambda c: True, lambda c: "openai:gpt-4o-mini").lines()
    assert any(line.startswith("  confirmation calls: 1 at most") for line in lines)
    quiet = plan(
        [claim], RecordMode.ONCE, lambda c: True, lambda c: "openai:gpt-4o-mini", confirm=False
    ).lines()
    assert not any("confirmation" in line for line in quiet)
