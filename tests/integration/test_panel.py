"""A judge panel against the loopback doubles: every member's exchange is recorded in the
claim's one cassette, replay needs none of them live and decides byte for byte alike, and
a member that fails is an ``error`` vote, never a silent abstention."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Claim
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.recording.recorder import cassette_path
from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import Fault, JudgeCall, Scripted, verdict
from tests.integration.test_engine import (
    CLAIM_FILE,
    KEY,
    TOKENS,
    StableLLM,
    add_pages,
    cassettes,
    claim,
    dumped,
    env_for,
    make_engine,
)

PANEL = ("openai:judge-a", "openai:judge-b", "openai:judge-c")
BOILING = "https://example.com/science/boiling"
CLAIMS = [
    claim("boiling", "Water boils at 100 degrees Celsius.", BOILING),
    claim("altitude", "Water boils lower at altitude.", BOILING),
]
QUOTE = "Water boils at 100 degrees Celsius at sea level."


def by_model(answers: dict[str, Scripted]) -> Any:
    """A responder that answers by the model asked."""

    def respond(call: JudgeCall) -> Scripted:
        return answers[str(call.model)]

    return respond


def run(
    tmp_path: Path, answers: dict[str, Scripted], **settings: Any
) -> tuple[list[ClaimResult], list[ClaimResult], StableLLM]:
    """Record CLAIMS with the panel, then replay them with both doubles stopped."""

    def where(c: Claim) -> Path:
        return cassette_path(tmp_path / CLAIM_FILE, c.id)

    with (
        CrawlbaseDouble(tokens=TOKENS) as api,
        StableLLM(by_model(answers), api_key=KEY) as llm,
    ):
        add_pages(api)
        with make_engine(env_for(api, llm), "once", **settings) as engine:
            recorded = engine.verify_claims_sync(CLAIMS, cassette_for=where)
        urls = (api.base_url, llm.base_url("openai"))
    before = cassettes(tmp_path)
    with make_engine(env_for(*urls, keys=False), "none", **settings) as engine:
        engine.preflight(CLAIMS)  # replay needs no key for any member
        replayed = [engine.verify(c, where(c)) for c in CLAIMS]
    assert cassettes(tmp_path) == before  # replay writes nothing
    return recorded, replayed, llm


def agreeing() -> dict[str, Scripted]:
    return {
        "judge-a": verdict("supported", QUOTE, 0.9),
        "judge-b": verdict("supported", QUOTE, 0.7),
        "judge-c": verdict("not_found", None, 0.6),
    }


def test_a_panel_of_three_records_one_cassette_per_claim_and_replays_alike(
    tmp_path: Path,
) -> None:
    recorded, replayed, llm = run(tmp_path, agreeing(), judges=PANEL)
    assert dumped(replayed) == dumped(recorded)
    files = sorted((tmp_path / "claims" / "cassettes" / "citecheck_water").glob("*.yaml"))
    assert [f.stem for f in files] == ["altitude", "boiling"]
    for path in files:
        interactions = yaml.safe_load(path.read_text())["interactions"]
        models = [
            yaml.safe_load(i["request"]["body"])["model"]
            for i in interactions
            if i["request"]["method"] == "POST"
        ]
        # Each member's reading; a supported or contradicted one is followed by that
        # member's confirmation.
        assert [m for i, m in enumerate(models) if i == 0 or models[i - 1] != m] == [
            "judge-a",
            "judge-b",
            "judge-c",
        ]
    assert len([c for c in llm.calls if c.provider == "openai"]) == 6
    v = recorded[0].verdicts[0]
    assert (v.label, v.confidence, v.review) == (Label.SUPPORTED, 0.6667, True)
    assert v.evidence_quote == QUOTE
    assert [(m.judge, m.label, m.confidence) for m in v.panel or []] == [
        ("openai:judge-a", Label.SUPPORTED, 0.9),
        ("openai:judge-b", Label.SUPPORTED, 0.7),
        ("openai:judge-c", Label.NOT_FOUND, 0.6),
    ]
    assert v.usage is not None and v.usage.input_tokens == 3 * 120


def test_a_member_that_fails_is_an_error_vote_and_cannot_tip_the_majority(
    tmp_path: Path,
) -> None:
    answers = {
        "judge-a": verdict("supported", QUOTE, 0.9),
        "judge-b": Fault("refusal"),
        "judge-c": verdict("not_found", None, 0.8),
    }

    def where(c: Claim) -> Path:
        return cassette_path(tmp_path / CLAIM_FILE, c.id)

    with CrawlbaseDouble(tokens=TOKENS) as api, StableLLM(by_model(answers), api_key=KEY) as llm:
        add_pages(api)
        with make_engine(env_for(api, llm), "once", judges=PANEL, panel_min_votes=2) as engine:
            [result, _] = engine.verify_claims_sync(CLAIMS, cassette_for=where)
    v = result.verdicts[0]
    # One supported of three is no majority, and the missing vote might have decided:
    # error, not a supported that ignores the failure or a not_found that hides it.
    assert v.label is Label.ERROR
    assert v.reason == Reason.JUDGE_REFUSED
    assert [m.label for m in v.panel or []] == [Label.SUPPORTED, Label.ERROR, Label.NOT_FOUND]
    assert (v.panel or [])[1].reason == Reason.JUDGE_REFUSED
    assert result.label is Label.ERROR
    # A failed member leaves no recording: `once` asks again next run.
    assert not (tmp_path / "claims" / "cassettes").exists()


@pytest.mark.parametrize(
    ("rule", "label", "reason"),
    [
        ("majority", Label.SUPPORTED, Reason.JUDGE_REFUSED),
        ("unanimous", Label.ERROR, Reason.JUDGE_REFUSED),
    ],
)
def test_an_error_vote_counts_under_each_rule(
    tmp_path: Path, rule: str, label: Label, reason: str
) -> None:
    answers = {
        "judge-a": verdict("supported", QUOTE, 0.9),
        "judge-b": verdict("supported", QUOTE, 0.9),
        "judge-c": Fault("refusal"),
    }
    with CrawlbaseDouble(tokens=TOKENS) as api, StableLLM(by_model(answers), api_key=KEY) as llm:
        add_pages(api)
        settings: dict[str, Any] = {"judges": PANEL, "panel_rule": rule, "panel_min_votes": 2}
        with make_engine(env_for(api, llm), "once", **settings) as engine:
            v = engine.verify(CLAIMS[0]).verdicts[0]
    assert v.label is label
    assert v.review is (label is not Label.ERROR)
    assert v.confidence == (0.6667 if label is Label.SUPPORTED else 0.3333)
    if label is Label.SUPPORTED:
        assert v.reason is None  # the deciding members' reason; the failure is in the panel
    else:
        assert v.reason == reason


def test_each_member_passes_the_guard_on_its_own(tmp_path: Path) -> None:
    answers = {
        "judge-a": verdict("supported", QUOTE, 0.9),
        "judge-b": verdict("supported", "Water boils at 90 degrees on every mountain.", 0.99),
        "judge-c": verdict("contradicted", QUOTE, 0.8),
    }
    recorded, replayed, _ = run(tmp_path, answers, judges=PANEL)
    v = recorded[0].verdicts[0]
    assert [m.label for m in v.panel or []] == [
        Label.SUPPORTED,
        Label.NOT_FOUND,
        Label.CONTRADICTED,
    ]
    assert (v.panel or [])[1].reason == Reason.EVIDENCE_QUOTE_NOT_IN_SOURCE
    assert (v.panel or [])[1].evidence_quote == "Water boils at 90 degrees on every mountain."
    # One each: no majority; supported against contradicted is named.
    assert (v.label, v.reason, v.review) == (Label.NOT_FOUND, Reason.PANEL_SPLIT, True)
    assert dumped(replayed) == dumped(recorded)


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_samples_of_one_model_are_recorded_in_order_and_replayed_in_order(
    tmp_path: Path,
) -> None:
    replies = iter(
        [
            verdict("supported", QUOTE, 0.9),
            verdict("not_found", None, 0.5),
            verdict("supported", QUOTE, 0.8),
        ]
        * 2
    )
    sent: list[dict[str, Any]] = []

    def respond(call: JudgeCall) -> Scripted:
        sent.append(call.json())
        return next(replies)

    def where(c: Claim) -> Path:
        return cassette_path(tmp_path / CLAIM_FILE, c.id)

    def confirm(call: JudgeCall) -> Scripted:  # each sample's answer holds on its quote
        return verdict("supported", QUOTE, 0.9)

    with (
        CrawlbaseDouble(tokens=TOKENS) as api,
        StableLLM(respond, api_key=KEY, confirm_responder=confirm) as llm,
    ):
        add_pages(api)
        settings: dict[str, Any] = {"judge": "openai:judge-a", "judge_samples": 3}
        with make_engine(env_for(api, llm), "once", concurrency=1, **settings) as engine:
            recorded = engine.verify_claims_sync(CLAIMS, cassette_for=where)
        urls = (api.base_url, llm.base_url("openai"))
    assert {body["temperature"] for body in sent} == {1.0}  # sampled, not greedy
    with make_engine(env_for(*urls, keys=False), "none", **settings) as engine:
        replayed = [engine.verify(c, where(c)) for c in CLAIMS]
    assert dumped(replayed) == dumped(recorded)
    assert [m.label for m in recorded[0].verdicts[0].panel or []] == [
        Label.SUPPORTED,
        Label.NOT_FOUND,
        Label.SUPPORTED,
    ]
    # Three samples of one judge are told apart in every listing.
    assert [m.judge for m in recorded[0].verdicts[0].panel or []] == [
        "openai:judge-a#1",
        "openai:judge-a#2",
        "openai:judge-a#3",
    ]
    assert recorded[0].verdicts[0].judge == "openai:judge-a"


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_a_claim_files_judges_make_its_panel(tmp_path: Path) -> None:
    panel_claim = CLAIMS[0].model_copy(update={"judges": PANEL})
    with (
        CrawlbaseDouble(tokens=TOKENS) as api,
        StableLLM(by_model(agreeing()), api_key=KEY) as llm,
    ):
        add_pages(api)
        with make_engine(env_for(api, llm), "once") as engine:
            v = engine.verify(panel_claim).verdicts[0]
            plain = engine.verify(CLAIMS[0].model_copy(update={"judge": "openai:judge-c"}))
    assert [m.judge for m in v.panel or []] == list(PANEL)
    assert plain.verdicts[0].panel is None
    assert plain.verdicts[0].judge == "openai:judge-c"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


UNREACHABLE = ("openai:judge-a", "openai:judge-b", "openai-compatible:down")


@pytest.mark.parametrize("min_votes", [None, 2])
def test_an_unreachable_member_is_named_and_replays_to_the_same_result(
    tmp_path: Path, min_votes: int | None
) -> None:
    """A member on a closed port: without enough votes the citation is ``error``
    ``panel_incomplete`` naming it (and nothing is saved, so the next run records it
    again); with ``panel_min_votes`` met the panel decides, the failure is recorded,
    and the replay gives the same verdict offline."""
    answers = {
        "judge-a": verdict("not_found", None, 0.8),
        "judge-b": verdict("not_found", None, 0.7),
    }
    down = f"http://127.0.0.1:{closed_port()}/v1"
    settings: dict[str, Any] = {"judges": UNREACHABLE, "panel_min_votes": min_votes, "timeout": 2}

    def where(c: Claim) -> Path:
        return cassette_path(tmp_path / CLAIM_FILE, c.id)

    with CrawlbaseDouble(tokens=TOKENS) as api, StableLLM(by_model(answers), api_key=KEY) as llm:
        add_pages(api)
        env = env_for(api, llm) | {"CITECHECK_JUDGE_BASE_URL": down}
        with make_engine(env, "once", **settings) as engine:
            recorded = engine.verify(CLAIMS[0], where(CLAIMS[0]))
        urls = (api.base_url, llm.base_url("openai"))
    v = recorded.verdicts[0]
    member = (v.panel or [])[2]
    assert (member.judge, member.label, member.reason) == (
        "openai-compatible:down",
        Label.ERROR,
        Reason.JUDGE_UNAVAILABLE,
    )
    replay_env = env_for(*urls, keys=False) | {"CITECHECK_JUDGE_BASE_URL": down}
    with make_engine(replay_env, "none", **settings) as engine:
        replayed = engine.verify(CLAIMS[0], where(CLAIMS[0]))
    if min_votes is None:
        assert (v.label, v.reason) == (Label.ERROR, Reason.PANEL_INCOMPLETE)
        assert v.detail is not None
        assert "openai-compatible:down failed (judge_unavailable" in v.detail
        assert "not recorded; rerun when every member answers" in v.detail
        assert not where(CLAIMS[0]).exists()
        assert replayed.verdicts[0].reason == Reason.NO_RECORDING
    else:
        assert (v.label, v.confidence, v.review) == (Label.NOT_FOUND, 0.6667, True)
        assert dumped([replayed]) == dumped([recorded])


@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_a_members_server_error_is_recorded_without_the_servers_install_path(
    tmp_path: Path,
) -> None:
    """A llama-cpp-python-like 500 whose body holds a traceback with the install path:
    the cassette (and so the verdict's detail) keeps the module, not the machine, and
    the panel that decided with two votes replays alike."""
    from tests.doubles.llm import Raw

    traceback = (
        '{"error": {"message": "Traceback (most recent call last): File '
        '\\"/home/x/.venv/lib/python3.11/site-packages/llama_cpp/server/app.py\\", line 42, '
        'in create_chat_completion", "type": "internal_server_error"}}'
    )
    answers = {
        "judge-a": verdict("supported", QUOTE, 0.9),
        "judge-b": verdict("supported", QUOTE, 0.8),
        "judge-c": Raw(500, traceback, {"content-type": "application/json"}),
    }
    recorded, replayed, _ = run(tmp_path, answers, judges=PANEL, panel_min_votes=2)
    assert dumped(replayed) == dumped(recorded)
    member = (recorded[0].verdicts[0].panel or [])[2]
    assert (member.label, member.reason) == (Label.ERROR, Reason.JUDGE_HTTP_ERROR)
    assert member.detail is not None
    assert 'File "site-packages/llama_cpp/server/app.py", line 42' in member.detail
    text = b"".join(cassettes(tmp_path).values()).decode()
    assert "site-packages/llama_cpp/server/app.py" in text
    assert "/home/x" not in text and ".venv" not in text and "python3.11" not in text
