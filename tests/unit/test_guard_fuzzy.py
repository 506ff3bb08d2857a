"""The trivial-quote minimum and opt-in fuzzy quote matching.

One page of four passages, all shown to the judge. Each row is a judge quote
and what each mode makes of it: accepted with the page's own span as the
evidence quote, or refused with a reason.
"""

from __future__ import annotations

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import JudgeReply, Passage
from pytest_citecheck.stages.guard import Guarded, guard, quote_in_passages
from pytest_citecheck.stages.quote_policy import EXACT, QuotePolicy, too_short
from pytest_citecheck.stages.text import normalise

PAGE = [
    "Water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level, where the air "
    "presses down with a standard pressure. At altitude it boils at a lower temperature.",
    "The city\u2019s derivatives exchange community, which started with commodity futures "
    "trading at the Chicago Board of Trade in 1848, established the city as a global "
    "financial center.",
    "Salt does not raise the boiling point by much: a teaspoon adds less than one degree.",
    "The museum doesn\u00b4t open on Mondays; it opened in March 2019.",
]
SHOWN = [Passage(index=i, text=text) for i, text in enumerate(PAGE)]
FUZZY = QuotePolicy("fuzzy", 0.9)
NOT_IN_SOURCE = Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE
TOO_SHORT = Reason.EVIDENCE_QUOTE_TOO_SHORT


def reply(quote: str | None, label: str = "supported", confidence: float = 0.9) -> JudgeReply:
    return JudgeReply.model_validate({"label": label, "quote": quote, "confidence": confidence})


# (what the judge did, its quote, the page span fuzzy mode reports)
LIGHT_EDITS = [
    (
        "a three-dot ellipsis in brackets",
        "Water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level [...] at "
        "altitude it boils at a lower temperature.",
        "Water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level, where the air "
        "presses down with a standard pressure. At altitude it boils at a lower temperature.",
    ),
    (
        "dropped punctuation",
        "Water boils at 100 degrees Celsius 212 degrees Fahrenheit at sea level where the air "
        "presses down",
        "Water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level, where the air "
        "presses down",
    ),
    (
        "changed case",
        "at altitude it boils at a Lower Temperature.",
        "At altitude it boils at a lower temperature.",
    ),
    (
        "a final period the page does not have",
        "Water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level.",
        "Water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level",
    ),
    (
        "a straight apostrophe for the page's acute accent inside a word",
        "The museum doesn't open on Mondays",
        "The museum doesn\u00b4t open on Mondays",
    ),
    (
        "a spelling variant",
        "established the city as a global financial centre",
        "established the city as a global financial center.",
    ),
]


@pytest.mark.parametrize(("edit", "quote", "span"), LIGHT_EDITS, ids=[e[0] for e in LIGHT_EDITS])
def test_light_edits_are_accepted_in_fuzzy_mode_with_the_page_span(
    edit: str, quote: str, span: str
) -> None:
    assert guard(reply(quote), SHOWN, EXACT) == Guarded(
        Label.NOT_FOUND,
        quote,
        0.0,
        NOT_IN_SOURCE,
        judge_label=Label.SUPPORTED,
        judge_confidence=0.9,
    )

    guarded = guard(reply(quote), SHOWN, FUZZY)
    assert guarded.label is Label.SUPPORTED
    assert guarded.reason is None
    assert guarded.confidence == 0.9
    assert guarded.quote == normalise(span)
    assert guarded.judge_quote == quote
    assert guarded.similarity is not None and 0.9 <= guarded.similarity <= 1.0
    # Auditable: what the verdict reports is really in the passages, verbatim.
    assert quote_in_passages(guarded.quote, SHOWN)


@pytest.mark.parametrize(
    "quote",
    [
        # verbatim but for typographic quotes: exact already accepts these
        "The city's derivatives exchange community, which started",
        # a quote that leaves out the page's final period is still a substring
        "At altitude it boils at a lower temperature",
    ],
)
def test_what_exact_accepts_fuzzy_accepts_unchanged(quote: str) -> None:
    expected = Guarded(Label.SUPPORTED, quote, 0.9, None)
    assert guard(reply(quote), SHOWN, EXACT) == expected
    assert guard(reply(quote), SHOWN, FUZZY) == expected


# (what the judge did, its quote, reason, what the fuzzy near miss changes)
REFUSED = [
    ("a one-word quote", "Water", TOO_SHORT, None),
    ("a stop-word quote", "the", TOO_SHORT, None),
    ("punctuation only", ".", TOO_SHORT, None),
    (
        "a quote from another page",
        "Cats are mammals that purr when they are content.",
        NOT_IN_SOURCE,
        None,
    ),
    (
        "a negation inserted",
        "At altitude it never boils at a lower temperature.",
        NOT_IN_SOURCE,
        "a negation",
    ),
    (
        "a negation removed",
        "Salt does raise the boiling point by much: a teaspoon adds less than one degree.",
        NOT_IN_SOURCE,
        "a negation",
    ),
    (
        "a contraction's negation removed",
        "The museum does open on Mondays; it opened in March 2019.",
        NOT_IN_SOURCE,
        "a negation",
    ),
    (
        "a changed number",
        "Water boils at 90 degrees Celsius (212 degrees Fahrenheit) at sea level",
        NOT_IN_SOURCE,
        "a number",
    ),
    (
        "a changed number word",
        "Salt does not raise the boiling point by much: a teaspoon adds less than two degrees.",
        NOT_IN_SOURCE,
        "a number",
    ),
    (
        "a changed year",
        "The museum doesn't open on Mondays; it opened in March 2018.",
        NOT_IN_SOURCE,
        "a number",
    ),
    (
        "a changed month",
        "The museum doesn't open on Mondays; it opened in May 2019.",
        NOT_IN_SOURCE,
        "a date",
    ),
    (
        "a changed unit",
        "Water boils at 100 degrees Fahrenheit (212 degrees Fahrenheit) at sea level",
        NOT_IN_SOURCE,
        "a unit",
    ),
    (
        "a paraphrase",
        "Adding salt barely changes the temperature at which water boils.",
        NOT_IN_SOURCE,
        None,
    ),
]


@pytest.mark.parametrize(
    ("edit", "quote", "reason", "change"), REFUSED, ids=[r[0] for r in REFUSED]
)
@pytest.mark.parametrize("policy", [EXACT, FUZZY], ids=["exact", "fuzzy"])
def test_meaning_changes_and_non_spans_are_refused_in_both_modes(
    policy: QuotePolicy, edit: str, quote: str, reason: str, change: str | None
) -> None:
    guarded = guard(reply(quote), SHOWN, policy)
    assert (guarded.label, guarded.quote, guarded.confidence, guarded.reason) == (
        Label.NOT_FOUND,
        quote,
        0.0,
        reason,
    )
    assert guarded.judge_quote is None and guarded.similarity is None
    if policy.fuzzy and change is not None:
        # The near miss is explained: which meaning the quote changes, and where.
        assert guarded.detail is not None
        assert f"differs in {change}" in guarded.detail
    else:
        assert guarded.detail is None


def test_a_skipped_clause_may_not_hide_a_negation() -> None:
    page = [
        Passage(
            index=0,
            text="The committee said the new law will not, in most cases, apply to small "
            "rural towns.",
        )
    ]
    quote = "The committee said the new law will \u2026 apply to small rural towns."
    guarded = guard(reply(quote), page, FUZZY)
    assert guarded.reason == NOT_IN_SOURCE
    assert guarded.detail is not None and "a negation" in guarded.detail


@pytest.mark.parametrize("policy", [EXACT, FUZZY], ids=["exact", "fuzzy"])
def test_a_skipped_stretch_may_not_hide_a_number(policy: QuotePolicy) -> None:
    """Both pieces are verbatim, but the ellipsis skips "(212 degrees Fahrenheit) at sea
    level": refused in both modes, the detail naming the number it skips."""
    quote = "Water boils at 100 degrees Celsius [...] At altitude it boils at a lower temperature."
    guarded = guard(reply(quote), SHOWN, policy)
    assert (guarded.label, guarded.reason) == (Label.NOT_FOUND, NOT_IN_SOURCE)
    assert guarded.judge_label is Label.SUPPORTED
    assert guarded.detail is not None and "a number" in guarded.detail


def test_each_piece_of_an_ellipsis_quote_meets_the_minimum() -> None:
    quote = (
        "Salt does \u2026 raise the boiling point by much: a teaspoon adds less than one degree."
    )
    assert guard(reply(quote), SHOWN, FUZZY).reason == TOO_SHORT  # "Salt does" is no span
    # Exact mode reads the pieces of an ellipsis quote too, under the same minimum.
    assert guard(reply(quote), SHOWN, EXACT).reason == TOO_SHORT


def test_a_verbatim_quote_with_a_skipped_clause_stands_in_exact_mode_as_the_judge_wrote_it() -> (
    None
):
    quote = (
        "The city's derivatives exchange community \u2026 in 1848, established the city as a "
        "global financial center."
    )
    for policy in (EXACT, FUZZY):
        guarded = guard(reply(quote), SHOWN, policy)
        assert (guarded.label, guarded.reason, guarded.quote) == (Label.SUPPORTED, None, quote)


def test_ellipsis_pieces_come_in_page_order_within_adjacent_passages() -> None:
    backwards = (
        "At altitude it boils at a lower temperature \u2026 Water boils at 100 degrees Celsius"
    )
    assert guard(reply(backwards), SHOWN, FUZZY).reason == NOT_IN_SOURCE
    # Passages 0 and 1 are adjacent in the page: one stretch of text.
    across = (
        "At altitude it boils at a lower temperature \u2026 Chicago Board of Trade in 1848, "
        "established the city as a global financial center."
    )
    guarded = guard(reply(across), SHOWN, FUZZY)
    assert guarded.label is Label.SUPPORTED
    assert guarded.quote is not None and guarded.quote.startswith("At altitude it boils")
    assert guarded.quote.endswith("established the city as a global financial center.")
    # The same two texts, not adjacent in the page.
    apart = [SHOWN[0], Passage(index=5, text=PAGE[1])]
    assert guard(reply(across), apart, FUZZY).reason == NOT_IN_SOURCE


def test_fuzzy_matches_across_adjacent_passages_only() -> None:
    quote = "at a lower temperature The city's derivatives exchange community"
    assert guard(reply(quote), SHOWN, FUZZY).label is Label.SUPPORTED
    not_adjacent = [SHOWN[0], SHOWN[2]]
    quote = "at a lower temperature Salt does not raise the boiling point"
    assert guard(reply(quote), not_adjacent, FUZZY).reason == NOT_IN_SOURCE


def test_the_threshold_decides() -> None:
    # Three letters dropped from a 43-character span: 1 - 3 / (40 + 43) = 0.964 similar.
    quote = "At altitud it boils at a lowr temperatur."
    accepted = guard(reply(quote), SHOWN, QuotePolicy("fuzzy", 0.9))
    assert accepted.label is Label.SUPPORTED and accepted.similarity == 0.9639
    refused = guard(reply(quote), SHOWN, QuotePolicy("fuzzy", 0.97))
    assert refused.reason == NOT_IN_SOURCE and refused.detail is None


def test_a_quote_that_runs_on_past_the_passages_is_refused() -> None:
    # The shown passage ends at "temperature."; the judge's quote goes on.
    quote = "At altitude it boils at a lower temperature too."
    guarded = guard(reply(quote), [SHOWN[0]], FUZZY)
    assert guarded.reason == NOT_IN_SOURCE
    assert guarded.detail is not None and "first or last words" in guarded.detail
    quote = "On Everest, at altitude it boils at a lower temperature."
    assert guard(reply(quote), [SHOWN[0]], FUZZY).reason == NOT_IN_SOURCE


@pytest.mark.parametrize("label", ["contradicted", "not_found"])
def test_the_label_stays_the_judges(label: str) -> None:
    quote = "at altitude it boils at a Lower Temperature."
    guarded = guard(reply(quote, label, 0.7), SHOWN, FUZZY)
    assert guarded == Guarded(
        Label(label),
        "At altitude it boils at a lower temperature.",
        0.7,
        None,
        judge_quote=quote,
        similarity=1.0,
    )


# -- the trivial-quote minimum, both modes -------------------------------------------


@pytest.mark.parametrize(
    ("quote", "short"),
    [
        ("the", True),
        ("Water", True),
        (".", True),
        ("at", True),
        ("Water boils", True),  # two words
        ("It is the one.", True),  # 14 characters
        ("It is all at the sea", True),  # one word that is not a stop word
        ("\u2026 \u2026 \u2026 \u2026 \u2026", True),
        ("Cats are mammals.", False),  # the shortest evidence: 3 words, 17 characters
        ("Use of this claim is OPTIONAL.", False),
    ],
)
def test_the_minimum(quote: str, short: bool) -> None:
    assert too_short(quote) is short


@pytest.mark.parametrize("policy", [EXACT, FUZZY], ids=["exact", "fuzzy"])
@pytest.mark.parametrize("label", ["supported", "contradicted", "not_found"])
@pytest.mark.parametrize("quote", ["Water", "the", "at", ".", "boils at 100"])
def test_a_trivial_quote_that_is_in_the_page_is_no_evidence(
    quote: str, label: str, policy: QuotePolicy
) -> None:
    # "Water boils at 50 degrees" came out supported at 0.95 on the strength of "Water".
    assert quote_in_passages(quote, SHOWN)
    # A refused supported/contradicted keeps what the judge said; not_found had nothing to refuse.
    said = (None, None) if label == "not_found" else (Label(label), 0.95)
    assert guard(reply(quote, label, 0.95), SHOWN, policy) == Guarded(
        Label.NOT_FOUND, quote, 0.0, TOO_SHORT, judge_label=said[0], judge_confidence=said[1]
    )


def test_policy_validates_and_describes_itself() -> None:
    assert EXACT.metadata() == {"quote_match": "exact"}
    assert QuotePolicy("fuzzy", 0.85).metadata() == {
        "quote_match": "fuzzy",
        "quote_similarity": 0.85,
    }
    with pytest.raises(ValueError, match="exact, fuzzy"):
        QuotePolicy("loose")
    with pytest.raises(ValueError, match="between 0 and 1"):
        QuotePolicy("fuzzy", 1.5)
