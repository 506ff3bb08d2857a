"""The panel's vote rule: majority or unanimous over guarded votes, error votes counted,
disagreement sent to review, confidence = the panel's agreement."""

from __future__ import annotations

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import PanelVote
from pytest_citecheck.engine.panel import agreement, decide

S, C, N, E = Label.SUPPORTED, Label.CONTRADICTED, Label.NOT_FOUND, Label.ERROR


def votes(*labels: Label) -> list[PanelVote]:
    out = []
    for i, label in enumerate(labels):
        quote = f"quote of member {i}" if label in (S, C) else None
        reason = Reason.JUDGE_INVALID_JSON if label is E else None
        out.append(PanelVote(judge=f"p:m{i}", label=label, evidence_quote=quote, reason=reason))
    return out


@pytest.mark.parametrize(
    ("labels", "rule", "label", "confidence", "review", "reason"),
    [
        ((S, S, S), "majority", S, 1.0, False, None),
        ((S, S, N), "majority", S, 0.6667, True, None),
        ((S, S, C), "majority", S, 0.6667, True, Reason.PANEL_SPLIT),
        ((S, C), "majority", N, 0.0, True, Reason.PANEL_SPLIT),
        ((S, N), "majority", N, 0.5, True, Reason.PANEL_NO_MAJORITY),
        ((S, S, N, N), "majority", N, 0.5, True, Reason.PANEL_NO_MAJORITY),
        ((S, N, C), "majority", N, 0.3333, True, Reason.PANEL_SPLIT),
        ((S, S, E), "majority", S, 0.6667, True, None),
        ((S, N, E), "majority", E, 0.3333, False, Reason.JUDGE_INVALID_JSON),
        ((E, E, S), "majority", E, 0.6667, False, Reason.JUDGE_INVALID_JSON),
        ((S, S, S), "unanimous", S, 1.0, False, None),
        ((S, S, N), "unanimous", N, 0.3333, True, Reason.PANEL_NOT_UNANIMOUS),
        ((S, S, E), "unanimous", E, 0.3333, False, Reason.JUDGE_INVALID_JSON),
        ((N, N, N), "unanimous", N, 1.0, False, None),
    ],
)
def test_the_rule(
    labels: tuple[Label, ...],
    rule: str,
    label: Label,
    confidence: float,
    review: bool,
    reason: str | None,
) -> None:
    # One vote is enough here: the rule itself, whatever the members that failed.
    decision = decide(votes(*labels), rule, min_votes=1)
    assert (decision.label, decision.confidence, decision.review, decision.reason) == (
        label,
        confidence,
        review,
        reason,
    )


@pytest.mark.parametrize(
    ("labels", "min_votes", "label", "reason"),
    [
        ((S, S, E), None, E, Reason.PANEL_INCOMPLETE),
        ((S, S, E), 3, E, Reason.PANEL_INCOMPLETE),
        ((S, S, E), 2, S, None),
        ((N, N, E), 2, N, None),
        ((S, E, E), 2, E, Reason.PANEL_INCOMPLETE),
        ((S, S, S), None, S, None),
        ((S, S), 5, S, None),  # more than the members: every member
    ],
)
def test_a_panel_without_enough_votes_is_incomplete(
    labels: tuple[Label, ...], min_votes: int | None, label: Label, reason: str | None
) -> None:
    decision = decide(votes(*labels), min_votes=min_votes)
    assert (decision.label, decision.reason) == (label, reason)
    if reason == Reason.PANEL_INCOMPLETE:
        assert "p:m2 failed (judge_invalid_json)" in decision.detail
        assert decision.review is False


def test_samples_of_one_judge_are_numbered() -> None:
    from pytest_citecheck.engine.panel import judge_of, member_names

    names = member_names(["o:smollm2", "o:smollm2", "o:other"])
    assert names == ["o:smollm2#1", "o:smollm2#2", "o:other"]
    assert [judge_of(n) for n in names] == ["o:smollm2", "o:smollm2", "o:other"]


def test_the_quote_is_the_first_deciding_members() -> None:
    decision = decide(votes(N, S, S))
    assert decision.evidence_quote == "quote of member 1"
    assert decision.detail == (
        "panel (majority) 2/3 supported: p:m0 not_found; p:m1 supported; p:m2 supported"
    )


def test_an_error_never_tips_a_tie_into_a_label() -> None:
    # Without the failed member there would be a 1-1 tie; with it there is no majority.
    assert decide(votes(S, N, E)).label is E
    assert decide(votes(S, E)).label is E


def test_an_unknown_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="majority, unanimous"):
        decide(votes(S), "plurality")


def test_agreement_figures() -> None:
    figures = agreement([votes(S, S, S), votes(S, N, S), votes(S)])
    assert figures.citations == 2  # a one-member "panel" is no panel
    assert figures.unanimous == 1
    assert figures.unanimous_share == 0.5
    assert figures.pairwise == {
        "1:p:m0 ~ 2:p:m1": 0.5,
        "1:p:m0 ~ 3:p:m2": 1.0,
        "2:p:m1 ~ 3:p:m2": 0.5,
    }
