"""A judge call recorded against the double replays with no key and nothing listening."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import vcr
import yaml

from pytest_citecheck.claims.models import Reason
from pytest_citecheck.core.errors import StageFailed
from pytest_citecheck.stages.judges import (
    PROMPT_VERSION,
    PROVIDERS,
    make_judge,
    recorded_prompt_version,
)
from tests.doubles.llm import Fault, LLMDouble, verdict
from tests.unit.test_judges import KEYS, NO_SLEEP

CLAIM = "Water boils at 100 degrees Celsius at sea level."
PASSAGES = ["At sea level, water boils at 100 degrees Celsius (212 degrees Fahrenheit)."]
QUOTE = "water boils at 100 degrees Celsius"
MATCH_ON = ["method", "scheme", "host", "port", "path", "query", "body"]


def recorder(mode: str) -> vcr.VCR:
    return vcr.VCR(
        record_mode=mode,
        filter_headers=["authorization", "x-api-key"],
        match_on=MATCH_ON,
    )


def record_then_replay(tmp_path: Path, provider: str, *, script: list[Any]) -> tuple[Any, Any]:
    cassette = tmp_path / f"{provider}.yaml"
    with LLMDouble() as llm:
        base_url = llm.base_url(provider)
        llm.script(*script)
        live = make_judge(f"{provider}:test-model", environ=KEYS, base_url=base_url, retry=NO_SLEEP)
        with recorder("once").use_cassette(str(cassette)):
            recorded = live.judge(CLAIM, PASSAGES)
        live.close()
    # The double is stopped and no key is set: only the cassette can answer.
    replayer = make_judge(
        f"{provider}:test-model", environ={}, base_url=base_url, require_key=False, retry=NO_SLEEP
    )
    with recorder("none").use_cassette(str(cassette)) as played:
        replayed = replayer.judge(CLAIM, PASSAGES)
        assert played.all_played
    text = cassette.read_text()
    for key in KEYS.values():
        assert key not in text
    return recorded, replayed


@pytest.mark.parametrize("provider", PROVIDERS)
def test_recording_replays_to_the_same_reply(tmp_path: Path, provider: str) -> None:
    recorded, replayed = record_then_replay(
        tmp_path, provider, script=[verdict("supported", QUOTE, 0.93, input_tokens=80)]
    )
    assert recorded == replayed
    assert replayed.label == "supported" and replayed.quote == QUOTE
    assert replayed.usage is not None and replayed.usage.input_tokens == 80
    interactions = yaml.safe_load((tmp_path / f"{provider}.yaml").read_text())["interactions"]
    assert len(interactions) == 1
    headers = {k.lower() for k in interactions[0]["request"]["headers"]}
    assert not headers & {"authorization", "x-api-key"}
    assert recorded_prompt_version(interactions[0]["request"]["body"]) == PROMPT_VERSION


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_recorded_retry_replays_the_same_way(tmp_path: Path, provider: str) -> None:
    recorded, replayed = record_then_replay(
        tmp_path,
        provider,
        script=[Fault("rate_limited"), Fault("overloaded"), verdict("not_found", None, 0.7)],
    )
    assert recorded == replayed
    assert replayed.label == "not_found"
    interactions = yaml.safe_load((tmp_path / f"{provider}.yaml").read_text())["interactions"]
    assert [i["response"]["status"]["code"] for i in interactions][-1] == 200
    assert len(interactions) == 3


def test_a_recorded_failure_replays_as_the_same_error(tmp_path: Path) -> None:
    with pytest.raises(StageFailed) as live:
        record_then_replay(tmp_path, "ollama", script=[Fault("truncated")])
    assert live.value.reason == Reason.JUDGE_TRUNCATED
    replayer = make_judge(
        "ollama:test-model",
        environ={},
        require_key=False,
        retry=NO_SLEEP,
        base_url=_recorded_root(tmp_path / "ollama.yaml"),
    )
    with (
        recorder("none").use_cassette(str(tmp_path / "ollama.yaml")),
        pytest.raises(StageFailed) as replayed,
    ):
        replayer.judge(CLAIM, PASSAGES)
    assert replayed.value.reason == Reason.JUDGE_TRUNCATED


def test_async_judge_replays_too(tmp_path: Path) -> None:
    cassette = str(tmp_path / "async.yaml")
    with LLMDouble() as llm:
        base_url = llm.base_url("openai")
        live = make_judge("openai:test-model", environ=KEYS, base_url=base_url, retry=NO_SLEEP)
        with recorder("once").use_cassette(cassette):
            recorded = asyncio.run(live.ajudge(CLAIM, PASSAGES))
    replayer = make_judge(
        "openai:test-model", environ={}, base_url=base_url, require_key=False, retry=NO_SLEEP
    )
    with recorder("none").use_cassette(cassette):
        assert asyncio.run(replayer.ajudge(CLAIM, PASSAGES)) == recorded


def test_a_changed_prompt_does_not_match_an_old_recording(tmp_path: Path) -> None:
    """Another claim (like another prompt) is another body: replay finds no recording."""
    cassette = str(tmp_path / "stale.yaml")
    with LLMDouble() as llm:
        base_url = llm.base_url("openai")
        live = make_judge("openai:test-model", environ=KEYS, base_url=base_url, retry=NO_SLEEP)
        with recorder("once").use_cassette(cassette):
            live.judge(CLAIM, PASSAGES)
    replayer = make_judge(
        "openai:test-model", environ={}, base_url=base_url, require_key=False, retry=NO_SLEEP
    )
    with (
        recorder("none").use_cassette(cassette),
        pytest.raises(vcr.errors.CannotOverwriteExistingCassetteException),
    ):
        replayer.judge(CLAIM + " Always.", PASSAGES)


def _recorded_root(cassette: Path) -> str:
    uri: str = yaml.safe_load(cassette.read_text())["interactions"][0]["request"]["uri"]
    return uri.removesuffix("/api/chat")
