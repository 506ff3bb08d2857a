"""The confirmation is not accepted on its label alone: its quote must be in what it read
and meet the evidence minimum, and its confidence counts as the first reading's does (a
confirmation at 0 sends the verdict to review). Loopback page and judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.recording.recorder import cassette_path
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import JudgeCall, Scripted, verdict
from tests.integration.test_confirmation import BENIGN, CLAIM, URL
from tests.integration.test_engine import (
    CLAIM_FILE,
    KEY,
    TOKENS,
    StableLLM,
    claim,
    env_for,
    make_engine,
)

EVIDENCE = "The Hostile widget weighs 42 kilograms and ships in a wooden crate."


def reading(call: JudgeCall) -> Scripted:
    return verdict("supported", EVIDENCE, 0.95)


def run(tmp_path: Path, confirming: Scripted, mode: str = "once") -> ClaimResult:
    where = cassette_path(tmp_path / CLAIM_FILE, "widget")
    with (
        CrawlbaseDouble(tokens=TOKENS) as api,
        StableLLM(reading, api_key=KEY, confirm_responder=lambda call: confirming) as llm,
    ):
        api.add(URL, Page(markdown=BENIGN))
        env = env_for(api, llm) if mode != "none" else env_for(api, llm, keys=False)
        with make_engine(env, mode) as engine:
            return engine.verify(claim("widget", CLAIM, URL), where)


@pytest.mark.parametrize(
    ("quote", "reason"),
    [
        ("The Hostile widget weighs 42 kilograms in the catalogue.", "not_in_source"),
        ("weighs 42", "too_short"),
        (None, "not_in_source"),
    ],
    ids=["not-in-what-it-read", "too-short", "no-quote"],
)
def test_a_confirmation_whose_quote_the_guard_refuses_does_not_confirm(
    tmp_path: Path, quote: str | None, reason: str
) -> None:
    result = run(tmp_path, verdict("supported", quote, 0.95))
    [v] = result.verdicts
    assert (v.label, v.reason, v.review) == (Label.NOT_FOUND, Reason.UNCONFIRMED, True)
    assert v.judge_label is Label.SUPPORTED
    assert v.confirmation is not None and v.confirmation.status == "unconfirmed"
    assert v.confirmation.label is Label.SUPPORTED
    assert v.confirmation.quote == quote
    assert v.confirmation.reason is not None and reason in v.confirmation.reason
    assert v.detail is not None and "the guard refused that answer" in v.detail
    assert run(tmp_path, verdict("supported", quote, 0.95), "none").model_dump() == (
        result.model_dump()
    )


def test_a_confirmation_at_confidence_zero_sends_the_verdict_to_review(tmp_path: Path) -> None:
    [v] = run(tmp_path, verdict("supported", EVIDENCE, 0.0)).verdicts
    assert v.label is Label.SUPPORTED
    assert v.confirmation is not None and v.confirmation.status == "confirmed"
    # As sure as its least sure reading: below the review floor, listed for review.
    assert v.confidence == 0.0 and v.review


def test_a_confirmation_quoting_what_it_read_still_confirms(tmp_path: Path) -> None:
    [v] = run(tmp_path, verdict("supported", EVIDENCE, 0.9)).verdicts
    assert (v.label, v.reason, v.review) == (Label.SUPPORTED, None, False)
    assert v.confidence == 0.9
    assert v.confirmation is not None and v.confirmation.status == "confirmed"
    assert v.confirmation.quote == EVIDENCE and v.confirmation.reason is None
