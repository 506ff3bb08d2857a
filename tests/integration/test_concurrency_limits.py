"""Recording at the Crawling API's concurrency limit: 429s shrink the engine's limit,
Retry-After is honoured, every claim is still recorded once (loopback doubles only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_citecheck.claims.models import Citation, Claim, Label
from pytest_citecheck.engine.core import Engine, EngineSettings, StageHooks
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble
from tests.doubles.ranking import WordOverlap

TOKENS = {"normal": "planted-normal-token-limits", "javascript": "planted-js-token-limits"}
KEY = "sk-planted-limits-key"
ARTICLE = "# Page\n\n" + "This page states many things about page number one. " * 8


def claims(n: int) -> list[Claim]:
    return [
        Claim(
            id=f"c{i:02d}",
            claim=f"Page {i} states things.",
            citations=[Citation(url=f"https://example.com/p/{i}")],
        )
        for i in range(n)
    ]


def record(
    api: CrawlbaseDouble, llm: LLMDouble, root: Path, **settings: object
) -> tuple[list[Label], Engine]:
    env = {
        "CITECHECK_CRAWLBASE_URL": api.base_url,
        "OPENAI_BASE_URL": llm.base_url("openai"),
        "CRAWLBASE_TOKEN": TOKENS["normal"],
        "CRAWLBASE_JS_TOKEN": TOKENS["javascript"],
        "OPENAI_API_KEY": KEY,
    }
    engine = Engine.from_settings(
        EngineSettings(record_mode="once", **settings),  # type: ignore[arg-type]
        StageHooks(make_ranker=WordOverlap),
        environ=env,
    )
    with engine:
        results = engine.verify_claims_sync(
            claims(24), cassette_for=lambda c: root / "cassettes" / f"{c.id}.yaml"
        )
    return [r.label for r in results], engine


@pytest.fixture
def limited_api() -> CrawlbaseDouble:
    api = CrawlbaseDouble(
        tokens=TOKENS, max_concurrent=4, retry_after="0.05", latency=lambda url: 0.05
    )
    for i in range(24):
        api.add(f"https://example.com/p/{i}", Page(markdown=ARTICLE))
    return api


def test_429s_shrink_the_limit_and_every_claim_is_recorded_once(
    tmp_path: Path, limited_api: CrawlbaseDouble
) -> None:
    with limited_api as api, LLMDouble(api_key=KEY) as llm:
        labels, engine = record(api, llm, tmp_path, concurrency=24)
        crawl = engine.limits["crawlbase"]
        assert Label.ERROR not in labels
        assert api.rejected > 0  # the engine started at the documented 20, the double allows 4
        assert crawl.overloads == api.rejected and int(crawl.limit) < 20
        billed = [c for c in api.api_calls if c.status == 200]
        assert len(billed) == 24 == len({c.url for c in billed})
        assert "429/503" in engine.progress.line()


def test_a_crawl_limit_at_the_services_own_sends_nothing_it_refuses(
    tmp_path: Path, limited_api: CrawlbaseDouble
) -> None:
    with limited_api as api, LLMDouble(api_key=KEY) as llm:
        labels, engine = record(api, llm, tmp_path, concurrency=24, crawl_concurrency=4)
        assert Label.ERROR not in labels
        assert api.rejected == 0 and api.peak_in_flight == 4
        assert "in flight" not in engine.progress.line()  # nothing in flight, no back-off
