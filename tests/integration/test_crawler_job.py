"""``citecheck batch --via-crawler``: a job pushed to the Crawler, its pages delivered
into the job's store as the webhook receiver writes them, each claim recorded like a
synchronous crawl, replayed offline, and resumed after a kill without a URL pushed
twice or a citation lost.

Everything is on loopback: the Crawling API double answers the pushes with rids, the
judge double judges, and :class:`Deliverer` plays the Crawler's side -- each pushed
page POSTed back, here written with ``JobStore.record_delivery`` exactly as the
receiver does (out of order, the first one twice).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from pytest_citecheck.frontends.cli import main
from pytest_citecheck.large_audit import pusher as crawler
from pytest_citecheck.large_audit.job_store import (
    CITATION_HEADER,
    JOB_HEADER,
    Delivery,
    DeliveryOutcome,
    JobState,
    JobStore,
)
from pytest_citecheck.large_audit.pusher import CrawlerPusher, PushResult
from pytest_citecheck.stages.fetch import CRAWLER_RID_HEADER
from tests.doubles.batch import (
    PAGES,
    SITE,
    judge_by_page,
    use_doubles,
    write_records,
)
from tests.doubles.crawlbase import CrawlbaseDouble, Page, Push
from tests.doubles.llm import LLMDouble

OPENAI_KEY = "sk-test-crawler-0123456789"
CRAWLER = "citecheck-audit"
JOB = "nightly"
# The nine citations of tests/doubles/batch.py but the PDF (never crawled, never pushed).
# A PDF is never pushed: the file is crawled synchronously (delivery_transport.py).
PUSHED_URLS = sorted(url for url in PAGES if not url.endswith(".pdf"))
PRECISION = "citation_precision=0.2222 (2/9)"
# The push threads a job runs (large_audit/assemble.py: PUSH_THREADS).
PUSH_THREADS = 4


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    with CrawlbaseDouble() as api, LLMDouble(judge_by_page) as llm:
        use_doubles(monkeypatch, api, llm, OPENAI_KEY)
        yield api, llm


def page_of(
    push: Push, pc_status: int | None = None, pages: Mapping[str, Page] = PAGES
) -> Delivery:
    """What the Crawler POSTs back for ``push``: the page as the Crawling API gives it
    (markdown with readability), gzip-compressed, with its statuses and final URL;
    ``pc_status`` 520: the Crawler's crawl failed (an empty body)."""
    page = pages[push.url]
    failed = pc_status is not None and pc_status != 200
    body = gzip.compress(b"" if failed else page.body(readability=True).encode())
    final = page.final_url or push.url
    pc = page.pc_status if pc_status is None else pc_status
    return Delivery(push.rid, final, page.original_status, pc, body, time.time())


class Deliverer:
    """The Crawler's side: every push the double answered is delivered into the job's
    store, as the webhook receiver would write it -- each batch seen in reverse push
    order, the very first delivery twice (a retried delivery)."""

    def __init__(
        self,
        api: CrawlbaseDouble,
        jobs: Path,
        job: str = JOB,
        pc_status: dict[str, int] | None = None,
        pages: Mapping[str, Page] = PAGES,
    ) -> None:
        self.api, self.jobs, self.job = api, jobs, job
        self.pc_status = pc_status or {}
        self.pages = pages
        self.outcomes: list[DeliveryOutcome] = []
        self._seen = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Deliverer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            store = JobStore.open(self.jobs, self.job)
            if store is None:
                continue
            pushes = self.api.pushes[self._seen :]
            first = self._seen == 0
            self._seen += len(pushes)
            for n, push in enumerate(reversed(pushes)):
                echoed = push.echoed
                assert echoed[JOB_HEADER] == self.job
                for _ in range(2 if first and n == 0 else 1):
                    page = self.delivered(push)
                    self.outcomes.append(store.record_delivery(page, echoed[CITATION_HEADER]))
            store.close()

    def delivered(self, push: Push) -> Delivery:
        """What the Crawler delivers for ``push``."""
        return page_of(push, self.pc_status.get(push.url), self.pages)


def crawler_batch(records: Path, jobs: Path, *extra: str) -> list[str]:
    return [
        "batch",
        str(records),
        "--record",
        "once",
        "--via-crawler",
        CRAWLER,
        "--job",
        JOB,
        "--jobs-dir",
        str(jobs),
        "--allow-contradicted",
        *extra,
    ]


def labels(report: Path) -> dict[tuple[str, str], str]:
    data = json.loads(report.read_text(encoding="utf-8"))
    return {(c["id"], v["url"]): v["label"] for c in data["claims"] for v in c["verdicts"]}


def test_a_crawler_job_records_cassettes_that_replay_offline_with_the_same_labels(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = world
    records = write_records(tmp_path / "citecheck_audit.jsonl")
    jobs = tmp_path / "jobs"
    recorded = tmp_path / "recorded.json"
    with Deliverer(api, jobs) as deliverer:
        code = main(crawler_batch(records, jobs, "--json", str(recorded)))
    out = capsys.readouterr().out
    assert code == 0, out
    assert PRECISION in out.splitlines()
    # One crawl per pushed page, billed once each (a push stores nothing), and the PDF
    # crawled synchronously (1 credit + 0.5 for store=true).
    assert "crawling API credits 9.5," in out

    # Every page came through the Crawler: one push per crawlable citation, and the PDF
    # as a synchronous crawl, each push asking for the fetcher's format and echoing its ids.
    pushed = [c for c in api.api_calls if c.params.get("callback") == "true"]
    assert len(pushed) == len(PUSHED_URLS)
    synchronous = [c.url for c in api.api_calls if c not in pushed]
    assert synchronous == [f"{SITE}/landmarks/eiffel-report.pdf"]
    assert sorted(p.url for p in api.pushes) == PUSHED_URLS
    for push in api.pushes:
        assert push.crawler == CRAWLER
        assert (push.params["format"], push.params["md_readability"]) == ("md", "true")
    assert Counter(deliverer.outcomes) == {
        DeliveryOutcome.ACCEPTED: len(PUSHED_URLS),
        DeliveryOutcome.DUPLICATE: 1,
    }
    # A duplicate delivery is not judged twice: one judge call per readable page
    # (boiling, eiffel, sea-level, unrelated; the others are gone or the homepage).
    assert len(llm.calls) == 4
    store = JobStore.open(jobs, JOB)
    assert store is not None
    assert store.counts()[JobState.JUDGED] == len(PUSHED_URLS)
    assert sum(store.copies(row.citation) for row in store.rows()) == len(PUSHED_URLS) + 1

    # Each claim's cassette holds its pages as delivered, marked with the Crawler's rid.
    tapes = sorted((tmp_path / "cassettes" / "citecheck_audit").iterdir())
    assert [t.name for t in tapes] == ["boiling-90.yaml", "boiling.yaml", "eiffel.yaml"]
    text = "\n".join(t.read_text(encoding="utf-8") for t in tapes)
    for push in api.pushes:
        assert push.rid in text
    assert text.count(CRAWLER_RID_HEADER) >= len(PUSHED_URLS)
    assert api.tokens["normal"] not in text and OPENAI_KEY not in text
    # Nor in the job's state (the store and its write-ahead log).
    state = b"".join(f.read_bytes() for f in (jobs / JOB).iterdir() if f.is_file())
    assert api.tokens["normal"].encode() not in state and OPENAI_KEY.encode() not in state

    # Offline: no token, no key, nothing sent; labels identical to the recording.
    for name in ("CRAWLBASE_TOKEN", "CRAWLBASE_JS_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name)
    calls = (len(api.calls), len(llm.calls))
    replayed = tmp_path / "replayed.json"
    code = main(
        ["batch", str(records), "--record", "none", "--allow-contradicted", "--json", str(replayed)]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert PRECISION in out.splitlines()
    assert (len(api.calls), len(llm.calls)) == calls
    assert labels(replayed) == labels(recorded)
    assert len(labels(recorded)) == 9

    # pytest --citecheck replays the same cassettes, in a fresh process with no secret.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CRAWLBASE_TOKEN", "CRAWLBASE_JS_TOKEN", "OPENAI_API_KEY")
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--citecheck",
            "-p",
            "no:cacheprovider",
            "--citecheck-report=plugin.json",
            records.name,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "no recorded reply" not in done.stdout + done.stderr
    assert labels(tmp_path / "plugin.json") == labels(recorded), done.stdout[-3000:]
    assert (len(api.calls), len(llm.calls)) == calls


def test_jobs_status_shows_the_counts_and_a_progress_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = JobStore.create(tmp_path, "audit-1")
    store.add([(f"c{i}#1", f"https://example.com/{i}") for i in range(12)])
    taken = store.take_for_push(10)
    for n, (cid, _) in enumerate(taken):
        store.mark_sending(cid)
        store.mark_pushed(cid, f"rid-{n}")
        if n < 7:
            store.record_delivery(
                Delivery(f"rid-{n}", "https://x", 200, 200, gzip.compress(b"x"), time.time()), None
            )
            store.mark_judged(cid, "supported")
    store.mark_failed(taken[7][0], "push refused: HTTP 422: URL refused")
    ((sent, _),) = store.take_for_push(1)
    store.mark_sending(sent)  # its answer never came
    argv = ["jobs", "status", "audit-1", "--jobs-dir", str(tmp_path), "--failed", "--waiting"]
    code = main(argv)
    out = capsys.readouterr().out.splitlines()
    assert code == 1  # not finished
    assert out[0] == "job audit-1: 12 citations"
    assert out[1] == "[#" + "#" * 19 + "----------] 8/12 finished (7 judged, 1 failed)"
    assert out[2] == "  queued 1, pushing 1, pushed 2, delivered 0, judged 7, failed 1"
    assert out[3] == "  failed c7#1 https://example.com/7: push refused: HTTP 422: URL refused"
    assert out[4:] == [
        "  waiting c8#1 https://example.com/8 (rid rid-8)",
        "  waiting c9#1 https://example.com/9 (rid rid-9)",
        "  waiting c10#1 https://example.com/10 (sent, its answer never came)",
    ]

    code = main(["jobs", "status", "nope", "--jobs-dir", str(tmp_path)])
    assert code == 2
    assert "no job 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "per_second"), [((), 30.0), (("--crawler-push-rate", "4"), 4.0)])
def test_pushes_are_paced_at_the_crawler_push_rate(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: tuple[str, ...],
    per_second: float,
) -> None:
    from pytest_citecheck.large_audit.pusher import PushRate

    api, _ = world
    paced: list[float] = []
    wait = PushRate.wait

    def recorded(self: PushRate) -> None:
        paced.append(self.interval)
        wait(self)

    monkeypatch.setattr(PushRate, "wait", recorded)
    records = write_records(tmp_path / "o.jsonl")
    jobs = tmp_path / "jobs"
    with Deliverer(api, jobs):
        assert main(crawler_batch(records, jobs, *argv)) == 0
    # Every push waited its turn at that rate, shared by the push threads.
    assert len(paced) == len(api.pushes) == len(PUSHED_URLS)
    assert paced == [pytest.approx(1 / per_second)] * len(paced)


def test_a_push_rate_that_is_not_a_positive_number_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = write_records(tmp_path / "o.jsonl")
    assert main(crawler_batch(records, tmp_path / "jobs", "--crawler-push-rate", "0")) == 2
    assert "--crawler-push-rate: '0' is not a positive number" in capsys.readouterr().err


def test_via_crawler_without_a_recording_mode_is_a_usage_error(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api, _ = world
    records = write_records(tmp_path / "o.jsonl")
    code = main(["batch", str(records), "--via-crawler", CRAWLER, "--jobs-dir", str(tmp_path)])
    assert code == 2
    assert "add --record once" in capsys.readouterr().err
    assert api.calls == []


# -- kill points: a resumed job pushes nothing twice and loses nothing -------------------


class Killed(BaseException):
    """The process died here (nothing catches it, nothing cleans up after it)."""


def kill_on_call(monkeypatch: pytest.MonkeyPatch, method: str, call: int) -> None:
    """``JobStore.<method>`` dies on its ``call``-th call (before doing anything)."""
    original = getattr(JobStore, method)
    count = Counter[str]()

    def dying(self: JobStore, *args: object, **kwargs: object) -> object:
        count[method] += 1
        if count[method] == call:
            raise Killed(method)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(JobStore, method, dying)


@pytest.mark.parametrize(
    ("method", "where"),
    [
        ("mark_sending", "a pusher killed after take_for_push, before the push was sent"),
        ("mark_pushed", "a pusher killed after the push was answered, before its rid was kept"),
        ("mark_judged", "a verifier killed after a claim's cassette was saved, before its state"),
    ],
)
def test_a_job_killed_mid_way_resumes_without_pushing_twice_or_losing_a_citation(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    where: str,
) -> None:
    api, llm = world
    records = write_records(tmp_path / "o.jsonl")
    jobs = tmp_path / "jobs"
    with Deliverer(api, jobs) as deliverer:
        with monkeypatch.context() as patch:
            kill_on_call(patch, method, 3)
            with pytest.raises(Killed):
                main(crawler_batch(records, jobs))
        killed_at = len(api.pushes)
        store = JobStore.open(jobs, JOB)
        assert store is not None
        assert store.counts()[JobState.JUDGED] < len(PUSHED_URLS), where
        code = main(crawler_batch(records, jobs))
    out = capsys.readouterr().out
    assert code == 0, out
    assert PRECISION in out.splitlines()
    pushed = Counter(p.url for p in api.pushes)
    assert [url for url, n in pushed.items() if n > 1] == [], where  # 0 pushed twice
    assert sorted(pushed) == PUSHED_URLS, where  # 0 lost: every citation was pushed
    counts = store.counts()
    assert counts[JobState.JUDGED] == len(PUSHED_URLS), (where, counts)  # and judged
    assert killed_at <= len(PUSHED_URLS)
    assert {row.pushes for row in store.rows()} == {1}
    assert DeliveryOutcome.UNKNOWN not in deliverer.outcomes  # every page found its citation
    # Nothing was judged twice: a claim verified before the kill is replayed from its
    # cassette (the verifier killed after saving one included).
    assert len(llm.calls) == 4


def test_a_push_that_timed_out_after_sending_is_never_sent_again_and_its_page_binds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = f"{SITE}/articles/sea-level"
    monkeypatch.setattr(crawler, "PUSH_TIMEOUT", 0.3)
    latency = {slow: 1.0}
    with (
        CrawlbaseDouble(latency=lambda url: latency.get(url, 0.0)) as api,
        LLMDouble(judge_by_page) as llm,
    ):
        use_doubles(monkeypatch, api, llm, OPENAI_KEY)
        records = write_records(tmp_path / "o.jsonl")
        jobs = tmp_path / "jobs"
        with Deliverer(api, jobs) as deliverer:
            code = main(crawler_batch(records, jobs))
    out = capsys.readouterr().out
    assert code == 0, out
    assert PRECISION in out.splitlines()
    assert Counter(p.url for p in api.pushes)[slow] == 1  # the double got it, once
    store = JobStore.open(jobs, JOB)
    assert store is not None
    row = next(r for r in store.rows() if r.url == slow)
    # Its push answer never arrived: the rid came with the delivery, bound by the
    # citation id the Crawler echoed.
    assert (row.state, row.pushes) == (JobState.JUDGED, 1)
    assert row.rid == next(p.rid for p in api.pushes if p.url == slow)
    assert DeliveryOutcome.UNKNOWN not in deliverer.outcomes


def test_refused_pushes_and_failed_crawls_are_failed_citations_not_passes(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A URL the API refuses (422) is failed at once; a 429 is pushed again; a page the
    Crawler could not crawl (PC-Status 520) is a crawl_failed error, recorded as such."""
    api, _ = world
    refused, busy, unreadable = (
        f"{SITE}/landmarks/eiffel",
        f"{SITE}/articles/boiling",
        f"{SITE}/articles/unrelated",
    )
    push = CrawlerPusher.push
    answered: Counter[str] = Counter()

    def pushing(
        self: CrawlerPusher,
        url: str,
        echo: dict[str, str],
        about_to_send: Callable[[], None] | None = None,
    ) -> PushResult:
        answered[url] += 1
        if url == refused:
            return PushResult("refused", status=422, detail="HTTP 422: URL refused")
        if url == busy and answered[url] == 1:
            return PushResult("refused", status=429, detail="HTTP 429: not queued", retry=True)
        return push(self, url, echo, about_to_send)

    monkeypatch.setattr(CrawlerPusher, "push", pushing)
    records = write_records(tmp_path / "o.jsonl")
    jobs = tmp_path / "jobs"
    report = tmp_path / "r.json"
    with Deliverer(api, jobs, pc_status={unreadable: 520}):
        code = main(crawler_batch(records, jobs, "--json", str(report)))
    assert code == 1  # the errors fail the gate
    assert answered[busy] == 2 and answered[refused] == 1
    store = JobStore.open(jobs, JOB)
    assert store is not None
    rows = {r.url: r for r in store.rows()}
    assert rows[refused].state is JobState.FAILED
    assert rows[refused].detail == "push refused: HTTP 422: URL refused"
    assert rows[unreadable].state is JobState.FAILED
    assert (rows[unreadable].detail or "").startswith("crawl_failed")
    assert rows[busy].state is JobState.JUDGED
    found = labels(report)
    assert found[("eiffel", refused)] == "error"
    assert found[("boiling-90", f"{SITE}/articles/unrelated")] == "error"
    assert found[("boiling", busy)] == "supported"
    capsys.readouterr()
    code = main(["jobs", "status", JOB, "--jobs-dir", str(jobs)])
    assert code == 0  # finished: every citation judged or failed
    # /gone was delivered, but its claim cites the refused page: failed with it.
    assert "8/8 finished (5 judged, 3 failed)" in capsys.readouterr().out
    assert rows[f"{SITE}/gone"].detail == (
        f"crawl_failed: not verified: {refused}, cited by the same claim, never reached the Crawler"
    )


# -- citecheck recheck --via-crawler ------------------------------------------------------


def rechecked(report: Path) -> dict[tuple[str, str], str]:
    data = json.loads(report.read_text(encoding="utf-8"))
    return {(c["id"], k["url"]): k["status"] for c in data["claims"] for k in c["citations"]}


def test_a_recheck_through_the_crawler_finds_what_a_synchronous_recheck_finds(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api, _ = world
    records = write_records(tmp_path / "o.jsonl")
    assert main(["batch", str(records), "--record", "once", "--allow-contradicted"]) == 0
    # Since the recording: the boiling article lost its sentence, the 404 came back.
    today = dict(PAGES)
    today[f"{SITE}/articles/boiling"] = Page(markdown="# Boiling\n\n" + "Kettles. " * 40)
    today[f"{SITE}/old-report"] = Page(markdown="# Report\n\n" + "The report is back. " * 20)
    for url, page in today.items():
        api.add(url, page)
    api.reset()
    capsys.readouterr()
    jobs = tmp_path / "jobs"
    via = tmp_path / "via.json"
    with Deliverer(api, jobs, job="rot", pages=today):
        code = main(
            [
                "recheck",
                str(records),
                "--via-crawler",
                CRAWLER,
                "--job",
                "rot",
                "--jobs-dir",
                str(jobs),
                "--json",
                str(via),
            ]
        )
    out = capsys.readouterr().out
    assert code == 1, out  # evidence_gone fails the recheck
    assert sorted(p.url for p in api.pushes) == PUSHED_URLS
    # Nothing synchronous but the PDF's file (never pushed).
    assert [c.url for c in api.api_calls if c.params.get("callback") != "true"] == [
        f"{SITE}/landmarks/eiffel-report.pdf"
    ]
    store = JobStore.open(jobs, "rot")
    assert store is not None
    assert store.counts()[JobState.JUDGED] == len(PUSHED_URLS)
    assert {r.detail for r in store.rows() if r.url == f"{SITE}/articles/boiling"} == {
        "evidence_gone"
    }
    # The live pages it compared are recorded in the recheck's cassettes, as delivered.
    live = (tmp_path / "cassettes" / "o" / "recheck" / "boiling.yaml").read_text()
    assert CRAWLER_RID_HEADER in live

    synchronous = tmp_path / "sync.json"
    assert main(["recheck", str(records), "--json", str(synchronous)]) == 1
    assert rechecked(via) == rechecked(synchronous)
    assert rechecked(via)[("boiling", f"{SITE}/articles/boiling")] == "evidence_gone"
    assert rechecked(via)[("boiling", f"{SITE}/old-report")] == "changed"


def test_a_batch_process_killed_mid_push_resumes_without_pushing_twice_or_losing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real thing: ``citecheck batch --via-crawler`` in its own process, SIGKILLed
    while every push thread waits for its push's answer (the Crawling API holds them),
    then run again. The four pushes reached the API; their answers never reached the
    job, so their pages bind by the echoed citation ids."""
    answer = threading.Event()

    def held(url: str) -> float:
        answer.wait(30)
        return 0.0

    with CrawlbaseDouble(latency=held) as api, LLMDouble(judge_by_page) as llm:
        use_doubles(monkeypatch, api, llm, OPENAI_KEY)
        records = write_records(tmp_path / "o.jsonl")
        jobs = tmp_path / "jobs"
        argv = [*crawler_batch(records, jobs, "--ranker", "bm25", "--crawler-wait", "10")]
        with Deliverer(api, jobs) as deliverer:
            process = subprocess.Popen(
                [sys.executable, "-m", "pytest_citecheck.frontends.cli", *argv],
                env=dict(os.environ),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + 60
            while api.peak_in_flight < PUSH_THREADS and time.monotonic() < deadline:
                time.sleep(0.01)
            process.kill()  # every push thread is blocked on an answer: none half-sent
            process.wait(timeout=30)
            answer.set()
            while len(api.pushes) < PUSH_THREADS and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(api.pushes) == PUSH_THREADS
            killed = JobStore.open(jobs, JOB)
            assert killed is not None
            # Sent, their answers lost with the process: no rid came from a push answer.
            assert killed.counts()[JobState.PUSHED] == 0
            assert killed.counts()[JobState.QUEUED] == len(PUSHED_URLS) - PUSH_THREADS
            code = main(argv)
        out = capsys.readouterr().out
    store = JobStore.open(jobs, JOB)
    assert store is not None
    assert code == 0, [(r.url, r.state.value) for r in store.rows()]
    assert PRECISION in out.splitlines()
    pushed = Counter(p.url for p in api.pushes)
    assert [url for url, n in pushed.items() if n > 1] == []  # 0 pushed twice
    assert sorted(pushed) == PUSHED_URLS  # 0 lost
    assert store.counts()[JobState.JUDGED] == len(PUSHED_URLS)
    assert DeliveryOutcome.UNKNOWN not in deliverer.outcomes


# -- the push marks itself sent at the last moment ---------------------------------------


def test_a_push_is_marked_sent_once_connected_before_its_answer_and_never_when_unsent(
    tmp_path: Path,
) -> None:
    """``about_to_send`` runs when the request's headers are about to be written: after
    the connection opened (a refused connection never calls it), before the answer."""
    marks: list[float] = []
    with CrawlbaseDouble(latency=lambda url: 0.3) as api:
        pusher = CrawlerPusher(token=api.tokens["normal"], crawler=CRAWLER, base_url=api.base_url)
        result = pusher.push(
            f"{SITE}/a", {"X": "1"}, about_to_send=lambda: marks.append(time.monotonic())
        )
        answered = time.monotonic()
        pusher.close()
    assert result.outcome == "accepted"
    assert len(marks) == 1 and answered - marks[0] >= 0.25  # marked before the answer came

    port = api.port  # the double is gone: nothing listens there now
    closed = CrawlerPusher(token="t" * 20, crawler=CRAWLER, base_url=f"http://127.0.0.1:{port}/")
    unsent = closed.push(f"{SITE}/a", {"X": "1"}, about_to_send=lambda: marks.append(0.0))
    closed.close()
    assert (unsent.outcome, unsent.retry) == ("not_sent", True)
    assert len(marks) == 1


def test_a_job_another_process_runs_is_a_usage_error_and_pushes_nothing(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api, _ = world
    records = write_records(tmp_path / "o.jsonl")
    jobs = tmp_path / "jobs"
    running = JobStore.create(jobs, JOB)
    with running.lock():
        code = main(crawler_batch(records, jobs))
    assert code == 2
    assert "is being run by another process" in capsys.readouterr().err
    assert api.calls == []
    # A recheck may not take over a batch's job either.
    running.set_meta("command", "batch")
    code = main(
        ["recheck", str(records), "--via-crawler", CRAWLER, "--job", JOB, "--jobs-dir", str(jobs)]
    )
    assert code == 2
    assert f"job {JOB} was started by citecheck batch" in capsys.readouterr().err
