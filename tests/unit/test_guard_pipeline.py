"""The guard's decisions reach the verdict through ``pipeline.Verifier``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation
from pytest_citecheck.claims.results import JudgeReply
from pytest_citecheck.engine.judging import Judging
from pytest_citecheck.engine.pipeline import Verifier
from pytest_citecheck.stages.fetch import FetchResult
from pytest_citecheck.stages.quote_policy import QuotePolicy

URL = "https://example.com/boiling"
PAGE = (
    "Water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level, where the air "
    "presses down with a standard pressure."
)


class OnePage:
    def fetch(self, url: str) -> FetchResult:
        return FetchResult(url=url, text=PAGE, final_url=url, original_status=200)


class First:
    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        return [(i, 1.0) for i in range(min(k, len(passages)))]


@dataclass
class Says:
    quote: str
    label: str = "supported"
    name: str = "scripted:test"

    def judge(self, claim: str, passages: Sequence[str]) -> JudgeReply:
        return JudgeReply.model_validate(
            {"label": self.label, "quote": self.quote, "confidence": 0.95}
        )


def verify(quote: str, policy: QuotePolicy | None = None) -> Verifier:
    verifier = Verifier(fetcher=OnePage(), ranker=First(), judging=Judging(judge=Says(quote)))
    if policy is not None:
        verifier.judging.quote_policy = policy
    return verifier


def test_a_fuzzy_verdict_carries_the_page_span_the_judge_quote_and_the_similarity() -> None:
    quote = "water boils at 100 degrees Celsius 212 degrees Fahrenheit at sea level."
    verdict = verify(quote, QuotePolicy("fuzzy", 0.9)).verify_citation(
        "Water boils at 100 C.", Citation(url=URL)
    )
    assert verdict.label is Label.SUPPORTED
    assert verdict.evidence_quote == (
        "Water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level"
    )
    assert verdict.judge_quote == quote
    assert verdict.quote_similarity == 1.0
    assert verdict.confidence == 0.95 and not verdict.review
    dumped = verdict.model_dump(mode="json")
    assert dumped["judge_quote"] == quote and dumped["quote_similarity"] == 1.0


def test_exact_mode_is_the_default_and_reports_no_judge_quote() -> None:
    quote = "water boils at 100 degrees Celsius 212 degrees Fahrenheit at sea level."
    verdict = verify(quote).verify_citation("Water boils at 100 C.", Citation(url=URL))
    assert verdict.label is Label.NOT_FOUND
    assert verdict.reason == Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE
    assert verdict.evidence_quote == quote
    assert verdict.judge_quote is None and verdict.quote_similarity is None


def test_a_trivial_quote_is_not_found_with_confidence_zero_and_listed_for_review() -> None:
    verdict = verify("Water").verify_citation("Water boils at 50 degrees.", Citation(url=URL))
    assert verdict.label is Label.NOT_FOUND
    assert verdict.reason == Reason.EVIDENCE_QUOTE_TOO_SHORT
    assert verdict.confidence == 0.0
    assert verdict.review
    assert verdict.evidence_quote == "Water"


def test_a_refused_near_miss_says_what_it_changes() -> None:
    quote = "Water boils at 90 degrees Celsius (212 degrees Fahrenheit) at sea level"
    verdict = verify(quote, QuotePolicy("fuzzy", 0.9)).verify_citation(
        "Water boils at 90 C.", Citation(url=URL)
    )
    assert verdict.reason == Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE
    assert verdict.detail is not None and "differs in a number" in verdict.detail
