"""A large audit two ways: the synchronous Crawling API against Crawlbase's Crawler.

N citations (default 10,000), each a claim citing its own page (a WiCE dev record's
sentences, shuffled: see ``bench/scale.py``), verified and recorded by the real
``citecheck batch --record once`` in a process of its own, two ways:

- **synchronous**: every page one Crawling API call (the Crawling API double: at
  most 20 requests in flight per token, 429 with ``Retry-After`` beyond -- its
  rate-limit page -- each answered in 4-10 s, uniform, fixed per URL);
- **synchronous, 20 a second**: the same, under the other reading of the limit. The
  Crawling API's own page says "a maximum of 20 requests per second, per token ...
  regardless of the number of threads they use"; its rate-limit page says 20
  concurrent requests, "~20 (derived)" a second. Read as a rate, the API allows 20
  crawls *started* each second however many are in flight, about 140 at once at 4-10 s
  a page. A second Crawling API double enforces that reading (a bucket of 20 refilled
  at 20 a second, 429 beyond) and no in-flight limit; the batch runs with up to
  ``PACED_IN_FLIGHT`` claims and crawls in flight and its crawls paced at 20 a second
  (the engine caps crawls in flight, it has no per-second pacing: the bench wraps its
  Crawling API limit, in the batch process, so each crawl starts 1/20 s after the
  last). The shipped engine reads the limit as 20 in flight, so this is what a
  synchronous run *could* do if the per-second reading is the real one;
- **Crawler** (``--via-crawler``): every URL pushed (the Crawler double answers at once
  with a rid; pushes at 30 URLs/s, the Crawler's documented default, 429 beyond), each
  page crawled in the same 4-10 s (the Crawler's docs give no per-page latency: its
  crawls are the Crawling API's, so the same figure for both paths) and POSTed,
  gzip-compressed, to a real ``citecheck serve --jobs-dir`` webhook (uvicorn on
  127.0.0.1, the service key in the webhook URL), which writes the job's store; the
  batch verifies each claim as its page arrives. The monitor bot calls every 60 s (the
  FAQ's minute); a failed delivery is crawled again after 10 s (the double's choice:
  the docs say it is retried, not when).

The judge is the LLM double answering in 0.05-0.15 s (a small latency on purpose: the
judge's own limits are not this bench's subject; ``--judge-batch`` is how a large audit
avoids them), capped at the engine's 16 OpenAI calls in flight. Ranking is BM25
(``--ranker bm25``, no model): torch is not the bottleneck, and not loaded.

Floors (what the services allow, whatever the engine does):

- synchronous: the larger of total crawl latency / 20 and total judge latency / 16
  (two judge calls a claim: the reading and its confirmation);
- synchronous, 20 a second: the last crawl of a perfect run, ``max_i (max(0, i - 19)
  / 20 + crawl_i)`` (20 start at once, then one every 1/20 s), or the judge's floor;
- Crawler: the last delivery of a perfect run, ``max_i (i / push rate + crawl_i)`` --
  about citations / 30 + the last pages' crawl latency -- or the judge's floor if larger.

``--time-scale`` multiplies every latency, the retry and monitor intervals, and divides
the push rate (the pusher's and the double's limit) by its value; it is printed. The
default, 1, is the services' real latencies and rates: at any smaller scale the CPU, not
the services, is the Crawler path's limit by construction (one ``citecheck batch``
process pushes and verifies every citation, about 25 ms of CPU each on the project's
machine, so 30 a second keeps three quarters of a core busy, and 150 a second at
``--time-scale 0.2`` more than one). The run
prints the CPU seconds every process spent (the batch, the receiver, the doubles) beside
the floor and the cores, and says which limits. The doubles live in a process of their
own; everything shares the machine's cores (the load average is printed).

The synchronous path's floor is ten times the Crawler's at any scale (about an hour for
10,000 at scale 1), so by default it is measured on ``--sync-citations`` (500) and its
wall time and credits are scaled linearly to N, printed as such (its floor is linear in
N and the run prints its own wall/floor); ``--sync-citations 10000`` measures it all.
The paced run is measured on ``--paced-citations`` (2,000, about 110 s) and scaled by
its own wall/floor times N's floor (its floor is not linear in N: the last pages'
crawl latency is paid once); ``--skip-paced`` leaves it out.

The restart run is the Crawler path again, on ``--restart-citations`` (2,000; a fresh
job, the same first citations): the receiver is SIGKILLed when 40% of its URLs are pushed,
the pusher when 50% are, both stay down for 5 scaled seconds (deliveries fail meanwhile
and are crawled and delivered again, charged, or wait for the monitor bot to find the
webhook back), then both are started again and the batch resumes. It counts URLs pushed
twice (the double's log) and citations lost (never judged nor failed in the job's store,
or missing from the report). The kill comes at whatever instant the count is reached:
the one instant it can strand a citation (see docs/large-audits.md) is not avoided.

Last line: ``crawler: speedup=<x> speedup_per_second=<z> wall/floor=<y> pushed_twice=<n>
lost=<n>`` (speedup: synchronous wall (20 in flight) / Crawler wall, for N citations;
speedup_per_second: the paced synchronous wall (20 a second) / Crawler wall; wall/floor:
the Crawler path's). Both gains come from baselines measured in the same run.

    python bench/crawler.py [--citations 10000] [--time-scale 1] [--sync-citations 500]
        [--paced-citations 2000] [--restart-citations 2000] [--skip-restart] [--skip-paced]

Recordings are synthetic (loopback doubles), written to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import KEY, TOKENS, doubles_process  # noqa: E402
from bench.scale import _uniform, build  # noqa: E402
from pytest_citecheck.core.limits import CRAWLING_API_CAP, cap_for  # noqa: E402
from pytest_citecheck.large_audit.job_store import JobState, JobStore  # noqa: E402
from pytest_citecheck.large_audit.pusher import PUSH_RATE  # noqa: E402
from tests.doubles.chain import Receiver, crawler_env, free_port, start_batch  # noqa: E402

CRAWL_SECONDS = (4.0, 10.0)
JUDGE_SECONDS = (0.05, 0.15)
JUDGE_CAP = cap_for("openai")
# Judge calls a claim makes: the reading, then the confirmation (stages/confirm.py).
JUDGE_CALLS = 2
# The Crawling API page's other reading: 20 requests started per second, per token.
PER_SECOND = 20
# Claims and crawls in flight for the paced run: 20 a second at up to 10 s a page
# keeps 200 crawls in flight, and the claims being judged come on top.
PACED_IN_FLIGHT = 256
# ``citecheck batch`` with its Crawling API limit paced (see the module doc): the
# limit's slots are PACED_IN_FLIGHT, each crawl starts 1/rate s after the last.
PACED_BATCH = """
import sys, threading, time
from dataclasses import replace
from pytest_citecheck.core import limits
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.frontends.cli import main

RATE, IN_FLIGHT = {rate!r}, {in_flight!r}
acquire, lock, starts = limits.AdaptiveLimit.acquire, threading.Lock(), [0.0]

def paced(self, timeout=None):
    # One start per 1/RATE, spaced from when the previous one really started: a
    # thread that wakes late (a loaded machine) pushes the next ones back instead of
    # starting beside them, which would put more than RATE starts into one second.
    if not acquire(self, timeout):
        return False
    if self.name == "crawlbase":
        with lock:
            time.sleep(max(0.0, starts[0] + 1 / RATE - time.monotonic()))
            starts[0] = time.monotonic()
    return True

built = Engine.from_settings.__func__

def from_settings(cls, settings, *args, **kwargs):
    return built(cls, replace(settings, crawl_concurrency=IN_FLIGHT), *args, **kwargs)

limits.AdaptiveLimit.acquire = paced
Engine.from_settings = classmethod(from_settings)
sys.argv[0] = "citecheck"
raise SystemExit(main())
"""
MONITOR_EVERY = 60.0
RETRY_WAIT = 10.0
DOWN_SECONDS = 5.0
SERVICE_KEY = "bench-crawler-service-key-0123456789"
CRAWLER = "bench-crawler"


def crawl_latency(url: str, scale: float) -> float:
    return scale * _uniform(url, *CRAWL_SECONDS)


def judge_latency(claim: str, scale: float) -> float:
    return scale * _uniform("judge|" + claim, *JUDGE_SECONDS)


# -- the doubles, in their own process -----------------------------------------------


def serve(pages: list[tuple[str, str]], time_scale: str, webhook: str) -> None:
    """Run the doubles until stdin closes; print the environment, then a JSON line of
    counts for each line read (the crawler name whose pushes to count)."""
    scale = float(time_scale)
    from tests.doubles.crawlbase import CrawlbaseDouble, Page
    from tests.doubles.crawler import CrawlerDouble
    from tests.doubles.llm import JudgeCall, LLMDouble, Scripted

    class SlowJudge(LLMDouble):
        def _next(self, call: JudgeCall) -> tuple[Scripted, int]:
            time.sleep(judge_latency(call.claim or "", scale))
            return super()._next(call)

    api = CrawlbaseDouble(
        tokens=TOKENS,
        max_concurrent=CRAWLING_API_CAP,
        retry_after=f"{max(scale, 0.05):g}",
        latency=lambda url: crawl_latency(url, scale),
    )
    per_second = CrawlbaseDouble(
        tokens=TOKENS,
        max_per_second=PER_SECOND / scale,
        retry_after=f"{max(scale, 0.05):g}",
        latency=lambda url: crawl_latency(url, scale),
    )
    names = ("bench-run", "bench-restart")
    crawler = CrawlerDouble(
        {name: webhook for name in names},
        tokens=TOKENS,
        scale=scale,
        latency=lambda url: _uniform(url, *CRAWL_SECONDS),
        pushes_per_second=int(PUSH_RATE / scale),
        retry_wait=RETRY_WAIT,
        monitor_every=MONITOR_EVERY,
        workers=16,
    )
    with api, per_second, crawler, SlowJudge(api_key=KEY) as llm:
        for url, markdown in pages:
            api.add(url, Page(markdown=markdown))
            per_second.add(url, Page(markdown=markdown))
            crawler.add(url, Page(markdown=markdown))
        print(
            json.dumps(
                {
                    "api": api.base_url,
                    "api_per_second": per_second.base_url,
                    "crawler": crawler.base_url,
                    "judge": llm.base_url("openai"),
                }
            ),
            flush=True,
        )
        for line in sys.stdin:
            ask, _, name = line.strip().partition(" ")
            pushes = [p for p in crawler.pushes if p.params.get("crawler") == name]
            taken = Counter(p.url for p in pushes if p.rid is not None)
            if ask == "taken":  # polled while a run goes: kept cheap
                print(json.dumps({"taken": sum(taken.values())}), flush=True)
                continue
            rids = {p.rid for p in pushes if p.rid is not None}
            attempts = [a for a in crawler.deliveries if a.rid in rids]
            billed = Counter(c.url for c in api.api_calls if c.status == 200 and c.url)
            paced = Counter(c.url for c in per_second.api_calls if c.status == 200 and c.url)
            counts = {
                "taken": sum(taken.values()),
                "pushed_twice": sum(1 for n in taken.values() if n > 1),
                "pushes_429": sum(1 for p in pushes if p.rid is None),
                "retries": sum(1 for a in attempts if a.attempt > 1),
                "failed_deliveries": sum(1 for a in attempts if not a.acknowledged),
                "acks_over_200ms": sum(1 for a in attempts if a.acknowledged and a.seconds > 0.2),
                "given_up": len(crawler.given_up),
                "api_billed": sum(billed.values()),
                "api_429": api.rejected,
                "api_peak": api.peak_in_flight,
                "paced_billed": sum(paced.values()),
                "paced_429": per_second.rejected,
                "paced_peak": per_second.peak_in_flight,
                "judge_calls": len(llm.calls),
                "cpu": time.process_time(),
            }
            print(json.dumps(counts), flush=True)


@contextmanager
def doubles(
    pages: list[tuple[str, str]], scale: float, webhook: str
) -> Iterator[tuple[dict[str, str], Callable[..., dict[str, Any]]]]:
    """The doubles serving ``pages``; yields their URLs and ``counts(crawler, ask)``."""
    with doubles_process("bench.crawler", pages, str(scale), webhook) as (urls, ask):

        def counts(crawler: str, what: str = "counts") -> dict[str, Any]:
            found: dict[str, Any] = ask(f"{what} {crawler}")
            return found

        yield urls, counts


# -- runs ---------------------------------------------------------------------------


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Outcome:
    name: str
    citations: int
    wall: float
    floor: float
    credits: int
    citecheck_cpu: float  # the batch and the receiver
    doubles_cpu: float
    failed: int
    detail: dict[str, Any]

    def per(self, n: int) -> tuple[float, float, int]:
        """Wall, floor and credits scaled linearly to ``n`` citations."""
        k = n / self.citations
        return self.wall * k, self.floor * k, round(self.credits * k)


def write_records(folder: Path, claims: list[Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "citecheck_audit.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for c in claims:
            out.write(json.dumps({"id": c.id, "claim": c.claim, "urls": [c.citations[0].url]}))
            out.write("\n")
    return path


def report_labels(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {c["id"]: c["verdicts"][0]["label"] for c in data["claims"]}


def failed_of(labels: dict[str, str]) -> int:
    return sum(1 for label in labels.values() if label == "error")


def batch_args(job: str, crawler: str | None, report: Path, rate: float = PUSH_RATE) -> list[str]:
    args = ["citecheck_audit.jsonl", "--record", "once", "--ranker", "bm25", "--no-progress"]
    args += ["--json", str(report)]
    if crawler is not None:
        args += ["--via-crawler", crawler, "--job", job, "--jobs-dir", "jobs"]
        args += ["--crawler-wait", "60", "--crawler-push-rate", f"{rate:g}"]
    return args


def run_sync(
    folder: Path,
    claims: list[Any],
    env: dict[str, str],
    counts: Callable[..., dict[str, Any]],
    floor: float,
    paced: float | None = None,
) -> Outcome:
    """The synchronous path; ``paced``: the per-second reading, crawls paced at that
    rate with PACED_IN_FLIGHT in flight, against the per-second double."""
    write_records(folder, claims)
    report = folder / "report.json"
    before_cpu, before = children_cpu(), counts("")
    started = time.perf_counter()
    args = batch_args("", None, report)
    python: list[str] = []
    if paced is not None:
        args += ["--concurrency", str(PACED_IN_FLIGHT)]
        code = PACED_BATCH.format(rate=paced, in_flight=PACED_IN_FLIGHT)
        python = [sys.executable, "-c", code]
    batch = start_batch(args, env, folder, folder / "batch.log", python=python)
    batch.wait()
    wall = time.perf_counter() - started
    after = counts("")
    labels = report_labels(report)
    missing = len(claims) - len(labels)
    if missing or batch.returncode not in (0, 1):
        tail = (folder / "batch.log").read_text(errors="replace")[-1500:]
        print(f"  synchronous: exit {batch.returncode}, {missing} claims missing\n{tail}")
    key = "api" if paced is None else "paced"
    return Outcome(
        "synchronous" if paced is None else "synchronous, 20 a second",
        len(claims),
        wall,
        floor,
        after[f"{key}_billed"] - before[f"{key}_billed"],
        children_cpu() - before_cpu,
        after["cpu"] - before["cpu"],
        failed_of(labels) + missing,
        {"429s": after[f"{key}_429"] - before[f"{key}_429"], "peak": after[f"{key}_peak"]},
    )


def job_counts(folder: Path, job: str) -> dict[JobState, int]:
    store = JobStore.open(folder / "jobs", job)
    if store is None:
        return dict.fromkeys(JobState, 0)
    try:
        return store.counts()
    finally:
        store.close()


def run_crawler(
    folder: Path,
    claims: list[Any],
    env: dict[str, str],
    counts: Callable[..., dict[str, Any]],
    floor: float,
    receiver: Receiver,
    rate: float,
    crawler: str,
    kill: tuple[float, float] | None = None,
    down: float = 0.0,
) -> Outcome:
    """One Crawler job; ``kill``: the fractions of URLs pushed at which the receiver,
    then the pusher, are SIGKILLed (both started again ``down`` seconds later)."""
    write_records(folder, claims)
    (folder / "jobs").mkdir(exist_ok=True)
    receiver.jobs = folder / "jobs"
    report = folder / "report.json"
    args = batch_args(crawler, crawler, report, rate)
    log = folder / "batch.log"
    receiver.start()  # a receiver runs all the time: its start is not the job's
    before_cpu, before = children_cpu(), counts(crawler)
    started = time.perf_counter()
    batch = start_batch(args, env, folder, log)
    killed_at: list[int] = []
    if kill is not None:
        for fraction, victim in zip(kill, ("receiver", "pusher"), strict=True):
            while counts(crawler, "taken")["taken"] < fraction * len(claims):
                if batch.poll() is not None:
                    break
                time.sleep(0.1)
            killed_at.append(counts(crawler, "taken")["taken"])
            if victim == "receiver":
                receiver.kill()
            else:
                batch.kill()
                batch.wait()
        time.sleep(down)
        receiver.start()
        batch = start_batch(args, env, folder, log)
    batch.wait()
    wall = time.perf_counter() - started
    batch_cpu = children_cpu() - before_cpu  # the batch process(es) alone
    receiver.stop()
    after = counts(crawler)
    labels = report_labels(report)
    states = job_counts(folder, crawler)
    finished = states[JobState.JUDGED] + states[JobState.FAILED]
    lost = max(len(claims) - finished, len(claims) - len(labels))
    if batch.returncode not in (0, 1) or lost:
        print(f"  {crawler}: exit {batch.returncode}, states {dict(states)}")
        print(log.read_text(errors="replace")[-1500:])
    return Outcome(
        "Crawler" if kill is None else "Crawler, killed and resumed",
        len(claims),
        wall,
        floor,
        after["taken"] - before["taken"] + after["retries"] - before["retries"],
        children_cpu() - before_cpu,
        after["cpu"] - before["cpu"],
        failed_of(labels),
        {
            "pushed_twice": after["pushed_twice"],
            "lost": lost,
            "retries": after["retries"],
            "failed_deliveries": after["failed_deliveries"],
            "acks_over_200ms": after["acks_over_200ms"],
            "pushes_429": after["pushes_429"],
            "given_up": after["given_up"],
            "killed_at": killed_at,
            "batch_cpu": round(batch_cpu, 1),
        },
    )


def crawler_floor(urls: list[str], rate: float, scale: float) -> float:
    """The last delivery if every push went at ``rate`` and every crawl took its latency."""
    return max(i / rate + crawl_latency(url, scale) for i, url in enumerate(urls))


def per_second_floor(urls: list[str], rate: float, scale: float) -> float:
    """The last crawl if the API's bucket of ``rate`` (refilled at ``rate`` a second)
    were used perfectly: ``rate`` crawls start at once, then one every 1/rate s."""
    burst = round(rate)
    return max(max(0, i - burst + 1) / rate + crawl_latency(u, scale) for i, u in enumerate(urls))


def gains(
    sync: tuple[float, float], paced: tuple[float, float] | None, crawler: tuple[float, float]
) -> str:
    """The Crawler's gain under each reading of the Crawling API's limit, measured
    (walls) and at the floors; each argument is (wall, floor) for N citations."""
    text = (
        f"{sync[0] / crawler[0]:.2f}x if the limit is 20 requests in flight "
        f"({sync[1] / crawler[1]:.2f}x at the floors)"
    )
    if paced is None:
        return text + "; the per-second reading not measured (--skip-paced)"
    return (
        f"{text}, {paced[0] / crawler[0]:.2f}x if it is 20 requests started per second "
        f"({paced[1] / crawler[1]:.2f}x at the floors); the Crawling API page says both, "
        "the shipped engine keeps 20 in flight"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--citations", type=int, default=10_000)
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument(
        "--sync-citations", type=int, default=500, help="the synchronous path's subset"
    )
    parser.add_argument(
        "--paced-citations", type=int, default=2_000, help="the 20-a-second run's subset"
    )
    parser.add_argument(
        "--restart-citations", type=int, default=2_000, help="the restart run's subset"
    )
    parser.add_argument("--skip-restart", action="store_true", help="no kill-and-resume run")
    parser.add_argument("--skip-paced", action="store_true", help="no 20-a-second run")
    args = parser.parse_args(argv)
    scale, n = args.time_scale, args.citations
    n_sync = min(args.sync_citations, n)
    n_paced = min(args.paced_citations, n)
    per_second = PER_SECOND / scale
    n_restart = min(args.restart_citations, n)
    pages, claims = build(n)
    urls = [url for url, _ in pages]
    rate = PUSH_RATE / scale
    crawl_total = sum(crawl_latency(url, scale) for url in urls)
    judge_total = JUDGE_CALLS * sum(judge_latency(c.claim, scale) for c in claims)
    judge_floor = judge_total / JUDGE_CAP
    sync_floor = max(crawl_total / CRAWLING_API_CAP, judge_floor)
    sync_subset_floor = max(
        sum(crawl_latency(u, scale) for u in urls[:n_sync]) / CRAWLING_API_CAP,
        JUDGE_CALLS * sum(judge_latency(c.claim, scale) for c in claims[:n_sync]) / JUDGE_CAP,
    )
    paced_floor = max(per_second_floor(urls, per_second, scale), judge_floor)
    paced_subset_floor = max(
        per_second_floor(urls[:n_paced], per_second, scale), judge_floor * n_paced / n
    )
    floor = max(crawler_floor(urls, rate, scale), judge_floor)
    cores = os.cpu_count() or 1
    print(
        f"{n} citations, each its own page; crawl 4-10 s, judge 0.05-0.15 s; time scale "
        f"{scale:g} (every latency x{scale:g}, push rate {PUSH_RATE:g}/s / {scale:g} = "
        f"{rate:g}/s); ranker bm25 (no model)"
    )
    print(
        f"machine: {cores} CPUs, load average {os.getloadavg()[0]:.1f} before the runs "
        "(shared with other work)"
    )
    print(
        f"floor, synchronous: crawls {crawl_total:.0f} s / {CRAWLING_API_CAP} in flight = "
        f"{crawl_total / CRAWLING_API_CAP:.1f} s (judge {judge_total:.0f} s, {JUDGE_CALLS} calls "
        f"a claim, / {JUDGE_CAP} = {judge_floor:.1f} s) -> {sync_floor:.1f} s"
    )
    print(
        f"floor, synchronous at {per_second:g} a second: max_i(max(0, i - "
        f"{round(per_second) - 1}) / {per_second:g}/s + crawl_i) = "
        f"{per_second_floor(urls, per_second, scale):.1f} s -> {paced_floor:.1f} s"
    )
    print(
        f"floor, Crawler: max_i(i / {rate:g}/s + crawl_i) = "
        f"{crawler_floor(urls, rate, scale):.1f} s ({n} / {rate:g} = {n / rate:.1f} s of "
        f"pushes + the last crawls) -> {floor:.1f} s"
    )
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="citecheck-crawler-bench-") as name:
        tmp = Path(name)
        receiver = Receiver(tmp, SERVICE_KEY, tmp / "serve.log", port=free_port())
        with doubles(pages, scale, receiver.webhook) as (where, counts):
            env = crawler_env(where["crawler"], TOKENS["normal"], where["judge"], KEY)
            sync_env = {**env, "CITECHECK_CRAWLBASE_URL": where["api"]}
            crawler = run_crawler(
                tmp / "crawler", claims, env, counts, floor, receiver, rate, "bench-run"
            )
            outcomes.append(crawler)
            restart: Outcome | None = None
            if not args.skip_restart:
                restart = run_crawler(
                    tmp / "restart",
                    claims[:n_restart],
                    env,
                    counts,
                    max(crawler_floor(urls[:n_restart], rate, scale), judge_floor * n_restart / n),
                    receiver,
                    rate,
                    "bench-restart",
                    kill=(0.4, 0.5),
                    down=DOWN_SECONDS * scale,
                )
                outcomes.append(restart)
            sync = run_sync(tmp / "sync", claims[:n_sync], sync_env, counts, sync_subset_floor)
            outcomes.append(sync)
            paced: Outcome | None = None
            if not args.skip_paced:
                paced_env = {**env, "CITECHECK_CRAWLBASE_URL": where["api_per_second"]}
                paced = run_sync(
                    tmp / "paced",
                    claims[:n_paced],
                    paced_env,
                    counts,
                    paced_subset_floor,
                    paced=per_second,
                )
                outcomes.append(paced)
        print(f"load average after the runs: {os.getloadavg()[0]:.1f}")
    print(
        f"{'path':<30} {'citations':>9} {'wall s':>8} {'floor s':>8} {'wall/floor':>10} "
        f"{'credits':>8} {'cpu citecheck s':>15} {'cpu doubles s':>13} {'errors':>6}"
    )
    for o in outcomes:
        print(
            f"{o.name:<30} {o.citations:>9} {o.wall:>8.1f} {o.floor:>8.1f} "
            f"{o.wall / o.floor:>10.2f} {o.credits:>8} {o.citecheck_cpu:>15.1f} "
            f"{o.doubles_cpu:>13.1f} {o.failed:>6}"
        )
        print(f"{'':<30} {o.detail}")
    sync_wall, sync_floor_n, sync_credits = sync.per(n)
    scaled = "" if n_sync == n else f" (measured on {n_sync}, scaled linearly to {n})"
    print(
        f"synchronous for {n}: wall {sync_wall:.1f} s, floor {sync_floor_n:.1f} s, credits "
        f"{sync_credits}{scaled}"
    )
    paced_wall: float | None = None
    if paced is not None:
        paced_wall = paced.wall / paced.floor * paced_floor
        how = (
            ""
            if n_paced == n
            else f" (measured on {n_paced}: its wall/floor {paced.wall / paced.floor:.2f} "
            f"x the floor for {n})"
        )
        print(
            f"synchronous at {per_second:g} a second for {n}: wall {paced_wall:.1f} s, floor "
            f"{paced_floor:.1f} s, credits {round(paced.credits * n / n_paced)}{how}"
        )
    print(
        f"Crawler for {n}: wall {crawler.wall:.1f} s, floor {crawler.floor:.1f} s, credits "
        f"{crawler.credits}"
    )
    crawled = (crawler.wall, crawler.floor)
    paced_pair = None if paced_wall is None else (paced_wall, paced_floor)
    print(f"the Crawler's gain: {gains((sync_wall, sync_floor_n), paced_pair, crawled)}")
    cpu = crawler.citecheck_cpu + crawler.doubles_cpu
    batch_share = crawler.detail["batch_cpu"] / crawler.wall
    if batch_share > 0.7:
        limit = (
            f"the batch process's CPU (one Python process pushes and verifies: it was busy "
            f"{batch_share:.0%} of the run)"
        )
    elif cpu / cores > 0.8 * crawler.floor:
        limit = "the CPU"
    else:
        limit = "the services"
    print(
        f"what limits the Crawler path: {limit}; its processes used {cpu:.1f} CPU s "
        f"({cpu / cores:.1f} s on {cores} cores at best, the cores shared: see the load "
        f"average) against a floor of {crawler.floor:.1f} s; the batch "
        f"{crawler.detail['batch_cpu'] / n * 1000:.1f} ms CPU per citation, the receiver "
        f"{(crawler.citecheck_cpu - crawler.detail['batch_cpu']) / n * 1000:.1f} ms"
    )
    pushed_twice = restart.detail["pushed_twice"] if restart else crawler.detail["pushed_twice"]
    lost = restart.detail["lost"] if restart else crawler.detail["lost"]
    print(
        f"crawler: speedup={sync_wall / crawler.wall:.2f} "
        f"speedup_per_second={(paced_wall or float('nan')) / crawler.wall:.2f} "
        f"wall/floor={crawler.wall / crawler.floor:.2f} pushed_twice={pushed_twice} lost={lost}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
