"""Recording at the services' limits: N claims against doubles that behave like the real ones.

Each claim cites its own page, built from a WiCE dev record (its sentences in a
shuffled order, so no two pages share a passage and nothing is embedded twice).
The doubles run in a process of their own and behave like the real services:

- the Crawling API answers in 2-8 s (uniform, fixed per URL) and allows at most
  20 requests in flight per token; beyond that it answers 429 with
  ``Retry-After`` and the documented body (its rate-limit page);
- the judge answers in 1-3 s (uniform, fixed per claim); each claim asks it twice,
  the reading and then the confirmation of its verdict (stages/confirm.py).

``--time-scale`` multiplies every latency (and the Retry-After) by its value.
The default, 1, is the services' real latencies, and what the figure below is
about; ``--time-scale 0.1`` fits a run into a short session, but ranking costs
what it costs, so a small scale makes the CPU, not the services, the limit by
construction. The output says which scale was used.

Each run records the same claims into a fresh folder with a cold embedding
cache, at the same concurrency (default: the shipped one and per-service limits):

- ``before``: the hybrid embedding every chunk of every page (the ranker as it was,
  with ``--ranker hybrid``; the others are unchanged), the baseline, in the same run;
- ``shipped``: the default ranker as the engine builds it.

For each: wall time against the floor the limits allow, the CPU time spent
ranking (thread time inside the ranker), the texts the model embedded, the 429s
received, the peak of crawls in flight, the claims billed twice (more than one
billed crawl of one page: must be 0) and the failed claims. What concurrency 4
(the old default) allows is printed as its own floor (each claim's crawl and
judge latencies, four claims at a time); ``--today`` also runs it (at scale 1 that
takes several minutes). The last line is for the shipped engine:
``scale: wall/floor=<x> billed_twice=<n> failed=<n> time_scale=<s>``.

The floor (:func:`floor_terms`) is the largest of three bounds no engine can beat:

- the crawls: total crawl latency / 20, and after the last crawl ends at least one
  claim's judge calls (the shortest reading + confirmation);
- the judge: total judge latency (every call) / the judge's cap, after at least the
  first page's crawl;
- one claim: its crawl, reading and confirmation run one after another (the longest).

:func:`schedule` plays the same latencies through a perfect engine at the run's
concurrency (claims started in order, each crawl, reading and confirmation in turn,
slots taken first come first served, no CPU): its wall against the floor is what the
concurrency costs, the measured wall against it what the engine's own overhead does.

    python bench/scale.py [--claims 200] [--time-scale 1.0] [--ranker hybrid]
        [--concurrency N] [--skip-before] [--today]

Recordings are synthetic (loopback doubles), written to a temporary folder.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import KEY, TOKENS, WICE, doubles_process  # noqa: E402
from pytest_citecheck.claims.labels import Label  # noqa: E402
from pytest_citecheck.claims.models import Citation, Claim  # noqa: E402
from pytest_citecheck.core.defaults import DEFAULT_CONCURRENCY  # noqa: E402
from pytest_citecheck.core.limits import CRAWLING_API_CAP, cap_for  # noqa: E402
from pytest_citecheck.engine.core import Engine  # noqa: E402
from pytest_citecheck.engine.settings import EngineSettings, StageHooks  # noqa: E402
from tests.doubles.crawlbase import CrawlbaseDouble, Page  # noqa: E402
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted  # noqa: E402

CRAWL_SECONDS = (2.0, 8.0)
JUDGE_SECONDS = (1.0, 3.0)
JUDGE = "openai:gpt-4o-mini"
# Judge calls a claim makes: the reading, then its confirmation (stages/confirm.py).
JUDGE_CALLS = 2


def _uniform(key: str, low: float, high: float) -> float:
    """A latency in [low, high], fixed by ``key`` (the same in both runs)."""
    seed = int(hashlib.sha256(key.encode()).hexdigest()[:12], 16)
    return random.Random(seed).uniform(low, high)


def crawl_latency(url: str, scale: float) -> float:
    return scale * _uniform(url, *CRAWL_SECONDS)


def judge_latency(claim: str, scale: float) -> float:
    return scale * _uniform(claim, *JUDGE_SECONDS)


def floor_terms(
    crawls: Sequence[float], judges: Sequence[float], crawl_cap: int, judge_cap: int
) -> dict[str, float]:
    """The three bounds of the module doc, for claims with crawl latency ``crawls[i]``
    and judge latency ``judges[i]`` per call (JUDGE_CALLS calls each)."""
    chains = [JUDGE_CALLS * j for j in judges]
    return {
        "crawls": sum(crawls) / crawl_cap + min(chains),
        "judge": min(crawls) + sum(chains) / judge_cap,
        "one claim": max(c + j for c, j in zip(crawls, chains, strict=True)),
    }


def schedule(
    crawls: Sequence[float],
    judges: Sequence[float],
    concurrency: int,
    crawl_cap: int,
    judge_cap: int,
) -> float:
    """The wall time of a perfect engine (module doc): ``concurrency`` claims in flight,
    ``crawl_cap`` crawls and ``judge_cap`` judge calls at once, first come first served."""
    import heapq
    from collections import deque

    stages = [
        [("crawl", c)] + [("judge", j)] * JUDGE_CALLS for c, j in zip(crawls, judges, strict=True)
    ]
    free = {"crawl": crawl_cap, "judge": judge_cap}
    waiting: dict[str, deque[int]] = {"crawl": deque(), "judge": deque()}
    running: list[tuple[float, int, str]] = []  # (ends at, claim, resource)
    started = in_flight = 0
    end = 0.0

    def begin(i: int, now: float) -> None:
        resource, seconds = stages[i][0]
        if free[resource]:
            free[resource] -= 1
            heapq.heappush(running, (now + seconds, i, resource))
        else:
            waiting[resource].append(i)

    def admit(now: float) -> None:
        nonlocal started, in_flight
        while in_flight < concurrency and started < len(stages):
            in_flight += 1
            begin(started, now)
            started += 1

    admit(0.0)
    while running:
        now, i, resource = heapq.heappop(running)
        free[resource] += 1
        if waiting[resource]:
            begin(waiting[resource].popleft(), now)
        stages[i].pop(0)
        if stages[i]:
            begin(i, now)
        else:
            in_flight -= 1
            end = now
            admit(now)
    return end


def build(n: int) -> tuple[list[tuple[str, str]], list[Claim]]:
    """``n`` pages (url, markdown) and one claim citing each."""
    records = [json.loads(line) for line in WICE.read_text().splitlines() if line.strip()]
    records = [r for r in records if len(r["source_sentences"]) >= 6]
    pages: list[tuple[str, str]] = []
    claims: list[Claim] = []
    for i in range(n):
        record = records[i % len(records)]
        sentences = list(record["source_sentences"])
        random.Random(i).shuffle(sentences)
        markdown = "\n\n".join(" ".join(sentences[j : j + 3]) for j in range(0, len(sentences), 3))
        url = f"https://example.org/scale/{i:05d}/{record['id']}"
        pages.append((url, markdown))
        claims.append(
            Claim(id=f"claim-{i:05d}", claim=record["claim"], citations=[Citation(url=url)])
        )
    return pages, claims


# -- the doubles, in their own process -----------------------------------------------


class _SlowJudge(LLMDouble):
    """Answers after 1-3 s (scaled, fixed per claim), numbered by content."""

    def __init__(self, scale: float) -> None:
        super().__init__(api_key=KEY)
        self.scale = scale

    def _next(self, call: JudgeCall) -> tuple[Scripted, int]:
        # Called by the request's own handler thread, outside any lock.
        text = json.loads(call.body)["messages"][1]["content"]
        claim = text.split("<claim>", 1)[-1].split("</claim>", 1)[0].strip()
        time.sleep(judge_latency(claim, self.scale))
        item, _ = super()._next(call)
        return item, int(hashlib.sha256(call.body).hexdigest()[:4], 16)


def serve(pages: list[tuple[str, str]], time_scale: str) -> None:
    """Run the doubles until stdin closes; print the environment, then the counts."""
    scale = float(time_scale)
    api = CrawlbaseDouble(
        tokens=TOKENS,
        max_concurrent=CRAWLING_API_CAP,
        retry_after=f"{max(scale, 0.05):g}",
        latency=lambda url: crawl_latency(url, scale),
    )
    with api, _SlowJudge(scale) as llm:
        for url, markdown in pages:
            api.add(url, Page(markdown=markdown))
        env = {
            "CRAWLBASE_TOKEN": TOKENS["normal"],
            "CRAWLBASE_JS_TOKEN": TOKENS["javascript"],
            "OPENAI_API_KEY": KEY,
            "CITECHECK_CRAWLBASE_URL": api.base_url,
            "OPENAI_BASE_URL": llm.base_url("openai"),
        }
        print(json.dumps(env), flush=True)
        for line in sys.stdin:  # one line per run: report and forget its calls
            billed: dict[str, int] = {}
            for call in api.api_calls:
                if call.status == 200 and call.url is not None:
                    billed[call.url] = billed.get(call.url, 0) + 1
            counts = {
                "billed_twice": sum(1 for n in billed.values() if n > 1),
                "rejected": api.rejected,
                "peak": api.peak_in_flight,
            }
            print(json.dumps(counts), flush=True)
            api.reset()
            del line


@contextmanager
def doubles(pages: list[tuple[str, str]], scale: float) -> Iterator[Callable[[], dict[str, int]]]:
    with doubles_process("bench.scale", pages, str(scale), timeout=60) as (env, ask):

        def counts() -> dict[str, int]:
            result: dict[str, int] = ask("counts")
            return result

        counts.env = env  # type: ignore[attr-defined]
        yield counts


# -- timing the ranker ----------------------------------------------------------------


class TimedRanker:
    """Wraps a ranker; adds up the CPU time (this thread's) spent in it."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.cpu = 0.0
        self._lock = threading.Lock()

    def _timed(self, call: Callable[[], Any]) -> Any:
        started = time.thread_time()
        try:
            return call()
        finally:
            spent = time.thread_time() - started
            with self._lock:
                self.cpu += spent

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        result: list[tuple[int, float]] = self._timed(lambda: self._inner.rank(claim, passages, k))
        return result

    def prepare(self, questions: Sequence[tuple[str, Sequence[str]]]) -> None:
        prepare = getattr(self._inner, "prepare", None)
        if prepare is not None:
            self._timed(lambda: prepare(questions))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def shipped_ranker(name: str, cache: Path) -> Any:
    """The ranker as the engine builds it (shown: the passages the judge is shown)."""
    from pytest_citecheck.core.defaults import DEFAULT_TOP_K
    from pytest_citecheck.stages.retrieval import make_ranker, shows

    return shows(make_ranker(name, cache), DEFAULT_TOP_K)


def todays_ranker(name: str, cache: Path) -> Any:
    """The ranker as it was: the hybrid embedded every chunk (the others are unchanged)."""
    from pytest_citecheck.stages.embedder import Embedder
    from pytest_citecheck.stages.retrieval import BM25Ranker, HybridRanker, MiniLMRanker

    if name != "hybrid":
        return shipped_ranker(name, cache)
    return HybridRanker(BM25Ranker(), MiniLMRanker(Embedder(cache)), candidates=None)


def embedded(ranker: Any) -> int:
    """Texts the ranker's model computed (0 for BM25)."""
    stats = getattr(ranker, "embedding_stats", None)
    return int(getattr(stats, "computed", 0))


@dataclass
class Outcome:
    label: str
    wall: float
    ranking_cpu: float
    overloads: int
    rejected: int
    peak: int
    billed_twice: int
    failed: int
    embedded: int
    concurrency: int


def record(
    label: str,
    claims: list[Claim],
    env: dict[str, str],
    counts: Callable[[], dict[str, int]],
    folder: Path,
    ranker: Any,
    **settings: Any,
) -> Outcome:
    timed = TimedRanker(ranker)
    engine = Engine.from_settings(
        EngineSettings(record_mode="once", **settings),
        StageHooks(make_ranker=lambda: timed),
        environ=env,
    )
    with engine:
        started = time.perf_counter()
        results = engine.verify_claims_sync(
            claims, cassette_for=lambda c: folder / "cassettes" / f"{c.id}.yaml"
        )
        wall = time.perf_counter() - started
        overloads = engine.limits["crawlbase"].overloads if "crawlbase" in engine.limits else 0
    seen = counts()
    failed = [r for r in results if r.label is Label.ERROR]
    if failed:
        print(f"  {label}: first failure: {failed[0].verdicts[0].detail}", file=sys.stderr)
    return Outcome(
        label,
        wall,
        timed.cpu,
        overloads,
        seen["rejected"],
        seen["peak"],
        seen["billed_twice"],
        len(failed),
        embedded(ranker),
        settings.get("concurrency", DEFAULT_CONCURRENCY),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--ranker", default="hybrid", choices=("hybrid", "minilm", "bm25"))
    parser.add_argument(
        "--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="claims in flight"
    )
    parser.add_argument("--skip-before", action="store_true", help="only the shipped engine")
    parser.add_argument(
        "--today", action="store_true", help="also run concurrency 4 with the ranker as it was"
    )
    args = parser.parse_args(argv)
    pages, claims = build(args.claims)
    scale = args.time_scale
    crawls = [crawl_latency(url, scale) for url, _ in pages]
    judges = [judge_latency(c.claim, scale) for c in claims]
    crawl_total, judge_total = sum(crawls), JUDGE_CALLS * sum(judges)
    judge_cap = cap_for(JUDGE.split(":")[0])
    terms = floor_terms(crawls, judges, CRAWLING_API_CAP, judge_cap)
    floor = max(terms.values())
    four = (crawl_total + judge_total) / 4
    perfect = schedule(crawls, judges, args.concurrency, CRAWLING_API_CAP, judge_cap)
    real = "the services' real latencies" if scale == 1 else "CPU-bound by construction"
    print(
        f"{len(claims)} claims, each its own page; crawl 2-8 s, judge 1-3 s, time scale "
        f"{scale:g} ({real}); at most {CRAWLING_API_CAP} crawls in flight (429 + Retry-After "
        "beyond)"
    )
    print(
        f"floor: crawls {crawl_total:.1f} s / {CRAWLING_API_CAP} + the shortest reading and "
        f"confirmation = {terms['crawls']:.1f} s; judge {judge_total:.1f} s "
        f"({JUDGE_CALLS} calls a claim) / {judge_cap} + the shortest crawl = "
        f"{terms['judge']:.1f} s; one claim's crawl, reading and confirmation, the longest: "
        f"{terms['one claim']:.1f} s -> {floor:.1f} s"
    )
    print(
        f"a perfect engine at concurrency {args.concurrency} (these latencies, no CPU): "
        f"{perfect:.1f} s = {perfect / floor:.2f}x the floor"
    )
    print(
        f"concurrency 4 (the old default) cannot beat (crawl + judge latency) / 4 = {four:.1f} s "
        f"= {four / floor:.2f}x the floor"
    )
    # The model loads once, before any run is timed.
    if args.ranker != "bm25":
        from pytest_citecheck.stages.embedder import load_model

        load_model()
    before = " (every chunk embedded)" if args.ranker == "hybrid" else ""
    runs: list[tuple[str, Callable[[Path], Any], int]] = []
    if args.today:
        runs.append((f"today: concurrency 4, {args.ranker}{before}", todays_ranker, 4))
    if not args.skip_before:
        runs.append(
            (
                f"before: concurrency {args.concurrency}, {args.ranker}{before}",
                todays_ranker,
                args.concurrency,
            )
        )
    runs.append(
        (
            f"shipped: concurrency {args.concurrency}, {args.ranker}",
            shipped_ranker,
            args.concurrency,
        )
    )
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory() as name, doubles(pages, scale) as counts:
        env: dict[str, str] = counts.env  # type: ignore[attr-defined]
        tmp = Path(name)
        for n, (label, make, concurrency) in enumerate(runs):
            ranker = make(args.ranker, tmp / f"cache-{n}")
            outcomes.append(
                record(
                    label, claims, env, counts, tmp / f"run-{n}", ranker, concurrency=concurrency
                )
            )
    print(
        f"{'run':<56} {'wall s':>7} {'wall/floor':>10} {'/perfect':>8} {'rank cpu s':>10} "
        f"{'embedded':>8} {'429s':>5} {'peak':>4} {'billed 2x':>9} {'failed':>6}"
    )
    perfect_at = {
        o.concurrency: schedule(crawls, judges, o.concurrency, CRAWLING_API_CAP, judge_cap)
        for o in outcomes
    }
    for o in outcomes:
        best = perfect_at[o.concurrency]
        print(
            f"{o.label:<56} {o.wall:>7.1f} {o.wall / floor:>10.2f} {o.wall / best:>8.2f} "
            f"{o.ranking_cpu:>10.1f} "
            f"{o.embedded:>8} {o.rejected:>5} {o.peak:>4} {o.billed_twice:>9} {o.failed:>6}"
        )
    shipped = outcomes[-1]
    best = perfect_at[shipped.concurrency]
    print(
        f"scale: wall/floor={shipped.wall / floor:.2f} wall/perfect={shipped.wall / best:.2f} "
        f"billed_twice={shipped.billed_twice} "
        f"failed={shipped.failed} time_scale={scale:g}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
