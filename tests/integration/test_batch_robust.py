"""One bad character or one unusable output costs only itself: ``citecheck batch``
keeps every other claim's result, checks every output before any work, and a
report is never left half written."""

from __future__ import annotations

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.doubles.batch import write_records
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import LLMDouble
from tests.integration.test_cli import batch, world

__all__ = ["world"]  # the fixture, shared with test_cli


def test_a_lone_surrogate_in_one_record_keeps_every_other_result_in_every_output(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, llm = world
    records = write_records(tmp_path / "outputs.jsonl")
    bad = '{"id": "broken", "claim": "Water \\ud800 boils.", "urls": ["https://example.com/x"]}'
    with records.open("a", encoding="utf-8") as f:
        f.write(bad + "\n")
    audit, out_csv, out_json = tmp_path / "audit.db", tmp_path / "r.csv", tmp_path / "r.json"
    code, out, err = batch(
        capsys,
        str(records),
        "--audit",
        str(audit),
        "--out",
        str(out_csv),
        "--json",
        str(out_json),
        "--allow-contradicted",
    )
    assert code == 1  # the unreadable record fails the run...
    assert f"{records}:4: claim text is not usable text: it holds a lone surrogate U+D800" in err
    assert "Traceback" not in out + err
    # ...and every other claim is verified, audited and reported.
    assert "citation_precision=0.2222 (2/9)" in out
    assert len(list(csv.DictReader(out_csv.open(encoding="utf-8")))) == 9
    assert json.loads(out_json.read_text(encoding="utf-8"))["totals"]["citations"] == 9
    with sqlite3.connect(audit) as connection:
        assert connection.execute("SELECT COUNT(*) FROM citations").fetchone()[0] == 9
    assert all(call.claim != "Water \ud800 boils." for call in llm.calls)


@pytest.mark.parametrize("flag", ["--out", "--json", "--audit"])
def test_an_output_under_a_file_is_a_usage_error_before_any_work(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flag: str,
) -> None:
    api, llm = world
    records = write_records(tmp_path / "outputs.jsonl")
    (tmp_path / "afile").write_text("a file, not a folder", encoding="utf-8")
    code, out, err = batch(capsys, str(records), flag, str(tmp_path / "afile" / "x.db"))
    assert code == 2
    assert f"{tmp_path / 'afile'} is a file, so nothing can be written under it" in err
    assert "Traceback" not in out + err
    assert api.api_calls == [] and llm.calls == []


def test_an_audit_that_fails_during_the_run_keeps_the_reports_and_the_summary(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_citecheck.reports.audit import AuditError, AuditIndex

    def broken(self: AuditIndex, *args: object) -> int:
        raise AuditError(f"audit file {self.path}: disk I/O error")

    monkeypatch.setattr(AuditIndex, "record", broken)
    records = write_records(tmp_path / "outputs.jsonl")
    out_csv = tmp_path / "r.csv"
    code, out, _ = batch(
        capsys,
        str(records),
        "--audit",
        str(tmp_path / "a.db"),
        "--out",
        str(out_csv),
        "--allow-contradicted",
    )
    assert code == 1
    assert "citation_precision=0.2222 (2/9)" in out
    assert "citecheck gate FAILED: --audit: the rows of 3 claim(s) could not be written" in out
    assert len(list(csv.DictReader(out_csv.open(encoding="utf-8")))) == 9


# -- kill -9 during the write --------------------------------------------------------------

WRITER = """
import os, sys, time
from pathlib import Path

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.results import ClaimResult, Verdict
from pytest_citecheck.reports.report import Report


class SlowFile:
    \"\"\"A slow disk: whatever is written goes out in small, flushed pieces.\"\"\"

    def __init__(self, inner):
        self.inner = inner

    def write(self, text):
        for i in range(0, len(text), 4096):
            self.inner.write(text[i : i + 4096])
            self.inner.flush()
            time.sleep(0.002)
        return len(text)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self.inner.__exit__(*exc)


real_fdopen, real_open = os.fdopen, Path.open
os.fdopen = lambda *a, **k: SlowFile(real_fdopen(*a, **k))
Path.open = lambda self, *a, **k: SlowFile(real_open(self, *a, **k))

marker = sys.argv[2]
results = {
    f"f.yaml::c{i}": ClaimResult(
        id=f"c{i}",
        claim=f"{marker} claim {i} " + "x" * 200,
        label=Label.SUPPORTED,
        verdicts=[Verdict(url=f"https://example.com/{i}", label=Label.SUPPORTED)],
    )
    for i in range(3000)
}
report = Report(results=results)
print("writing", flush=True)
getattr(report, sys.argv[3])(Path(sys.argv[1]))
"""


@pytest.mark.parametrize("method", ["write_json", "write_csv"])
def test_kill_9_during_the_report_write_leaves_the_old_or_the_new_complete_file(
    tmp_path: Path, method: str
) -> None:
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(WRITER), encoding="utf-8")
    target = tmp_path / ("report.json" if method == "write_json" else "report.csv")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}

    def write(marker: str, kill_after: float | None) -> None:
        proc = subprocess.Popen(
            [sys.executable, str(script), str(target), marker, method],
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "writing"
        if kill_after is None:
            assert proc.wait(timeout=120) == 0
            return
        # Killed once the write has begun (the report file or a file beside it changed).
        before = (target.stat().st_mtime_ns, target.stat().st_size, len(list(tmp_path.iterdir())))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = (target.stat().st_mtime_ns, target.stat().st_size, len(list(tmp_path.iterdir())))
            if now != before:
                break
            time.sleep(0.005)
        time.sleep(kill_after)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL

    def complete(marker: str) -> bool:
        text = target.read_text(encoding="utf-8")
        if method == "write_json":
            data = json.loads(text)  # a truncated file would not parse
            claims = data["claims"]
        else:
            claims = list(csv.DictReader(text.splitlines()))
        return len(claims) == 3000 and all(marker in c["claim"] for c in claims)

    write("first", None)
    assert complete("first")
    write("second", 0.1)  # killed mid-write (the slow write takes a few seconds)
    assert complete("first")
    write("third", None)
    assert complete("third")


def test_an_unknown_judge_provider_in_a_yaml_file_is_a_bad_file_and_the_rest_runs(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = write_records(tmp_path / "outputs.jsonl")
    claims = tmp_path / "citecheck_other.yaml"
    claims.write_text(
        "judge: gemini:pro\nclaims:\n  - id: x\n    claim: Water boils.\n"
        "    citations: [https://example.com/articles/boiling]\n",
        encoding="utf-8",
    )
    code, out, err = batch(capsys, str(records), str(claims), "--allow-contradicted")
    assert code == 1
    assert f"{claims}:1: unknown judge provider 'gemini' in 'gemini:pro'" in err
    assert "or override it with --judge" in err
    assert "citation_precision=0.2222 (2/9)" in out
    assert "configuration_error" not in out


def test_a_report_that_fails_at_the_end_keeps_the_others_and_does_not_say_passed(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_citecheck.reports import outputs as module

    real = module.write_atomic

    def disk_full(path: Path, text: str) -> None:
        if path.suffix == ".csv":
            raise OSError(28, "No space left on device")
        real(path, text)

    monkeypatch.setattr(module, "write_atomic", disk_full)
    records = write_records(tmp_path / "outputs.jsonl")
    out_csv, out_json = tmp_path / "r.csv", tmp_path / "r.json"
    code, out, _ = batch(
        capsys,
        str(records),
        "--out",
        str(out_csv),
        "--json",
        str(out_json),
        "--allow-contradicted",
    )
    assert code == 1
    assert f"could not write {out_csv}: No space left on device" in out
    assert out.splitlines()[-1] == (
        "citecheck gate passed, but 1 report file could not be written: the run fails"
    )
    assert not out_csv.exists()
    assert json.loads(out_json.read_text(encoding="utf-8"))["totals"]["citations"] == 9


def _write_report(target: Path) -> None:
    from pytest_citecheck.core.files import write_atomic

    write_atomic(target, "{}\n")


def _save_cassette(target: Path) -> None:
    from pytest_citecheck.recording.cassette import Cassette

    cassette = Cassette(target, metadata={"citecheck": {"note": "written by a test"}})
    cassette.save()


def _save_cassettes_in_one_run(target: Path) -> None:
    """A run's saves share one sweeper: the folder is listed at the run's first save
    (another claim's cassette here), the target's debris goes at the target's save."""
    from pytest_citecheck.core.files import TemporarySweeper
    from pytest_citecheck.recording.cassette import Cassette

    sweep = TemporarySweeper()
    for path in (target.with_name("another-claim.yaml"), target):
        Cassette(path, metadata={"citecheck": {"note": "written by a test"}}).save(sweep)


def _cache_embedding(target: Path) -> None:
    import numpy as np

    from pytest_citecheck.stages.embedder import Embedder

    embedder = Embedder(target.parents[3])
    assert embedder._file("some text") == target  # where the cache keeps this text
    embedder._write("some text", np.ones(4, dtype=np.float32))


def _embedding_file(tmp_path: Path) -> Path:
    from pytest_citecheck.stages.embedder import Embedder

    path = Embedder(tmp_path / "cache")._file("some text")
    assert path is not None
    return path


@pytest.mark.parametrize(
    "write",
    [_write_report, _save_cassette, _save_cassettes_in_one_run, _cache_embedding],
    ids=["report", "cassette", "cassettes-of-a-run", "cache"],
)
def test_a_killed_writers_leftover_temporary_is_swept_by_the_next_write(
    tmp_path: Path, write: Any
) -> None:
    from pytest_citecheck.core.files import STALE_TEMPORARY_SECONDS

    target = _embedding_file(tmp_path) if write is _cache_embedding else tmp_path / "out.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    name = target.name
    old = target.parent / f".{name}.abc123.tmp"  # what kill -9 mid-write leaves
    fresh = target.parent / f".{name}.def456.tmp"  # a concurrent writer's, in flight
    other = target.parent / ".notes.txt.ghi789.tmp"  # another file's: not ours to remove
    for stray in (old, fresh, other):
        stray.write_text("partial", encoding="utf-8")
    long_ago = time.time() - STALE_TEMPORARY_SECONDS - 60
    os.utime(old, (long_ago, long_ago))
    os.utime(other, (long_ago, long_ago))
    write(target)
    assert target.stat().st_size > 0
    assert not old.exists()
    assert fresh.exists() and other.exists()
