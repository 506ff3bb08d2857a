"""One stop for every source of the run loop: Ctrl-C in a Crawler job and in a
recheck's set starts no more claims (the ones in flight finish), as it does in an
all-at-once batch, and the way back is the one the command always prints.

The Ctrl-C is a real one: a double sends the process SIGINT while the first claim's
request is in flight (and keeps it in flight a moment longer), so KeyboardInterrupt
lands in the main thread wherever the run loop is waiting.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_citecheck.frontends.cli import main
from pytest_citecheck.frontends.cli.common import EXIT_INTERRUPTED
from pytest_citecheck.large_audit.job_store import JobState, JobStore
from tests.doubles.batch import PAGES, RECORDS, judge_by_page, use_doubles, write_records
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted
from tests.integration.test_crawler_job import JOB, OPENAI_KEY, PRECISION, Deliverer, crawler_batch

# The claims of tests/doubles/batch.py, each with its own cassette.
CLAIMS = 3


def ctrl_c() -> None:
    """Ctrl-C: SIGINT to this process, with the request in flight a moment longer."""
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.3)


class CtrlC:
    """A judge that presses Ctrl-C during its first call, once ``ready()`` holds (so
    the run loop has every claim in hand when the interrupt comes)."""

    def __init__(self, ready: Callable[[], bool] = lambda: True) -> None:
        self.ready = ready
        self.pressed = False

    def __call__(self, call: JudgeCall) -> Scripted:
        if not self.pressed:
            self.pressed = True
            deadline = time.monotonic() + 10
            while not self.ready() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.6)  # a few of the run loop's looks: the ready claims are queued
            ctrl_c()
        return judge_by_page(call)


def delivered(jobs: Path) -> Callable[[], bool]:
    """Every pushed page of the job has been delivered."""

    def check() -> bool:
        store = JobStore.open(jobs, JOB)
        if store is None:
            return False
        try:
            counts = store.counts()
        finally:
            store.close()
        waiting = counts[JobState.QUEUED] + counts[JobState.PUSHING] + counts[JobState.PUSHED]
        return sum(counts.values()) == len(PAGES) and waiting == 0

    return check


@pytest.fixture
def api() -> Iterator[CrawlbaseDouble]:
    with CrawlbaseDouble() as double:
        yield double


def cassettes(root: Path) -> list[str]:
    folder = root / "cassettes" / "citecheck_audit"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_ctrl_c_in_a_crawler_job_starts_no_more_claims_and_the_job_resumes(
    api: CrawlbaseDouble,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records = write_records(tmp_path / "citecheck_audit.jsonl")
    jobs = tmp_path / "jobs"
    judge = CtrlC(delivered(jobs))
    with LLMDouble(judge) as llm, Deliverer(api, jobs):
        use_doubles(monkeypatch, api, llm, OPENAI_KEY)
        code = main(crawler_batch(records, jobs, "--concurrency", "1"))
        err = capsys.readouterr().err
        assert code == EXIT_INTERRUPTED, err
        assert f"citecheck: job {JOB} stopped; run the same command again to resume it" in err
        # Only the claim in flight finished: the ready ones behind it never started
        # (no judge call, no cassette), as in an all-at-once run.
        assert len(cassettes(tmp_path)) == 1
        first_calls = len(llm.calls)

        code = main(crawler_batch(records, jobs, "--concurrency", "1"))
        out = capsys.readouterr().out
    assert code == 0, out
    assert PRECISION in out.splitlines()
    assert len(cassettes(tmp_path)) == CLAIMS
    # The claim verified before Ctrl-C is replayed, not judged again.
    assert len(llm.calls) == 4 and first_calls >= 1


def test_ctrl_c_in_a_recheck_starts_no_more_claims(
    api: CrawlbaseDouble,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records = write_records(tmp_path / "citecheck_audit.jsonl")
    with LLMDouble(judge_by_page) as llm:
        use_doubles(monkeypatch, api, llm, OPENAI_KEY)
        recorded = ["batch", str(records), "--record", "once", "--allow-contradicted"]
        assert main(recorded) == 0
        capsys.readouterr()
        assert len(cassettes(tmp_path)) == CLAIMS
        pressed: list[str] = []

        def press(url: str) -> float:
            """Ctrl-C during the recheck's first live fetch."""
            if not pressed:
                pressed.append(url)
                time.sleep(0.6)  # the run loop has every claim queued by now
                ctrl_c()
            return 0.0

        with CrawlbaseDouble(latency=press) as live:
            use_doubles(monkeypatch, live, llm, OPENAI_KEY)
            code = main(["recheck", str(records), "--concurrency", "1"])
            err = capsys.readouterr().err
    assert code == EXIT_INTERRUPTED, err
    assert "citecheck: interrupted" in err
    # The claim in flight finished; the claims queued behind it were never fetched.
    claim_of = {url: record["id"] for record in RECORDS for url in record_urls(record)}
    assert pressed
    assert {claim_of[call.url] for call in live.api_calls} == {claim_of[pressed[0]]}


def record_urls(record: dict[str, object]) -> list[str]:
    urls = record["urls"]
    assert isinstance(urls, list)
    return [str(url) for url in urls]


def reasons(report: Path) -> dict[str, list[str | None]]:
    data = json.loads(report.read_text(encoding="utf-8"))
    return {c["id"]: [v.get("reason") for v in c["verdicts"]] for c in data["claims"]}


def test_a_budget_stop_in_a_crawler_job_is_the_all_at_once_runs(
    api: CrawlbaseDouble,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    budget = ["--max-credits", "0.5", "--concurrency", "1"]  # no claim's crawl fits
    synchronous, crawled = tmp_path / "sync", tmp_path / "crawled"
    for folder in (synchronous, crawled):
        folder.mkdir()
    with LLMDouble(judge_by_page) as llm:
        use_doubles(monkeypatch, api, llm, OPENAI_KEY)
        records = write_records(synchronous / "citecheck_audit.jsonl")
        report = synchronous / "report.json"
        sync_code = main(
            [
                "batch",
                str(records),
                "--record",
                "once",
                "--allow-contradicted",
                "--json",
                str(report),
                *budget,
            ]
        )
        sync_out = capsys.readouterr().out
        jobs = crawled / "jobs"
        records = write_records(crawled / "citecheck_audit.jsonl")
        with Deliverer(api, jobs):
            code = main(
                crawler_batch(records, jobs, "--json", str(crawled / "report.json"), *budget)
            )
        out = capsys.readouterr().out
    assert code == sync_code
    assert reasons(crawled / "report.json") == reasons(report)
    assert all(r == ["budget_exhausted"] * 3 for r in reasons(report).values())
    # The same message, and nothing crawled: no page was pushed (a push is a billed
    # crawl; before, the job pushed all 8 pages past a budget of 0.5 credits).
    out = out.replace(str(crawled), str(synchronous))  # the claims' own folder
    budget_lines = [line for line in out.splitlines() if "budget" in line]
    assert budget_lines == [line for line in sync_out.splitlines() if "budget" in line]
    assert api.pushes == []
