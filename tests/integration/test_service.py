"""``citecheck serve`` through a real uvicorn on 127.0.0.1 and a real httpx client.

The Crawling API and the judge are the loopback doubles; the load test is
bounded (a fixed number of requests, a fixed number in flight) and sends
traffic to 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.settings import StageHooks
from pytest_citecheck.frontends.service import ServiceConfig, create_app, uvicorn_config
from pytest_citecheck.reports.audit import AuditIndex
from tests.doubles.batch import RECORDS, SITE, FirstPassages, add_pages, judge_by_page
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import LLMDouble

OPENAI_KEY = "sk-test-service-0123456789"


@contextmanager
def serving(config: ServiceConfig, environ: dict[str, str], **options: Any) -> Iterator[str]:
    """``create_app`` under a real uvicorn on a free 127.0.0.1 port; yields its base URL.
    ``options`` go to uvicorn's configuration."""
    engine = Engine.from_settings(
        config.engine_settings(), hooks=StageHooks(make_ranker=FirstPassages), environ=environ
    )
    app = create_app(config, engine=engine, environ=environ)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    options = {"log_level": "warning", "lifespan": "on", **options}
    server = uvicorn.Server(uvicorn_config(app, config, **options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()
        engine.close()


@pytest.fixture
def doubles() -> Iterator[tuple[CrawlbaseDouble, LLMDouble, dict[str, str]]]:
    with CrawlbaseDouble() as api, LLMDouble(judge_by_page) as llm:
        add_pages(api)
        environ = {
            "CRAWLBASE_TOKEN": api.tokens["normal"],
            "CRAWLBASE_JS_TOKEN": api.tokens["javascript"],
            "CITECHECK_CRAWLBASE_URL": api.base_url,
            "OPENAI_API_KEY": OPENAI_KEY,
            "OPENAI_BASE_URL": llm.base_url("openai"),
        }
        yield api, llm, environ


def body(n: int = 0) -> dict[str, object]:
    record = RECORDS[n]
    return {"claim": record["claim"], "urls": record["urls"]}


def test_health_names_what_is_configured_never_values(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]],
) -> None:
    _, _, environ = doubles
    with serving(ServiceConfig(), environ) as url:
        reply = httpx.get(f"{url}/health")
    assert reply.status_code == 200
    data = reply.json()
    assert data["status"] == "ok"
    assert data["version"]
    assert data["configured"]["CRAWLBASE_TOKEN"] is True
    assert data["configured"]["OPENAI_API_KEY"] is True
    assert data["configured"]["ANTHROPIC_API_KEY"] is False
    for value in environ.values():
        if "token" in value or value.startswith("sk-"):
            assert value not in reply.text


def test_verify_answers_the_claim_label_and_a_verdict_per_url(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]],
) -> None:
    _, llm, environ = doubles
    with serving(ServiceConfig(), environ) as url:
        reply = httpx.post(f"{url}/verify", json=body(0), timeout=60)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["label"] == "supported"
    assert [(v["url"].removeprefix(SITE), v["label"], v["reason"]) for v in data["verdicts"]] == [
        ("/articles/boiling", "supported", None),
        ("/old-report", "unreachable", "http_404"),
        ("/science/deep/link", "not_found", "redirected_to_homepage"),
    ]
    supported = data["verdicts"][0]
    assert supported["evidence_quote"].startswith("Water boils at 100 degrees Celsius")
    assert supported["confidence"] == 0.95
    assert supported["final_url"] == f"{SITE}/articles/boiling"
    assert supported["original_status"] == 200
    assert supported["rid"]
    assert data["verdicts"][1]["original_status"] == 404
    assert llm.calls[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"


def test_a_missing_token_is_503_naming_the_variable(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]],
) -> None:
    api, _, environ = doubles
    token = environ.pop("CRAWLBASE_TOKEN")
    with serving(ServiceConfig(), environ) as url:
        reply = httpx.post(f"{url}/verify", json=body(0), timeout=60)
    assert reply.status_code == 503
    detail = reply.json()["detail"]
    assert "set CRAWLBASE_TOKEN" in detail
    assert "--citecheck-" not in detail
    assert token not in reply.text
    assert api.api_calls == []


def test_a_missing_judge_key_is_503_naming_the_variable(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]],
) -> None:
    _, llm, environ = doubles
    del environ["OPENAI_API_KEY"]
    with serving(ServiceConfig(), environ) as url:
        reply = httpx.post(f"{url}/verify", json=body(1), timeout=60)
    assert reply.status_code == 503
    assert "OPENAI_API_KEY" in reply.json()["detail"]
    assert llm.calls == []


@pytest.mark.parametrize(
    ("payload", "where", "words"),
    [
        (
            {"claim": "Water boils.", "urls": ["ftp://example.com/a"]},
            "urls",
            "only http and https",
        ),
        ({"claim": "   ", "urls": [f"{SITE}/a"]}, "claim", "claim text is empty"),
        ({"claim": "Water boils.", "urls": "https://example.com/a"}, "urls", "list"),
        (
            {"claim": "Water boils.", "urls": [f"{SITE}/a"], "colour": "red"},
            "colour",
            "Extra inputs",
        ),
        ({"urls": [f"{SITE}/a"]}, "claim", "Field required"),
        (
            {"claim": "Water boils.", "urls": [f"{SITE}/a"], "judge": "gpt-4o"},
            "judge",
            "is not of the form provider:model",
        ),
    ],
)
def test_a_malformed_body_is_422_with_the_claim_file_rule(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]],
    payload: dict[str, object],
    where: str,
    words: str,
) -> None:
    api, _, environ = doubles
    with serving(ServiceConfig(), environ) as url:
        reply = httpx.post(f"{url}/verify", json=payload, timeout=60)
    assert reply.status_code == 422, reply.text
    problems = reply.json()["detail"]
    assert any(where in map(str, p["loc"]) and words in p["msg"] for p in problems), problems
    assert api.api_calls == []


def test_a_422_says_the_rule_in_its_own_words_and_a_near_key_gets_a_did_you_mean(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]],
) -> None:
    with serving(ServiceConfig(), doubles[2]) as url:
        empty = httpx.post(f"{url}/verify", json={"claim": "Water boils.", "urls": []}, timeout=60)
        near = httpx.post(f"{url}/verify", json={"claim": "Water boils.", "url": [f"{SITE}/a"]})
    assert empty.status_code == 422
    (problem,) = empty.json()["detail"]
    assert problem["msg"] == "no URLs: cite at least one http(s) URL for the claim"
    assert near.status_code == 422
    by_key = {p["loc"][-1]: p for p in near.json()["detail"]}
    assert by_key["url"]["msg"] == 'unknown field "url": did you mean "urls"?'
    assert by_key["url"]["fix"] == 'did you mean "urls"?'
    assert by_key["urls"]["msg"] == "Field required"
    assert not any(p["msg"].startswith("Value error") for p in near.json()["detail"])


def test_invalid_json_is_422(doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]]) -> None:
    with serving(ServiceConfig(), doubles[2]) as url:
        reply = httpx.post(
            f"{url}/verify", content=b"{claim", headers={"content-type": "application/json"}
        )
    assert reply.status_code == 422
    assert reply.json()["detail"][0]["msg"].startswith("invalid JSON")


def test_request_size_limits(doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]]) -> None:
    config = ServiceConfig(max_body_bytes=2000, max_urls=3)
    with serving(config, doubles[2]) as url:
        big = httpx.post(f"{url}/verify", json={"claim": "x" * 5000, "urls": [f"{SITE}/a"]})
        many = httpx.post(
            f"{url}/verify",
            json={"claim": "Water boils.", "urls": [f"{SITE}/{i}" for i in range(4)]},
        )
    assert big.status_code == 413
    assert "larger than 2000 bytes" in big.json()["detail"]
    assert many.status_code == 422
    assert "at most 3 per request" in many.json()["detail"][0]["msg"]


def test_openapi_docs_describe_verify(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]],
) -> None:
    with serving(ServiceConfig(), doubles[2]) as url:
        docs = httpx.get(f"{url}/docs")
        schema = httpx.get(f"{url}/openapi.json").json()
    assert docs.status_code == 200
    verify = schema["paths"]["/verify"]["post"]
    assert set(verify["requestBody"]["content"]["application/json"]["schema"]["properties"]) == {
        "claim",
        "urls",
        "judge",
    }
    assert {"200", "413", "422", "503"} <= set(verify["responses"])


@pytest.mark.allow_resend(
    "a live service (no cassettes): 200 of its claims each fetch the page they cite (8 "
    "between them) and ask the judge the same question (the same claim text on the same "
    "page); only a recording run shares a crawl"
)
def test_load_200_requests_16_in_flight_no_errors_no_lost_audit_rows(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]], tmp_path: Path
) -> None:
    requests, in_flight = 200, 16
    audit = tmp_path / "audit.db"
    # Twice as many in flight as slots: the rest wait their turn (no 503 at this load).
    config = ServiceConfig(audit=audit, concurrency=8, queue_wait=60)

    async def load(url: str) -> list[httpx.Response]:
        limit = asyncio.Semaphore(in_flight)
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:

            async def one(n: int) -> httpx.Response:
                async with limit:
                    return await client.post("/verify", json=body(n % len(RECORDS)))

            return await asyncio.gather(*(one(n) for n in range(requests)))

    with serving(config, doubles[2]) as url:
        replies = asyncio.run(load(url))
    assert [(r.status_code, r.text) for r in replies if r.status_code != 200] == []
    labels = {r.json()["label"] for r in replies}
    assert labels == {"supported", "contradicted"}
    ids = {r.json()["id"] for r in replies}
    assert len(ids) == requests
    rows = AuditIndex(audit).rows()
    assert len(rows) == requests * 3
    assert {r.claim_id for r in rows} == ids
    assert not [r for r in rows if r.label == "error"]
