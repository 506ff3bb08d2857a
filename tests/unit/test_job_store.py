"""A job's state survives its processes: nothing is pushed twice, no delivery is lost."""

from __future__ import annotations

import gzip
import sqlite3
import time
from pathlib import Path

import pytest

from pytest_citecheck.large_audit.job_store import (
    Delivery,
    DeliveryOutcome,
    JobState,
    JobStore,
    citation_id,
)


def delivery(rid: str, url: str = "https://example.com/a", text: str = "# Page") -> Delivery:
    return Delivery(rid, url, 200, 200, gzip.compress(text.encode()), time.time())


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    job = JobStore.create(tmp_path, "nightly")
    job.add([(citation_id("c1", 1), "https://example.com/a"), (citation_id("c2", 1), "https://b")])
    return job


def test_adding_the_same_citations_again_changes_nothing(store: JobStore) -> None:
    store.take_for_push(1)
    assert store.add([("c1#1", "https://example.com/a"), ("c3#1", "https://c")]) == 1
    assert store.counts()[JobState.PUSHING] == 1
    assert store.counts()[JobState.QUEUED] == 2


def test_a_citation_taken_for_a_push_is_never_taken_again_even_by_another_process(
    store: JobStore, tmp_path: Path
) -> None:
    first = store.take_for_push(1)
    # A second process (a resumed pusher) opens the same job.
    again = JobStore.open(tmp_path, "nightly")
    assert again is not None
    second = again.take_for_push(10)
    assert [c for c, _ in first] == ["c1#1"]
    assert [c for c, _ in second] == ["c2#1"]
    assert again.take_for_push(10) == []


def test_a_delivery_whose_push_answer_was_lost_still_finds_its_citation(store: JobStore) -> None:
    for citation, _ in store.take_for_push(2):
        store.mark_sending(citation)
    store.mark_pushed("c2#1", "rid-2")
    # c1's push reached Crawlbase but the pusher died before writing its rid down.
    assert store.record_delivery(delivery("rid-1"), echoed_citation="c1#1") == "accepted"
    assert store.record_delivery(delivery("rid-2", text="# B"), None) == "accepted"
    assert store.counts()[JobState.DELIVERED] == 2
    got = store.delivery("c1#1")
    assert got is not None and got.text() == "# Page" and got.rid == "rid-1"


def test_a_repeated_delivery_keeps_the_first_and_an_unknown_one_is_refused(
    store: JobStore,
) -> None:
    store.take_for_push(1)
    store.mark_pushed("c1#1", "rid-1")
    assert store.record_delivery(delivery("rid-1", text="first"), None) == DeliveryOutcome.ACCEPTED
    assert store.record_delivery(delivery("rid-1", text="again"), None) == DeliveryOutcome.DUPLICATE
    assert store.record_delivery(delivery("rid-9"), "nobody#1") == DeliveryOutcome.UNKNOWN
    # A citation never pushed cannot be claimed by an echoed id either.
    assert store.record_delivery(delivery("rid-8"), "c2#1") == DeliveryOutcome.UNKNOWN
    first = store.delivery("c1#1")
    assert first is not None and first.text() == "first"
    assert store.copies("c1#1") == 2


def test_a_push_answer_arriving_after_its_delivery_does_not_move_the_citation_back(
    store: JobStore,
) -> None:
    store.take_for_push(1)
    store.mark_sending("c1#1")
    store.record_delivery(delivery("rid-1"), echoed_citation="c1#1")
    store.mark_pushed("c1#1", "rid-1")
    assert [r.state for r in store.rows() if r.citation == "c1#1"] == [JobState.DELIVERED]


def test_job_names_that_are_not_folder_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="letters, digits"):
        JobStore.create(tmp_path, "../escape")
    assert JobStore.open(tmp_path, "../escape") is None
    assert JobStore.open(tmp_path, "missing") is None


# -- a pusher that died, and one runner at a time ---------------------------------------


def test_a_citation_taken_but_never_sent_goes_back_to_the_queue_on_resume(
    store: JobStore,
) -> None:
    (sent, _), (unsent, _) = store.take_for_push(2)
    store.mark_sending(sent)  # its request went out; then the process died
    assert store.recover_unsent() == 1
    states = store.states()
    assert states[unsent] is JobState.QUEUED
    assert states[sent] is JobState.PUSHING  # may be at Crawlbase: never pushed again
    assert [row.citation for row in store.awaiting_delivery()] == [sent]
    assert {row.citation: row.pushes for row in store.rows()} == {sent: 1, unsent: 0}
    assert store.take_for_push(5) == [(unsent, "https://b")]


def test_a_sent_push_whose_answer_was_lost_still_gets_its_delivery(store: JobStore) -> None:
    ((cid, url),) = store.take_for_push(1)
    store.mark_sending(cid)
    store.recover_unsent()
    assert store.record_delivery(delivery("rid-late", url), cid) is DeliveryOutcome.ACCEPTED
    assert store.states()[cid] is JobState.DELIVERED
    assert store.awaiting_delivery() == []


def test_a_delivery_echoing_a_citation_taken_but_never_sent_is_refused(
    store: JobStore,
) -> None:
    # The pusher took c1 and died before its request went out: nothing is at Crawlbase,
    # so a delivery naming it (an unknown rid) is not the Crawler's and is not kept.
    ((cid, url),) = store.take_for_push(1)
    assert store.record_delivery(delivery("rid-forged", url), cid) is DeliveryOutcome.UNKNOWN
    assert store.delivery(cid) is None
    # ... and the resume pushes it, as it would have without that delivery.
    assert store.recover_unsent() == 1
    assert store.take_for_push(5) == [(cid, url), ("c2#1", "https://b")]


def test_a_requeued_push_is_no_longer_marked_sent(store: JobStore) -> None:
    ((cid, _),) = store.take_for_push(1)
    store.mark_sending(cid)
    store.requeue(cid, "HTTP 429: not queued")
    store.take_for_push(1)
    assert store.recover_unsent() == 1  # taken again, not sent again: back in the queue


def test_only_one_runner_holds_a_job(store: JobStore, tmp_path: Path) -> None:
    from pytest_citecheck.large_audit.job_store import JobBusy

    other = JobStore.open(tmp_path, "nightly")
    assert other is not None
    with store.lock(), pytest.raises(JobBusy, match="another process"), other.lock():
        pass
    with other.lock():  # released when the first runner let go
        pass


def test_a_job_file_from_before_the_sent_mark_gains_it(tmp_path: Path) -> None:
    import sqlite3

    folder = tmp_path / "old"
    folder.mkdir()
    with sqlite3.connect(folder / "job.sqlite") as db:
        db.execute(
            "CREATE TABLE citations (citation TEXT PRIMARY KEY, url TEXT NOT NULL, "
            "state TEXT NOT NULL, rid TEXT UNIQUE, detail TEXT, "
            "pushes INTEGER NOT NULL DEFAULT 0, updated REAL NOT NULL)"
        )
        db.execute(
            "INSERT INTO citations VALUES ('c1#1', 'https://a', 'pushing', NULL, NULL, 1, 0)"
        )
    store = JobStore.create(tmp_path, "old")
    # Taken under the old rule, "pushing" may mean sent: it waits for its page.
    assert store.recover_unsent() == 0
    assert [row.citation for row in store.awaiting_delivery()] == ["c1#1"]


def test_a_batch_of_deliveries_is_committed_together_each_kept_or_refused_alone(
    store: JobStore, tmp_path: Path
) -> None:
    store.add([("c3#1", "https://c")])
    store.take_for_push(3)
    for n in (1, 2, 3):
        store.mark_pushed(f"c{n}#1", f"rid-{n}")
    reader = JobStore.open(tmp_path, "nightly")  # another process, e.g. the verifier
    assert reader is not None
    broken = Delivery("rid-2", None, 200, 200, b"", time.time())  # type: ignore[arg-type]
    with store.batch():
        assert store.record_delivery(delivery("rid-1"), None) == DeliveryOutcome.ACCEPTED
        with pytest.raises(sqlite3.IntegrityError):
            store.record_delivery(broken, None)
        assert store.record_delivery(delivery("rid-3"), None) == DeliveryOutcome.ACCEPTED
        assert store.record_delivery(delivery("rid-3"), None) == DeliveryOutcome.DUPLICATE
        # Nothing is visible outside the batch before it commits.
        assert reader.counts()[JobState.DELIVERED] == 0
    assert reader.counts()[JobState.DELIVERED] == 2
    assert [r.citation for r in reader.rows(JobState.PUSHED)] == ["c2#1"]
    assert reader.delivery("c2#1") is None and reader.copies("c3#1") == 2


def test_a_batch_that_fails_keeps_none_of_its_deliveries(store: JobStore) -> None:
    store.take_for_push(2)
    store.mark_pushed("c1#1", "rid-1")
    with pytest.raises(RuntimeError), store.batch():
        assert store.record_delivery(delivery("rid-1"), None) == DeliveryOutcome.ACCEPTED
        raise RuntimeError("the writer is stopped mid-batch")
    assert store.delivery("c1#1") is None and store.counts()[JobState.DELIVERED] == 0
    # The store takes the delivery again afterwards.
    assert store.record_delivery(delivery("rid-1"), None) == DeliveryOutcome.ACCEPTED
