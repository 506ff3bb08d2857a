"""Claims that need two sources, against loopback pages and a loopback judge: supported
jointly, recorded once and replayed offline; no joint call when one source suffices; no
joint support from quotes off their own source or from one source alone."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.recording.recorder import cassette_path
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import JudgeCall, Scripted, joint_verdict, verdict
from tests.integration.test_engine import (
    CLAIM_FILE,
    KEY,
    TOKENS,
    StableLLM,
    claim,
    env_for,
    make_engine,
)

CLAIM = "Acme Robotics was founded in 1998 and was acquired by Globex in 2014."
FOUNDED = "Acme Robotics was founded in 1998 by two engineers in Leeds."
ACQUIRED = "Globex acquired Acme Robotics in 2014 for an undisclosed sum."
BOTH = "Acme Robotics was founded in 1998 and was acquired by Globex in 2014, its site says."
HISTORY, NEWS, TIMELINE = (
    "https://history.example/acme",
    "https://news.example/globex-acme",
    "https://timeline.example/acme",
)
PAGES = {
    HISTORY: f"# Acme Robotics\n\n{FOUNDED} Its first product was a warehouse arm.\n\n"
    "The company moved to Manchester in 2003 and employs about 400 people.\n",
    NEWS: f"# Globex buys a robot maker\n\n{ACQUIRED} The Acme brand was kept for its arms.\n",
    TIMELINE: f"# Timeline\n\n{BOTH}\n",
}


def alone(call: JudgeCall) -> Scripted:
    """One citation at a time: supported only by a passage that states the whole claim."""
    for passage in call.passages:
        if BOTH in passage:
            return verdict("supported", BOTH, 0.95)
    return verdict("not_found", None, 0.9)


def quoting(quotes: dict[int, str]) -> Callable[[JudgeCall], Scripted]:
    """A joint judge that answers supported with ``quotes`` (source number -> quote)."""
    return lambda call: joint_verdict("supported", quotes, 0.9)


def honest(call: JudgeCall) -> Scripted:
    """Quotes, for each source, the sentence of the claim's part that source holds."""
    quotes = {}
    for number, passages in enumerate(call.sources, start=1):
        text = " ".join(passages)
        for part in (FOUNDED, ACQUIRED):
            if part in text:
                quotes[number] = part
    return joint_verdict("supported" if len(quotes) >= 2 else "not_found", quotes, 0.9)


def run(
    tmp_path: Path,
    responder: Callable[[JudgeCall], Scripted],
    *urls: str,
    mode: str = "once",
    **settings: Any,
) -> tuple[ClaimResult, StableLLM]:
    where = cassette_path(tmp_path / CLAIM_FILE, "acme")
    with (
        CrawlbaseDouble(tokens=TOKENS) as api,
        StableLLM(alone, api_key=KEY, confirm_responder=alone, joint_responder=responder) as llm,
    ):
        for url, text in PAGES.items():
            api.add(url, Page(markdown=text))
        with make_engine(env_for(api, llm), mode, **settings) as engine:
            return engine.verify(claim("acme", CLAIM, *urls), where), llm


def test_two_pages_together_support_what_neither_does_alone(tmp_path: Path) -> None:
    result, llm = run(tmp_path, honest, HISTORY, NEWS)
    assert result.label is Label.SUPPORTED
    assert result.reason == Reason.SUPPORTED_JOINTLY
    history, news = result.verdicts
    assert (history.label, history.reason, history.evidence_quote) == (
        Label.SUPPORTED,
        Reason.SUPPORTED_JOINTLY,
        FOUNDED,
    )
    assert news.evidence_quote == ACQUIRED
    assert history.joint is not None and history.joint.alone is Label.NOT_FOUND
    assert history.joint.together_with == [NEWS]
    # One joint reading of both pages' passages, each tagged with its page, and its
    # confirmation on the two quotes' sentences alone.
    reading, confirmation = llm.joint_calls
    assert [any(FOUNDED in p for p in s) for s in reading.sources] == [True, False]
    assert confirmation.sources == [[FOUNDED], [ACQUIRED]]
    assert result.joint is not None and result.joint.calls == 2
    assert result.joint.usages() and all(u.input_tokens for u in result.joint.usages())


def test_the_joint_call_replays_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorded, llm = run(tmp_path, honest, HISTORY, NEWS)
    assert len(llm.joint_calls) == 2

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("the network is off in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    where = cassette_path(tmp_path / CLAIM_FILE, "acme")
    env = env_for("http://127.0.0.1:9", "http://127.0.0.1:9/v1", keys=False)
    with make_engine(env, "none") as engine:
        replayed = engine.verify(claim("acme", CLAIM, HISTORY, NEWS), where)
    assert replayed.model_dump(mode="json") == recorded.model_dump(mode="json")
    assert replayed.reason == Reason.SUPPORTED_JOINTLY
    assert "record_joint_verdict" in where.read_text()


def test_a_claim_one_page_supports_makes_no_joint_call(tmp_path: Path) -> None:
    result, llm = run(tmp_path, honest, HISTORY, TIMELINE)
    assert result.label is Label.SUPPORTED and result.reason is None
    assert llm.joint_calls == []
    assert result.joint is None


def test_quotes_given_for_the_other_page_are_no_joint_support(tmp_path: Path) -> None:
    result, llm = run(tmp_path, quoting({1: ACQUIRED, 2: FOUNDED}), HISTORY, NEWS)
    assert result.label is Label.NOT_FOUND and result.reason is None
    assert [v.label for v in result.verdicts] == [Label.NOT_FOUND, Label.NOT_FOUND]
    assert result.joint is not None and result.joint.status == "not_supported"
    assert [s.reason for s in result.joint.sources] == [Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE] * 2
    assert len(llm.joint_calls) == 1  # nothing was confirmed


def test_one_verified_page_keeps_the_single_verdicts(tmp_path: Path) -> None:
    result, _ = run(
        tmp_path, quoting({1: FOUNDED, 2: "Globex bought Acme in 2014 for cash."}), HISTORY, NEWS
    )
    assert result.label is Label.NOT_FOUND
    assert all(v.reason is None and v.joint is None for v in result.verdicts)
    assert result.joint is not None and result.joint.reason == Reason.JOINT_TOO_FEW_SOURCES


def test_the_setting_turns_the_joint_judgment_off(tmp_path: Path) -> None:
    result, llm = run(tmp_path, honest, HISTORY, NEWS, no_joint=True)
    assert result.label is Label.NOT_FOUND
    assert llm.joint_calls == [] and result.joint is None


def test_a_recording_made_without_it_replays_the_single_verdicts_and_says_so(
    tmp_path: Path,
) -> None:
    from pytest_citecheck.plugin.terms import PLUGIN_TERMS
    from pytest_citecheck.reports.report import Report

    recorded, llm = run(tmp_path, honest, HISTORY, NEWS, no_joint=True)
    assert recorded.label is Label.NOT_FOUND and llm.joint_calls == []
    where = cassette_path(tmp_path / CLAIM_FILE, "acme")
    assert "joint: true" not in where.read_text()
    env = env_for("http://127.0.0.1:9", "http://127.0.0.1:9/v1", keys=False)
    with make_engine(env, "none") as engine:
        replayed = engine.verify(claim("acme", CLAIM, HISTORY, NEWS), where)
    # No error, no joint call to miss: the single verdicts, and the judgment says why.
    assert [v.label for v in replayed.verdicts] == [Label.NOT_FOUND] * 2
    assert replayed.joint is not None and replayed.joint.status == "not_recorded"
    report = Report({"claims/citecheck_water.yaml::acme": replayed}, terms=PLUGIN_TERMS)
    [line] = [x.text for x in report.lines() if x.text.startswith("not judged jointly")]
    assert "1 claim replayed from recordings made without the joint judgment" in line
    assert "--citecheck-record=new_episodes" in line
    assert report.to_json()["joint"]["not_recorded"] == 1


def test_the_report_shows_the_joint_calls_apart_and_the_claims_reason(tmp_path: Path) -> None:
    from pytest_citecheck.reports.report import Report

    result, _ = run(tmp_path, honest, HISTORY, NEWS)
    report = Report({"claims/citecheck_water.yaml::acme": result})
    texts = [x.text for x in report.lines()]
    [joint] = [t for t in texts if t.startswith("joint judgment:")]
    assert "1 claim whose sources none supports alone, 2 judge calls" in joint
    assert "1 supported jointly" in joint
    # The first readings' tokens do not hold the joint calls' (shown apart).
    tokens = next(t for t in texts if "judge tokens" in t)
    first = sum(v.usage.input_tokens for v in result.verdicts if v.usage)
    assert f"judge tokens {first} in" in tokens
    data = report.to_json()
    [claim_json] = data["claims"]
    assert claim_json["reason"] == "supported_jointly"
    assert claim_json["verdicts"][0]["joint"]["alone"] == "not_found"
    assert data["joint"]["calls"] == 2 and data["joint"]["supported"] == 1
