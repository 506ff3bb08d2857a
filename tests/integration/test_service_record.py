"""``citecheck serve --record MODE --cassettes DIR``: requests recorded and replayed.

Recorded against the loopback doubles of the Crawling API and OpenAI, replayed with
them gone and no token or key set.
"""

from __future__ import annotations

import asyncio
import io
from contextlib import redirect_stderr
from pathlib import Path

import httpx
import pytest
import yaml

from pytest_citecheck.frontends.cli import main
from pytest_citecheck.frontends.service import ServiceConfig
from tests.doubles.batch import RECORDS
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import LLMDouble
from tests.integration.test_service import body, doubles, serving  # noqa: F401


def verdicts(reply: httpx.Response) -> object:
    data = reply.json()
    return data["label"], data["verdicts"]


def test_a_recorded_request_replays_with_no_token_and_the_doubles_gone(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]],  # noqa: F811
    tmp_path: Path,
) -> None:
    api, llm, environ = doubles
    recording = ServiceConfig(record_mode="once", cassettes=tmp_path)
    with serving(recording, environ) as url:
        recorded = httpx.post(f"{url}/verify", json=body(0), timeout=60)
    assert recorded.status_code == 200, recorded.text
    [cassette] = tmp_path.glob("*.yaml")
    assert cassette.name.startswith("water-boils-at-100-degrees-celsius-")
    api.stop()
    llm.stop()
    crawls, judged = len(api.api_calls), len(llm.calls)
    with serving(ServiceConfig(record_mode="none", cassettes=tmp_path), {}) as url:
        replayed = httpx.post(f"{url}/verify", json=body(0), timeout=60)
    assert replayed.status_code == 200, replayed.text
    assert verdicts(replayed) == verdicts(recorded)
    assert verdicts(replayed)[0] == "supported"
    assert (len(api.api_calls), len(llm.calls)) == (crawls, judged)


def test_once_replays_what_is_recorded_without_tokens_and_asks_them_for_the_rest(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]],  # noqa: F811
    tmp_path: Path,
) -> None:
    api, _, environ = doubles
    config = ServiceConfig(record_mode="once", cassettes=tmp_path)
    with serving(config, environ) as url:
        assert httpx.post(f"{url}/verify", json=body(0), timeout=60).status_code == 200
    crawls = len(api.api_calls)
    with serving(config, {}) as url:
        health = httpx.get(f"{url}/health").json()
        recorded = httpx.post(f"{url}/verify", json=body(0), timeout=60)
        new = httpx.post(f"{url}/verify", json=body(1), timeout=60)
    assert health["record"] == "once"
    assert recorded.status_code == 200, recorded.text
    assert new.status_code == 503
    assert "set CRAWLBASE_TOKEN" in new.json()["detail"]
    assert "OPENAI_API_KEY" in new.json()["detail"]
    assert len(api.api_calls) == crawls


def test_the_same_request_is_the_same_cassette_another_is_not(tmp_path: Path) -> None:
    config = ServiceConfig(record_mode="none", cassettes=tmp_path)
    from pytest_citecheck.claims.loader import parse_claim

    def path(claim: str, urls: list[str], judge: str = "openai:gpt-4o-mini") -> Path | None:
        parsed = parse_claim({"id": "r1", "claim": claim, "citations": urls})
        return config.cassette_for(parsed, [judge])

    same = path("Water boils.", ["https://example.com/a"])
    assert same == path("Water boils.", ["https://example.com/a"])
    assert same != path("Water boils!", ["https://example.com/a"])
    assert same != path("Water boils.", ["https://example.com/b"])
    assert same != path("Water boils.", ["https://example.com/a"], "anthropic:claude-sonnet-4-6")
    assert same is not None and same.parent == tmp_path


def test_no_recording_under_none_is_404_naming_the_cassette_and_the_fix(tmp_path: Path) -> None:
    with serving(ServiceConfig(record_mode="none", cassettes=tmp_path), {}) as url:
        reply = httpx.post(f"{url}/verify", json=body(1), timeout=60)
    assert reply.status_code == 404, reply.text
    detail = reply.json()["detail"]
    assert detail.startswith("no recording (the-eiffel-tower-is-in-paris-")
    assert ".yaml in the service's cassette folder does not exist)" in detail
    assert "record it with: citecheck serve --record once --cassettes DIR" in detail
    assert str(tmp_path) not in detail and "/tmp" not in detail
    assert list(tmp_path.iterdir()) == []


def test_a_corrupt_recording_is_409_saying_so(tmp_path: Path) -> None:
    config = ServiceConfig(record_mode="none", cassettes=tmp_path)
    with serving(config, {}) as url:
        missing = httpx.post(f"{url}/verify", json=body(1), timeout=60).json()["detail"]
        name = missing.split("(", 1)[1].split(" ", 1)[0]
        (tmp_path / name).write_text("interactions: [not, a, cassette\n", encoding="utf-8")
        reply = httpx.post(f"{url}/verify", json=body(1), timeout=60)
    assert reply.status_code == 409, reply.text
    detail = reply.json()["detail"]
    assert f"the recording {name} in the service's cassette folder is corrupt" in detail
    assert "--record rewrite --cassettes DIR" in detail
    assert str(tmp_path) not in detail


def test_concurrent_requests_for_one_cassette_record_it_once(
    doubles: tuple[CrawlbaseDouble, LLMDouble, dict[str, str]],  # noqa: F811
    tmp_path: Path,
) -> None:
    api, llm, environ = doubles
    config = ServiceConfig(record_mode="once", cassettes=tmp_path, concurrency=4, queue_wait=60)

    async def together(url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            return await asyncio.gather(*(client.post("/verify", json=body(0)) for _ in range(6)))

    with serving(config, environ) as url:
        replies = asyncio.run(together(url))
    assert [r.status_code for r in replies] == [200] * 6, [r.text for r in replies]
    assert len({repr(verdicts(r)) for r in replies}) == 1
    # Recorded once: one crawl per URL (the 404 and the homepage redirect are not
    # judged), one judge call for the supported page (and its confirmation); the other
    # five replayed it.
    assert len(api.api_calls) == len(RECORDS[0]["urls"])
    assert len(llm.calls) == 1
    [cassette] = tmp_path.glob("*.yaml")
    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    # The crawls, the judge's reading and its confirmation.
    assert len(llm.confirmations) == 1
    assert len(data["interactions"]) == len(RECORDS[0]["urls"]) + 2


def test_an_unknown_judge_with_no_tokens_is_422_not_503(tmp_path: Path) -> None:
    unknown = {**body(0), "judge": "nosuch:model"}
    for config in (ServiceConfig(), ServiceConfig(record_mode="none", cassettes=tmp_path)):
        with serving(config, {}) as url:
            reply = httpx.post(f"{url}/verify", json=unknown, timeout=60)
        assert reply.status_code == 422, reply.text
        [problem] = reply.json()["detail"]
        assert problem["loc"] == ["body", "judge"]
        assert "unknown judge provider 'nosuch'" in problem["msg"]
        assert "CRAWLBASE_TOKEN" not in reply.text


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--record", "once"], "--record needs --cassettes DIR"),
        (["--cassettes", "somewhere"], "--cassettes needs --record MODE"),
        (["--record", "none", "--cassettes", "no/such/folder"], "no such folder"),
        (["--judge", "nosuch:model"], "--judge nosuch:model: no provider 'nosuch'"),
    ],
)
def test_serve_refuses_to_start_with_unusable_record_options(
    args: list[str], words: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    with redirect_stderr(err):
        code = main(["serve", "--port", "0", *args])
    assert code == 2
    assert words in err.getvalue()


def test_a_judge_the_service_does_not_allow_is_403_and_never_built() -> None:
    from fastapi.testclient import TestClient

    from pytest_citecheck.engine.core import Engine
    from pytest_citecheck.frontends.service import create_app

    config = ServiceConfig()
    with Engine.from_settings(config.engine_settings(), environ={}) as engine:
        app = create_app(config, engine=engine, environ={})
        with TestClient(app, base_url="http://127.0.0.1") as client:
            made_up = [
                client.post("/verify", json={**body(0), "judge": f"openai:made-up-{n}"})
                for n in range(3)
            ]
        built = set(engine.stages._judges)
    assert [r.status_code for r in made_up] == [403] * 3
    assert not any(spec.startswith("openai:made-up") for spec in built)
