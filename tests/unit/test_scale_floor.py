"""bench/scale.py's floor and the default concurrency.

The floor ignored that a claim's crawl, reading and confirmation run one after another,
and 32 claims in flight no longer kept the Crawling API's 20 crawls busy once every
verdict made a second judge call: 200 claims at the services' latencies took 1.32x a
floor that was itself too low. These play the bench's own latencies through a perfect
engine (no CPU), so they are deterministic."""

from __future__ import annotations

import pytest

from bench.scale import (
    JUDGE,
    JUDGE_CALLS,
    build,
    crawl_latency,
    floor_terms,
    judge_latency,
    schedule,
)
from pytest_citecheck.core.defaults import DEFAULT_CONCURRENCY
from pytest_citecheck.core.limits import CRAWLING_API_CAP, cap_for

JUDGE_CAP = cap_for(JUDGE.split(":")[0])


def bench_latencies(n: int = 200) -> tuple[list[float], list[float]]:
    pages, claims = build(n)
    return [crawl_latency(u, 1.0) for u, _ in pages], [judge_latency(c.claim, 1.0) for c in claims]


def test_one_claims_floor_is_its_crawl_reading_and_confirmation_in_turn() -> None:
    terms = floor_terms([5.0], [2.0], CRAWLING_API_CAP, JUDGE_CAP)
    assert JUDGE_CALLS == 2  # the reading and the confirmation
    assert max(terms.values()) == pytest.approx(9.0)  # 5 s crawl, then 2 s twice
    assert schedule([5.0], [2.0], DEFAULT_CONCURRENCY, CRAWLING_API_CAP, JUDGE_CAP) == 9.0


def test_the_crawls_bound_adds_the_shortest_judge_calls_after_the_last_crawl() -> None:
    crawls, judges = bench_latencies()
    terms = floor_terms(crawls, judges, CRAWLING_API_CAP, JUDGE_CAP)
    old = max(sum(crawls) / CRAWLING_API_CAP, sum(judges) / JUDGE_CAP)
    assert terms["crawls"] == pytest.approx(sum(crawls) / 20 + 2 * min(judges))
    assert max(terms.values()) > old + 1.9  # at least one reading and confirmation more


@pytest.mark.parametrize("concurrency", [1, 4, 32, 48, 200])
def test_no_schedule_beats_the_floor(concurrency: int) -> None:
    crawls, judges = bench_latencies(60)
    floor = max(floor_terms(crawls, judges, CRAWLING_API_CAP, JUDGE_CAP).values())
    assert schedule(crawls, judges, concurrency, CRAWLING_API_CAP, JUDGE_CAP) >= floor


def test_the_default_concurrency_keeps_the_crawls_busy_within_1_25x_of_the_floor() -> None:
    """At 32 claims a perfect engine took 1.29x the floor on the bench's 200 claims: the
    claims being read and confirmed held the slots 20 crawls needed."""
    crawls, judges = bench_latencies()
    floor = max(floor_terms(crawls, judges, CRAWLING_API_CAP, JUDGE_CAP).values())
    best = schedule(crawls, judges, DEFAULT_CONCURRENCY, CRAWLING_API_CAP, JUDGE_CAP)
    assert best / floor <= 1.2  # room left for the engine's own overhead under 1.25x
