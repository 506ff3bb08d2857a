"""The Inspect scorer's work without Inspect (CitecheckScoring): a sample with no recording
fails its score naming the command that records it, with no request; an answer that cites
nothing does not pass; a setting it does not know is refused when the task is built."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.frontends.inspect_scorer import RECORD_VARIABLE, CitecheckScoring


def sample(*content: dict[str, Any]) -> dict[str, Any]:
    message = {"role": "assistant", "source": "generate", "content": list(content)}
    return {
        "id": "q9",
        "epoch": 1,
        "messages": [{"role": "user", "content": "How hot?"}],
        "output": {"choices": [{"message": message}]},
    }


CITED = {
    "type": "text",
    "text": "Water boils at 100 degrees Celsius.",
    "citations": [{"type": "url", "url": "https://science.example/boiling"}],
}


def test_a_sample_without_its_recording_fails_naming_the_record_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(RECORD_VARIABLE, raising=False)

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("the network is off in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    score = CitecheckScoring(tmp_path, None, {}).score(sample(CITED))
    assert score["value"]["passed"] == 0.0
    assert "error (no_recording)" in score["explanation"]
    assert f"{RECORD_VARIABLE}=once inspect eval" in score["explanation"]
    assert score["metadata"]["cassette"] == (tmp_path / "q9.yaml").as_posix()
    assert not (tmp_path / "q9.yaml").exists()


def test_an_answer_that_cites_nothing_does_not_pass(tmp_path: Path) -> None:
    plain = {"type": "text", "text": "Water boils at 100 degrees Celsius."}
    score = CitecheckScoring(tmp_path, "none", {}).score(sample(plain))
    assert score["value"] == dict.fromkeys(score["value"], 0.0)
    assert score["answer"] == "no citation"
    assert "no sentence of the answer cites a source" in score["explanation"]


def test_an_unknown_setting_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"unknown setting\(s\) jduge; known: .*judge"):
        CitecheckScoring(tmp_path, None, {"jduge": "openai:gpt-4o-mini"})
