"""``citecheck serve`` refuses before it spends: each attack gets a 4xx/503 and the
loopback doubles count zero upstream requests (Crawling API and judge).

Every server is a real uvicorn on 127.0.0.1 (:func:`tests.integration.test_service.serving`);
every wait is bounded.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from pytest_citecheck.frontends.cli import main
from pytest_citecheck.frontends.service import ServiceConfig
from pytest_citecheck.reports.audit import AuditIndex
from tests.doubles.batch import PAGES, SITE, add_pages, judge_by_page
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted
from tests.integration.test_service import OPENAI_KEY, body, serving
from tests.unit.test_url_policy import REFUSED

KEY = "service-key-0123456789abcdef"
ARTICLE_ABOUT_BOILING = "# Boiling\n\n" + "Water boils at 100 degrees Celsius at sea level. " * 8


class World:
    """The doubles, their environment, and a count of what reached them."""

    def __init__(self, api: CrawlbaseDouble, llm: LLMDouble) -> None:
        self.api = api
        self.llm = llm
        self.environ = {
            "CRAWLBASE_TOKEN": api.tokens["normal"],
            "CRAWLBASE_JS_TOKEN": api.tokens["javascript"],
            "CITECHECK_CRAWLBASE_URL": api.base_url,
            "OPENAI_API_KEY": OPENAI_KEY,
            "OPENAI_BASE_URL": llm.base_url("openai"),
        }

    @property
    def upstream(self) -> int:
        """Requests the service sent to the Crawling API and the judge."""
        return len(self.api.calls) + len(self.llm.calls)

    def reset(self) -> None:
        self.api.reset()
        self.llm.reset()


@pytest.fixture
def world() -> Iterator[World]:
    with CrawlbaseDouble() as api, LLMDouble(judge_by_page) as llm:
        add_pages(api)
        yield World(api, llm)


ONE_URL = {
    "claim": "Water boils at 100 degrees Celsius at sea level.",
    "urls": [f"{SITE}/articles/boiling"],
}


def post(url: str, payload: object, **kwargs: object) -> httpx.Response:
    kwargs.setdefault("timeout", 30)
    return httpx.post(f"{url}/verify", json=payload, **kwargs)  # type: ignore[arg-type]


# -- the cross-site post, the foreign Host header, the key -----------------------------


def test_a_cross_site_text_plain_post_is_415_and_spends_nothing(world: World) -> None:
    with serving(ServiceConfig(), world.environ) as url:
        reply = httpx.post(
            f"{url}/verify",
            content=json.dumps(ONE_URL).encode(),
            headers={"content-type": "text/plain", "origin": "http://evil.example"},
            timeout=30,
        )
        # A browser's CORS preflight gets no grant either.
        preflight = httpx.options(
            f"{url}/verify",
            headers={
                "origin": "http://evil.example",
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type",
            },
        )
    assert reply.status_code == 415
    assert "application/json" in reply.json()["detail"]
    assert "access-control-allow-origin" not in preflight.headers
    assert world.upstream == 0


@pytest.mark.parametrize("kind", ["application/x-www-form-urlencoded", "multipart/form-data", ""])
def test_other_body_types_are_415(world: World, kind: str) -> None:
    headers = {"content-type": kind} if kind else {}
    with serving(ServiceConfig(), world.environ) as url:
        reply = httpx.post(
            f"{url}/verify", content=json.dumps(ONE_URL).encode(), headers=headers, timeout=30
        )
    assert reply.status_code == 415
    assert world.upstream == 0


def test_json_with_a_charset_is_accepted(world: World) -> None:
    with serving(ServiceConfig(), world.environ) as url:
        reply = httpx.post(
            f"{url}/verify",
            content=json.dumps(ONE_URL).encode(),
            headers={"content-type": "application/json; charset=utf-8"},
            timeout=60,
        )
    assert reply.status_code == 200, reply.text
    assert reply.json()["label"] == "supported"


def test_a_foreign_host_header_is_400_and_spends_nothing(world: World) -> None:
    with serving(ServiceConfig(), world.environ) as url:
        rebound = post(url, ONE_URL, headers={"host": "evil.example"})
        docs = httpx.get(f"{url}/docs", headers={"host": "evil.example:8000"})
        by_name = httpx.get(f"{url}/health", headers={"host": "localhost:8000"})
    assert rebound.status_code == 400
    assert "Host" in rebound.json()["detail"]
    assert docs.status_code == 400
    assert by_name.status_code == 200
    assert world.upstream == 0


def test_an_allowed_host_name_is_served(world: World) -> None:
    config = ServiceConfig(allowed_hosts=("127.0.0.1", "*.example.org"))
    with serving(config, world.environ) as url:
        ok = httpx.get(f"{url}/health", headers={"host": "citecheck.example.org"})
        other = httpx.get(f"{url}/health", headers={"host": "example.net"})
    assert ok.status_code == 200
    assert other.status_code == 400


def test_with_a_key_a_request_without_it_is_401_and_spends_nothing(world: World) -> None:
    with serving(ServiceConfig(api_key=KEY), world.environ) as url:
        missing = post(url, ONE_URL)
        wrong = post(url, ONE_URL, headers={"authorization": "Bearer not-the-key"})
        basic = post(url, ONE_URL, headers={"authorization": f"Basic {KEY}"})
        assert world.upstream == 0
        right = post(url, ONE_URL, headers={"authorization": f"Bearer {KEY}"})
    for reply in (missing, wrong, basic):
        assert reply.status_code == 401
        assert reply.headers["www-authenticate"] == "Bearer"
        assert KEY not in reply.text
    assert right.status_code == 200, right.text
    assert world.upstream > 0


def test_health_tells_an_unauthenticated_caller_only_that_it_is_up(world: World) -> None:
    with serving(ServiceConfig(api_key=KEY), world.environ) as url:
        anonymous = httpx.get(f"{url}/health")
        operator = httpx.get(f"{url}/health", headers={"authorization": f"Bearer {KEY}"})
    assert anonymous.status_code == 200
    assert anonymous.json() == {"status": "ok"}
    detail = operator.json()
    assert detail["status"] == "ok"
    assert detail["configured"]["CRAWLBASE_TOKEN"] is True
    assert detail["busy"] == 0
    assert detail["url_policy"] == "public"
    assert KEY not in operator.text


# -- the body: duplicate keys, no URLs, deep nesting, caps --------------------------------


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (
            b'{"claim": "Water boils.", "claim": "Ignore that.", "urls": ["https://example.com/a"]}',
            "given twice",
        ),
        (b'{"claim": "Water boils.", "urls": []}', "no URLs"),
        (b'{"claim": "Water boils.", "urls": ' + b"[" * 1000 + b"]" * 1000 + b"}", "nested"),
        (b'{"claim": ' + b'{"a": ' * 400 + b"1" + b"}" * 400 + b', "urls": []}', "nested"),
    ],
    ids=["duplicate-key", "no-urls", "1000-deep-array", "400-deep-object"],
)
def test_bodies_claim_files_would_refuse_are_422(world: World, raw: bytes, words: str) -> None:
    with serving(ServiceConfig(), world.environ) as url:
        reply = httpx.post(
            f"{url}/verify", content=raw, headers={"content-type": "application/json"}
        )
    assert reply.status_code == 422, reply.text
    assert any(words in p["msg"] for p in reply.json()["detail"]), reply.text
    assert world.upstream == 0


def test_brackets_inside_strings_are_not_nesting() -> None:
    from pytest_citecheck.frontends.service import claim_from_body

    text = "Water boils " + "[{" * 100 + ' \\" ' + "}]" * 100
    raw = json.dumps({"claim": text, "urls": [f"{SITE}/articles/boiling"]}).encode()
    claim = claim_from_body(raw, "r1", ServiceConfig(max_claim_chars=1000))
    assert claim.claim == text


def test_a_claim_over_the_cap_is_422(world: World) -> None:
    config = ServiceConfig(max_claim_chars=100)
    with serving(config, world.environ) as url:
        reply = post(url, {"claim": "Water boils. " * 10, "urls": [f"{SITE}/articles/boiling"]})
    assert reply.status_code == 422
    [problem] = reply.json()["detail"]
    assert problem["msg"] == "claim text is 129 characters long (at most 100)"
    assert "the server's --max-claim-chars" in problem["fix"]
    assert world.upstream == 0


def test_a_cap_raised_by_the_operator_is_the_only_cap(world: World) -> None:
    # One rule for claim files and requests: the server's cap, not a second default.
    long = "Water boils at 100 degrees Celsius at sea level. " * 50  # ~2,450 characters
    with serving(ServiceConfig(max_claim_chars=5000), world.environ) as url:
        reply = post(url, {"claim": long, "urls": [f"{SITE}/articles/boiling"]})
    assert reply.status_code == 200, reply.text


# -- the judge allow-list ----------------------------------------------------------------


@pytest.mark.parametrize("judge", ["openai:gpt-4.5-preview", "ollama:llama3", "anthropic:claude"])
def test_a_judge_the_operator_did_not_allow_is_403_and_spends_nothing(
    world: World, judge: str
) -> None:
    with serving(ServiceConfig(), world.environ) as url:
        reply = post(url, {**ONE_URL, "judge": judge})
    assert reply.status_code == 403
    assert judge in reply.json()["detail"]
    assert "openai:gpt-4o-mini" in reply.json()["detail"]  # what is allowed
    assert "127.0.0.1" not in reply.text and "11434" not in reply.text
    assert world.upstream == 0


def test_an_allowed_judge_may_be_named(world: World) -> None:
    config = ServiceConfig(allowed_judges=("openai:gpt-4o",))
    with serving(config, world.environ) as url:
        reply = post(url, {**ONE_URL, "judge": "OpenAI:gpt-4o"})
    assert reply.status_code == 200, reply.text
    assert world.llm.calls[0].model == "gpt-4o"


def test_a_reply_never_shows_the_address_of_an_internal_judge(world: World) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: the judge is unreachable
    config = ServiceConfig(
        judge_base_url=f"http://127.0.0.1:{port}/v1", allowed_judges=("openai-compatible:m",)
    )
    with serving(config, world.environ) as url:
        reply = post(url, {**ONE_URL, "judge": "openai-compatible:m"}, timeout=60)
    assert reply.status_code == 200, reply.text
    (verdict,) = reply.json()["verdicts"]
    assert verdict["reason"] == "judge_unavailable"
    assert "[internal address]" in verdict["detail"]
    assert str(port) not in reply.text and "127.0.0.1" not in reply.text


# -- the URL policy ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def open_service() -> Iterator[tuple[World, str]]:
    """One service for the many spellings (the doubles' counts are reset per test)."""
    with CrawlbaseDouble() as api, LLMDouble(judge_by_page) as llm:
        add_pages(api)
        world = World(api, llm)
        with serving(ServiceConfig(), world.environ) as url:
            yield world, url


@pytest.mark.parametrize(("target", "words"), REFUSED)
def test_an_internal_url_is_422_and_spends_nothing(
    open_service: tuple[World, str], target: str, words: str
) -> None:
    world, url = open_service
    world.reset()
    reply = post(url, {"claim": "Water boils.", "urls": [f"{SITE}/articles/boiling", target]})
    assert reply.status_code == 422, reply.text
    (problem,) = reply.json()["detail"]
    assert problem["type"] == "url_refused"
    assert problem["loc"] == ["body", "urls", 1]
    assert words in problem["msg"]
    assert target not in problem["msg"]  # credentials are not echoed
    assert world.upstream == 0


def test_the_service_own_address_is_refused(open_service: tuple[World, str]) -> None:
    world, url = open_service
    world.reset()
    reply = post(url, {"claim": "Water boils.", "urls": [f"{url}/health"]})
    assert reply.status_code == 422
    assert world.upstream == 0


def test_a_crawl_that_lands_on_an_internal_address_is_refused_and_never_shown(
    world: World, tmp_path: Path
) -> None:
    cited = f"{SITE}/innocent"
    metadata = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
    world.api.add(cited, Page(markdown=ARTICLE_ABOUT_BOILING, final_url=metadata))
    audit = tmp_path / "audit.db"
    with serving(ServiceConfig(audit=audit), world.environ) as url:
        reply = post(url, {"claim": ONE_URL["claim"], "urls": [cited]})
    assert reply.status_code == 200, reply.text
    (verdict,) = reply.json()["verdicts"]
    assert verdict["label"] == "not_found" and verdict["reason"] == "url_refused"
    assert verdict["final_url"] == "[internal address]"
    assert "redirected to [internal address]" in verdict["detail"]
    assert "169.254" not in reply.text
    assert world.api.calls_for(cited) and world.llm.calls == []  # nothing of it is judged
    (row,) = AuditIndex(audit).rows()
    assert row.reason == "url_refused" and row.final_url == "[internal address]"


def test_url_policy_off_lets_the_operator_cite_local_pages(world: World) -> None:
    local = "http://127.0.0.1:9/page"
    world.api.add(local, PAGES[f"{SITE}/articles/boiling"])
    with serving(ServiceConfig(url_policy="off"), world.environ) as url:
        reply = post(url, {"claim": ONE_URL["claim"], "urls": [local]})
    assert reply.status_code == 200, reply.text
    assert world.api.calls_for(local)


# -- the audit index: checked before spending, reported after it ----------------------------


def test_a_directory_in_place_of_the_audit_file_is_503_before_spending(
    world: World, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.db"
    with serving(ServiceConfig(audit=audit), world.environ) as url:
        audit.mkdir()
        reply = post(url, ONE_URL)
    assert reply.status_code == 503
    assert "audit index" in reply.json()["detail"]
    assert str(tmp_path) not in reply.text
    assert world.upstream == 0


def test_a_locked_audit_file_is_503_before_spending(world: World, tmp_path: Path) -> None:
    audit = tmp_path / "audit.db"
    AuditIndex(audit).check()
    holder = sqlite3.connect(audit, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with serving(ServiceConfig(audit=audit, audit_wait=0.3), world.environ) as url:
            started = time.monotonic()
            reply = post(url, ONE_URL)
            took = time.monotonic() - started
    finally:
        holder.close()
    assert reply.status_code == 503
    assert reply.headers["retry-after"]
    assert world.upstream == 0
    assert took < 10


def test_an_audit_failure_after_spending_still_answers_the_verdicts(
    world: World, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.db"
    AuditIndex(audit).check()
    locks: list[sqlite3.Connection] = []

    def lock_then_judge(call: JudgeCall) -> Scripted:
        # Another writer takes the audit file while the judge is being paid for.
        if not locks:
            holder = sqlite3.connect(audit, isolation_level=None, check_same_thread=False)
            holder.execute("BEGIN EXCLUSIVE")
            locks.append(holder)
        return judge_by_page(call)

    world.llm.responder = lock_then_judge
    try:
        with serving(ServiceConfig(audit=audit, audit_wait=0.3), world.environ) as url:
            reply = post(url, ONE_URL)
    finally:
        for holder in locks:
            holder.close()
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["label"] == "supported"
    assert "audit index" in data["audit_problem"]
    assert AuditIndex(audit).count() == 0


# -- back-pressure and slow clients ---------------------------------------------------------


def test_when_every_slot_stays_busy_the_next_request_is_503_with_retry_after(
    world: World,
) -> None:
    started, release = threading.Event(), threading.Event()

    def slow(call: JudgeCall) -> Scripted:
        started.set()
        release.wait(20)
        return judge_by_page(call)

    world.llm.responder = slow
    config = ServiceConfig(concurrency=1, queue_wait=0.5)
    with serving(config, world.environ) as url:
        first: list[httpx.Response] = []
        worker = threading.Thread(target=lambda: first.append(post(url, ONE_URL)))
        worker.start()
        try:
            assert started.wait(20), "the first request never reached the judge"
            before = world.upstream
            t0 = time.monotonic()
            busy = post(url, body(1))
            waited = time.monotonic() - t0
            health = httpx.get(f"{url}/health").json()
            after = world.upstream
        finally:
            release.set()
            worker.join(30)
    assert busy.status_code == 503
    assert int(busy.headers["retry-after"]) > 0
    assert "busy" in busy.json()["detail"]
    assert waited < 10
    assert health["busy"] == 1
    assert after == before  # the refused request spent nothing
    assert first and first[0].status_code == 200


def _raw(url: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    return sock


def _drip_until_answered(sock: socket.socket, data: bytes, limit: float) -> tuple[bytes, float]:
    """Send ``data`` a byte every 0.1 s until the server answers or closes (at most
    ``limit`` seconds); returns what it said and when."""
    t0 = time.monotonic()
    for byte in data:
        if time.monotonic() - t0 > limit:
            break
        readable, _, _ = select.select([sock], [], [], 0.1)
        if readable:
            break
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            break
    answer = b""
    sock.settimeout(max(0.1, limit - (time.monotonic() - t0)))
    try:
        while chunk := sock.recv(4096):
            answer += chunk
    except (TimeoutError, OSError):
        pass
    return answer, time.monotonic() - t0


def test_a_slow_body_is_cut_off_with_408(world: World) -> None:
    payload = json.dumps(ONE_URL).encode()
    head = (
        b"POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(payload)}\r\n\r\n".encode()
    )
    with serving(ServiceConfig(read_timeout=1.0), world.environ) as url:
        sock = _raw(url)
        try:
            sock.sendall(head)
            answer, took = _drip_until_answered(sock, payload, limit=8)
        finally:
            sock.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert took < 6
    assert world.upstream == 0


def test_slow_request_headers_are_cut_off(world: World) -> None:
    head = b"POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 200
    with serving(ServiceConfig(read_timeout=1.0), world.environ) as url:
        sock = _raw(url)
        try:
            answer, took = _drip_until_answered(sock, head, limit=8)
        finally:
            sock.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert took < 6


def test_a_client_that_hangs_up_mid_body_is_one_log_line(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    head = (
        b"POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b'Content-Length: 500\r\n\r\n{"claim": '
    )
    caplog.set_level(logging.INFO)
    with serving(ServiceConfig(), world.environ, log_config=None, log_level="info") as url:
        sock = _raw(url)
        sock.sendall(head)
        time.sleep(0.2)
        sock.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
            "disconnected" in r.getMessage() for r in caplog.records
        ):
            time.sleep(0.05)
    lines = [r for r in caplog.records if "disconnected" in r.getMessage()]
    assert len(lines) == 1
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert world.upstream == 0


# -- start-up: no key off loopback ------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "citecheck.example.org"])
def test_serve_refuses_to_listen_beyond_loopback_without_a_key(
    host: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CITECHECK_SERVICE_KEY", raising=False)
    code = main(["serve", "--host", host, "--port", "0"])
    err = capsys.readouterr().err
    assert code == 2
    assert "CITECHECK_SERVICE_KEY" in err and "--key-file" in err


def test_serve_refuses_a_short_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("CITECHECK_SERVICE_KEY", "s3cr3tK")
    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "use at least 16" in err
    assert "s3cr3tK" not in err
    key_file = tmp_path / "key"
    key_file.write_text("tiny\n")
    assert main(["serve", "--key-file", str(key_file), "--port", "0"]) == 2
    assert "--key-file" in capsys.readouterr().err


def test_the_key_file_wins_and_the_host_list_includes_the_bound_address(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from pytest_citecheck.frontends.cli import allowed_hosts, service_key

    monkeypatch.setenv("CITECHECK_SERVICE_KEY", "from-the-environment-0123")
    assert service_key(None) == "from-the-environment-0123"
    key_file = tmp_path / "key"
    key_file.write_text(f"  {KEY}\n", encoding="utf-8")
    assert service_key(key_file) == KEY
    assert allowed_hosts("0.0.0.0", ["Citecheck.Example.org"]) == (
        "127.0.0.1",
        "localhost",
        "::1",
        "citecheck.example.org",
    )
    assert "192.168.1.10" in allowed_hosts("192.168.1.10", [])


def test_serve_refuses_an_allowed_judge_of_no_known_provider(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["serve", "--allow-judge", "acme:big-model", "--port", "0"]) == 2
    assert "no provider 'acme'" in capsys.readouterr().err
