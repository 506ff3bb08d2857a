"""Paywalls named, against the loopback Crawling API double, the judge double and the engine.

What the user gets: ``not_found`` with reason ``paywalled`` and the review flag for an
origin 402, for a page whose JSON-LD says ``isAccessibleForFree: false`` and for a URL
a Gemini answer reported as paywalled (not crawled at all); an article that only talks
about subscriptions keeps the verdict the judge gives it. Recorded once, replayed
offline with the same results.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.claims.importers import import_response
from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.core.retry import RetryPolicy
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.settings import EngineSettings, StageHooks
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.recording.recorder import cassette_path
from pytest_citecheck.stages.fetch import CrawlbaseFetcher
from pytest_citecheck.stages.fetch_rules import FetchResult, fetch_page
from tests.doubles import recording_environ
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble
from tests.doubles.ranking import WordOverlap

TOKENS = {"normal": "planted-paywall-normal-4c1d", "javascript": "planted-paywall-js-9e2b"}
KEY = "sk-planted-paywall-key-77a1f3"
N = "normal"
NATIVE = Path(__file__).parent.parent / "data" / "native"

ARTICLE = "\n\n".join(
    f"Paragraph {i}: the council approved the new bridge on Tuesday after a long debate "
    "about its cost, and construction is expected to start next spring."
    for i in range(8)
)
TEASER = "# Council approves the bridge\n\nThe council voted on Tuesday. Subscribe to read more."
ABOUT_SUBSCRIPTIONS = (
    "# Why newspapers ask you to subscribe\n\n"
    "Subscribe to read, subscribers only, sign in to continue reading: most papers greet "
    "readers this way now. This article is free.\n\n" + ARTICLE
)
# A reply that carries the page's JSON-LD: what a custom fetcher's HTML, a recording of
# HTML or a converter that keeps raw HTML blocks hands over (format=md leaves <script> out).
NOT_FREE_LD = {
    "@context": "https://schema.org",
    "@type": "NewsArticle",
    "headline": "Council approves the bridge",
    "isAccessibleForFree": "False",
    "hasPart": {"@type": "WebPageElement", "isAccessibleForFree": "False", "cssSelector": ".pw"},
}
WITH_JSON_LD = (
    f'<script type="application/ld+json">{json.dumps(NOT_FREE_LD)}</script>\n\n' + ARTICLE
)

PAY_402 = "https://news.example.com/2024/05/bridge-402"
PAY_LD = "https://news.example.com/2024/05/bridge-ld"
FREE = "https://news.example.com/2024/05/why-subscribe"


@pytest.fixture
def api() -> Iterator[CrawlbaseDouble]:
    with CrawlbaseDouble(tokens=TOKENS) as double:
        double.add(PAY_402, Page(markdown=TEASER, original_status=402))
        double.add(PAY_LD, Page(markdown=WITH_JSON_LD))
        double.add(FREE, Page(markdown=ABOUT_SUBSCRIPTIONS))
        yield double


@pytest.fixture
def fetcher(api: CrawlbaseDouble) -> Iterator[CrawlbaseFetcher]:
    with CrawlbaseFetcher(
        token=TOKENS[N],
        js_token=TOKENS["javascript"],
        base_url=api.base_url,
        retry=RetryPolicy(sleep=lambda s: None),
    ) as f:
        yield f


def assert_paywalled(result: FetchResult, why: str) -> None:
    assert (result.label, result.reason, result.review) == (
        Label.NOT_FOUND,
        Reason.PAYWALLED,
        True,
    )
    assert result.text is None
    assert why in (result.detail or "")


# -- the fetcher ---------------------------------------------------------------------


@pytest.mark.parametrize("pc_status", [200, 402])
def test_an_origin_402_is_paywalled_after_one_unbilled_call(api, fetcher, pc_status):
    api.add(PAY_402, Page(markdown=TEASER, original_status=402, pc_status=pc_status))

    result = fetch_page(fetcher, PAY_402, None)

    assert_paywalled(result, "HTTP 402")
    # The teaser is thin, but no readability retry or JavaScript token gets past a paywall.
    assert [(c.kind, c.readability) for c in api.api_calls] == [(N, True)]
    assert result.original_status == 402
    assert result.credits == 0.0  # the Crawling API bills no origin 402


def test_a_reply_whose_json_ld_says_not_free_is_paywalled(api, fetcher):
    result = fetch_page(fetcher, PAY_LD, None)

    assert_paywalled(result, "isAccessibleForFree: false")
    assert len(api.api_calls) == 1


def test_an_article_about_subscriptions_is_read_as_the_page(api, fetcher):
    result = fetch_page(fetcher, FREE, None)

    assert (result.label, result.reason, result.text) == (None, None, ABOUT_SUBSCRIPTIONS)


def test_the_crawling_apis_own_402_is_still_out_of_credits_not_a_paywall(api, fetcher):
    from pytest_citecheck.core.errors import ConfigurationError

    api.add(FREE, Page(http_status=402))

    with pytest.raises(ConfigurationError, match="out of credits"):
        fetch_page(fetcher, FREE, None)


# -- the engine: record, then replay offline -------------------------------------------


def gemini_claim() -> tuple[Claim, str]:
    """A claim imported from a Gemini url_context answer whose URL the provider found
    paywalled, and that URL."""
    (path,) = NATIVE.glob("*/pydantic-ai__gemini-2_5-flash_url_context.json")
    data: dict[str, Any] = copy.deepcopy(json.loads(path.read_text(encoding="utf-8")))
    (meta,) = data["candidates"][0]["urlContextMetadata"]["urlMetadata"]
    meta["urlRetrievalStatus"] = "URL_RETRIEVAL_STATUS_PAYWALL"
    answer = import_response(data, answer_id="gemini")
    imported = answer.claims[0].claim
    (citation,) = imported.citations
    assert citation.url is not None
    return imported.model_copy(update={"id": "gemini"}), citation.url


def claims() -> list[Claim]:
    said = "The council approved the new bridge."
    return [
        Claim(id="pay-402", claim=said, citations=[Citation(url=PAY_402)]),
        Claim(id="pay-ld", claim=said, citations=[Citation(url=PAY_LD)]),
        Claim(id="free", claim=said, citations=[Citation(url=FREE)]),
        gemini_claim()[0],
    ]


def env_for(api: CrawlbaseDouble, llm: LLMDouble, *, keys: bool = True) -> dict[str, str]:
    return recording_environ(api.base_url, llm.base_url("openai"), TOKENS, KEY, keys=keys)


def run(root: Path, env: dict[str, str], mode: str) -> list[ClaimResult]:
    settings = EngineSettings(record_mode=mode, terms=PLUGIN_TERMS, no_confirm=True)
    with Engine.from_settings(settings, StageHooks(make_ranker=WordOverlap), environ=env) as e:
        return e.verify_claims_sync(
            claims(), cassette_for=lambda c: cassette_path(root / "citecheck_news.yaml", c.id)
        )


def outcome(results: list[ClaimResult]) -> dict[str, tuple[Label, str | None, bool]]:
    return {
        r.id: (r.verdicts[0].label, r.verdicts[0].reason, r.verdicts[0].review) for r in results
    }


def test_paywalls_are_named_through_the_engine_and_replay_offline(api, tmp_path):
    paywalled = (Label.NOT_FOUND, Reason.PAYWALLED, True)
    with LLMDouble(api_key=KEY) as llm:
        recorded = run(tmp_path, env_for(api, llm), "once")

        assert outcome(recorded) == {
            "pay-402": paywalled,
            "pay-ld": paywalled,
            "free": (Label.SUPPORTED, None, False),
            "gemini": paywalled,
        }
        # Only the free article reached the judge; the Gemini URL was never crawled.
        assert len(llm.calls) == 1
        gemini_url = gemini_claim()[1]
        assert api.calls_for(gemini_url) == []
        assert sorted(c.url or "" for c in api.api_calls) == sorted([PAY_402, PAY_LD, FREE])
        gemini = next(r for r in recorded if r.id == "gemini").verdicts[0]
        assert "URL_RETRIEVAL_STATUS_PAYWALL" in (gemini.detail or "")
        assert gemini.credits == 0.0

        api.reset()
        llm.reset()
        replayed = run(tmp_path, env_for(api, llm, keys=False), "none")

        assert outcome(replayed) == outcome(recorded)
        assert api.api_calls == [] and llm.calls == []
