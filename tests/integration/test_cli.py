"""The ``citecheck`` console script end to end: batch, audit list, audit page, exit codes.

Batch runs go to the loopback doubles (tests/doubles): the Crawling API, the
judge, and the Storage API; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_citecheck.frontends.cli import main
from tests.doubles.batch import (
    PAGES,
    RECORDS,
    SITE,
    judge_by_page,
    use_doubles,
    write_records,
)
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import LLMDouble
from tests.doubles.storage import StorageDouble

OPENAI_KEY = "sk-test-cli-0123456789"


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    """The Crawling API and an OpenAI judge on loopback, configured through the
    environment as a user would."""
    with CrawlbaseDouble() as api, LLMDouble(judge_by_page) as llm:
        use_doubles(monkeypatch, api, llm, OPENAI_KEY)
        yield api, llm


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def batch(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """A live batch run (against the doubles) unless ``argv`` names a record mode."""
    live = () if "--record" in argv else ("--record", "live")
    return run(capsys, "batch", *argv, *live)


# -- the nine-citation fixture batch ----------------------------------------------------


def test_batch_prints_the_two_precision_lines(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = write_records(tmp_path / "outputs.jsonl")
    code, out, _ = batch(capsys, str(records), "--allow-contradicted")
    lines = out.splitlines()
    assert "citation_precision=0.2222 (2/9)" in lines
    assert "reachable_precision=0.3333 (2/6)" in lines
    assert (
        "supported 2 | contradicted 1 | fabricated 0 | not_found 3 | unreachable 3 | error 0"
        in lines
    )
    assert lines[-1] == "citecheck gate passed"
    assert code == 0


def test_batch_writes_one_csv_row_per_citation(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = write_records(tmp_path / "outputs.jsonl")
    out_csv = tmp_path / "report.csv"
    code, _, _ = batch(capsys, str(records), "--out", str(out_csv), "--allow-contradicted")
    assert code == 0
    rows = list(csv.DictReader(out_csv.open(encoding="utf-8")))
    got = {(r["claim_id"], r["url"].removeprefix(SITE)): (r["label"], r["reason"]) for r in rows}
    assert got == {
        ("boiling", "/articles/boiling"): ("supported", ""),
        ("boiling", "/old-report"): ("unreachable", "http_404"),
        ("boiling", "/science/deep/link"): ("not_found", "redirected_to_homepage"),
        ("eiffel", "/landmarks/eiffel"): ("supported", ""),
        ("eiffel", "/gone"): ("unreachable", "http_410"),
        ("eiffel", "/landmarks/eiffel-report.pdf"): ("not_found", "pdf_no_text"),
        ("boiling-90", "/articles/sea-level"): ("contradicted", ""),
        ("boiling-90", "/missing"): ("unreachable", "http_404"),
        ("boiling-90", "/articles/unrelated"): ("not_found", ""),
    }
    supported = next(r for r in rows if r["url"].endswith("/articles/boiling"))
    assert supported["evidence_quote"].startswith("Water boils at 100 degrees Celsius")
    assert supported["claim_label"] == "supported"


def test_batch_json_is_the_plugin_report_format(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = write_records(tmp_path / "outputs.jsonl")
    report = tmp_path / "report.json"
    batch(capsys, str(records), "--json", str(report), "--allow-contradicted")
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["citecheck_report"] == 1
    assert data["totals"]["citations"] == 9
    assert round(data["totals"]["citation_precision"], 4) == 0.2222
    assert data["gate"] == {
        "passed": True,
        "decided": True,
        "failures": [],
        "not_started": 0,
        "stopped_by": None,
    }
    assert {c["nodeid"] for c in data["claims"]} == {
        "outputs.jsonl::boiling",
        "outputs.jsonl::eiffel",
        "outputs.jsonl::boiling-90",
    }


def test_the_json_report_is_a_baseline_for_the_plugin(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_citecheck.engine.gate import load_baseline_precision

    records = write_records(tmp_path / "outputs.jsonl")
    batch(capsys, str(records), "--json", str(tmp_path / "r.json"), "--allow-contradicted")
    assert round(load_baseline_precision(tmp_path / "r.json") or 0, 4) == 0.2222


# -- the gate and exit codes --------------------------------------------------------------


def test_a_contradicted_citation_fails_the_gate(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = batch(capsys, str(write_records(tmp_path / "o.jsonl")))
    assert code == 1
    assert (
        "citecheck gate FAILED: 1 citation contradicted (allow with --allow-contradicted)"
    ) in out


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        (
            "--min-precision",
            "0.5",
            "citation precision 0.2222 is below --min-precision 0.5000",
        ),
        (
            "--min-reachable-precision",
            "0.4",
            "reachable precision 0.3333 is below --min-reachable-precision 0.4000",
        ),
    ],
)
def test_a_missed_floor_exits_1(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    value: str,
    message: str,
) -> None:
    records = write_records(tmp_path / "o.jsonl")
    code, out, _ = batch(capsys, str(records), "--allow-contradicted", flag, value)
    assert code == 1
    assert message in out


def test_a_floor_that_is_met_exits_0(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = write_records(tmp_path / "o.jsonl")
    code, _, _ = batch(
        capsys,
        str(records),
        "--allow-contradicted",
        "--min-precision",
        "0.2",
        "--min-reachable-precision",
        "0.3",
    )
    assert code == 0


def test_bad_records_are_reported_with_file_and_line_and_the_others_run(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "o.jsonl"
    good = json.dumps(RECORDS[0])
    path.write_text(
        "\n".join(
            [good, '{"id": "x", "claim": "c", "urls": ["ftp://example.com/a"]}', "{not json", ""]
        ),
        encoding="utf-8",
    )
    code, out, err = batch(capsys, str(path))
    assert f"{path}:2: 'ftp://example.com/a' is not a usable URL" in err
    assert f"{path}:3: invalid JSON" in err
    assert "fix:" in err
    # The good record ran: its three citations are counted.
    assert "citation_precision=0.3333 (1/3)" in out
    assert "citecheck gate FAILED: 2 records could not be read" in out
    assert code == 1


def test_batch_counts_bad_records_not_problems(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "o.jsonl"
    bad = [
        '{"id": "x", "claim": "", "urls": ["ftp://example.com/a"]}',  # two problems
        "{not json",
        '{"id": "y", "claim": "c"}',
    ]
    path.write_text("\n".join([json.dumps(RECORDS[0]), *bad, ""]), encoding="utf-8")
    code, out, err = batch(capsys, str(path))
    assert (
        "citecheck gate FAILED: 3 records could not be read "
        "(4 problems, shown above with file:line and the fix)"
    ) in out
    # A record is told its fix in JSON, not in claim-file YAML.
    assert f'{path}:2: claim text is empty\n  fix: write "claim" as one text value' in err
    assert "`" not in err
    assert code == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["batch"], "the following arguments are required: FILE"),
        (["batch", "nope.jsonl"], "nope.jsonl: no such file"),
        (["batch", "{records}", "--concurrency", "0"], "'0' is not at least 1"),
        (["batch", "{records}", "--min-precision", "1.5"], "'1.5' is not between 0 and 1"),
        (["batch", "{records}", "--judge", "gpt-4o"], "'gpt-4o' is not PROVIDER:MODEL"),
        (["batch", "{records}", "--record", "sometimes"], "invalid choice: 'sometimes'"),
        (["audit", "list", "--label", "great"], "'great' is not a label"),
        (["serve", "--port", "99999"], "'99999' is not between 0 and 65535"),
        (["serve", "--jobs-dir", "no-such-jobs"], "--jobs-dir no-such-jobs: no such folder"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_usage_errors_exit_2_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    records = write_records(tmp_path / "o.jsonl")
    code, _, err = run(capsys, *(a.replace("{records}", str(records)) for a in argv))
    assert code == 2
    assert message in err


def test_a_missing_token_is_a_usage_error_naming_the_variable(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CRAWLBASE_TOKEN")
    code, out, err = batch(capsys, str(write_records(tmp_path / "o.jsonl")))
    assert code == 2
    assert "CRAWLBASE_TOKEN is not set" in err
    # Hints name the batch's flags, not the plugin's.
    assert "--record none" in err and "--citecheck-" not in err
    assert out == ""
    assert world[0].api_calls == []


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys)
    assert code == 2
    assert "batch" in err and "audit" in err and "serve" in err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([], ["batch", "audit", "serve", "Exit codes", "CRAWLBASE_TOKEN"]),
        (
            ["batch"],
            [
                "--out",
                "--json",
                "--concurrency",
                "--record",
                "--cassettes",
                "--judge",
                "--min-precision",
                "--min-reachable-precision",
                "--allow-contradicted",
                "--audit",
            ],
        ),
        (["audit"], ["list", "page"]),
        (["audit", "list"], ["--label", "--run", "--audit", "--limit"]),
        (["audit", "page"], ["RID", "30 days", "CRAWLBASE_JS_TOKEN"]),
        (["serve"], ["--host", "--port", "--audit", "--concurrency", "/verify", "/health"]),
    ],
)
def test_help_is_complete(
    capsys: pytest.CaptureFixture[str], argv: list[str], words: list[str]
) -> None:
    code, out, _ = run(capsys, *argv, "--help")
    assert code == 0
    flat = " ".join(out.split())
    for word in words:
        assert word in flat


def test_the_console_script_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_citecheck.frontends.cli", "--version"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0
    assert done.stdout.startswith("citecheck ")


# -- record and replay ----------------------------------------------------------------------


def test_a_recorded_batch_replays_offline(
    world: tuple[CrawlbaseDouble, LLMDouble],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = world
    records = write_records(tmp_path / "o.jsonl")
    cassettes = tmp_path / "tapes"
    code, _, _ = batch(
        capsys,
        str(records),
        "--record",
        "once",
        "--cassettes",
        str(cassettes),
        "--allow-contradicted",
    )
    assert code == 0
    assert sorted(p.name for p in (cassettes / "o").iterdir()) == [
        "boiling-90.yaml",
        "boiling.yaml",
        "eiffel.yaml",
    ]
    for tape in (cassettes / "o").iterdir():
        text = tape.read_text(encoding="utf-8")
        assert api.tokens["normal"] not in text and OPENAI_KEY not in text
    calls = (len(api.calls), len(llm.calls))
    for name in ("CRAWLBASE_TOKEN", "CRAWLBASE_JS_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name)
    code, replayed, _ = batch(
        capsys,
        str(records),
        "--record",
        "none",
        "--cassettes",
        str(cassettes),
        "--allow-contradicted",
    )
    assert code == 0
    assert (len(api.calls), len(llm.calls)) == calls  # nothing went to the doubles
    assert "citation_precision=0.2222 (2/9)" in replayed.splitlines()


def test_cassettes_with_a_live_run_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = str(write_records(tmp_path / "o.jsonl"))
    code, _, err = run(capsys, "batch", records, "--cassettes", "x", "--record", "live")
    assert code == 2
    assert "--cassettes has no use with --record live" in err


def test_without_record_the_batch_replays_as_pytest_does_and_needs_no_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CRAWLBASE_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    records = write_records(tmp_path / "o.jsonl")
    code, out, err = run(capsys, "batch", str(records))
    # Nothing recorded yet: each citation has no recording, and says how to record it;
    # nothing asks for a token, since replaying needs none.
    assert code == 1, out + err
    assert "error 9" in out  # (a PDF link is fetched too: it has no recording either)
    assert "no recording" in out and "--record once" in out
    assert "not set" not in out + err
    assert not (tmp_path / "cassettes").exists()


def test_the_example_suite_batch_replays_from_the_plugins_cassettes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CRAWLBASE_TOKEN", "CRAWLBASE_JS_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    example = Path(__file__).parents[2] / "example_suite" / "citecheck_batch.jsonl"
    code, out, _ = run(capsys, "batch", str(example), "--record", "none")
    assert "citation_precision=" in out
    assert "error 0" in out
    assert code == 0


# -- the audit index --------------------------------------------------------------------------


def test_batch_audit_rows_have_the_rid_of_stored_pages_only(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api, _ = world
    audit = tmp_path / "audit.db"
    records = write_records(tmp_path / "o.jsonl")
    code, out, _ = batch(capsys, str(records), "--audit", str(audit), "--allow-contradicted")
    assert code == 0
    with sqlite3.connect(audit) as connection:
        rows = connection.execute("SELECT url, label, rid, run_id FROM citations").fetchall()
    assert len(rows) == 9
    by_url = {url.removeprefix(SITE): (label, rid) for url, label, rid, _ in rows}
    assert by_url["/articles/boiling"][1] != ""
    # A PDF is crawled with store=true like a page: the stored file has a rid.
    assert by_url["/landmarks/eiffel-report.pdf"][0] == "not_found"
    assert by_url["/landmarks/eiffel-report.pdf"][1] != ""
    assert len({run for *_, run in rows}) == 1
    assert f"audit: run {rows[0][3]} in {audit}" in out
    for suffix in ("", "-wal", "-shm"):
        file = Path(str(audit) + suffix)
        if file.exists():
            data = file.read_bytes()
            assert api.tokens["normal"].encode() not in data
            assert b"token=" not in data


def test_audit_list_filters_by_label_and_run(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    audit = tmp_path / "audit.db"
    records = write_records(tmp_path / "o.jsonl")
    batch(capsys, str(records), "--audit", str(audit), "--allow-contradicted")
    batch(capsys, str(records), "--audit", str(audit), "--allow-contradicted")
    code, out, err = run(capsys, "audit", "list", "--audit", str(audit), "--label", "supported")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == [
        "time",
        "run_id",
        "claim_id",
        "label",
        "reason",
        "confidence",
        "rid",
        "url",
    ]
    assert len(rows) == 4 and all(" supported " in r for r in rows)
    assert "4 row(s)" in err
    run_id = rows[0].split()[1]
    code, out, _ = run(capsys, "audit", "list", "--audit", str(audit), "--run", run_id)
    assert len(out.splitlines()) == 1 + 9


def test_audit_list_reads_citecheck_audit_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITECHECK_AUDIT", str(tmp_path / "none.db"))
    code, _, err = run(capsys, "audit", "list")
    assert code == 2
    assert "none.db does not exist" in err


def test_audit_page_prints_the_stored_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with StorageDouble() as storage:
        storage.put("rid-42", f"{SITE}/articles/boiling", "# Boiling\n\nWater boils at 100 °C.\n")
        monkeypatch.setenv("CRAWLBASE_TOKEN", storage.tokens["normal"])
        monkeypatch.setenv("CITECHECK_CRAWLBASE_URL", storage.base_url)
        code, out, err = run(capsys, "audit", "page", "rid-42")
    assert code == 0
    assert out == "# Boiling\n\nWater boils at 100 °C.\n"
    assert (
        "rid rid-42: https://example.com/articles/boiling, stored 2026-01-01T00:00:00+00:00" in err
    )


def test_audit_page_of_an_unknown_rid_is_a_message_not_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with StorageDouble() as storage:
        monkeypatch.setenv("CRAWLBASE_TOKEN", storage.tokens["normal"])
        monkeypatch.setenv("CITECHECK_CRAWLBASE_URL", storage.base_url)
        code, out, err = run(capsys, "audit", "page", "expired-rid")
    assert code == 1
    assert out == ""
    assert err.startswith("citecheck: no stored page has rid 'expired-rid'")
    assert "Traceback" not in err


def test_audit_page_without_a_token_exits_2_naming_the_variables(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CRAWLBASE_TOKEN", raising=False)
    monkeypatch.delenv("CRAWLBASE_JS_TOKEN", raising=False)
    code, _, err = run(capsys, "audit", "page", "rid-1")
    assert code == 2
    assert "set CRAWLBASE_TOKEN (or CRAWLBASE_JS_TOKEN" in err


def test_a_batch_rid_reads_back_the_page_it_was_judged_on(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The Crawling API double also serves /storage for the pages it stored.
    audit = tmp_path / "audit.db"
    batch(
        capsys,
        str(write_records(tmp_path / "o.jsonl")),
        "--audit",
        str(audit),
        "--allow-contradicted",
    )
    with sqlite3.connect(audit) as connection:
        (rid,) = connection.execute(
            "SELECT rid FROM citations WHERE url = ?", (f"{SITE}/landmarks/eiffel",)
        ).fetchone()
    code, out, _ = run(capsys, "audit", "page", rid)
    assert code == 0
    assert out == PAGES[f"{SITE}/landmarks/eiffel"].markdown


def storage_reads(api: CrawlbaseDouble, since: int) -> list[tuple[str | None, int]]:
    """The token kind and status of each Storage read after the first ``since`` calls."""
    return [(c.kind, c.status) for c in api.calls[since:] if c.path == "/storage"]


def test_a_page_crawled_with_the_javascript_token_is_read_back_with_it_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Storage may be kept per token: the audit row names the token that stored the
    page, and ``audit page`` asks it first (one read, not a 404 from the other first)."""
    eiffel, boiling = f"{SITE}/landmarks/eiffel", f"{SITE}/articles/boiling"
    with CrawlbaseDouble(storage_per_token=True) as api, LLMDouble(judge_by_page) as llm:
        use_doubles(monkeypatch, api, llm, OPENAI_KEY)
        # The Normal crawl fails (520): the JavaScript token crawls and stores the page.
        api.add(eiffel, Page(http_status=520, js=PAGES[eiffel]))
        audit = tmp_path / "audit.db"
        records = write_records(tmp_path / "o.jsonl")
        batch(capsys, str(records), "--audit", str(audit), "--allow-contradicted")
        with sqlite3.connect(audit) as connection:
            kept = dict(
                connection.execute(
                    "SELECT url, rid || ' ' || rid_token FROM citations WHERE url IN (?, ?)",
                    (eiffel, boiling),
                ).fetchall()
            )
        (js_rid, js_kind), (normal_rid, normal_kind) = (kept[u].split() for u in (eiffel, boiling))
        assert (js_kind, normal_kind) == ("javascript", "normal")
        monkeypatch.chdir(tmp_path)  # the default audit file is not this one
        for rid, argv, reads in (
            (js_rid, ["--audit", str(audit)], [("javascript", 200)]),
            (normal_rid, ["--audit", str(audit)], [("normal", 200)]),
            # Told nothing, the Normal token is asked first: the per-token storage refuses it.
            (js_rid, [], [("normal", 404), ("javascript", 200)]),
            (js_rid, ["--crawled-with", "javascript"], [("javascript", 200)]),
        ):
            since = len(api.calls)
            code, out, _ = run(capsys, "audit", "page", rid, *argv)
            assert (code, storage_reads(api, since)) == (0, reads), (rid, argv)
            assert out == PAGES[eiffel if rid == js_rid else boiling].markdown


def test_a_schema_1_audit_file_is_read_and_then_migrated(tmp_path: Path) -> None:
    from pytest_citecheck.reports.audit import AuditIndex, AuditRow

    audit = tmp_path / "old.db"
    with sqlite3.connect(audit) as connection:
        connection.execute(
            "CREATE TABLE citations (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT "
            "NULL, time TEXT NOT NULL, source TEXT NOT NULL, claim_id TEXT NOT NULL, claim "
            "TEXT NOT NULL, url TEXT NOT NULL, label TEXT NOT NULL, reason TEXT NOT NULL, "
            "confidence REAL, evidence_quote TEXT NOT NULL, final_url TEXT NOT NULL, "
            "original_status INTEGER, rid TEXT NOT NULL)"
        )
        connection.execute(
            "INSERT INTO citations (run_id, time, source, claim_id, claim, url, label, reason, "
            "evidence_quote, final_url, rid) VALUES ('r', 't', 'batch', 'c', 'x', 'u', "
            "'supported', '', '', '', 'rid-old')"
        )
        connection.execute("PRAGMA user_version=1")
    index = AuditIndex(audit)
    assert index.stored_with("rid-old") is None
    index.append(
        [
            AuditRow(
                "r2",
                "t",
                "batch",
                "c",
                "x",
                "u",
                "supported",
                "",
                None,
                "",
                "",
                200,
                "rid-new",
                "javascript",
            )
        ]
    )
    assert [(r.rid, r.rid_token) for r in index.rows()] == [
        ("rid-old", ""),
        ("rid-new", "javascript"),
    ]
    assert index.stored_with("rid-new") == "javascript"


def test_an_unusable_audit_file_is_a_usage_error_before_any_work(
    world: tuple[CrawlbaseDouble, LLMDouble], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    audit = tmp_path / "audit.db"
    audit.write_text("not a database", encoding="utf-8")
    code, out, err = batch(capsys, str(write_records(tmp_path / "o.jsonl")), "--audit", str(audit))
    assert code == 2
    assert err.startswith(f"citecheck: --audit: audit file {audit}")
    assert out == ""
    assert world[0].api_calls == []


def test_a_missing_recording_names_the_batch_command_that_records_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CRAWLBASE_TOKEN", "CRAWLBASE_JS_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    records = write_records(tmp_path / "o.jsonl")
    code, out, _ = run(capsys, "batch", str(records), "--record", "none", "--cassettes", "tapes")
    assert code == 1
    assert f"record it with: citecheck batch {records} --record once --cassettes tapes" in out
    assert "pytest --citecheck" not in out


def test_help_names_every_variable_and_serve_speaks_of_requests(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    flat = " ".join(out.split())
    for name in (
        "CRAWLBASE_TOKEN",
        "CRAWLBASE_JS_TOKEN",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OLLAMA_HOST",
        "CITECHECK_JUDGE_BASE_URL",
        "CITECHECK_JUDGE_API_KEY",
        "CITECHECK_AUDIT",
    ):
        assert name in flat, name
    code, out, _ = run(capsys, "serve", "--help")
    flat = " ".join(out.split())
    assert "YAML" not in flat
    assert "(default: a request's judge, else openai:gpt-4o-mini)" in flat
