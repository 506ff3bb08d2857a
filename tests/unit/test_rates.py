"""The deep-research audit's three rates (link works, relevant, fact check): the rule per
citation, the counts per run and per answer, the gate floors, and every report format."""

from __future__ import annotations

import re

import pytest

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.models import AnswerOutline, OutlineSentence
from pytest_citecheck.claims.results import ClaimResult, PanelVote, Verdict
from pytest_citecheck.engine.aggregate import answer_figures, answer_totals, claim_label, totals
from pytest_citecheck.engine.gate import GateSettings, evaluate
from pytest_citecheck.engine.rates import Rates, from_json, rated, rates_line
from pytest_citecheck.frontends.cli import batch_terms
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.reports.html import render_html
from pytest_citecheck.reports.markdown import render_markdown
from pytest_citecheck.reports.report import Report

URL = "https://example.com/page"


def verdict(label: Label, reason: str | None = None, **fields: object) -> Verdict:
    return Verdict(url=URL, label=label, reason=reason, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (verdict(Label.SUPPORTED, evidence_quote="q"), (True, True, True)),
        (verdict(Label.CONTRADICTED, evidence_quote="q"), (True, True, False)),
        # Read, but nothing on it decides the claim: the link works, not relevant.
        (verdict(Label.NOT_FOUND), (True, False, False)),
        # The judge found deciding text; the guard refused its quote: relevant, no fact.
        (
            verdict(
                Label.NOT_FOUND,
                "evidence_quote_not_in_source",
                judge_label=Label.SUPPORTED,
                evidence_quote="not on the page",
            ),
            (True, True, False),
        ),
        # A panel member that found deciding text makes the page relevant.
        (
            verdict(
                Label.NOT_FOUND,
                "panel_no_majority",
                panel=[
                    PanelVote(judge="a:x", label=Label.CONTRADICTED),
                    PanelVote(judge="b:y", label=Label.NOT_FOUND),
                ],
            ),
            (True, True, False),
        ),
        (verdict(Label.UNREACHABLE, "http_404", original_status=404), (False, False, False)),
        (verdict(Label.UNREACHABLE, "http_410", original_status=410), (False, False, False)),
        # A deep link that lands on the homepage, a soft 404, a bot wall, a paywall: the
        # cited page was not read, so its link does not work.
        (verdict(Label.NOT_FOUND, "redirected_to_homepage"), (False, False, False)),
        (verdict(Label.NOT_FOUND, "soft_404"), (False, False, False)),
        (verdict(Label.NOT_FOUND, "blocked", review=True), (False, False, False)),
        (verdict(Label.NOT_FOUND, "paywalled", review=True), (False, False, False)),
        # A made-up quote: the page was read; the quote is not on it.
        (verdict(Label.FABRICATED, "quote_not_in_page"), (True, False, False)),
        # A citation that carried a verified quote of a joint support.
        (verdict(Label.SUPPORTED, "supported_jointly", evidence_quote="q"), (True, True, True)),
    ],
)
def test_each_citation_is_rated_by_its_verdict(
    case: Verdict, expected: tuple[bool, bool, bool]
) -> None:
    assert rated(case) == expected


@pytest.mark.parametrize(
    "case",
    [
        verdict(Label.ERROR, "no_recording"),
        verdict(Label.ERROR, "judge_unavailable"),
        verdict(Label.NOT_FOUND, "url_refused"),
        verdict(Label.NOT_FOUND, "budget_exhausted"),
    ],
)
def test_a_citation_whose_check_failed_or_never_ran_is_not_rated(case: Verdict) -> None:
    assert rated(case) is None
    found = Rates()
    found.add(case)
    assert (found.rated, found.not_rated, found.rate("link_works")) == (0, 1, None)


def answer(answer_id: str, *sentences: list[Verdict] | None) -> list[ClaimResult]:
    """An imported answer's claim results, one sentence per entry (None: uncited)."""
    outline = AnswerOutline(
        id=answer_id,
        format="markdown",
        origin="citecheck_report.yaml",
        sentences=[
            OutlineSentence(
                text=f"Sentence {i}.", claim_id=None if v is None else f"{answer_id}-{i}"
            )
            for i, v in enumerate(sentences)
        ],
    )
    return [
        ClaimResult(
            id=f"{answer_id}-{i}",
            claim=f"Sentence {i}.",
            label=claim_label([x.label for x in verdicts]),
            verdicts=verdicts,
            answer=outline,
        )
        for i, verdicts in enumerate(sentences)
        if verdicts is not None
    ]


# Report A: 5 citations: supported, not_found (read), 404, redirected to the homepage,
# contradicted -> link works 3/5, relevant 2/5, fact check 1/5.
REPORT_A = answer(
    "report-a",
    [verdict(Label.SUPPORTED, evidence_quote="q"), verdict(Label.NOT_FOUND)],
    None,
    [verdict(Label.UNREACHABLE, "http_404", original_status=404)],
    [
        verdict(Label.NOT_FOUND, "redirected_to_homepage"),
        verdict(Label.CONTRADICTED, evidence_quote="q"),
    ],
)
# Report B: 3 citations: two supported, one error (not rated) -> 2/2, 2/2, 2/2.
REPORT_B = answer(
    "report-b",
    [verdict(Label.SUPPORTED, evidence_quote="q")],
    [verdict(Label.SUPPORTED, evidence_quote="q"), verdict(Label.ERROR, "no_recording")],
)
RESULTS = [*REPORT_A, *REPORT_B]


def test_the_rates_per_report_and_over_the_run() -> None:
    per_report = {a.id: a.rates for a in answer_figures(RESULTS)}
    assert per_report["report-a"] == Rates(rated=5, link_works=3, relevant=2, fact_check=1)
    assert per_report["report-b"] == Rates(
        rated=2, link_works=2, relevant=2, fact_check=2, not_rated=1
    )
    run = totals(RESULTS).rates
    assert run == Rates(rated=7, link_works=5, relevant=4, fact_check=3, not_rated=1)
    assert rates_line(run) == (
        "deep-research rates: link works 0.7143 (5/7), relevant 0.5714 (4/7), "
        "fact check 0.4286 (3/7); 1 not rated (error or not checked)"
    )


# -- the gate floors -------------------------------------------------------------------------


def gate(**floors: float) -> list[str]:
    settings = GateSettings(allow_contradicted=True, terms=PLUGIN_TERMS, **floors)  # type: ignore[arg-type]
    # The error citation fails the run on its own; only the floors are under test here.
    failures = evaluate(totals(RESULTS), settings, answers=answer_totals(answer_figures(RESULTS)))
    return [f for f in failures if "rate" in f]


def test_each_rate_has_a_floor_named_in_the_front_ends_words() -> None:
    assert gate(min_link_works=0.9, min_relevant=0.5, min_fact_check=0.5) == [
        "link works rate 0.7143 (5/7 citations) is below citecheck_min_link_works 0.9000 "
        "(short by 0.1857)",
        "fact check rate 0.4286 (3/7 citations) is below citecheck_min_fact_check 0.5000 "
        "(short by 0.0714)",
    ]
    settings = GateSettings(min_relevant=0.6, terms=batch_terms(), allow_contradicted=True)
    failures = evaluate(totals(RESULTS), settings)
    assert "relevant rate 0.5714 (4/7 citations) is below --min-relevant 0.6000 " in failures[0]


def test_a_run_at_its_floors_passes_them() -> None:
    assert gate(min_link_works=5 / 7, min_relevant=4 / 7, min_fact_check=3 / 7) == []
    assert gate() == []


# -- every report format ---------------------------------------------------------------------


def report() -> Report:
    return Report(results={f"citecheck_report.yaml::{r.id}": r for r in RESULTS})


RUN_TEXT = "link works 0.7143 (5/7), relevant 0.5714 (4/7), fact check 0.4286 (3/7)"


def test_the_terminal_summary_shows_the_runs_rates_and_each_reports() -> None:
    lines = [line.text for line in report().lines()]
    assert lines[2] == (f"deep-research rates: {RUN_TEXT}; 1 not rated (error or not checked)")
    assert (
        "  report-a: link works 0.6000 (3/5), relevant 0.4000 (2/5), fact check 0.2000 (1/5)"
        in lines
    )
    assert (
        "  report-b: link works 1.0000 (2/2), relevant 1.0000 (2/2), fact check 1.0000 (2/2); "
        "1 not rated (error or not checked)"
    ) in lines


def test_the_json_report_holds_the_rates_per_run_per_file_and_per_report() -> None:
    data = report().scrubbed_json()
    assert data["totals"]["rates"] == {
        "link_works": pytest.approx(5 / 7),
        "link_works_count": 5,
        "relevant": pytest.approx(4 / 7),
        "relevant_count": 4,
        "fact_check": pytest.approx(3 / 7),
        "fact_check_count": 3,
        "rated": 7,
        "not_rated": 1,
    }
    assert data["files"]["citecheck_report.yaml"]["rates"]["rated"] == 7
    by_id = {a["id"]: a["rates"] for a in data["answers"]}
    assert from_json(by_id["report-a"]) == Rates(rated=5, link_works=3, relevant=2, fact_check=1)


def test_the_markdown_summary_shows_the_rates() -> None:
    text = render_markdown(report().scrubbed_json())
    assert (
        "Deep-research rates: link works **0.7143** (5/7), relevant **0.5714** (4/7), "
        "fact check **0.4286** (3/7); 1 not rated (error or not checked)"
    ) in text
    assert "| answer | link works | relevant | fact check | not rated |" in text
    assert "| report-a | 0.6000 (3/5) | 0.4000 (2/5) | 0.2000 (1/5) | 0 |" in text


def test_the_html_report_shows_the_rates() -> None:
    page = render_html(report().scrubbed_json())
    block = re.search(r'<div class="figures" id="rates"[^>]*>(.*?)</div>', page, re.S)
    assert block is not None
    text = " ".join(re.sub(r"<[^>]+>", " ", block.group(1)).split())
    assert text == (
        "deep-research rates: link works 0.7143 (5/7) relevant 0.5714 (4/7) "
        "fact check 0.4286 (3/7) 1 not rated"
    )
    answers = re.findall(r'<div class="figures answer-rates">(.*?)</div>', page, re.S)
    assert [" ".join(re.sub(r"<[^>]+>", " ", a).split()) for a in answers] == [
        "link works 0.6000 (3/5) relevant 0.4000 (2/5) fact check 0.2000 (1/5)",
        "link works 1.0000 (2/2) relevant 1.0000 (2/2) fact check 1.0000 (2/2) 1 not rated",
    ]


def test_a_report_written_before_the_rates_renders_without_them() -> None:
    data = report().scrubbed_json()
    del data["totals"]["rates"]
    for a in data["answers"]:
        del a["rates"]
    assert "Deep-research rates" not in render_markdown(data)
    assert 'id="rates"' not in render_html(data)
