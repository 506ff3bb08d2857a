"""Claim-level label and precision figures: fixed rules, no model."""

from __future__ import annotations

import pytest

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import ClaimResult, Verdict
from pytest_citecheck.engine.aggregate import claim_label, totals
from pytest_citecheck.engine.gate import GateSettings, evaluate
from pytest_citecheck.plugin.terms import PLUGIN_TERMS

S, C, N, U, F, E = (
    Label.SUPPORTED,
    Label.CONTRADICTED,
    Label.NOT_FOUND,
    Label.UNREACHABLE,
    Label.FABRICATED,
    Label.ERROR,
)


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ([S, U], S),  # the boiling-water case: one good page, one 404
        ([S, C], C),  # any contradiction wins
        ([S, F], C),  # fabricated counts as contradicted
        ([U, U], U),
        ([U, N], N),
        ([], N),
        ([N, E], E),  # a failed run never reads as not_found
        ([S, E], S),
        ([C, E], C),
    ],
)
def test_claim_label(labels: list[Label], expected: Label) -> None:
    assert claim_label(labels) is expected


def result(*labels: Label) -> ClaimResult:
    verdicts = [Verdict(url=f"https://example.com/{i}", label=lab) for i, lab in enumerate(labels)]
    return ClaimResult(id="c", claim="x", label=claim_label(labels), verdicts=verdicts)


def test_precision_figures() -> None:
    t = totals([result(S, U), result(S, N, U), result(C)])
    assert (t.claims, t.citations, t.supported, t.reachable) == (3, 6, 2, 4)
    assert t.citation_precision == pytest.approx(2 / 6)
    assert t.reachable_precision == pytest.approx(2 / 4)


def test_reachable_precision_is_none_when_nothing_is_reachable() -> None:
    t = totals([result(U, U)])
    assert t.citation_precision == 0.0
    assert t.reachable_precision is None
    assert totals([]).citation_precision is None


def test_gate_reports_every_missed_bar() -> None:
    t = totals([result(S, E), result(F, N)])
    failures = evaluate(
        t, GateSettings(min_precision=0.5, terms=PLUGIN_TERMS), baseline_precision=0.5
    )
    assert failures == [
        "citation precision 0.2500 is below citecheck_min_precision 0.5000 (short by 0.2500)",
        "1 citation fabricated (allow with citecheck_allow_contradicted)",
        "1 citation could not be verified (error); an error never counts as verified",
        "citation precision fell by 0.2500, from the baseline 0.5000 to 0.2500 "
        "(citecheck_max_drop 0.0000)",
    ]
    assert evaluate(totals([result(S, N)]), GateSettings(min_precision=0.5)) == []
