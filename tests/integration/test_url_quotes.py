"""A quote on a URL citation against the loopback doubles: a quote the recorded page does
not have is fabricated and the judge is never asked (the cassette holds no judge call); a
found quote makes the judge read the passage holding it, not retrieval's top passages; a
page that could not be read keeps its own label. Replays give the recorded results."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.recording.recorder import cassette_path
from pytest_citecheck.stages.quote_policy import QuotePolicy
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.integration.test_engine import KEY, TOKENS, StableLLM, env_for, make_engine

PAGE_URL = "https://example.com/science/boiling-at-altitude"
GONE_URL = "https://example.com/science/moved"
CLAIM_FILE = Path("claims") / "citecheck_quotes.yaml"
CLAIM = "Water boils at a lower temperature at high altitude."


def _paragraph(topic: str, n: int = 20) -> str:
    return " ".join(f"{topic} sentence {i} about water boiling at altitude." for i in range(n))


# Five passages (each paragraph is over half the passage budget). The first four share
# most words with the claim, so retrieval's top three never include the fifth, which
# holds the quote.
# It shares "lower temperature" with the claim, so the guard's relevance check reads it
# as about the claim.
QUOTE = "In Denver the kettle sings at about 95 degrees, a lower temperature."
PASSAGE_FIVE = (
    f"Mountain cooking. {QUOTE} Recipes written for the coast add a few minutes of cooking "
    "time, and bakers there use a little less yeast and a little more flour."
)
ARTICLE = "\n\n".join([*(_paragraph(f"Part {k}") for k in range(1, 5)), PASSAGE_FIVE])


@pytest.fixture
def doubles() -> Iterator[tuple[CrawlbaseDouble, StableLLM]]:
    with CrawlbaseDouble(tokens=TOKENS) as api, StableLLM(api_key=KEY) as llm:
        api.add(PAGE_URL, Page(markdown=ARTICLE))
        api.add(GONE_URL, Page(markdown="# Not Found", original_status=404))
        yield api, llm


def quoted(claim_id: str, url: str, quote: str) -> Claim:
    return Claim(id=claim_id, claim=CLAIM, citations=[Citation(url=url, quote=quote)])


def run(root: Path, env: dict[str, str], mode: str, claims: list[Claim]) -> list[ClaimResult]:
    with make_engine(env, mode) as engine:
        return engine.verify_claims_sync(
            claims, cassette_for=lambda c: cassette_path(root / CLAIM_FILE, c.id)
        )


def interactions(root: Path, claim_id: str) -> list[dict[str, Any]]:
    data = yaml.safe_load(cassette_path(root / CLAIM_FILE, claim_id).read_text())
    return list(data["interactions"])


def judge_requests(root: Path, claim_id: str, llm: StableLLM) -> list[dict[str, Any]]:
    root_url = llm.root
    return [i for i in interactions(root, claim_id) if i["request"]["uri"].startswith(root_url)]


def test_a_quote_not_on_the_recorded_page_is_fabricated_without_a_judge_call(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    made_up = "In Denver water boils at exactly 80 degrees Celsius."
    claims = [quoted("made-up", PAGE_URL, made_up)]
    [result] = run(tmp_path, env_for(api, llm), "once", claims)
    [verdict] = result.verdicts
    assert verdict.label == Label.FABRICATED
    assert verdict.reason == Reason.QUOTE_NOT_IN_PAGE == "quote_not_in_page"
    assert verdict.evidence_quote == made_up
    assert verdict.judge is None and verdict.passages == []
    assert result.label == Label.CONTRADICTED  # a fabricated citation, as for documents
    assert llm.calls == []
    # The cassette proves it: the page was fetched and recorded, no judge request was.
    recorded = interactions(tmp_path, "made-up")
    assert [i["request"]["method"] for i in recorded] == ["GET"]
    assert judge_requests(tmp_path, "made-up", llm) == []
    urls = (api.base_url, llm.base_url("openai"))
    api.stop()
    llm.stop()
    [replayed] = run(tmp_path, env_for(*urls, keys=False), "none", claims)
    assert replayed.model_dump() == result.model_dump()


@pytest.mark.allow_resend(
    "the confirmation's request equals the first reading's: the one passage shown is "
    "the quote's sentence (the same prompt and passage, both recorded)"
)
def test_a_found_quote_makes_the_judge_read_the_passage_holding_it(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    # Retrieval alone would show the judge the first passages, not the fifth.
    claims = [Claim(id="plain", claim=CLAIM, citations=[Citation(url=PAGE_URL)])]
    run(tmp_path / "plain", env_for(api, llm), "once", claims)
    assert PASSAGE_FIVE not in llm.calls[0].passages
    llm.reset()

    # Spacing and line breaks are normalised as the guard normalises.
    claims = [quoted("found", PAGE_URL, QUOTE.replace(" the ", "  the\n"))]
    [result] = run(tmp_path, env_for(api, llm), "once", claims)
    [call] = llm.calls
    assert call.passages == [PASSAGE_FIVE]
    [verdict] = result.verdicts
    assert [p.index for p in verdict.passages] == [4]
    assert verdict.label == Label.SUPPORTED  # the double quotes the passage it was shown
    assert verdict.evidence_quote is not None and QUOTE in verdict.evidence_quote
    # The first reading, then its confirmation on the quote's sentence alone.
    assert len(judge_requests(tmp_path, "found", llm)) == 2
    [confirming] = llm.confirmations
    assert confirming.passages[0] in " ".join(PASSAGE_FIVE.split())
    urls = (api.base_url, llm.base_url("openai"))
    api.stop()
    llm.stop()
    [replayed] = run(tmp_path, env_for(*urls, keys=False), "none", claims)
    assert replayed.model_dump() == result.model_dump()


def test_the_judges_own_quote_still_goes_through_the_guard(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    from tests.doubles.llm import verdict

    api, llm = doubles
    # The judge quotes a passage it was not shown (the first one): refused as usual.
    llm.script(verdict("supported", "Part 1 sentence 0 about water boiling at altitude.", 0.9))
    [result] = run(tmp_path, env_for(api, llm), "once", [quoted("found", PAGE_URL, QUOTE)])
    [v] = result.verdicts
    assert v.label == Label.NOT_FOUND
    assert v.reason == Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE


def test_a_dead_page_keeps_its_label_whatever_the_quote(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    [result] = run(tmp_path, env_for(api, llm), "once", [quoted("gone", GONE_URL, QUOTE)])
    [v] = result.verdicts
    assert v.label == Label.UNREACHABLE
    assert v.reason == Reason.HTTP_404
    assert llm.calls == []


@pytest.mark.allow_resend(
    "the confirmation's request equals the first reading's: the one passage shown is "
    "the quote's sentence (the same prompt and passage, both recorded)"
)
def test_fuzzy_mode_finds_a_lightly_edited_quote_and_still_refuses_a_changed_number(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    edited = "in Denver the kettle sings at about 95 degrees, a lower temperature"  # case, no "."
    changed = "In Denver the kettle sings at about 85 degrees, a lower temperature."
    claims = [quoted("edited", PAGE_URL, edited), quoted("changed", PAGE_URL, changed)]
    with make_engine(env_for(api, llm), "once", quote_policy=QuotePolicy("fuzzy")) as engine:
        results = engine.verify_claims_sync(
            claims, cassette_for=lambda c: cassette_path(tmp_path / CLAIM_FILE, c.id)
        )
    by_id = {r.id: r.verdicts[0] for r in results}
    assert [p.index for p in by_id["edited"].passages] == [4]
    assert by_id["edited"].label == Label.SUPPORTED
    assert by_id["changed"].label == Label.FABRICATED
    assert by_id["changed"].reason == Reason.QUOTE_NOT_IN_PAGE
    assert len(llm.calls) == 1


# -- who wrote the quote ---------------------------------------------------------------------


def test_a_provider_quote_the_page_lacks_is_judged_on_retrievals_passages_not_fabricated(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    # Anthropic's cited_text of a version of the page we no longer get.
    gone = "In Denver water boils at exactly 80 degrees Celsius."
    provider = Claim(
        id="provider",
        claim=CLAIM,
        citations=[Citation(url=PAGE_URL, quote=gone, quote_by="provider")],
    )
    by_model = Claim(
        id="model", claim=CLAIM, citations=[Citation(url=PAGE_URL, quote=gone, quote_by="model")]
    )
    results = run(tmp_path, env_for(api, llm), "once", [provider, by_model])
    verdicts = {r.id: r.verdicts[0] for r in results}
    judged = verdicts["provider"]
    # The judge was asked, on retrieval's passages (the first ones, not the fifth).
    [call] = llm.calls
    assert PASSAGE_FIVE not in call.passages and len(call.passages) == 3
    assert judged.label == Label.SUPPORTED  # what the (honest) double answered
    assert judged.provider_quote_not_on_page is True
    assert judged.reason is None
    assert {r.id: r.label for r in results} == {
        "provider": Label.SUPPORTED,
        "model": Label.CONTRADICTED,
    }
    # A quote the model wrote keeps the rule: fabricated, no judge asked.
    assert verdicts["model"].label == Label.FABRICATED
    assert verdicts["model"].provider_quote_not_on_page is False
    assert judge_requests(tmp_path, "model", llm) == []
    urls = (api.base_url, llm.base_url("openai"))
    api.stop()
    llm.stop()
    replayed = run(tmp_path, env_for(*urls, keys=False), "none", [provider, by_model])
    assert [r.model_dump() for r in replayed] == [r.model_dump() for r in results]


@pytest.mark.allow_resend(
    "the confirmation's request equals the first reading's: the one passage shown is "
    "the quote's sentence (the same prompt and passage, both recorded)"
)
def test_a_found_provider_quote_steers_the_judge_like_any_other(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    cut = "... the kettle sings at about 95 degr..."  # cut mid-word, as Anthropic does
    claim = Claim(
        id="found", claim=CLAIM, citations=[Citation(url=PAGE_URL, quote=cut, quote_by="provider")]
    )
    [result] = run(tmp_path, env_for(api, llm), "once", [claim])
    [call] = llm.calls
    assert call.passages == [PASSAGE_FIVE]
    assert result.verdicts[0].provider_quote_not_on_page is False


@pytest.mark.allow_resend(
    "the confirmation's request equals the first reading's: the one passage shown is "
    "the quote's sentence (the same prompt and passage, both recorded)"
)
def test_a_text_fragment_range_marks_its_whole_span_and_is_never_sent(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    fragment = "#:~:text=Mountain%20cooking-,In%20Denver%20the%20kettle,a%20lower%20temperature"
    plain = Claim(id="linked", claim=CLAIM, citations=[Citation(url=PAGE_URL)])
    linked = Claim(id="linked", claim=CLAIM, citations=[Citation(url=PAGE_URL + fragment)])
    [result] = run(tmp_path, env_for(api, llm), "once", [linked])
    # The Crawling API got the page's URL, without the fragment.
    assert [c.url for c in api.calls] == [PAGE_URL]
    # The fragment steered the judge to the passage it points at.
    [call] = llm.calls
    assert call.passages == [PASSAGE_FIVE]
    [verdict] = result.verdicts
    assert verdict.url == PAGE_URL + fragment
    assert verdict.label == Label.SUPPORTED
    # The page's request is recorded as for the URL without the fragment: one cassette key.
    run(tmp_path / "plain", env_for(api, llm), "once", [plain])

    def page_requests(root: Path) -> list[str]:
        recorded = interactions(root, "linked")
        return [i["request"]["uri"] for i in recorded if i["request"]["method"] == "GET"]

    assert page_requests(tmp_path) == page_requests(tmp_path / "plain")
    assert len(page_requests(tmp_path)) == 1


def test_a_text_fragment_of_a_provider_url_the_page_lacks_marks_the_verdict(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    api, llm = doubles
    url = PAGE_URL + "#:~:text=Water%20boils%20at%2080%20degrees"
    # The provider's API produced the URL (what `citecheck import` writes for a native
    # annotation): its fragment is the provider's quote.
    cited = Citation(url=url, quote_by="provider")
    claim = Claim(id="stale", claim=CLAIM, citations=[cited])
    [result] = run(tmp_path, env_for(api, llm), "once", [claim])
    [verdict] = result.verdicts
    assert verdict.label != Label.FABRICATED
    assert verdict.provider_quote_not_on_page is True
    assert len(llm.calls) == 1


def test_a_person_s_text_fragment_range_with_an_end_too_short_is_fabricated(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM]
) -> None:
    # A range marks the whole span between its ends (the span above skips "95 degrees"
    # and is found), but an end of one word says nothing: "T ... L" is no quote.
    api, llm = doubles
    url = PAGE_URL + "#:~:text=In%20Denver%20the%20kettle,temperature"
    claim = Claim(id="thin", claim=CLAIM, citations=[Citation(url=url)])
    [result] = run(tmp_path, env_for(api, llm), "once", [claim])
    [verdict] = result.verdicts
    assert verdict.label == Label.FABRICATED
    assert "too short" in (verdict.detail or "")
    assert llm.calls == []


@pytest.mark.parametrize("by", ["user", "model"])
def test_a_text_fragment_a_person_or_the_model_wrote_is_fabricated_when_the_page_lacks_it(
    tmp_path: Path, doubles: tuple[CrawlbaseDouble, StableLLM], by: str
) -> None:
    # Any fragment was once counted as a provider quote, so a made-up one in
    # a hand-written claim file (or a model's markdown link) was never fabricated.
    api, llm = doubles
    url = PAGE_URL + "#:~:text=In%20Denver%20water%20boils%20at%20exactly%2080%20degrees"
    cited = Citation(url=url) if by == "user" else Citation(url=url, quote_by="model")
    assert cited.quote_by == by
    [result] = run(
        tmp_path, env_for(api, llm), "once", [Claim(id="made-up", claim=CLAIM, citations=[cited])]
    )
    [verdict] = result.verdicts
    assert verdict.label == Label.FABRICATED
    assert verdict.reason == Reason.QUOTE_NOT_IN_PAGE
    assert verdict.evidence_quote == "In Denver water boils at exactly 80 degrees"
    assert verdict.provider_quote_not_on_page is False
    assert llm.calls == []  # no judge asked
    assert judge_requests(tmp_path, "made-up", llm) == []
