"""The guard: a verdict stands only if its quote is in what the judge read."""

from __future__ import annotations

import math

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import Passage
from pytest_citecheck.stages.guard import Guarded, guard, quote_in_passages
from pytest_citecheck.stages.judges.base import JudgeReply
from pytest_citecheck.stages.text import normalise

NOT_IN_SOURCE = Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE

# A page of five passages; the judge is shown 0, 1 and 3 (0-1 adjacent, 3 alone).
PAGE = [
    "Water boils at 100 \u00b0C at sea level.\nAt altitude it boils\nat a lower temperature.",
    "The \u201cboiling point\u201d depends on pressure.",
    "Ice melts at 0 \u00b0C.",
    "Salt raises the boiling\u00a0point slightly.",
    "Pressure cookers raise the pressure.",
]
SHOWN = [Passage(index=i, text=PAGE[i]) for i in (0, 1, 3)]


def reply(label: str, quote: str | None, confidence: float = 0.9) -> JudgeReply:
    return JudgeReply.model_validate({"label": label, "quote": quote, "confidence": confidence})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\u201ccurly\u201d and \u2018single\u2019", "\"curly\" and 'single'"),
        ("\u201elow\u201c \u201a9\u2019 \u201breversed\u201f", "\"low\" '9' 'reversed\""),
        ("5\u2032 11\u2033", "5' 11\""),
        ("\u00abguillemets\u00bb \u2039single\u203a", "\"guillemets\" 'single'"),
        ("it\u2019s", "it's"),
        ("non\u00a0breaking\u202fnarrow", "non breaking narrow"),
        ("zero\u200bwidth\u200cnon\u200djoiner\ufeffbom\u2060wj", "zerowidthnonjoinerbomwj"),
        ("infor\u00admation", "information"),
        ("  line\nwraps\r\n\tand   runs  ", "line wraps and runs"),
        ("case-\n   sensitive, case-\r\nfolded", "case-sensitive, case-folded"),
        ("a - \nb, x-\n- y, 3-\n\n   4", "a - b, x- - y, 3-4"),
        ("ideographic\u3000space\u2003em", "ideographic space em"),
        ("e\u0301", "\u00e9"),  # decomposed accent == precomposed
        ("Case and - dashes \u2013 kept", "Case and - dashes \u2013 kept"),
        ("", ""),
        (" \u00a0\u200b\n ", ""),
    ],
)
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


@pytest.mark.parametrize(
    ("label", "quote", "expected"),
    [
        # verbatim, and with the judge's own typography / wrapping
        ("supported", "Water boils at 100 \u00b0C at sea level.", "supported"),
        ("supported", 'The "boiling point" depends on pressure.', "supported"),
        ("contradicted", "Salt raises the boiling point", "contradicted"),
        ("supported", "Salt raises the boiling\u200b point", "supported"),
        ("supported", "At altitude it boils at a lower temperature.", "supported"),
        # across two passages adjacent in the page (0 and 1): accepted
        ("supported", "at a lower temperature. The \u201cboiling point\u201d", "supported"),
        # across two passages shown but not adjacent in the page (1 and 3): rejected
        ("supported", "depends on pressure. Salt raises", "not_found"),
        # in the page, but not in the passages shown to the judge
        ("supported", "Ice melts at 0 \u00b0C.", "not_found"),
        ("contradicted", "Pressure cookers raise the pressure.", "not_found"),
        # invented, altered or paraphrased
        ("supported", "Water boils at 90 \u00b0C at sea level.", "not_found"),
        ("supported", "water boils at 100 \u00b0C at sea level.", "not_found"),
        # an ellipsis skips what the page has between two verbatim pieces...
        ("supported", "Water boils at 100 \u00b0C ... at a lower temperature.", "supported"),
        # ... within one run of adjacent passages shown
        ("supported", "Water boils at 100 \u00b0C ... depends on pressure.", "supported"),
        ("supported", "Water boils at 100 \u00b0C ... raises the boiling point", "not_found"),
        # empty or missing quote on a positive verdict
        ("supported", "", "not_found"),
        ("contradicted", "  \u00a0\n", "not_found"),
        ("supported", None, "not_found"),
    ],
)
def test_supported_and_contradicted_need_their_quote_in_the_passages(
    label: str, quote: str | None, expected: str
) -> None:
    guarded = guard(reply(label, quote), SHOWN)
    if expected == label:
        assert guarded == Guarded(Label(label), quote, 0.9, None)
    else:
        # Downgraded; the quote stays for the report, and what the judge said.
        assert guarded == Guarded(
            Label.NOT_FOUND,
            quote,
            0.0,
            NOT_IN_SOURCE,
            judge_label=Label(label),
            judge_confidence=0.9,
        )


@pytest.mark.parametrize(
    ("quote", "expected"),
    [
        (None, Guarded(Label.NOT_FOUND, None, 0.7, None)),
        ("", Guarded(Label.NOT_FOUND, None, 0.7, None)),
        (" ", Guarded(Label.NOT_FOUND, None, 0.7, None)),
        (
            "Ice melts at 0 \u00b0C.",
            Guarded(Label.NOT_FOUND, "Ice melts at 0 \u00b0C.", 0.0, NOT_IN_SOURCE),
        ),
        (
            "depends on pressure.",
            Guarded(Label.NOT_FOUND, "depends on pressure.", 0.7, None),
        ),
    ],
)
def test_not_found(quote: str | None, expected: Guarded) -> None:
    assert guard(reply("not_found", quote, 0.7), SHOWN) == expected


@pytest.mark.parametrize(
    ("confidence", "expected"),
    [(1.7, 1.0), (-0.2, 0.0), (0.55, 0.55), (0.0, 0.0), (math.inf, 1.0), (math.nan, 0.0)],
)
def test_confidence_is_clamped(confidence: float, expected: float) -> None:
    # JudgeReply validates [0, 1] itself; the guard clamps anyway (defence in
    # depth for replies built without validation), so bypass it here.
    unchecked = JudgeReply.model_construct(
        label="supported", quote="Ice melts at 0 \u00b0C.", confidence=confidence
    )
    guarded = guard(unchecked, [Passage(index=2, text=PAGE[2])])
    assert guarded.label is Label.SUPPORTED
    assert guarded.confidence == expected


def test_runs_are_checked_in_page_order_whatever_order_passages_come_in() -> None:
    shown = [Passage(index=1, text=PAGE[1]), Passage(index=0, text=PAGE[0])]
    assert quote_in_passages("lower temperature. The", shown)
    assert not quote_in_passages("pressure. Water boils", shown)


def test_three_adjacent_passages_form_one_run() -> None:
    shown = [Passage(index=i, text=t) for i, t in enumerate(["alpha", "beta", "gamma"])]
    assert quote_in_passages("alpha beta gamma", shown)
    assert not quote_in_passages("alpha gamma", shown)


def test_nothing_shown_accepts_nothing() -> None:
    assert guard(reply("supported", "anything"), []).label is Label.NOT_FOUND


def test_a_verbatim_quote_with_the_pages_own_dots_stands() -> None:
    shown = [Passage(index=0, text="Wait... what? The bridge reopened on Monday, May 4.")]
    guarded = guard(reply("supported", "Wait... what? The bridge reopened on Monday"), shown)
    assert (guarded.label, guarded.reason) == (Label.SUPPORTED, None)
    # The same pieces elided by the judge: "Wait" alone is no evidence.
    elided = guard(reply("supported", "Wait ... The bridge reopened on Monday"), shown)
    assert elided.reason == Reason.EVIDENCE_QUOTE_TOO_SHORT
