"""Claims of one run citing one page: crawled once (billed once), recorded whole into each
claim's cassette, the same bytes whichever claim sent the request, so every cassette
replays alone and concurrency changes nothing recorded (recording/shared_reads.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.settings import EngineSettings, StageHooks
from pytest_citecheck.stages.fetch import credits_for
from tests.doubles import recording_environ
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble
from tests.doubles.ranking import WordOverlap

TOKENS = {"normal": "planted-normal-token-shared", "javascript": "planted-js-token-shared"}
KEY = "sk-planted-shared-key"
PAGE = "https://example.com/articles/bridge"
OTHER = "https://example.com/articles/tunnel"
ARTICLE = "# Bridge\n\n" + "The council approved the new bridge on Tuesday after a debate. " * 8


def claims(n: int, *urls: str) -> list[Claim]:
    return [
        Claim(
            id=f"c{i}",
            claim=f"The council approved the new bridge on Tuesday (sentence {i}).",
            citations=[Citation(url=u) for u in urls],
        )
        for i in range(n)
    ]


def engine(api: CrawlbaseDouble, llm: LLMDouble, mode: str, **settings: object) -> Engine:
    env = recording_environ(api.base_url, llm.base_url("openai"), TOKENS, KEY, keys=mode != "none")
    return Engine.from_settings(
        EngineSettings(record_mode=mode, **settings),  # type: ignore[arg-type]
        StageHooks(make_ranker=WordOverlap),
        environ=env,
    )


def run(e: Engine, batch: list[Claim], root: Path) -> list[object]:
    with e:
        return e.verify_claims_sync(batch, cassette_for=lambda c: root / f"{c.id}.yaml")


def test_claims_citing_one_page_crawl_it_once_and_each_cassette_replays_alone(
    tmp_path: Path,
) -> None:
    api = CrawlbaseDouble(tokens=TOKENS)
    api.add(PAGE, Page(markdown=ARTICLE))
    api.add(OTHER, Page(markdown=ARTICLE.replace("bridge", "tunnel")))
    batch = claims(3, PAGE, OTHER)
    with api, LLMDouble(api_key=KEY) as llm:
        recorded = run(engine(api, llm, "once", concurrency=1), batch, tmp_path)
        # Two pages, three claims: two crawls, each billed once by the Crawling API. Each
        # claim's credits are what its recording costs alone.
        assert sorted(c.url for c in api.api_calls) == [PAGE, OTHER]
        credits = [[v.credits for v in r.verdicts] for r in recorded]  # type: ignore[attr-defined]
        one = credits_for("normal", 200, 200)
        assert credits == [[one, one]] * 3
        assert [r.label for r in recorded] == [Label.SUPPORTED] * 3  # type: ignore[attr-defined]
        # Each claim's cassette holds the whole crawl it used, as the first claim's does.
        first = (tmp_path / "c0.yaml").read_text()
        for name in ("c1.yaml", "c2.yaml"):
            copy = (tmp_path / name).read_text()
            assert (
                copy.count("The council approved the new bridge")
                == first.count("The council approved the new bridge")
                >= 8
            )
        api.reset()
        # Replayed alone, with no token: the same labels and the same (billed) credits.
        for claim_ in batch:
            alone = run(engine(api, llm, "none"), [claim_], tmp_path)
            (before,) = [r for r in recorded if r.id == claim_.id]  # type: ignore[attr-defined]
            assert alone[0].verdicts == before.verdicts  # type: ignore[attr-defined]
        assert api.api_calls == []


def test_claims_asking_for_one_page_at_once_wait_for_one_crawl(tmp_path: Path) -> None:
    # Eight claims in flight together: the first sends the crawl, the others wait for its
    # reply instead of sending seven more.
    api = CrawlbaseDouble(tokens=TOKENS, latency=lambda url: 0.3)
    api.add(PAGE, Page(markdown=ARTICLE))
    with api, LLMDouble(api_key=KEY) as llm:
        results = run(engine(api, llm, "once", concurrency=8), claims(8, PAGE), tmp_path)
        assert len(api.api_calls) == 1
        assert [r.label for r in results] == [Label.SUPPORTED] * 8  # type: ignore[attr-defined]


@pytest.mark.allow_resend("the double fails every try of the first claim's crawl on purpose")
def test_a_crawl_that_failed_is_not_handed_to_the_next_claim(tmp_path: Path) -> None:
    # The Crawling API fails the page for the first claim (HTTP 500, every try): the
    # second claim asks again for itself and records what it got.
    api = CrawlbaseDouble(tokens=TOKENS)
    api.add(PAGE, Page(markdown=ARTICLE, transient=(500, 500, 500, 500)))
    with api, LLMDouble(api_key=KEY) as llm:
        results = run(engine(api, llm, "once", concurrency=1), claims(2, PAGE), tmp_path)
    assert len(api.api_calls) == 5  # four failed tries, then the second claim's own crawl
    assert [r.label for r in results] == [Label.ERROR, Label.SUPPORTED]  # type: ignore[attr-defined]
    assert "The council approved the new bridge" in (tmp_path / "c1.yaml").read_text()
