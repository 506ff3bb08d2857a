"""``citecheck batch --judge-batch``: the judge asked through the providers' batch APIs.

The example suite's claim files are recorded against the Crawling API double (the
pages ``scripts/record_examples.py`` serves) and :class:`LLMBatchDouble` (the verdicts
``scripts/record_examples.py`` scripts, answered alike to a synchronous call and to a
batch item): once synchronously, once with ``--judge-batch``. The verdicts must be the
same, the cost counted at the batch price, a batch item that failed or expired an
``error`` (never a label), and the cassettes must replay offline with no batch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_citecheck.frontends.cli import main
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm_batch import LLMBatchDouble

REPO = Path(__file__).parents[2]
SUITE = REPO / "example_suite"
FILES = ("citecheck_batch.jsonl", "citecheck_boiling.yaml", "citecheck_research_answers.yaml")
KEYS = {"openai": "sk-test-judge-batch-0123456789", "anthropic": "sk-ant-test-batch-0123456789"}
JUDGES = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-sonnet-4-6"}
PRICES = (
    "--prices",
    "openai:gpt-4o-mini=0.15/0.60 anthropic:claude-sonnet-4-6=3/15",
    "--price-credit",
    "0.001",
)
FAST = ("--judge-batch-poll", "0.01")


def _examples() -> ModuleType:
    """scripts/record_examples.py: the example suite's pages and judge script."""
    spec = importlib.util.spec_from_file_location(
        "record_examples", REPO / "scripts" / "record_examples.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("record_examples", module)
    spec.loader.exec_module(module)
    return module


EXAMPLES = _examples()


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """The example suite's claim files and what they cite, without their cassettes."""
    for name in FILES:
        (tmp_path / name).write_text((SUITE / name).read_text("utf-8"), "utf-8")
    for folder in ("answers", "sources"):
        if (SUITE / folder).is_dir():
            target = tmp_path / folder
            target.mkdir()
            for path in (SUITE / folder).iterdir():
                if path.is_file():
                    (target / path.name).write_bytes(path.read_bytes())
    return tmp_path


@pytest.fixture
def crawlbase(monkeypatch: pytest.MonkeyPatch) -> Iterator[CrawlbaseDouble]:
    tokens = {
        "normal": EXAMPLES.FAKE_ENV["CRAWLBASE_TOKEN"],
        "javascript": EXAMPLES.FAKE_ENV["CRAWLBASE_JS_TOKEN"],
    }
    with CrawlbaseDouble(tokens=tokens, pages=EXAMPLES.site_pages()) as api:
        monkeypatch.setenv("CRAWLBASE_TOKEN", tokens["normal"])
        monkeypatch.setenv("CRAWLBASE_JS_TOKEN", tokens["javascript"])
        monkeypatch.setenv("CITECHECK_CRAWLBASE_URL", api.base_url)
        yield api


@dataclass
class World:
    """The example suite, the Crawling API double, and how a test runs ``citecheck batch``."""

    suite: Path
    tmp: Path
    crawlbase: CrawlbaseDouble
    capsys: pytest.CaptureFixture[str]
    monkeypatch: pytest.MonkeyPatch

    @contextmanager
    def judge_with(self, llm: LLMBatchDouble) -> Iterator[LLMBatchDouble]:
        """``llm`` serving, both providers' judges (and their batch APIs) pointed at it."""
        with llm:
            for provider, key in KEYS.items():
                self.monkeypatch.setenv(f"{provider.upper()}_API_KEY", key)
                self.monkeypatch.setenv(f"{provider.upper()}_BASE_URL", llm.base_url(provider))
            yield llm

    def run(self, tapes: str, *argv: str) -> tuple[int, str, str, dict[str, Any]]:
        """``citecheck batch`` over the suite's files, cassettes in ``tapes``; its exit
        code, stdout, stderr and JSON report."""
        report = self.tmp / f"{tapes}.json"
        code = main(
            [
                "batch",
                *(str(self.suite / name) for name in FILES),
                "--cassettes",
                str(self.tmp / tapes),
                "--ranker",
                "bm25",
                "--allow-contradicted",
                "--json",
                str(report),
                *argv,
            ]
        )
        captured = self.capsys.readouterr()
        return code, captured.out, captured.err, json.loads(report.read_text("utf-8"))

    def batched(self, *argv: str, tapes: str = "tapes") -> tuple[int, str, str, dict[str, Any]]:
        """A ``--judge-batch`` recording run, polling fast."""
        return self.run(tapes, "--record", "once", "--judge-batch", *FAST, *argv)

    def tapes(self, name: str = "tapes") -> list[Path]:
        return sorted((self.tmp / name).rglob("*.yaml"))


@pytest.fixture
def world(
    suite: Path,
    crawlbase: CrawlbaseDouble,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> World:
    return World(suite, tmp_path, crawlbase, capsys, monkeypatch)


def labels(report: dict[str, Any]) -> dict[str, list[tuple[str, str | None]]]:
    """Each claim's citations as (label, reason), by claim id."""
    return {
        claim["id"]: [(v["label"], v.get("reason")) for v in claim["verdicts"]]
        for claim in report["claims"]
    }


def by_claim(report: dict[str, Any], claim_id: str) -> list[dict[str, Any]]:
    return next(c["verdicts"] for c in report["claims"] if c["id"] == claim_id)


def cost_line(out: str) -> str:
    return next(line for line in out.splitlines() if "judge tokens" in line)


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_judge_batch_gives_the_synchronous_verdicts_at_the_batch_price(
    provider: str, world: World
) -> None:
    judge = ("--judge", JUDGES[provider])
    with world.judge_with(LLMBatchDouble(EXAMPLES.Judge(), rounds=3)) as llm:
        code, sync_out, _, sync = world.run("sync", "--record", "once", *judge, *PRICES)
        sync_calls = len(llm.calls) + len(llm.confirmations)
        # Two claims asking the judge the same question send one batch request.
        asked = {json.dumps(c.json(), sort_keys=True) for c in [*llm.calls, *llm.confirmations]}
        assert len(asked) < sync_calls
        crawls = len(world.crawlbase.calls)
        llm.reset()
        llm.sync_requests = 0
        code_b, out, err, batched = world.batched(*judge, *PRICES)
    assert (code_b, labels(batched)) == (code, labels(sync))
    # Every label of the suite occurs, so the comparison is not a trivial one.
    found = {label for verdicts in labels(sync).values() for label, _ in verdicts}
    assert {"supported", "contradicted", "not_found", "unreachable"} <= found
    # Nothing synchronous: the first readings in one batch, their confirmations in a second,
    # each polled a few times before it ended.
    assert llm.sync_requests == 0
    assert [job.provider for job in llm.batches] == [provider, provider]
    assert sum(len(job.requests) for job in llm.batches) == len(asked)
    assert llm.looks >= 3 * len(llm.batches)
    assert "judge batch: 3 rounds, 2 batches" in err
    # The pages were fetched once, not once per round.
    assert len(world.crawlbase.calls) == 2 * crawls
    # The same tokens, at half the price, and the line says so.
    spend, spend_b = (
        sync["spend"]["judges"][JUDGES[provider]],
        batched["spend"]["judges"][JUDGES[provider]],
    )
    assert spend_b["input_tokens"] == spend["input_tokens"]
    assert spend_b["cost"] == pytest.approx(spend["cost"] / 2)
    assert batched["spend"]["cost"] == pytest.approx(sync["spend"]["cost"] - spend["cost"] / 2)
    assert f"{sync_calls} judge calls through the batch API, at its price" in cost_line(out)
    assert "batch API" not in cost_line(sync_out)


def test_the_batch_recording_replays_offline_identically(world: World) -> None:
    with world.judge_with(LLMBatchDouble(EXAMPLES.Judge())) as llm:
        code, _, _, recorded = world.batched(*PRICES)
        made = (len(world.crawlbase.calls), len(llm.calls), len(llm.batches))
        for name in ("CRAWLBASE_TOKEN", "CRAWLBASE_JS_TOKEN", "OPENAI_API_KEY"):
            world.monkeypatch.delenv(name)
        code_r, out_r, err_r, replayed = world.run("tapes", "--record", "none", *PRICES)
        assert (len(world.crawlbase.calls), len(llm.calls), len(llm.batches)) == made
    assert (code_r, labels(replayed)) == (code, labels(recorded))
    assert "error" not in {label for v in labels(replayed).values() for label, _ in v}
    assert "judge batch" not in err_r
    # A replay bills nothing; the recording's cost is still counted at the batch price.
    assert replayed["spend"]["cost"] == pytest.approx(recorded["spend"]["cost"])
    assert "through the batch API" in cost_line(out_r)
    # Each judge reply is recorded as answered in the batch, and no key is.
    judged = [t.read_text("utf-8") for t in world.tapes()]
    judged = [text for text in judged if "/chat/completions" in text]
    assert judged and all("citecheck-judge-batch" in text for text in judged)
    assert not any(KEYS["openai"] in text for text in judged)


def test_a_failed_batch_item_is_that_claims_error_and_the_others_stand(world: World) -> None:
    failing = "Water boils at 50 degrees Celsius at sea level."
    with world.judge_with(LLMBatchDouble(EXAMPLES.Judge(), fail_claims={failing})):
        code, _, err, report = world.batched()
    (verdict,) = by_claim(report, "boiling-point-50-degrees")
    assert verdict["label"] == "error"
    assert verdict["reason"] == "judge_batch_failed"
    assert "request_timeout" in verdict["detail"] and "batch_citecheck" in verdict["detail"]
    assert code == 1
    assert "1 without an answer" in err
    # The other claims were judged as usual, and only the failed one is left unrecorded.
    assert by_claim(report, "boiling-point")[0]["label"] == "supported"
    names = {p.stem for p in world.tapes()}
    assert "boiling-point" in names and "boiling-point-50-degrees" not in names


def test_an_expired_batch_makes_its_claims_errors_never_labels(world: World) -> None:
    with world.judge_with(LLMBatchDouble(EXAMPLES.Judge(), expire=True)) as llm:
        code, _, _, report = world.batched("--judge", JUDGES["anthropic"])
    judged = [v for c in report["claims"] for v in c["verdicts"] if v.get("reason") != "http_404"]
    errors = [v for v in judged if v["label"] == "error"]
    assert errors and all(v["reason"] == "judge_batch_failed" for v in errors)
    assert all("expired" in v["detail"] for v in errors)
    assert "supported" not in {v["label"] for v in judged}
    assert code == 1
    assert len(llm.batches) == 1  # nothing asked twice


def test_a_batch_that_never_ends_is_cancelled_after_the_wait(world: World) -> None:
    with world.judge_with(LLMBatchDouble(EXAMPLES.Judge(), never_end=True)) as llm:
        code, _, _, report = world.batched("--judge-batch-wait", "0.3")
    errors = [v for c in report["claims"] for v in c["verdicts"] if v["label"] == "error"]
    assert errors and all(v["reason"] == "judge_batch_failed" for v in errors)
    assert "did not end within 0.3 s (--judge-batch-wait" in errors[0]["detail"]
    assert [job.cancelled for job in llm.batches] == [True]
    assert code == 1


def test_judge_batch_refuses_a_judge_without_a_batch_api(world: World) -> None:
    world.monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    cassettes = str(world.tmp / "tapes")
    claims = str(world.suite / "citecheck_batch.jsonl")
    judge = ("--judge", "ollama:llama3.1", "--judge-batch")
    code = main(["batch", claims, "--record", "once", "--cassettes", cassettes, *judge])
    err = world.capsys.readouterr().err
    assert code == 2
    assert "the ollama:llama3.1 judge has no batch API" in err
    assert "without --judge-batch" in err
    assert not world.tapes()


@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_a_feature_the_model_refuses_in_the_batch_is_asked_again_in_the_next_batch(
    world: World,
) -> None:
    # An Anthropic model without strict tool use: the batch item errors with the 400 a
    # synchronous call gets, and the judge asks again without `strict`, as it would.
    judge = ("--judge", JUDGES["anthropic"])
    with world.judge_with(LLMBatchDouble(EXAMPLES.Judge(), rejects={"strict"})) as llm:
        code, _, _, sync = world.run("sync", "--record", "once", *judge)
        llm.reset()
        code_b, _, err, batched = world.batched(*judge)
    assert (code_b, labels(batched)) == (code, labels(sync))
    strict = [
        ["strict" in json.dumps(json.loads(body)["tools"]) for body in job.requests.values()]
        for job in llm.batches
    ]
    # Reading with strict, again without; the confirmation the same way.
    assert [set(s) for s in strict] == [{True}, {False}, {True}, {False}]
    assert "judge batch: 5 rounds, 4 batches" in err
    fallback = {v.get("judge_fallback") for c in batched["claims"] for v in c["verdicts"]}
    assert any(f and "without strict" in f for f in fallback)


def test_ctrl_c_while_waiting_cancels_the_batch_and_writes_what_finished(world: World) -> None:
    from pytest_citecheck.engine.judge_batch import JudgeBatch

    look = JudgeBatch._look

    def look_then_ctrl_c(self: JudgeBatch, batch: Any) -> None:
        look(self, batch)
        raise KeyboardInterrupt

    world.monkeypatch.setattr(JudgeBatch, "_look", look_then_ctrl_c)
    with world.judge_with(LLMBatchDouble(EXAMPLES.Judge(), never_end=True)) as llm:
        code, out, err, report = world.batched()
    assert code == 130, out + err
    assert [job.cancelled for job in llm.batches] == [True]
    # The claims decided without the judge (a dead link, a refused page) are written;
    # the ones waiting for the batch were not started again and recorded nothing.
    assert "claims were waiting for the judge batch (interrupted): their pages were fetched" in err
    assert "nothing was billed" not in out
    assert report["claims"] and all(
        v["label"] != "supported" for c in report["claims"] for v in c["verdicts"]
    )
    assert all("chat/completions" not in t.read_text("utf-8") for t in world.tapes())


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_a_live_run_judges_through_the_batch_too_and_records_nothing(world: World) -> None:
    claims = str(world.suite / "citecheck_boiling.yaml")
    argv = ["batch", claims, "--record", "live", "--ranker", "bm25", "--allow-contradicted"]
    with world.judge_with(LLMBatchDouble(EXAMPLES.Judge())) as llm:
        assert main(argv) == 0
        sync = world.capsys.readouterr().out
        crawls = len(world.crawlbase.calls)
        llm.sync_requests = 0
        assert main([*argv, "--judge-batch", *FAST]) == 0
        batched = world.capsys.readouterr().out
    assert llm.sync_requests == 0 and len(llm.batches) == 2
    assert len(world.crawlbase.calls) == 2 * crawls  # each page once, not once per round
    summary = [line for line in sync.splitlines() if "citation precision" in line]
    assert summary and summary == [
        line for line in batched.splitlines() if "citation precision" in line
    ]
    assert not (world.suite / "cassettes").exists()


def test_pytest_replays_a_batch_recording_with_the_same_labels(world: World) -> None:
    # Recorded where the plugin keeps cassettes (cassettes/<file stem>/ beside the files).
    with world.judge_with(LLMBatchDouble(EXAMPLES.Judge())):
        _, _, _, recorded = world.batched(tapes="cassettes")
    report = world.tmp / "pytest.json"
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_TOKEN", "_KEY", "_URL"))}
    env.pop("PYTEST_ADDOPTS", None)
    command = [sys.executable, "-m", "pytest", "--citecheck", "-p", "no:cacheprovider", "-q"]
    done = subprocess.run(
        [*command, "--citecheck-report", str(report), str(world.suite)],
        cwd=world.tmp,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    replayed = json.loads(report.read_text("utf-8"))
    assert labels(replayed) == labels(recorded), done.stdout[-3000:]
    assert "no recording" not in done.stdout


def test_a_claim_two_pages_support_together_is_judged_jointly_through_the_batch_api(
    world: World,
) -> None:
    name = "citecheck_two_sources.yaml"
    (world.suite / name).write_text((SUITE / name).read_text("utf-8"), "utf-8")
    judge = EXAMPLES.Judge()
    with world.judge_with(LLMBatchDouble(judge, joint_responder=judge.joint)) as llm:
        report = world.tmp / "two.json"
        argv = ["batch", str(world.suite / name), "--cassettes", str(world.tmp / "two")]
        argv += ["--ranker", "bm25", "--json", str(report)]
        code = main([*argv, "--record", "once", "--judge-batch", *FAST])
        err = world.capsys.readouterr().err
        recorded = json.loads(report.read_text("utf-8"))
        # The two first readings, the joint reading, its confirmation: a batch each.
        assert llm.sync_requests == 0 and len(llm.batches) == 4
        assert len(llm.joint_calls) == 2
        code_r = main([*argv, "--record", "none"])
        replayed = json.loads(report.read_text("utf-8"))
    assert code == code_r == 0, err
    [claim] = recorded["claims"]
    assert (claim["label"], claim["reason"]) == ("supported", "supported_jointly")
    assert [v["reason"] for v in claim["verdicts"]] == ["supported_jointly"] * 2
    assert replayed["claims"][0]["verdicts"] == claim["verdicts"]
