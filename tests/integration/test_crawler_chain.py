"""The whole Crawler chain, each part a real process: ``citecheck batch --via-crawler``
pushes to the Crawler double, which crawls and POSTs every page to a real ``citecheck
serve --jobs-dir`` webhook (uvicorn on 127.0.0.1, the service key in the webhook URL);
the receiver writes the job's store, the batch verifies each claim as its pages arrive
(judge: the LLM double) and records its cassette. Then the cassettes replay offline
with the same labels, and a job whose receiver and pusher are both SIGKILLed mid-way
finishes after a restart with no URL pushed twice and no citation lost.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_citecheck.large_audit.job_store import JobState, JobStore
from pytest_citecheck.stages.fetch import CRAWLER_RID_HEADER
from tests.doubles.chain import Receiver, crawler_env, start_batch, without_secrets
from tests.doubles.crawlbase import Page
from tests.doubles.crawler import CrawlerDouble
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted, verdict
from tests.integration.test_crawler_job import CRAWLER, JOB, crawler_batch, labels

KEY = "chain-service-key-0123456789abcdef"
OPENAI_KEY = "sk-test-chain-0123456789"
RECORDS = "citecheck_audit.jsonl"
SITE = "https://example.org"
FILLER = (
    " The station's log goes on to describe the instruments, the people who read them"
    " every morning and how the figures were checked against the neighbouring valleys."
    # Long enough that no page is thin (a thin page needs a JavaScript Crawler).
    " Each reading was written down twice, once in the log and once on the board outside."
)
UNRELATED = "Copper kettles were common in European kitchens in the nineteenth century."
CLAIMS = 24


@dataclass(frozen=True)
class World:
    """The claims file's records, each page by URL, and the label each
    (claim, URL) must get."""

    records: list[dict[str, object]]
    pages: dict[str, Page]
    expected: dict[tuple[str, str], str]

    @property
    def urls(self) -> list[str]:
        """Every URL in the order the job pushes them (claims, then citations)."""
        return [str(u) for r in self.records for u in r["urls"]]  # type: ignore[attr-defined]


def sentence(i: int) -> str:
    return f"Weather station {i} recorded {40 + 3 * i} millimetres of rain during storm {i}."


def build_world() -> World:
    """A claim each of: its page says it (supported), an unrelated page (not_found), a
    404 (unreachable), and two citations (supported and not_found)."""
    records: list[dict[str, object]] = []
    pages: dict[str, Page] = {}
    expected: dict[tuple[str, str], str] = {}

    def cite(claim: str, url: str, page: Page, label: str) -> str:
        pages[url] = page
        expected[(claim, url)] = label
        return url

    for i in range(CLAIMS):
        claim, text = f"station-{i}", sentence(i)
        says = Page(markdown=f"# Station {i}\n\n{text}{FILLER}\n")
        other = Page(markdown=f"# Kettles\n\n{UNRELATED}{FILLER}\n")
        kind = i % 4
        urls = []
        if kind in (0, 3):
            urls.append(cite(claim, f"{SITE}/stations/{i}", says, "supported"))
        if kind in (1, 3):
            urls.append(cite(claim, f"{SITE}/kettles/{i}", other, "not_found"))
        if kind == 2:
            gone = Page(markdown="Not Found", original_status=404)
            urls.append(cite(claim, f"{SITE}/gone/{i}", gone, "unreachable"))
        records.append({"id": claim, "claim": text, "urls": urls})
    return World(records, pages, expected)


def judge(call: JudgeCall) -> Scripted:
    """Supported, quoting the claim, when a passage holds it; else not_found."""
    claim = call.claim or ""
    if claim and claim in "\n".join(call.passages):
        return verdict("supported", claim, 0.95)
    return verdict("not_found", None, 0.9)


def crawl_seconds(url: str) -> float:
    """0.3-1.0 s, fixed per URL: deliveries arrive out of push order."""
    return 0.3 + (sum(url.encode()) % 8) / 10


def wait_for(what: str, ready: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def batch_args(report: Path) -> list[str]:
    """The batch's arguments: the job's, this chain's ranker and wait, the report."""
    job = crawler_batch(Path(RECORDS), Path("jobs"), "--ranker", "bm25", "--crawler-wait", "60")
    return [*job[1:], "--json", str(report)]


@dataclass
class Chain:
    world: World
    folder: Path
    receiver: Receiver
    crawler: CrawlerDouble
    llm: LLMDouble

    @property
    def env(self) -> dict[str, str]:
        return crawler_env(
            self.crawler.base_url,
            self.crawler.tokens["normal"],
            self.llm.base_url("openai"),
            OPENAI_KEY,
        )

    def batch(self, report: Path) -> subprocess.Popen[bytes]:
        log = self.folder / "batch.log"
        return start_batch(batch_args(report), self.env, self.folder, log)

    def log(self) -> str:
        return (self.folder / "batch.log").read_text(errors="replace")[-3000:]

    def store(self) -> JobStore:
        store = JobStore.open(self.folder / "jobs", JOB)
        assert store is not None
        return store


def make_chain(tmp_path: Path, **crawler_options: object) -> Iterator[Chain]:
    world = build_world()
    (tmp_path / RECORDS).write_text(
        "".join(json.dumps(r) + "\n" for r in world.records), encoding="utf-8"
    )
    (tmp_path / "jobs").mkdir()
    receiver = Receiver(tmp_path / "jobs", KEY, tmp_path / "serve.log").start()
    try:
        with (
            CrawlerDouble(
                {CRAWLER: receiver.webhook},
                latency=crawl_seconds,
                retry_wait=0.5,
                **crawler_options,  # type: ignore[arg-type]
            ) as crawler,
            LLMDouble(judge, api_key=OPENAI_KEY) as llm,
        ):
            for url, page in world.pages.items():
                crawler.add(url, page, copies=2 if url == world.urls[0] else 1)
            yield Chain(world, tmp_path, receiver, crawler, llm)
    finally:
        receiver.stop()


@pytest.fixture
def chain(tmp_path: Path) -> Iterator[Chain]:
    yield from make_chain(tmp_path, monitor_every=0.3)


def assert_pushed_once_each(chain: Chain) -> None:
    taken = Counter(str(p.url) for p in chain.crawler.pushes if p.rid is not None)
    assert [url for url, n in taken.items() if n > 1] == []  # 0 pushed twice
    assert sorted(taken) == sorted(chain.world.urls)  # every URL pushed


def test_the_whole_chain_judges_every_claim_and_its_cassettes_replay_offline(
    chain: Chain,
) -> None:
    recorded = chain.folder / "recorded.json"
    done = chain.batch(recorded).wait(timeout=180)
    assert done == 0, chain.log()
    assert labels(recorded) == chain.world.expected
    assert_pushed_once_each(chain)
    counts = chain.store().counts()
    assert counts[JobState.JUDGED] == len(chain.world.urls), counts
    # The page the Crawler delivered twice was kept once and judged once.
    first = chain.world.urls[0]
    row = next(r for r in chain.store().rows() if r.url == first)
    assert chain.store().copies(row.citation) == 2
    assert [a.status for a in chain.crawler.deliveries if a.url == first] == [204, 204]
    # Every delivery and every monitor call was acknowledged by the real receiver.
    assert chain.crawler.retries == 0 and chain.crawler.given_up == []
    monitor = [a.status for a in chain.crawler.attempts if a.monitor]
    assert monitor and set(monitor) == {200}
    # Each cassette holds its pages marked with their rids; no secret anywhere.
    tapes = "\n".join(
        t.read_text(encoding="utf-8") for t in (chain.folder / "cassettes").rglob("*.yaml")
    )
    for push in chain.crawler.pushes:
        assert push.rid is not None and push.rid in tapes
    assert tapes.count(CRAWLER_RID_HEADER) >= len(chain.world.urls)
    for secret in (chain.crawler.tokens["normal"], OPENAI_KEY, KEY):
        assert secret not in tapes

    # Offline: no token, no key; the doubles see nothing more.
    seen = (len(chain.crawler.pushes), len(chain.llm.calls))
    offline = without_secrets(chain.env)
    replayed = chain.folder / "replayed.json"
    replay = [*batch_args(replayed)[:1], "--record", "none", "--json", str(replayed)]
    run = subprocess.run(
        [sys.executable, "-m", "pytest_citecheck.frontends.cli", "batch", *replay],
        cwd=chain.folder,
        env=offline,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert labels(replayed) == labels(recorded)
    plugin = ["--citecheck", "-p", "no:cacheprovider", "--citecheck-report=plugin.json"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *plugin, RECORDS],
        cwd=chain.folder,
        env=offline,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "no recorded reply" not in run.stdout + run.stderr
    assert labels(chain.folder / "plugin.json") == labels(recorded), run.stdout[-3000:]
    assert (len(chain.crawler.pushes), len(chain.llm.calls)) == seen


# Pushes answered normally before the pusher is killed; the next four (one per push
# thread) are taken by the Crawler but their answers are held, so at the kill every
# push thread waits for an answer: none is between marking its push sent and sending
# it (the one instant a kill can strand a citation, see docs/large-audits.md).
ANSWERED = 12
PUSH_THREADS = 4


@pytest.fixture
def held_chain(tmp_path: Path) -> Iterator[Chain]:
    yield from make_chain(tmp_path)


def test_killing_the_receiver_and_the_pusher_mid_job_loses_nothing_and_pushes_nothing_twice(
    held_chain: Chain,
) -> None:
    chain = held_chain
    held = chain.world.urls[ANSWERED : ANSWERED + PUSH_THREADS]
    for url in held:
        chain.crawler.add(url, chain.world.pages[url], lose_answer=5.0)
    report = chain.folder / "report.json"
    first = chain.batch(report)

    def acked() -> int:
        return sum(1 for a in chain.crawler.deliveries if a.acknowledged)

    wait_for("two deliveries acknowledged", lambda: acked() >= 2)
    chain.receiver.kill()
    total = ANSWERED + PUSH_THREADS
    wait_for("every push thread held", lambda: len(chain.crawler.pushes) >= total)
    first.kill()  # SIGKILL
    first.wait(timeout=30)
    assert len(chain.crawler.pushes) == total  # nothing after the held ones
    # Deliveries made while the receiver was down failed; the Crawler retries them.
    wait_for(
        "a delivery refused by the dead receiver",
        lambda: any(a.status is None for a in chain.crawler.deliveries),
    )
    killed = chain.store().counts()
    assert killed[JobState.JUDGED] < len(chain.world.urls)

    chain.receiver.start()  # same port: the Crawler's webhook URL still works
    done = chain.batch(report).wait(timeout=180)
    assert done == 0, chain.log()
    assert_pushed_once_each(chain)  # 0 pushed twice, every URL pushed
    counts = chain.store().counts()
    assert counts[JobState.JUDGED] == len(chain.world.urls), counts  # 0 lost
    assert labels(report) == chain.world.expected
    assert chain.crawler.retries > 0 and chain.crawler.given_up == []
    # Every crawl was at last acknowledged, the held pushes' pages included (bound by
    # the echoed citation ids: their rids never reached the pusher).
    delivered = {a.rid for a in chain.crawler.deliveries if a.acknowledged}
    assert delivered == {p.rid for p in chain.crawler.pushes}
    assert {r.pushes for r in chain.store().rows()} == {1}
