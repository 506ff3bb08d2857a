"""Recording at the Crawling API's concurrency limit: 429s shrink the engine's limit,
Retry-After is honoured, every claim is still recorded once (loopback doubles only)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.settings import EngineSettings, StageHooks
from tests.doubles import recording_environ
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import Fault, LLMDouble
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


def environ(api: CrawlbaseDouble, llm: LLMDouble) -> dict[str, str]:
    return recording_environ(api.base_url, llm.base_url("openai"), TOKENS, KEY)


def record(
    api: CrawlbaseDouble, llm: LLMDouble, root: Path, **settings: object
) -> tuple[list[Label], Engine]:
    engine = Engine.from_settings(
        EngineSettings(record_mode="once", **settings),  # type: ignore[arg-type]
        StageHooks(make_ranker=WordOverlap),
        environ=environ(api, llm),
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


@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
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


@pytest.mark.allow_resend("the double answers 429 beyond 4 at once and each is sent again")
def test_a_service_slower_than_its_retry_after_still_gets_every_claim_recorded(
    tmp_path: Path,
) -> None:
    # Crawls take longer than the Retry-After the service asks for, so the retries of a
    # rejected round are answered before any crawl succeeds. They were sent under the
    # halved limit, so their 429s halve it again; waiting for a success first kept the
    # limit at 10 while 20 of the 24 claims ran out of tries and ended `error`.
    api = CrawlbaseDouble(
        tokens=TOKENS, max_concurrent=4, retry_after="0.05", latency=lambda url: 0.3
    )
    for i in range(24):
        api.add(f"https://example.com/p/{i}", Page(markdown=ARTICLE))
    with api, LLMDouble(api_key=KEY) as llm:
        labels, engine = record(api, llm, tmp_path, concurrency=24)
        assert labels.count(Label.ERROR) == 0
        assert engine.limits["crawlbase"].cuts >= 2  # the retries' round cut it again
        billed = [c for c in api.api_calls if c.status == 200]
        assert len(billed) == 24 == len({c.url for c in billed})


def test_a_crawl_limit_at_the_services_own_sends_nothing_it_refuses(
    tmp_path: Path, limited_api: CrawlbaseDouble
) -> None:
    with limited_api as api, LLMDouble(api_key=KEY) as llm:
        labels, engine = record(api, llm, tmp_path, concurrency=24, crawl_concurrency=4)
        assert Label.ERROR not in labels
        assert api.rejected == 0 and api.peak_in_flight == 4
        assert "in flight" not in engine.progress.line()  # nothing in flight, no back-off


def test_one_long_retry_after_fails_its_own_request_and_stalls_no_other_claim(
    tmp_path: Path,
) -> None:
    # One crawl and one judge call are answered 429 + Retry-After: 30 under a 20 s
    # deadline: those two claims end `error` at once, saying why; nobody waits 30 s.
    with CrawlbaseDouble(tokens=TOKENS) as api, LLMDouble(api_key=KEY) as llm:
        for i in range(24):
            throttled = (429,) if i == 5 else ()
            api.add(
                f"https://example.com/p/{i}",
                Page(markdown=ARTICLE, transient=throttled, retry_after="30"),
            )
        llm.script(Fault("rate_limited", retry_after="30"))
        engine = Engine.from_settings(
            EngineSettings(record_mode="once", concurrency=8, timeout=20),
            StageHooks(make_ranker=WordOverlap),
            environ=environ(api, llm),
        )
        started = time.monotonic()
        with engine:
            results = engine.verify_claims_sync(
                claims(24), cassette_for=lambda c: tmp_path / "cassettes" / f"{c.id}.yaml"
            )
        elapsed = time.monotonic() - started
    assert elapsed < 20  # the run ends inside the deadline: nobody waited the 30 s out
    errors = {r.id: r for r in results if r.label is Label.ERROR}
    assert len(errors) == 2 and "c05" in errors
    assert all(r.label is Label.SUPPORTED for r in results if r.id not in errors)
    details = [v.detail or "" for r in errors.values() for v in r.verdicts]
    expected = "rate limited: retry after 30 s, beyond the 20 s deadline"
    assert len(details) == 2 and all(expected in d for d in details), details
    assert engine.limits["openai"].overloads == 1 and engine.limits["crawlbase"].overloads == 1
