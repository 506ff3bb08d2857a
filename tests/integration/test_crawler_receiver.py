"""``POST /crawler/deliveries``: the Crawler's deliveries are kept in their job's store;
bad ones are refused with a 4xx and a log line, and the receiver keeps serving.

Every server is a real uvicorn on 127.0.0.1 (:func:`tests.integration.test_service.serving`);
deliveries come from the loopback Crawler (:mod:`tests.doubles.crawler`) or are built
here byte by byte; every wait is bounded.
"""

from __future__ import annotations

import gzip
import json
import logging
import random
import sqlite3
import time
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from pytest_citecheck.frontends.service import ServiceConfig
from pytest_citecheck.large_audit.job_store import (
    CITATION_HEADER,
    JOB_HEADER,
    Delivery,
    DeliveryOutcome,
    JobState,
    JobStore,
    citation_id,
)
from tests.doubles.crawlbase import Page
from tests.doubles.crawler import MONITOR_AGENT, CrawlerDouble
from tests.integration.test_service import serving

KEY = "webhook-key-0123456789abcdef"
JOB = "nightly"
A, B, C = "https://example.com/a", "https://example.com/b", "https://example.com/c"
PAGES = {A: "# A\n\nWater boils at 100 C.", B: "# B\n\nIce melts at 0 C.", C: "# C\n\nSteam."}
# Small caps, so the oversized cases cost little.
CAPS = {"max_delivery_bytes": 64 * 1024, "max_delivery_page_bytes": 1024 * 1024}


def make_job(root: Path) -> JobStore:
    store = JobStore.create(root, JOB)
    store.add([(citation_id(f"c{i}", 1), url) for i, url in enumerate((A, B, C), 1)])
    return store


@pytest.fixture
def jobs(tmp_path: Path) -> Path:
    make_job(tmp_path)
    return tmp_path


@pytest.fixture
def store(jobs: Path) -> JobStore:
    opened = JobStore.open(jobs, JOB)
    assert opened is not None
    return opened


@pytest.fixture
def webhook(jobs: Path) -> Iterator[str]:
    """The receiver's webhook URL, the key in its query string (as the Crawler's is)."""
    config = ServiceConfig(api_key=KEY, jobs_dir=jobs, **CAPS)
    with serving(config, {}) as url:
        yield f"{url}/crawler/deliveries?key={KEY}"


def push(crawler: CrawlerDouble, url: str, citation: str, **extra: str) -> httpx.Response:
    params = {
        "token": crawler.tokens["normal"],
        "url": url,
        "callback": "true",
        "crawler": JOB,
        "callback_headers": f"{JOB_HEADER}:{JOB}|{CITATION_HEADER}:{citation}",
        **extra,
    }
    return httpx.get(crawler.base_url, params=params, timeout=2)


def push_all(store: JobStore, crawler: CrawlerDouble, **extra: str) -> None:
    """What a pusher does: take the citations, mark each sent and push it, write its
    rid down (its delivery may come first: it finds its citation by the echoed id)."""
    for citation, url in store.take_for_push(10):
        store.mark_sending(citation)
        reply = push(crawler, url, citation, **extra)
        store.mark_pushed(citation, reply.json()["rid"])


def delivery_headers(rid: str, citation: str | None = None, **more: str) -> dict[str, str]:
    headers = {
        "Content-Type": "text/plain",
        "Content-Encoding": "gzip",
        "Original-Status": "200",
        "PC-Status": "200",
        "rid": rid,
        "url": A,
        JOB_HEADER: JOB,
    }
    if citation is not None:
        headers[CITATION_HEADER] = citation
    headers.update(more)
    return headers


def post(webhook: str, body: bytes, headers: dict[str, str], **kw: Any) -> httpx.Response:
    return httpx.post(webhook, content=body, headers=headers, timeout=10, **kw)


def pushed_store(store: JobStore) -> None:
    """The job with c1 pushed (rid-a known) and c2 sent but its answer lost."""
    for citation, _ in store.take_for_push(2):
        store.mark_sending(citation)
    store.mark_pushed("c1#1", "rid-a")


# -- deliveries from the Crawler ---------------------------------------------------------


@pytest.mark.parametrize("fmt", ["html", "json"])
def test_every_delivery_is_kept_for_its_citation_whatever_the_order(
    store: JobStore, webhook: str, fmt: str
) -> None:
    with CrawlerDouble({JOB: webhook}, workers=1) as crawler:
        # Pushed A, B, C; crawled in 3, 2 and 1 minutes: delivered C, B, A.
        for n, url in enumerate((A, B, C)):
            crawler.add(url, Page(markdown=PAGES[url]), delay=180.0 - 60 * n)
        push_all(store, crawler, format=fmt, md_readability="true")
        crawler.advance(180.0)
        assert crawler.wait_idle(timeout=10)
    assert [a.url for a in crawler.deliveries] == [C, B, A]
    assert all(a.status == 204 for a in crawler.deliveries)
    assert crawler.retries == 0
    assert store.counts()[JobState.DELIVERED] == 3
    for i, url in enumerate((A, B, C), 1):
        got = store.delivery(citation_id(f"c{i}", 1))
        assert got is not None
        assert got.text() == PAGES[url] and got.url == url
        assert got.pc_status == 200 and got.original_status == 200


def test_a_delivery_whose_push_answer_was_lost_binds_to_its_citation(
    store: JobStore, webhook: str
) -> None:
    with CrawlerDouble({JOB: webhook}) as crawler:
        # The pusher gives up on the answer before the page is delivered.
        crawler.add(A, Page(markdown=PAGES[A]), lose_answer=0.5, delay=60.0)
        [(citation, url)] = store.take_for_push(1)
        store.mark_sending(citation)  # as a pusher does, just before the request goes out
        with pytest.raises(httpx.HTTPError):
            push(crawler, url, citation)  # no rid comes back: it stays `pushing`
        assert store.rows(JobState.PUSHING)[0].rid is None
        crawler.advance(60.0)
        assert crawler.wait_idle(timeout=10)
    [pushed] = crawler.pushes_for(A)
    assert [a.status for a in crawler.deliveries] == [204]
    got = store.delivery(citation)
    assert got is not None and got.rid == pushed.rid and got.text() == PAGES[A]
    [row] = store.rows(JobState.DELIVERED)
    assert row.citation == citation and row.rid == pushed.rid


def test_a_repeated_delivery_is_acknowledged_and_the_first_copy_kept(
    store: JobStore, webhook: str
) -> None:
    with CrawlerDouble({JOB: webhook}) as crawler:
        crawler.add(A, Page(markdown=PAGES[A]), copies=2)
        push_all(store, crawler)
        assert crawler.wait_idle(timeout=10)
    a_copies = [a for a in crawler.deliveries if a.url == A]
    assert [a.status for a in a_copies] == [204, 204]
    assert crawler.retries == 0
    assert store.copies("c1#1") == 2
    # A later copy with other bytes does not replace the first.
    rid = store.rows(JobState.DELIVERED)[0].rid
    assert rid is not None
    again = post(webhook, gzip.compress(b"# something else"), delivery_headers(rid))
    assert again.status_code == 204 and again.headers["citecheck-delivery"] == "duplicate"
    got = store.delivery("c1#1")
    assert got is not None and got.text() == PAGES[A]


def test_a_refused_delivery_is_crawled_again_and_charged_until_it_is_taken(
    store: JobStore, webhook: str
) -> None:
    wrong = webhook.replace(KEY, "not-the-key-0123456789")
    with CrawlerDouble({JOB: wrong}, retry_wait=0.05) as crawler:
        crawler.add(A, Page(markdown=PAGES[A]))
        [(citation, url)] = store.take_for_push(1)
        store.mark_sending(citation)
        store.mark_pushed(citation, push(crawler, url, citation).json()["rid"])
        deadline = time.monotonic() + 10
        while crawler.retries < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        crawler.set_webhook(JOB, webhook)  # the operator fixes the webhook URL
        assert crawler.wait_idle(timeout=10)
    statuses = [a.status for a in crawler.deliveries]
    assert statuses[-1] == 204 and set(statuses[:-1]) == {401}
    assert crawler.retries == len(statuses) - 1 >= 2
    assert crawler.credits == 1 + crawler.retries
    assert store.counts()[JobState.DELIVERED] == 1


def test_the_monitor_bot_gets_200_and_no_store_is_touched(jobs: Path, webhook: str) -> None:
    store_file = jobs / JOB / "job.sqlite"
    before = store_file.read_bytes()
    with CrawlerDouble({JOB: webhook}) as crawler:
        assert crawler.monitor() == [200]
        assert not crawler.paused
    assert store_file.read_bytes() == before
    assert not (jobs / "monitor").exists()


def test_a_wrong_key_fails_the_monitor_too_so_the_crawler_pauses(
    store: JobStore, webhook: str
) -> None:
    wrong = webhook.replace(KEY, "not-the-key-0123456789")
    with CrawlerDouble({JOB: wrong}) as crawler:
        assert crawler.monitor() == [401]
        assert crawler.paused
        crawler.add(A, Page(markdown=PAGES[A]))
        push_all(store, crawler)
        # Paused: nothing is delivered, so nothing is refused and charged again.
        assert not crawler.wait_idle(timeout=0.3)
        assert crawler.deliveries == [] and crawler.retries == 0
        crawler.set_webhook(JOB, webhook)
        assert crawler.monitor() == [200]
        assert crawler.wait_idle(timeout=10)
    assert crawler.retries == 0
    assert store.counts()[JobState.DELIVERED] == 3


# -- refusals: each one 4xx, a log line without the key, and the server still serving -----


def _bomb(size: int) -> bytes:
    """``size`` zero bytes, gzip-compressed (about a thousandth of that)."""
    packer = zlib.compressobj(9, wbits=31)
    block = bytes(1024 * 1024)
    parts = [packer.compress(block) for _ in range(size // len(block))]
    return b"".join(parts) + packer.flush()


def _json_body(envelope: object) -> bytes:
    return gzip.compress(json.dumps(envelope).encode())


JSON = {"Content-Type": "gzip/json"}
# Bytes gzip cannot shrink: more than CAPS' 64 KiB as sent.
NOISE = random.Random(0).randbytes(96 * 1024)
GOOD = gzip.compress(PAGES[A].encode())
AS_JSON = delivery_headers("rid-a", **JSON)
NOT_COMPRESSED = delivery_headers("rid-a", **{"Content-Encoding": ""})

# (why, body, headers, the status expected, words the reason has)
REFUSALS: list[tuple[str, bytes, dict[str, str], int, str]] = [
    ("unknown job", GOOD, delivery_headers("rid-a", **{JOB_HEADER: "weekly"}), 404, "no such job"),
    ("no job header", GOOD, {"Content-Encoding": "gzip", "rid": "rid-a"}, 422, JOB_HEADER),
    ("unknown rid", GOOD, delivery_headers("rid-nobody-pushed"), 404, "no citation"),
    (
        "an echoed citation whose push was answered with another rid",
        GOOD,
        delivery_headers("rid-other", citation="c3#1"),
        404,
        "no citation",
    ),
    ("no rid", GOOD, {k: v for k, v in delivery_headers("x").items() if k != "rid"}, 422, "rid"),
    ("not gzip", PAGES[A].encode(), NOT_COMPRESSED, 415, "gzip"),
    (
        "another encoding",
        zlib.compress(PAGES[A].encode()),
        delivery_headers("rid-a", **{"Content-Encoding": "deflate"}),
        415,
        "gzip",
    ),
    ("gzip in name only", b"<html>plain</html>", delivery_headers("rid-a"), 400, "gzip stream"),
    ("a truncated gzip stream", GOOD[:-12], delivery_headers("rid-a"), 400, "gzip stream"),
    ("trailing garbage", GOOD + b"garbage", delivery_headers("rid-a"), 400, "gzip stream"),
    ("oversized as sent", gzip.compress(NOISE), delivery_headers("rid-a"), 413, "larger than"),
    ("a gzip bomb", _bomb(8 * 1024 * 1024), delivery_headers("rid-a"), 413, "decompresses to more"),
    ("malformed JSON", gzip.compress(b'{"rid": "rid-a", "body": '), AS_JSON, 422, "JSON"),
    ("JSON nested too deep", gzip.compress(b"[" * 200_000), AS_JSON, 422, "nested too deep"),
    ("JSON that is not an object", _json_body(["rid-a"]), AS_JSON, 422, "body"),
    ("JSON without a body", _json_body({"rid": "rid-a"}), AS_JSON, 422, "body"),
]


@pytest.mark.parametrize(
    ("why", "body", "headers", "status", "words"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_a_bad_delivery_is_refused_and_the_receiver_keeps_serving(
    jobs: Path,
    store: JobStore,
    caplog: pytest.LogCaptureFixture,
    why: str,
    body: bytes,
    headers: dict[str, str],
    status: int,
    words: str,
) -> None:
    pushed_store(store)
    # c3's push was answered with its rid: its echoed id cannot claim another one's delivery.
    store.take_for_push(1)
    store.mark_pushed("c3#1", "rid-c")
    caplog.set_level(logging.INFO)
    config = ServiceConfig(api_key=KEY, jobs_dir=jobs, **CAPS)
    with serving(config, {}, log_config=None, log_level="info") as url:
        webhook = f"{url}/crawler/deliveries?key={KEY}"
        refused = post(webhook, body, headers)
        health = httpx.get(f"{url}/health", timeout=5)
        good = post(webhook, GOOD, delivery_headers("rid-a"))
    assert refused.status_code == status, refused.text
    assert words in refused.json()["detail"]
    assert health.status_code == 200 and good.status_code == 204
    lines = [r.getMessage() for r in caplog.records if r.name == "pytest_citecheck.service"]
    assert any(f"crawler delivery refused ({status})" in line for line in lines), lines
    server_lines = "\n".join(r.getMessage() for r in caplog.records if r.name != "httpx")
    assert KEY not in server_lines and "key=" not in server_lines
    # Nothing but the good delivery was kept.
    got = store.delivery("c1#1")
    assert got is not None and got.text() == PAGES[A] and store.copies("c1#1") == 1


@pytest.mark.parametrize(
    ("how", "status"),
    [
        ({}, 401),
        ({"params": {"key": "not-the-key-0123456789"}}, 401),
        ({"params": {"key": KEY}}, 204),
        ({"headers": {"Authorization": f"Bearer {KEY}"}}, 204),
    ],
    ids=["no key", "wrong key", "key in the URL", "key as a bearer header"],
)
def test_the_key_is_required_in_the_url_or_as_a_bearer_header(
    jobs: Path, store: JobStore, how: dict[str, dict[str, str]], status: int
) -> None:
    pushed_store(store)
    config = ServiceConfig(api_key=KEY, jobs_dir=jobs)
    headers = delivery_headers("rid-a") | how.get("headers", {})
    with serving(config, {}) as url:
        reply = httpx.post(
            f"{url}/crawler/deliveries",
            content=GOOD,
            headers=headers,
            params=how.get("params"),
            timeout=10,
        )
        # The monitor bot is not let past a wrong key either.
        monitor = httpx.post(
            f"{url}/crawler/deliveries",
            content=_json_body({"rid": "", "body": ""}),
            headers={"User-Agent": MONITOR_AGENT, "Content-Encoding": "gzip", **JSON}
            | how.get("headers", {}),
            params=how.get("params"),
            timeout=10,
        )
    assert reply.status_code == status
    assert monitor.status_code == (200 if status == 204 else 401)
    assert store.counts()[JobState.DELIVERED] == (1 if status == 204 else 0)


def test_a_foreign_host_header_is_refused(store: JobStore, webhook: str) -> None:
    pushed_store(store)
    reply = post(webhook, GOOD, delivery_headers("rid-a", Host="evil.example"))
    assert reply.status_code == 400 and "Host" in reply.json()["detail"]


def test_a_service_without_jobs_refuses_deliveries_but_answers_the_monitor() -> None:
    with serving(ServiceConfig(), {}) as url:
        delivery = post(f"{url}/crawler/deliveries", GOOD, delivery_headers("rid-a"))
        monitor = httpx.post(
            f"{url}/crawler/deliveries", headers={"User-Agent": MONITOR_AGENT}, timeout=10
        )
    assert delivery.status_code == 404 and "--jobs-dir" in delivery.json()["detail"]
    assert monitor.status_code == 200 and monitor.content == b""


def test_a_store_that_cannot_be_written_is_503_and_the_delivery_comes_again(
    store: JobStore, jobs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pushed_store(store)
    real = JobStore.record_delivery
    failures = [sqlite3.OperationalError("database is locked")]

    def locked_once(self: JobStore, delivery: Delivery, echoed: str | None) -> DeliveryOutcome:
        if failures:
            raise failures.pop()
        return real(self, delivery, echoed)

    monkeypatch.setattr(JobStore, "record_delivery", locked_once)
    with serving(ServiceConfig(api_key=KEY, jobs_dir=jobs), {}) as url:
        webhook = f"{url}/crawler/deliveries?key={KEY}"
        first = post(webhook, GOOD, delivery_headers("rid-a"))
        again = post(webhook, GOOD, delivery_headers("rid-a"))
    assert first.status_code == 503 and first.headers["retry-after"] == "5"
    assert "service log" in first.json()["detail"] and "locked" not in first.text
    assert again.status_code == 204 and again.headers["citecheck-delivery"] == "accepted"
    assert store.copies("c1#1") == 1


def test_deliveries_arriving_together_are_each_kept_or_refused_on_their_own(
    tmp_path: Path,
) -> None:
    # Many at once: the writer takes them as batches, one commit each.
    store = JobStore.create(tmp_path, JOB)
    store.add([(citation_id(f"c{i}", 1), f"https://example.com/{i}") for i in range(40)])
    for citation, _ in store.take_for_push(40):
        store.mark_pushed(citation, f"rid-{citation}")
    sends = [(f"rid-c{i}#1", gzip.compress(f"# page {i}".encode())) for i in range(40)]
    sends += [("rid-c7#1", gzip.compress(b"# again")), ("rid-nobody", GOOD), ("rid-c9#1", b"<p>")]
    with serving(ServiceConfig(api_key=KEY, jobs_dir=tmp_path), {}) as url:
        webhook = f"{url}/crawler/deliveries?key={KEY}"
        with httpx.Client(timeout=10) as client, ThreadPoolExecutor(max_workers=16) as pool:
            replies = list(
                pool.map(
                    lambda send: client.post(
                        webhook, content=send[1], headers=delivery_headers(send[0])
                    ),
                    sends,
                )
            )
    assert [r.status_code for r in replies] == [204] * 41 + [404, 400]
    assert store.counts()[JobState.DELIVERED] == 40
    outcomes = {r.headers["citecheck-delivery"] for r in (replies[7], replies[40])}
    assert outcomes == {"accepted", "duplicate"}
    for i in range(40):
        got = store.delivery(citation_id(f"c{i}", 1))
        assert got is not None and got.text() in (f"# page {i}", "# again")
    assert store.copies("c7#1") == 2


def test_an_acknowledged_delivery_writes_no_access_line_a_refused_one_does(
    jobs: Path, store: JobStore, caplog: pytest.LogCaptureFixture
) -> None:
    pushed_store(store)
    caplog.set_level(logging.INFO)
    config = ServiceConfig(api_key=KEY, jobs_dir=jobs)
    with serving(config, {}, log_config=None, log_level="info") as url:
        webhook = f"{url}/crawler/deliveries?key={KEY}"
        kept = post(webhook, GOOD, delivery_headers("rid-a"))
        refused = post(webhook, GOOD, delivery_headers("rid-nobody-pushed"))
        monitor = httpx.post(webhook, headers={"User-Agent": MONITOR_AGENT}, timeout=10)
    assert (kept.status_code, refused.status_code, monitor.status_code) == (204, 404, 200)
    access = [r.getMessage() for r in caplog.records if r.name == "uvicorn.access"]
    assert not any(" 204" in line for line in access), access
    assert any('"POST /crawler/deliveries HTTP/1.1" 404' in line for line in access), access
    assert any('"POST /crawler/deliveries HTTP/1.1" 200' in line for line in access), access


# -- odd values a delivery may carry: kept (or refused with a 4xx), never a 500 ---------

# (why, JSON envelope or None for the plain page, extra headers, pc_status, page, rid kept)
ODD: list[tuple[str, dict[str, object] | None, dict[str, str], int | None, str]] = [
    ("a lone surrogate in the body", {"body": "caf\ud800 au lait"}, {}, 200, "caf\ufffd au lait"),
    ("a pc_status beyond SQLite's integer", {"body": "p", "pc_status": 2**70}, {}, 200, "p"),
    ("a negative pc_status", {"body": "p", "pc_status": -1}, {}, 200, "p"),
    ("a pc_status that is a word", {"body": "p", "pc_status": "ok"}, {}, 200, "p"),
    ("a pc_status as a string", {"body": "p", "pc_status": "503"}, {}, 503, "p"),
    ("a pc_status that is a boolean", {"body": "p", "pc_status": True}, {}, 200, "p"),
    ("a lone surrogate in the url", {"body": "p", "url": "https://a/\udfff"}, {}, 200, "p"),
    ("a header status of a non-ASCII digit", None, {"PC-Status": "\u00b2"}, None, PAGES[A]),
    ("a header status of many digits", None, {"PC-Status": "9" * 40}, None, PAGES[A]),
]


@pytest.mark.parametrize(
    ("why", "envelope", "headers", "pc_status", "page"), ODD, ids=[o[0] for o in ODD]
)
def test_odd_values_in_a_delivery_are_kept_by_the_headers_rule_never_a_500(
    jobs: Path,
    store: JobStore,
    why: str,
    envelope: dict[str, object] | None,
    headers: dict[str, str],
    pc_status: int | None,
    page: str,
) -> None:
    pushed_store(store)
    if envelope is None:
        body, sent = GOOD, delivery_headers("rid-a", **{"PC-Status": "200"} | headers)
    else:
        body = gzip.compress(json.dumps({"rid": "rid-a", **envelope}).encode())
        # The header says 200: a JSON status that is no status leaves the header's.
        sent = delivery_headers("rid-a", **JSON)
    config = ServiceConfig(api_key=KEY, jobs_dir=jobs, **CAPS)
    raw = {name: value.encode("latin-1") for name, value in sent.items()}  # as sent on the wire
    with serving(config, {}) as url:
        reply = httpx.post(f"{url}/crawler/deliveries?key={KEY}", content=body, headers=raw)
    assert reply.status_code == 204, reply.text
    got = store.delivery("c1#1")
    assert got is not None and got.text() == page
    assert got.pc_status == pc_status


def test_a_json_rid_with_a_lone_surrogate_is_no_citation_of_the_job(
    jobs: Path, store: JobStore
) -> None:
    pushed_store(store)
    body = gzip.compress(json.dumps({"rid": "rid-\ud800", "body": "p"}).encode())
    with serving(ServiceConfig(api_key=KEY, jobs_dir=jobs), {}) as url:
        reply = post(f"{url}/crawler/deliveries?key={KEY}", body, delivery_headers("x", **JSON))
    assert reply.status_code == 404 and "no citation" in reply.json()["detail"]
    assert store.counts()[JobState.DELIVERED] == 0
