"""A citation's own quote with an ellipsis, against the loopback doubles
: each piece must be a real span, and an ellipsis that skips a negation or a
number the page has makes a model's or a person's quote ``fabricated``, its reason
saying so, no judge asked. A provider's cut (``...`` at its end) keeps its own rule; a
found elided quote makes the judge and the confirmation read the page's whole span."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation, Claim, QuoteBy
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.recording.recorder import cassette_path
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import verdict
from tests.integration.test_engine import KEY, TOKENS, StableLLM, env_for, make_engine

URL = "https://example.com/landmarks/eiffel"
CLAIM_FILE = Path("claims") / "citecheck_elided.yaml"
CLAIM = "The Eiffel Tower is in Lyon."
NEGATED = (
    "The Eiffel Tower, the tall iron lattice tower, is not located in the French city of Lyon."
)
DATED = "The tower was completed in 1889 for the World's Fair held on the Champ de Mars in Paris."
PAGE = (
    "# The Eiffel Tower\n\n"
    "The Eiffel Tower is not in Lyon. It stands in Paris.\n\n"
    f"{NEGATED} {DATED}\n\n"
    "Visitors climb to the second floor by the stairs, or take the lifts to the top, where "
    "the view reaches far across the city and the river below.\n"
)


@pytest.fixture
def doubles() -> Iterator[tuple[CrawlbaseDouble, StableLLM]]:
    with CrawlbaseDouble(tokens=TOKENS) as api, StableLLM(api_key=KEY) as llm:
        api.add(URL, Page(markdown=PAGE))
        yield api, llm


def verify(root: Path, env: dict[str, str], quote: str, quote_by: QuoteBy = "user") -> ClaimResult:
    claim = Claim(
        id="eiffel", claim=CLAIM, citations=[Citation(url=URL, quote=quote, quote_by=quote_by)]
    )
    with make_engine(env, "once") as engine:
        [result] = engine.verify_claims_sync(
            [claim], cassette_for=lambda c: cassette_path(root / CLAIM_FILE, c.id)
        )
    return result


@pytest.mark.parametrize(
    "quote",
    ["The Eiffel Tower is ... in Lyon", "T ... L", "The Eiffel Tower is \u2026 Lyon."],
)
@pytest.mark.parametrize("quote_by", ["user", "model"])
def test_an_elided_quote_with_a_piece_too_short_to_be_evidence_is_fabricated(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM], quote: str, quote_by: QuoteBy
) -> None:
    api, llm = doubles
    [v] = verify(tmp_path, env_for(api, llm), quote, quote_by).verdicts
    assert (v.label, v.reason) == (Label.FABRICATED, Reason.QUOTE_NOT_IN_PAGE)
    assert v.detail is not None and "too short to be evidence" in v.detail
    assert llm.calls == []  # no judge asked


@pytest.mark.parametrize(
    ("quote", "skips", "skipped"),
    [
        (
            "The Eiffel Tower, the tall iron lattice tower, is ... located in the French city "
            "of Lyon.",
            "a negation",
            "not",
        ),
        (
            "The tower was completed [...] for the World's Fair held on the Champ de Mars",
            "a number",
            "1889",
        ),
    ],
)
@pytest.mark.parametrize("quote_by", ["user", "model"])
def test_an_ellipsis_that_skips_a_negation_or_a_number_makes_the_quote_fabricated(
    tmp_path: Path,
    doubles: tuple[CrawlbaseDouble, StableLLM],
    quote: str,
    skips: str,
    skipped: str,
    quote_by: QuoteBy,
) -> None:
    api, llm = doubles
    [v] = verify(tmp_path, env_for(api, llm), quote, quote_by).verdicts
    assert (v.label, v.reason) == (Label.FABRICATED, Reason.QUOTE_ELISION_CHANGES_MEANING)
    assert v.evidence_quote == quote
    assert v.detail is not None and f"skips {skips}" in v.detail and skipped in v.detail
    assert llm.calls == []


def test_a_provider_quote_keeps_its_own_rule_and_the_judge_reads_the_whole_span(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    """A provider's ellipsis is where it cut what it read: found piece by piece as before,
    never fabricated; the judge reads the passage holding the whole span, "not" included."""
    api, llm = doubles
    quote = (
        "The Eiffel Tower, the tall iron lattice tower, is ... located in the French city of Lyon."
    )
    [v] = verify(tmp_path, env_for(api, llm), quote, "provider").verdicts
    assert v.label is not Label.FABRICATED
    assert not v.provider_quote_not_on_page
    assert [NEGATED in p.text for p in v.passages] == [True]


def test_a_provider_cut_at_the_end_is_still_found(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    cut = "... The Eiffel Tower, the tall iron lattice tower, is not located in the Fre..."
    [v] = verify(tmp_path, env_for(api, llm), cut, "provider").verdicts
    assert not v.provider_quote_not_on_page
    assert v.label is not Label.FABRICATED
    assert [NEGATED in p.text for p in v.passages] == [True]


def test_a_found_elided_quote_is_read_whole_by_the_judge_and_the_confirmation(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    """The honest elision skips words that change nothing; the judge double quotes the
    same elided text back, and the confirmation reads the page's whole span, the skipped
    words included, not the elided quote."""
    api, llm = doubles
    quote = "Visitors climb to the second floor by the stairs ... where the view reaches far"
    llm.responder = lambda call: verdict("supported", quote, 0.9)
    [v] = verify(tmp_path, env_for(api, llm), quote).verdicts
    assert v.label is Label.SUPPORTED, (v.reason, v.detail)
    assert v.confirmation is not None
    assert "or take the lifts to the top" in v.confirmation.evidence
    # Both requests (the reading, then the confirmation) held the skipped words.
    requests = [*llm.calls, *llm.confirmations]
    assert len(requests) == 2
    assert all("or take the lifts to the top" in " ".join(r.passages) for r in requests)
