"""A judge call recorded against the double replays with no key and nothing listening.

Through the production path: the judges send through the engine's
:class:`~pytest_citecheck.recording.transport.StageTransport` into a per-claim
cassette opened with :func:`~pytest_citecheck.recording.recorder.open_recording`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.core.errors import StageFailed
from pytest_citecheck.recording.recorder import open_recording
from pytest_citecheck.recording.transport import StageTransport, UnmatchedRequest
from pytest_citecheck.stages.judges import (
    PROMPT_VERSION,
    PROVIDERS,
    make_judge,
    recorded_prompt_version,
)
from tests.doubles.llm import Fault, LLMDouble, verdict
from tests.integration.test_judges import KEYS, NO_SLEEP

CLAIM = "Water boils at 100 degrees Celsius at sea level."
PASSAGES = ["At sea level, water boils at 100 degrees Celsius (212 degrees Fahrenheit)."]
QUOTE = "water boils at 100 degrees Celsius"


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(transport=StageTransport()) as c:
        yield c


def record(cassette: Path, provider: str, client: httpx.Client, script: list[Any]) -> Any:
    """Record one judge call; returns (base URL, the reply or the StageFailed)."""
    with LLMDouble() as llm:
        base_url = llm.base_url(provider)
        llm.script(*script)
        live = make_judge(
            f"{provider}:test-model", environ=KEYS, base_url=base_url, retry=NO_SLEEP, client=client
        )
        with open_recording(cassette, "once", "claim", {}, secrets=list(KEYS.values())) as rec:
            try:
                outcome: Any = live.judge(CLAIM, PASSAGES)
            except StageFailed as exc:
                outcome = exc
            rec.finish(ok=True)
    return base_url, outcome


def replay(cassette: Path, provider: str, base_url: str, client: httpx.Client, claim: str) -> Any:
    # The double is stopped and no key is set: only the cassette can answer.
    replayer = make_judge(
        f"{provider}:test-model",
        environ={},
        base_url=base_url,
        require_key=False,
        retry=NO_SLEEP,
        client=client,
    )
    with open_recording(cassette, "none", "claim", {}) as played:
        reply = replayer.judge(claim, PASSAGES)
        assert all(i.played for i in played.cassette.interactions)
    return reply


@pytest.mark.parametrize("provider", PROVIDERS)
def test_recording_replays_to_the_same_reply(
    tmp_path: Path, provider: str, client: httpx.Client
) -> None:
    cassette = tmp_path / f"{provider}.yaml"
    script = [verdict("supported", QUOTE, 0.93, input_tokens=80)]
    base_url, recorded = record(cassette, provider, client, script)
    replayed = replay(cassette, provider, base_url, client, CLAIM)
    assert recorded == replayed
    assert replayed.label == "supported" and replayed.quote == QUOTE
    assert replayed.usage is not None and replayed.usage.input_tokens == 80
    text = cassette.read_text()
    assert not any(key in text for key in KEYS.values())
    interactions = yaml.safe_load(text)["interactions"]
    assert len(interactions) == 1
    headers = {k.lower() for k in interactions[0]["request"]["headers"]}
    assert not headers & {"authorization", "x-api-key"}
    assert recorded_prompt_version(interactions[0]["request"]["body"]) == PROMPT_VERSION


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_a_recorded_retry_replays_the_same_way(
    tmp_path: Path, provider: str, client: httpx.Client
) -> None:
    cassette = tmp_path / f"{provider}.yaml"
    script = [Fault("rate_limited"), Fault("overloaded"), verdict("not_found", None, 0.7)]
    base_url, recorded = record(cassette, provider, client, script)
    assert recorded == replay(cassette, provider, base_url, client, CLAIM)
    assert recorded.label == "not_found"
    interactions = yaml.safe_load(cassette.read_text())["interactions"]
    assert [i["response"]["status"]["code"] for i in interactions][-1] == 200
    assert len(interactions) == 3


def test_a_recorded_failure_replays_as_the_same_error(tmp_path: Path, client: httpx.Client) -> None:
    cassette = tmp_path / "ollama.yaml"
    base_url, live = record(cassette, "ollama", client, [Fault("truncated")])
    assert isinstance(live, StageFailed) and live.reason == Reason.JUDGE_TRUNCATED
    with pytest.raises(StageFailed) as replayed:
        replay(cassette, "ollama", base_url, client, CLAIM)
    assert replayed.value.reason == Reason.JUDGE_TRUNCATED


def test_a_changed_prompt_does_not_match_an_old_recording(
    tmp_path: Path, client: httpx.Client
) -> None:
    """Another claim (like another prompt) is another body: replay finds no recording."""
    cassette = tmp_path / "stale.yaml"
    base_url, _ = record(cassette, "openai", client, [verdict("supported", QUOTE, 0.9)])
    with pytest.raises(UnmatchedRequest):
        replay(cassette, "openai", base_url, client, CLAIM + " Always.")
