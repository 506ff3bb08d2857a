"""ALCE's citation recall and precision of imported answers, from hand-made answers:
the aggregation, the gate floor, and every report that shows them."""

from __future__ import annotations

import re

import pytest

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.models import AnswerOutline, OutlineSentence
from pytest_citecheck.claims.results import ClaimResult, Verdict
from pytest_citecheck.core.terms import Terms
from pytest_citecheck.engine.aggregate import answer_figures, answer_totals, claim_label, totals
from pytest_citecheck.engine.gate import GateSettings, evaluate
from pytest_citecheck.frontends.cli import batch_terms
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.reports.html import render_html
from pytest_citecheck.reports.markdown import render_markdown
from pytest_citecheck.reports.report import Report

S, C, N, U, E = (
    Label.SUPPORTED,
    Label.CONTRADICTED,
    Label.NOT_FOUND,
    Label.UNREACHABLE,
    Label.ERROR,
)


def answer(answer_id: str, *sentences: tuple[str, list[Label] | None]) -> list[ClaimResult]:
    """The results of an answer's claims: one sentence per ``(text, citation labels)``;
    None: the sentence is uncited."""
    outline = AnswerOutline(
        id=answer_id,
        format="markdown",
        origin="citecheck_a.yaml",
        sentences=[
            OutlineSentence(text=text, claim_id=None if labels is None else f"{answer_id}-{i}")
            for i, (text, labels) in enumerate(sentences)
        ],
    )
    return [
        ClaimResult(
            id=f"{answer_id}-{i}",
            claim=text,
            label=claim_label(labels),
            verdicts=[
                Verdict(url=f"https://example.com/{answer_id}/{i}/{j}", label=label)
                for j, label in enumerate(labels)
            ],
            answer=outline,
        )
        for i, (text, labels) in enumerate(sentences)
        if labels is not None
    ]


# Five sentences: one citation supported; two citations, one supported; uncited; one
# supported and one contradicting citation; uncited. Recall 3/5, precision 3/5.
WATER = answer(
    "water",
    ("Water boils at 100 C.", [S]),
    ("It freezes at 0 C.", [N, S]),
    ("Kettles whistle.", None),
    ("Ice floats.", [S, C]),
    ("Steam is hot.", None),
)
# One sentence whose only citation is unreachable: recall 0/1, precision 0/1.
CATS = answer("cats", ("Cats purr.", [U]))


def test_an_uncited_sentence_counts_zero_and_one_supported_citation_supports_a_sentence() -> None:
    (water,) = answer_figures(WATER)
    assert [s.supported_by_citations for s in water.sentences] == [True, True, False, True, False]
    assert (water.sentences_supported, water.counted_sentences) == (3, 5)
    assert water.citation_recall == pytest.approx(3 / 5)


def test_precision_counts_each_citation_that_supports_its_sentence_on_its_own() -> None:
    (water,) = answer_figures(WATER)
    # Five citations: the not_found and the contradicting one do not support.
    assert (water.citations_supporting, water.citations) == (3, 5)
    assert water.citation_precision == pytest.approx(3 / 5)


def test_answer_support_and_citation_recall_differ_where_the_rules_differ() -> None:
    (water,) = answer_figures(WATER)
    # A contradicting citation makes its claim contradicted (2 of 3 claims supported),
    # while ALCE's sentence is supported by the citation that supports it.
    assert water.support == pytest.approx(2 / 3)
    assert water.sentences[3].label is Label.CONTRADICTED
    assert water.sentences[3].supported_by_citations


@pytest.mark.parametrize("label", [N, U, C, E, Label.FABRICATED])
def test_a_sentence_whose_citations_do_not_support_it_counts_zero(label: Label) -> None:
    (only,) = answer_figures(answer("a", ("One.", [label]), ("Two.", [S])))
    assert only.citation_recall == 0.5
    assert only.citation_precision == 0.5


def test_the_runs_figures_are_the_mean_over_answers_as_alce_averages_them() -> None:
    t = answer_totals(answer_figures([*WATER, *CATS]))
    # Mean over answers (0.6 and 0.0), not the pooled 3/6 sentences and 3/6 citations.
    assert t.citation_recall == pytest.approx(0.3)
    assert t.citation_precision == pytest.approx(0.3)
    assert (t.sentences_supported, t.counted_sentences) == (3, 6)
    assert (t.citations_supporting, t.citations) == (3, 6)
    assert answer_totals([]).citation_recall is None


def test_a_sentence_whose_claim_did_not_run_is_left_out_of_recall() -> None:
    results = answer("part", ("Ran.", [S]), ("Deselected.", [N]), ("Uncited.", None))
    (part,) = answer_figures(r for r in results if r.id != "part-1")
    assert (part.sentences_supported, part.counted_sentences) == (1, 2)
    assert (part.citations_supporting, part.citations) == (1, 1)


# -- the gate floor ------------------------------------------------------------------------


def gate(floor: float, terms: Terms = PLUGIN_TERMS) -> list[str]:
    results = [*WATER, *CATS]
    # The contradicting citation of WATER is allowed: only the floor is under test.
    settings = GateSettings(min_citation_recall=floor, allow_contradicted=True, terms=terms)
    return evaluate(totals(results), settings, answers=answer_totals(answer_figures(results)))


def test_the_citation_recall_floor_fails_a_run_below_it_in_the_front_ends_words() -> None:
    assert gate(0.5) == [
        "ALCE citation recall 0.3000 (mean over 2 answers) is below "
        "citecheck_min_citation_recall 0.5000 (short by 0.2000)"
    ]
    assert gate(0.5, batch_terms()) == [
        "ALCE citation recall 0.3000 (mean over 2 answers) is below "
        "--min-citation-recall 0.5000 (short by 0.2000)"
    ]


def test_the_citation_recall_floor_passes_a_run_at_or_above_it() -> None:
    assert gate(0.3) == []
    assert gate(0.0) == []


def test_a_run_without_answers_has_no_citation_recall_bar() -> None:
    plain = [r.model_copy(update={"answer": None}) for r in CATS]
    settings = GateSettings(min_citation_recall=0.9, terms=PLUGIN_TERMS)
    assert evaluate(totals(plain), settings, answers=None) == []


# -- the reports ---------------------------------------------------------------------------

ALCE_LINE = "ALCE citation recall 0.3000, citation precision 0.3000 (mean over 2 answers)"


def report() -> Report:
    return Report(results={f"citecheck_a.yaml::{r.id}": r for r in [*WATER, *CATS]})


def test_the_terminal_summary_shows_the_alce_line_after_the_answer_line() -> None:
    lines = [line.text for line in report().lines()]
    at = lines.index("2 answers, 6 sentences, 2 uncited: answer support 0.5000 (2/4 claims)")
    assert lines[at + 1] == ALCE_LINE


def test_the_terminal_summary_of_a_run_without_answers_has_no_alce_line() -> None:
    plain = [r.model_copy(update={"answer": None}) for r in WATER]
    lines = [line.text for line in Report(results={r.id: r for r in plain}).lines()]
    assert not any("ALCE" in line or "answer" in line for line in lines)


def test_the_json_report_has_each_answers_figures_and_the_means() -> None:
    data = report().scrubbed_json()
    assert data["answer_totals"] == {
        "answers": 2,
        "sentences": 6,
        "uncited": 2,
        "claims": 4,
        "supported": 2,
        "answer_support": 0.5,
        "citation_recall": pytest.approx(0.3),
        "citation_precision": pytest.approx(0.3),
        "sentences_counted": 6,
        "sentences_supported": 3,
        "citations": 6,
        "citations_supporting": 3,
    }
    water = next(a for a in data["answers"] if a["id"] == "water")
    assert (water["id"], water["citation_recall"], water["citation_precision"]) == (
        "water",
        pytest.approx(0.6),
        pytest.approx(0.6),
    )
    assert [s["supported_by_citations"] for s in water["text"]] == [
        True,
        True,
        False,
        True,
        False,
    ]


def test_the_markdown_summary_shows_the_means_and_each_answers_figures() -> None:
    text = render_markdown(report().scrubbed_json())
    assert (
        "ALCE citation recall **0.3000**, citation precision **0.3000** (mean over 2 answers)"
        in text
    )
    assert "| citation recall | citation precision |" in text
    assert (
        "| water | citecheck_a.yaml | 5 | 3 | 2 | 2/3 | 0.6667 | 0.6000 (3/5) | 0.6000 (3/5) |"
        in (text)
    )
    assert (
        "| cats | citecheck_a.yaml | 1 | 1 | 0 | 0/1 | 0.0000 | 0.0000 (0/1) | 0.0000 (0/1) |"
        in (text)
    )


def test_the_html_report_shows_the_means_and_each_answers_figures() -> None:
    page = render_html(report().scrubbed_json())
    alce = re.search(r'<span id="alce">(.*?)</span>', page)
    assert alce is not None
    assert re.sub(r"<[^>]+>", "", alce.group(1)) == ALCE_LINE
    assert "citation recall 0.6000 (3/5) · citation precision 0.6000 (3/5)" in page
    assert "citation recall 0.0000 (0/1) · citation precision 0.0000 (0/1)" in page
