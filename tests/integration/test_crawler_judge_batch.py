"""``citecheck batch --via-crawler NAME --judge-batch``: the pages from Crawlbase's
Crawler, the judge through the provider's batch API, in one job.

Each claim runs as its pages are delivered; one that asks the judge something the
batch has not answered waits (its citations stay ``delivered``), the questions go out
as a batch, and the claim runs again on the answer (once more for the confirmation).
The labels must be those of the same job with the synchronous judge and of a plain
synchronous batch; the recording replays offline; a batch item that failed is its
citation's ``error``; a runner killed while a batch is out waits for that batch again
when it resumes instead of asking twice.

On loopback: :class:`~tests.doubles.crawlbase.CrawlbaseDouble` answers the pushes,
:class:`~tests.integration.test_crawler_job.Deliverer` plays the Crawler's deliveries,
:class:`~tests.doubles.llm_batch.LLMBatchDouble` judges (synchronously or in batches,
from the same script), polled every 10 ms.
"""

from __future__ import annotations

import _thread
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.frontends.cli import main
from pytest_citecheck.large_audit.job_batches import SAVED_BATCHES, JobBatches
from pytest_citecheck.large_audit.job_store import JobState, JobStore
from pytest_citecheck.stages.judges.batch import Submitted
from tests.doubles.batch import RECORDS, judge_by_page, use_doubles, write_records
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm_batch import LLMBatchDouble
from tests.integration.test_crawler_job import (
    JOB,
    PRECISION,
    PUSHED_URLS,
    Deliverer,
    crawler_batch,
)

OPENAI_KEY = "sk-test-crawler-batch-0123456789"
FAST = ("--judge-batch-poll", "0.01")
PRICES = ("--prices", "openai:gpt-4o-mini=0.15/0.60", "--price-credit", "0.001")
# The claim whose judge requests fail in the batch (its readable pages: sea-level, unrelated).
FAILING = next(r for r in RECORDS if r["id"] == "boiling-90")


@pytest.fixture
def llm() -> Iterator[LLMBatchDouble]:
    with LLMBatchDouble(judge_by_page) as double:
        yield double


def labels(report: Path) -> dict[tuple[str, str], tuple[str, str | None]]:
    data = json.loads(report.read_text(encoding="utf-8"))
    return {
        (c["id"], v["url"]): (v["label"], v.get("reason"))
        for c in data["claims"]
        for v in c["verdicts"]
    }


@dataclass
class World:
    """The records, the judge double, and how a test runs ``citecheck batch``."""

    tmp: Path
    records: Path
    llm: LLMBatchDouble
    capsys: pytest.CaptureFixture[str]
    monkeypatch: pytest.MonkeyPatch

    def batch(self, name: str, *argv: str) -> tuple[int, str, str]:
        """``citecheck batch`` over the records; cassettes and report under ``tmp/name``."""
        return self._run(["batch", str(self.records), "--allow-contradicted", *argv], name)

    def crawler_job(self, name: str, *argv: str) -> tuple[int, str, str, CrawlbaseDouble]:
        """A Crawler job (``--record once``) with a Crawlbase double of its own, so no
        earlier job's push is delivered into it; its jobs folder is ``tmp/name/jobs``."""
        with CrawlbaseDouble() as api:
            use_doubles(self.monkeypatch, api, self.llm, OPENAI_KEY)
            jobs = self.jobs(name)
            with Deliverer(api, jobs):
                code, out, err = self._run(crawler_batch(self.records, jobs, *argv), name)
        return code, out, err, api

    def _run(self, argv: list[str], name: str) -> tuple[int, str, str]:
        tapes, report = self.tmp / name / "tapes", self.tmp / name / "report.json"
        code = main([*argv, "--cassettes", str(tapes), "--json", str(report), *PRICES])
        captured = self.capsys.readouterr()
        return code, captured.out, captured.err

    def jobs(self, name: str) -> Path:
        return self.tmp / name / "jobs"

    def report(self, name: str) -> dict[tuple[str, str], tuple[str, str | None]]:
        return labels(self.tmp / name / "report.json")

    def store(self, name: str) -> JobStore:
        store = JobStore.open(self.jobs(name), JOB)
        assert store is not None
        return store


@pytest.fixture
def world(
    tmp_path: Path,
    llm: LLMBatchDouble,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> World:
    records = write_records(tmp_path / "citecheck_audit.jsonl")
    return World(tmp_path, records, llm, capsys, monkeypatch)


def cost_line(out: str) -> str:
    return next(line for line in out.splitlines() if "judge tokens" in line)


def test_a_crawler_job_with_a_judge_batch_gives_the_synchronous_labels(world: World) -> None:
    llm = world.llm
    # The plain synchronous batch: the Crawling API and the judge called directly.
    with CrawlbaseDouble() as api:
        use_doubles(world.monkeypatch, api, llm, OPENAI_KEY)
        code, _, _ = world.batch("sync", "--record", "once")
    assert code == 0
    # The same audit as a Crawler job with the synchronous judge.
    code_j, out_j, _, _ = world.crawler_job("job-sync")
    assert code_j == 0
    assert world.report("job-sync") == world.report("sync")
    sync_calls = llm.sync_requests
    asked = {json.dumps(c.json(), sort_keys=True) for c in [*llm.calls, *llm.confirmations]}
    llm.reset()
    llm.sync_requests = 0

    code_b, out, err, api = world.crawler_job("job-batch", "--judge-batch", *FAST)
    assert code_b == 0, out + err
    assert PRECISION in out.splitlines()
    assert world.report("job-batch") == world.report("sync")
    # Every label of the records occurs, so the comparison is not a trivial one.
    found = {label for label, _ in world.report("sync").values()}
    assert {"supported", "contradicted", "not_found", "unreachable"} <= found
    # Pages through the Crawler only, the judge through batches only: the first
    # readings, then the confirmations (asked once their readings were in).
    assert sorted(p.url for p in api.pushes) == PUSHED_URLS
    # (and the PDF's file synchronously: a PDF is never pushed)
    assert [c.params.get("callback") for c in api.api_calls if c.format == "md"] == ["true"] * len(
        PUSHED_URLS
    )
    assert llm.sync_requests == 0
    assert len(llm.batches) >= 2
    assert sum(len(job.requests) for job in llm.batches) == len(asked) <= sync_calls
    assert "judge batch:" in err and "without an answer" not in err
    # Every citation judged, once its verdict existed; nothing left to wait for again.
    store = world.store("job-batch")
    assert store.counts()[JobState.JUDGED] == len(PUSHED_URLS)
    assert json.loads(store.meta(SAVED_BATCHES) or "[]") == []
    store.close()
    # The same tokens at half the price, and the line says so.
    assert "through the batch API, at its price" in cost_line(out)
    assert "batch API" not in cost_line(out_j)

    # Offline: no token, no key; the same labels, nothing sent.
    for name in ("CRAWLBASE_TOKEN", "CRAWLBASE_JS_TOKEN", "OPENAI_API_KEY"):
        world.monkeypatch.delenv(name)
    made = (len(api.calls), len(llm.calls), len(llm.batches))
    code_r, out_r, err_r = world.batch("job-batch", "--record", "none")
    assert code_r == 0, out_r + err_r
    assert world.report("job-batch") == world.report("sync")
    assert (len(api.calls), len(llm.calls), len(llm.batches)) == made
    assert "judge batch" not in err_r
    assert "through the batch API" in cost_line(out_r)


def test_a_failed_batch_item_errors_only_its_citations(world: World) -> None:
    world.llm.fail_claims = {str(FAILING["claim"])}
    code, _, err, _ = world.crawler_job("failing", "--judge-batch", *FAST)
    report = world.report("failing")
    failing = {url: v for (claim, url), v in report.items() if claim == FAILING["id"]}
    judged = [url for url, (_, reason) in failing.items() if reason != "http_404"]
    assert judged and all(failing[url] == ("error", "judge_batch_failed") for url in judged)
    # The other claims stand as a synchronous run labels them.
    assert report[("boiling", "https://example.com/articles/boiling")] == ("supported", None)
    assert report[("eiffel", "https://example.com/landmarks/eiffel")] == ("supported", None)
    assert code == 1
    assert "without an answer" in err
    # The store says why for the failed ones and judged the rest; only the failing
    # claim is left unrecorded, so the next --record once run asks again.
    store = world.store("failing")
    failed = store.rows(JobState.FAILED)
    assert failed and all("judge_batch_failed" in row.detail for row in failed)
    assert {row.citation.partition("#")[0] for row in failed} == {"citecheck_audit.boiling-90"}
    store.close()
    tapes = {p.stem for p in (world.tmp / "failing" / "tapes").rglob("*.yaml")}
    assert tapes == {"boiling", "eiffel"}


def test_a_runner_stopped_while_a_batch_is_out_waits_for_it_again_on_resume(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = world.llm
    llm.never_end = True  # the first batch is still running when the runner stops
    sent = JobBatches._sent

    def sent_then_stopped(self: JobBatches[Any], batches: list[Submitted]) -> None:
        sent(self, batches)
        if not getattr(sent_then_stopped, "done", False):
            sent_then_stopped.done = True  # type: ignore[attr-defined]
            _thread.interrupt_main()  # Ctrl-C once the batch is saved in the job

    monkeypatch.setattr(JobBatches, "_sent", sent_then_stopped)
    code, _, err, api = world.crawler_job("resumed", "--judge-batch", *FAST)
    assert code == 130, err
    assert "run the same command again to resume it" in err
    (first,) = llm.batches
    assert not first.cancelled  # the job's batch keeps running at the provider
    store = world.store("resumed")
    saved = json.loads(store.meta(SAVED_BATCHES) or "[]")
    assert [entry["batch_id"] for entry in saved] == [first.id]
    world.capsys.readouterr()
    assert main(["jobs", "status", JOB, "--jobs-dir", str(world.jobs("resumed"))]) == 1
    status = world.capsys.readouterr().out
    assert f"judge batches sent: 1 ({len(first.requests)} questions): {first.id}" in status
    # Nothing was judged without its verdict: the pages are in, the verdicts are not.
    assert store.counts()[JobState.JUDGED] < len(PUSHED_URLS)
    assert store.counts()[JobState.DELIVERED] > 0
    store.close()
    pushes = len(api.pushes)

    llm.never_end = False  # the provider finishes the batch while no runner runs
    code, out, err, api = world.crawler_job("resumed", "--judge-batch", *FAST)
    assert code == 0, out + err
    assert api.pushes == [] and pushes == len(PUSHED_URLS)  # no page pushed twice
    # The first batch's questions were not asked again: the resumed run read its
    # answers, and sent only the confirmations.
    asked = [cid for job in llm.batches for cid in job.requests]
    assert len(asked) == len(set(asked))
    assert len(llm.batches) >= 2 and llm.batches[0] is first
    assert llm.sync_requests == 0
    # The same labels as a job that never stopped.
    code, _, _, _ = world.crawler_job("whole", "--judge-batch", *FAST)
    assert code == 0
    assert world.report("resumed") == world.report("whole")
    store = world.store("resumed")
    assert store.counts()[JobState.JUDGED] == len(PUSHED_URLS)
    store.close()
