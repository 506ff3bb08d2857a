"""The audit index (SQLite, WAL, concurrent writers) and the Storage API read-back."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import ClaimResult, Verdict
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.reports.audit import AuditError, AuditIndex, new_run_id, rows_for, safe_rid
from pytest_citecheck.stages.storage import PageNotStored, StorageError, read_stored_page
from tests.doubles.storage import StorageDouble

TOKEN = "double-normal-token-0123"
STORAGE_URL = f"https://api.crawlbase.com/storage?token={TOKEN}&rid=abc123"


def result(claim_id: str = "q1", verdicts: list[Verdict] | None = None) -> ClaimResult:
    verdicts = verdicts or [
        Verdict(
            url="https://example.com/a",
            label=Label.SUPPORTED,
            evidence_quote="Water boils at 100 °C.",
            confidence=0.93,
            final_url="https://example.com/a",
            original_status=200,
            rid="abc123",
        ),
        Verdict(url="https://example.com/doc.pdf", label=Label.NOT_FOUND, reason="pdf_unsupported"),
    ]
    return ClaimResult(
        id=claim_id, claim="Water boils at 100 °C.", label=Label.SUPPORTED, verdicts=verdicts
    )


def test_one_row_per_citation_with_rid_only_for_a_stored_page(tmp_path: Path) -> None:
    index = AuditIndex(tmp_path / "audit.db")
    assert index.record({"q1": result()}, run_id="run-1", source="batch") == 2
    stored, pdf = index.rows()
    assert (stored.run_id, stored.source, stored.claim_id) == ("run-1", "batch", "q1")
    assert (stored.label, stored.rid, stored.confidence) == ("supported", "abc123", 0.93)
    assert stored.evidence_quote == "Water boils at 100 °C."
    assert (stored.final_url, stored.original_status) == ("https://example.com/a", 200)
    assert (pdf.label, pdf.reason, pdf.rid, pdf.confidence) == (
        "not_found",
        "pdf_unsupported",
        "",
        None,
    )
    assert stored.time.endswith("+00:00")


def test_the_file_is_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    AuditIndex(path).record({"q1": result()}, "run-1", "batch")
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_storage_url_never_reaches_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRAWLBASE_TOKEN", TOKEN)
    leaky = Verdict(
        url=f"https://example.com/a?token={TOKEN}",
        label=Label.ERROR,
        reason=Reason.CRAWL_FAILED,
        rid=STORAGE_URL,  # a bug upstream must not leak the token here either
        evidence_quote=f"the token is {TOKEN}",
    )
    path = tmp_path / "audit.db"
    AuditIndex(path).record({"q1": result(verdicts=[leaky])}, "run-1", "service")
    (row,) = AuditIndex(path).rows()
    assert row.rid == ""
    for suffix in ("", "-wal", "-shm"):
        file = Path(str(path) + suffix)
        if file.exists():
            assert TOKEN.encode() not in file.read_bytes()


@pytest.mark.parametrize(
    ("rid", "kept"),
    [("abc123", "abc123"), ("9f1e-77_a.b", "9f1e-77_a.b"), (STORAGE_URL, ""), ("", ""), (None, "")],
)
def test_safe_rid(rid: str | None, kept: str) -> None:
    assert safe_rid(rid) == kept


def test_filters_by_label_run_and_rid(tmp_path: Path) -> None:
    index = AuditIndex(tmp_path / "audit.db")
    index.record({"q1": result("q1")}, "run-1", "batch")
    index.record({"q2": result("q2")}, "run-2", "batch")
    assert [r.claim_id for r in index.rows(run_id="run-2")] == ["q2", "q2"]
    assert [(r.run_id, r.label) for r in index.rows(label="supported")] == [
        ("run-1", "supported"),
        ("run-2", "supported"),
    ]
    assert [r.url for r in index.rows(rid="abc123", run_id="run-1")] == ["https://example.com/a"]
    # A limit keeps the newest rows, still listed oldest first.
    assert [(r.claim_id, r.label) for r in index.rows(limit=3)] == [
        ("q1", "not_found"),
        ("q2", "supported"),
        ("q2", "not_found"),
    ]


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AuditError, match=r"missing\.db does not exist: write one with"):
        AuditIndex(tmp_path / "missing.db").rows()


def test_a_file_of_another_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA user_version=99")
    with pytest.raises(AuditError, match="audit schema 99"):
        AuditIndex(path).record({"q1": result()}, "run-1", "batch")


def test_concurrent_writers_in_threads_lose_no_row(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(10):
                AuditIndex(path).record({f"t{n}-{i}": result()}, f"run-{n}", "service")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    rows = AuditIndex(path).rows()
    assert len(rows) == 8 * 10 * 2
    assert len({(r.claim_id, r.url) for r in rows}) == 160


def _write_from_process(path: str, n: int) -> None:
    for i in range(10):
        AuditIndex(Path(path)).record({f"p{n}-{i}": result()}, f"run-p{n}", "pytest")


def test_concurrent_writers_in_processes_lose_no_row(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_write_from_process, args=(str(path), n)) for n in range(3)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0, 0, 0]
    assert AuditIndex(path).count() == 3 * 10 * 2


def test_run_ids_sort_by_time_and_do_not_collide() -> None:
    ids = {new_run_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i.split("-")[0]) == len("20260101T000000Z") for i in ids)


def test_rows_for_a_claim_without_citations_is_empty() -> None:
    empty = ClaimResult(id="q", claim="c", label=Label.NOT_FOUND, verdicts=[])
    assert rows_for({"q": empty}, "run", "batch") == []


# -- Storage API read-back ------------------------------------------------------------


def storage_env(storage: StorageDouble, kind: str = "normal") -> dict[str, str]:
    name = {"normal": "CRAWLBASE_TOKEN", "javascript": "CRAWLBASE_JS_TOKEN"}[kind]
    return {name: storage.tokens[kind], "CITECHECK_CRAWLBASE_URL": storage.base_url}


@pytest.mark.parametrize("kind", ["normal", "javascript"])
def test_a_stored_page_is_read_back_by_rid_with_either_token(kind: str) -> None:
    with StorageDouble() as storage:
        storage.put("rid-1", "https://example.com/a", "# Boiling\n\nWater boils at 100 °C.\n")
        page = read_stored_page("rid-1", environ=storage_env(storage, kind))
        (call,) = storage.calls
    assert page.body == "# Boiling\n\nWater boils at 100 °C.\n"
    assert (page.rid, page.url, page.original_status) == ("rid-1", "https://example.com/a", 200)
    assert page.stored_at == "2026-01-01T00:00:00+00:00"
    # A fresh options dict per call: only rid and format, never a leftover url.
    assert {k: v for k, v in call.params.items() if k != "token"} == {
        "rid": "rid-1",
        "format": "html",
    }
    assert call.kind == kind


def both_tokens(storage: StorageDouble) -> dict[str, str]:
    return {**storage_env(storage, "normal"), **storage_env(storage, "javascript")}


def test_a_page_kept_under_the_javascript_token_is_read_back_with_both_set() -> None:
    """Storage is per token: a page the JavaScript token crawled answers 404 to the
    Normal token. With both set, the read-back asks the other token too."""
    with StorageDouble() as storage:
        storage.put("rid-js", "https://example.com/app", "# App\n", token_kind="javascript")
        page = read_stored_page("rid-js", environ=both_tokens(storage))
        kinds = [c.kind for c in storage.calls]
    assert page.body == "# App\n"
    assert kinds == ["normal", "javascript"]


def test_the_token_that_crawled_the_page_is_asked_first() -> None:
    with StorageDouble() as storage:
        storage.put("rid-js", "https://example.com/app", "# App\n", token_kind="javascript")
        page = read_stored_page("rid-js", environ=both_tokens(storage), crawled_with="javascript")
        kinds = [c.kind for c in storage.calls]
    assert page.body == "# App\n"
    assert kinds == ["javascript"]


def test_a_rid_neither_token_holds_is_not_stored_after_asking_both() -> None:
    with StorageDouble() as storage:
        with pytest.raises(PageNotStored, match="asked with CRAWLBASE_TOKEN and CRAWLBASE_JS"):
            read_stored_page("rid-none", environ=both_tokens(storage))
        assert [c.kind for c in storage.calls] == ["normal", "javascript"]


def test_an_expired_rid_is_a_clear_message() -> None:
    with StorageDouble() as storage:
        storage.put("rid-1", "https://example.com/a", "text")
        storage.expire("rid-1")
        with pytest.raises(PageNotStored, match=r"no stored page has rid 'rid-1'.*30 days"):
            read_stored_page("rid-1", environ=storage_env(storage))


def test_a_refused_token_names_the_variable_not_the_value() -> None:
    with StorageDouble() as storage:
        env = {
            "CRAWLBASE_TOKEN": "not-the-right-token",
            "CITECHECK_CRAWLBASE_URL": storage.base_url,
        }
        with pytest.raises(ConfigurationError) as info:
            read_stored_page("rid-1", environ=env)
    assert "CRAWLBASE_TOKEN" in str(info.value)
    assert "not-the-right-token" not in str(info.value)


def test_no_token_names_both_variables() -> None:
    with pytest.raises(ConfigurationError, match="set CRAWLBASE_TOKEN \\(or CRAWLBASE_JS_TOKEN"):
        read_stored_page("rid-1", environ={})


def test_an_unreachable_storage_api_is_a_message_without_the_token() -> None:
    with StorageDouble() as storage:
        env = storage_env(storage)
    # The double is stopped: nothing listens on its port any more.
    with pytest.raises(StorageError, match="could not be reached") as info:
        read_stored_page("rid-1", environ=env)
    assert env["CRAWLBASE_TOKEN"] not in str(info.value)


def test_sixteen_first_writers_to_a_fresh_file_all_get_the_lock(tmp_path: Path) -> None:
    # The service's first requests arrive together: each one's write check opens the
    # fresh file and switches it to WAL. None may be told the index cannot be written.
    failures: list[str] = []
    for trial in range(20):
        index = AuditIndex(tmp_path / f"audit-{trial}.db", busy_timeout=5)

        def check(index: AuditIndex = index) -> None:
            try:
                index.check(write=True)
            except AuditError as exc:
                failures.append(str(exc))

        threads = [threading.Thread(target=check) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
