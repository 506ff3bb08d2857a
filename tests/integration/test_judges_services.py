"""What real services and local servers do that the defaults do not fit.

Each test plays the real shape on the loopback double (``LLMDouble(rejects=...,
served_model=...)``, wrapped model text, several tool calls) and asserts what
the user gets: a verdict, or an error that says what happened.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation
from pytest_citecheck.core.errors import ConfigurationError, StageFailed
from pytest_citecheck.core.retry import RetryPolicy
from pytest_citecheck.engine.judging import Judging
from pytest_citecheck.engine.pipeline import Verifier
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.recording.recorder import open_recording
from pytest_citecheck.stages.judges import HTTPJudge, make_judge, parse_temperature
from pytest_citecheck.stages.judges.compat import json_text, recordable_model_name
from pytest_citecheck.stages.judges.openai import is_reasoning_model
from tests.doubles.llm import (
    LLAMA_CPP_PYTHON_RESPONSE_FORMAT_ERROR,
    Answer,
    Fault,
    LLMDouble,
    Rejected,
    ToolCalls,
    verdict,
)
from tests.integration.test_judges import CLAIM, KEYS, NO_SLEEP, PASSAGES, QUOTE

GOOD = {"label": "supported", "quote": QUOTE, "confidence": 0.9}
GOOD_TEXT = json.dumps(GOOD)
MODEL_PATH = "/home/alice/models/SmolLM2-135M-Instruct-Q8_0.gguf"


def judge_on(llm: LLMDouble, spec: str, **kw: Any) -> HTTPJudge:
    provider = spec.partition(":")[0]
    kw.setdefault("retry", NO_SLEEP)
    return make_judge(spec, environ=KEYS, base_url=llm.base_url(provider), **kw)


@pytest.fixture
def llm() -> Iterator[LLMDouble]:
    with LLMDouble() as double:
        yield double


def served(*rejects: Rejected, **kw: Any) -> LLMDouble:
    return LLMDouble(rejects=rejects, **kw)


# -- OpenAI reasoning models: temperature and the token limit -----------------------


@pytest.mark.parametrize(
    ("model", "reasoning"),
    [
        ("gpt-5-mini", True),
        ("gpt-5", True),
        ("o1", True),
        ("o3-mini", True),
        ("o4-mini-2025-04-16", True),
        ("gpt-4o-mini", False),
        ("gpt-4.1", False),
        ("omni-moderation-latest", False),
    ],
)
def test_reasoning_models_are_recognised(model: str, reasoning: bool) -> None:
    assert is_reasoning_model(model) is reasoning


@pytest.mark.parametrize("model", ["gpt-5-mini", "o4-mini"])
def test_a_reasoning_model_is_sent_no_temperature(model: str) -> None:
    with served("temperature") as llm:
        judge = judge_on(llm, f"openai:{model}")
        assert judge.judge(CLAIM, PASSAGES).label == "supported"
        [call] = llm.calls
    body = call.json()
    assert "temperature" not in body
    # Nor a token limit: reasoning models refuse max_tokens, and none is needed.
    assert not {"max_tokens", "max_completion_tokens"} & set(body)


def test_other_models_keep_temperature_zero_and_no_token_limit(llm: LLMDouble) -> None:
    for spec in ("openai:gpt-4o-mini", "openai-compatible:qwen2.5"):
        judge_on(llm, spec).judge(CLAIM, PASSAGES)
        body = llm.calls[-1].json()
        assert body["temperature"] == 0
        assert not {"max_tokens", "max_completion_tokens"} & set(body)


@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_a_model_that_refuses_temperature_is_asked_again_without_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="pytest_citecheck")
    with served("temperature") as llm:
        judge = judge_on(llm, "openai:my-reasoning-finetune", terms=PLUGIN_TERMS)
        first = judge.judge(CLAIM, PASSAGES)
        second = judge.judge(CLAIM, PASSAGES)
        bodies = [c.json() for c in llm.calls]
    assert first.label == second.label == "supported"
    # Per call, not remembered: each call's recording holds the same two exchanges.
    assert ["temperature" in b for b in bodies] == [True, False, True, False]
    assert bodies[0] == bodies[2] and bodies[1] == bodies[3]
    hints = [r.getMessage() for r in caplog.records if "without temperature" in r.getMessage()]
    assert len(hints) == 1 and "citecheck_judge_temperature = omit" in hints[0]


def test_temperature_omit_never_sends_it() -> None:
    with served("temperature") as llm:
        judge_on(llm, "openai:my-finetune", temperature="omit").judge(CLAIM, PASSAGES)
        [call] = llm.calls
    assert "temperature" not in call.json()


def test_an_explicit_temperature_is_sent_and_its_refusal_shown() -> None:
    with served("temperature") as llm:
        judge = judge_on(llm, "openai:gpt-5-mini", temperature=0.3)
        with pytest.raises(StageFailed) as info:
            judge.judge(CLAIM, PASSAGES)
        assert len(llm.calls) == 1
        assert llm.calls[0].json()["temperature"] == 0.3
    assert info.value.reason == Reason.JUDGE_HTTP_ERROR
    assert "unsupported_value" in info.value.detail
    assert "Only the default (1) value is supported" in info.value.detail


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, "auto"),
        ("", "auto"),
        ("auto", "auto"),
        ("omit", "omit"),
        ("None", "omit"),
        ("0", 0.0),
        ("0.7", 0.7),
        ("2", 2.0),
    ],
)
def test_parse_temperature(text: str | None, expected: object) -> None:
    assert parse_temperature(text) == expected


@pytest.mark.parametrize("text", ["hot", "-0.1", "2.5"])
def test_parse_temperature_rejects_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="auto, omit or a number"):
        parse_temperature(text)


def test_ollama_temperature_follows_the_setting(llm: LLMDouble) -> None:
    judge_on(llm, "ollama:llama3.1", temperature=0.4).judge(CLAIM, PASSAGES)
    assert llm.calls[-1].json()["options"] == {"temperature": 0.4}
    judge_on(llm, "ollama:llama3.1", temperature="omit").judge(CLAIM, PASSAGES)
    assert "options" not in llm.calls[-1].json()


# -- llama-cpp-python's server: response_format json_object + schema -----------------


def test_llama_cpp_python_gets_json_object_with_the_schema_after_its_500() -> None:
    slept: list[float] = []
    with served("json_schema", served_model=MODEL_PATH) as llm:
        judge = judge_on(llm, "openai-compatible:smollm2", retry=RetryPolicy(sleep=slept.append))
        reply = judge.judge(CLAIM, PASSAGES)
        bodies = [c.json() for c in llm.calls]
    assert (reply.label, reply.quote) == ("supported", PASSAGES[0][: len(reply.quote or "")])
    assert [b["response_format"]["type"] for b in bodies] == ["json_schema", "json_object"]
    assert (
        bodies[1]["response_format"]["schema"]
        == bodies[0]["response_format"]["json_schema"]["schema"]
    )
    assert slept == []  # the 500 that names response_format is not retried as is


def test_response_format_json_object_is_used_from_the_start() -> None:
    with served("json_schema") as llm:
        judge = judge_on(llm, "openai-compatible:smollm2", response_format="json_object")
        assert judge.judge(CLAIM, PASSAGES).label == "supported"
        [call] = llm.calls
    assert call.json()["response_format"]["type"] == "json_object"


def test_response_format_json_schema_shows_the_whole_server_error() -> None:
    with served("json_schema") as llm:
        judge = judge_on(llm, "openai-compatible:smollm2", response_format="json_schema")
        with pytest.raises(StageFailed) as info:
            judge.judge(CLAIM, PASSAGES)
    detail = info.value.detail
    assert info.value.reason == Reason.JUDGE_HTTP_ERROR
    assert len(LLAMA_CPP_PYTHON_RESPONSE_FORMAT_ERROR) > 200
    # Not cut before the useful part: which field, what it should be, where.
    assert "Input should be 'text' or 'json_object'" in detail
    assert "Endpoint: POST /v1/chat/completions" in detail


@pytest.mark.parametrize("status", [500, 400, 422])
def test_an_explicit_json_schema_the_server_refuses_is_not_retried_and_says_what_to_set(
    status: int,
) -> None:
    slept: list[float] = []
    with served("json_schema", json_schema_status=status) as llm:
        judge = judge_on(
            llm,
            "openai-compatible:smollm2",
            response_format="json_schema",
            retry=RetryPolicy(sleep=slept.append),
            terms=PLUGIN_TERMS,
        )
        with pytest.raises(StageFailed) as info:
            judge.judge(CLAIM, PASSAGES)
        calls = len(llm.calls)
    # Asked once: retrying the same body cannot change the server's mind.
    assert (calls, slept) == (1, [])
    detail = info.value.detail
    assert info.value.reason == Reason.JUDGE_HTTP_ERROR
    assert f"answered HTTP {status}" in detail and "after" not in detail
    assert (
        "the server refuses response_format json_schema, which "
        "citecheck_judge_response_format = json_schema asks for; set "
        "citecheck_judge_response_format = auto or citecheck_judge_response_format = json_object"
    ) in detail
    # The server's own words stay, whichever shape it answered in.
    assert "Input should be 'text' or 'json_object'" in detail


def test_auto_falls_back_to_json_object_after_a_4xx_refusal_too() -> None:
    with served("json_schema", json_schema_status=422) as llm:
        judge = judge_on(llm, "openai-compatible:smollm2")
        assert judge.judge(CLAIM, PASSAGES).label == "supported"
        kinds = [c.json()["response_format"]["type"] for c in llm.calls]
    assert kinds == ["json_schema", "json_object"]


@pytest.mark.allow_resend(
    "a live run (no cassettes): claims boiling, boiling-90 and eiffel each fetch the page "
    "they cite; only a recording run shares it"
)
def test_an_explicit_json_schema_refusal_is_one_error_verdict_per_claim_in_a_run(
    tmp_path: Path,
) -> None:
    from pytest_citecheck.claims.loader import parse_claim
    from pytest_citecheck.engine.core import Engine
    from pytest_citecheck.engine.settings import EngineSettings, StageHooks
    from tests.doubles.batch import RECORDS, SITE, FirstPassages, add_pages
    from tests.doubles.crawlbase import CrawlbaseDouble

    claims = [
        parse_claim({"id": r["id"], "claim": r["claim"], "citations": [f"{SITE}/articles/boiling"]})
        for r in RECORDS
    ]
    with CrawlbaseDouble() as api, served("json_schema", json_schema_status=400) as llm:
        add_pages(api)
        settings = EngineSettings(
            record_mode="all",
            judge="openai-compatible:smollm2",
            judge_base_url=llm.base_url("openai"),
            judge_response_format="json_schema",
            terms=PLUGIN_TERMS,
        )
        environ = {"CRAWLBASE_TOKEN": api.tokens["normal"], "CITECHECK_CRAWLBASE_URL": api.base_url}
        with Engine.from_settings(
            settings, hooks=StageHooks(make_ranker=FirstPassages), environ=environ
        ) as engine:
            results = engine.verify_claims_sync(claims)
        calls = len(llm.calls)
    assert calls == len(claims)
    for result in results:
        [v] = result.verdicts
        assert (result.label, v.label, v.reason) == (
            Label.ERROR,
            Label.ERROR,
            Reason.JUDGE_HTTP_ERROR,
        )
        assert "set citecheck_judge_response_format = auto or" in (v.detail or "")


@pytest.mark.allow_resend(
    "a live run (no cassettes): claims boiling, boiling-90 and eiffel each fetch the page "
    "they cite; only a recording run shares it"
)
def test_auto_asks_a_server_that_refuses_json_schema_once_per_run(tmp_path: Path) -> None:
    """llama-cpp-python's server refuses json_schema with a 500: ``auto`` asks again
    with json_object, and asks that server so from then on -- every claim's judge
    call (and each confirmation) was sent twice before, a 500 then json_object."""
    from pytest_citecheck.claims.loader import parse_claim
    from pytest_citecheck.engine.core import Engine
    from pytest_citecheck.engine.settings import EngineSettings, StageHooks
    from tests.doubles.batch import RECORDS, SITE, FirstPassages, add_pages
    from tests.doubles.crawlbase import CrawlbaseDouble

    claims = [
        parse_claim({"id": r["id"], "claim": r["claim"], "citations": [f"{SITE}/articles/boiling"]})
        for r in RECORDS
    ]
    with CrawlbaseDouble() as api, served("json_schema") as llm:
        add_pages(api)
        settings = EngineSettings(
            record_mode="all",
            judge="openai-compatible:smollm2",
            judge_base_url=llm.base_url("openai"),
            concurrency=4,
            terms=PLUGIN_TERMS,
        )
        environ = {"CRAWLBASE_TOKEN": api.tokens["normal"], "CITECHECK_CRAWLBASE_URL": api.base_url}
        with Engine.from_settings(
            settings, hooks=StageHooks(make_ranker=FirstPassages), environ=environ
        ) as engine:
            results = engine.verify_claims_sync(claims)
        kinds = [c.json()["response_format"]["type"] for c in [*llm.calls, *llm.confirmations]]
    assert len(claims) > 2
    assert all(r.label != Label.ERROR for r in results), [r.label for r in results]
    # One refusal in the run; every other request asked in the form the server takes.
    assert kinds.count("json_schema") == 1
    assert kinds.count("json_object") == len(kinds) - 1 >= len(claims)


def test_the_hosted_openai_provider_does_not_fall_back_to_json_object() -> None:
    with served("json_schema") as llm:
        judge = judge_on(llm, "openai:gpt-4o-mini", retry=RetryPolicy(attempts=1))
        with pytest.raises(StageFailed):
            judge.judge(CLAIM, PASSAGES)
        assert [c.json()["response_format"]["type"] for c in llm.calls] == ["json_schema"]


def test_a_bad_response_format_value_is_refused() -> None:
    with pytest.raises(ValueError, match="json_schema"):
        make_judge("openai-compatible:m", environ={}, base_url="http://x/v1", response_format="xml")


# -- wrapped JSON: code fences and <think> blocks --------------------------------------

WRAPPED = [
    f"```json\n{GOOD_TEXT}\n```",
    f"```\n{GOOD_TEXT}\n```",
    f"  ```JSON\n{GOOD_TEXT}\n```  \n",
    f"<think>\nThe passage states it. {{not json}}\n</think>\n\n{GOOD_TEXT}",
    f"<think>Quoting: ```x```</think>```json\n{GOOD_TEXT}\n```",
]


@pytest.mark.parametrize("text", WRAPPED)
@pytest.mark.parametrize("provider", ["openai-compatible", "ollama", "anthropic"])
def test_wrapped_json_is_unwrapped(llm: LLMDouble, provider: str, text: str) -> None:
    llm.script(Answer(text))
    reply = judge_on(llm, f"{provider}:m").judge(CLAIM, PASSAGES)
    assert (reply.label, reply.quote, reply.confidence) == ("supported", QUOTE, 0.9)


NOT_GUESSED = [
    f"Here is the verdict:\n```json\n{GOOD_TEXT}\n```",
    f"```json\n{GOOD_TEXT}\n```\nHope this helps!",
    f"```json\n{GOOD_TEXT}\n```\n```json\n{GOOD_TEXT}\n```",
    f"```json\n{GOOD_TEXT}\n{GOOD_TEXT}\n```",
    f"The verdict is {GOOD_TEXT}",
    f"<think>never closed {GOOD_TEXT}",
    "<think>only thoughts</think>",
    f"{GOOD_TEXT}<think>late</think>",
]


@pytest.mark.parametrize("text", NOT_GUESSED)
def test_anything_but_one_wrapped_object_is_invalid_json(llm: LLMDouble, text: str) -> None:
    llm.script(Answer(text))
    with pytest.raises(StageFailed) as info:
        judge_on(llm, "ollama:m").judge(CLAIM, PASSAGES)
    assert info.value.reason == Reason.JUDGE_INVALID_JSON


def test_json_text_unwraps_only() -> None:
    assert json_text(f"<think>a</think>\n```json\n{GOOD_TEXT}\n```") == GOOD_TEXT
    assert json_text(GOOD_TEXT) == GOOD_TEXT
    assert json_text("prose") == "prose"


# -- Ollama think: false ------------------------------------------------------------------


def test_ollama_is_asked_not_to_think(llm: LLMDouble) -> None:
    judge_on(llm, "ollama:qwen3:8b").judge(CLAIM, PASSAGES)
    assert llm.calls[-1].json()["think"] is False


def test_ollama_without_think_is_asked_again_without_it() -> None:
    with served("think") as llm:
        reply = judge_on(llm, "ollama:llama3.1").judge(CLAIM, PASSAGES)
        bodies = [c.json() for c in llm.calls]
    assert reply.label == "supported"
    assert ["think" in b for b in bodies] == [True, False]


# -- Anthropic: strict tool, several tool calls --------------------------------------------


def test_anthropic_verdict_tool_is_strict(llm: LLMDouble) -> None:
    judge_on(llm, "anthropic:claude-sonnet-4-6").judge(CLAIM, PASSAGES)
    [tool] = llm.calls[-1].json()["tools"]
    assert tool["strict"] is True


def test_anthropic_model_without_strict_is_asked_again_without_it() -> None:
    with served("strict") as llm:
        reply = judge_on(llm, "anthropic:claude-3-5-haiku-latest").judge(CLAIM, PASSAGES)
        tools = [c.json()["tools"][0] for c in llm.calls]
    assert reply.label == "supported"
    assert ["strict" in t for t in tools] == [True, False]


def test_the_first_valid_record_verdict_block_is_the_verdict(llm: LLMDouble) -> None:
    bad = {"label": "maybe", "quote": None, "confidence": "high"}
    other = {"label": "contradicted", "quote": QUOTE, "confidence": 0.1}
    good2 = {"label": "contradicted", "quote": QUOTE, "confidence": 0.5}
    llm.script(
        ToolCalls(
            (other, bad, GOOD, good2),
            names=("something_else", "record_verdict", "record_verdict", "record_verdict"),
        )
    )
    reply = judge_on(llm, "anthropic:m").judge(CLAIM, PASSAGES)
    assert (reply.label, reply.confidence) == ("supported", 0.9)


def test_several_blocks_none_valid_is_a_schema_mismatch(llm: LLMDouble) -> None:
    llm.script(ToolCalls(({"label": "maybe"}, {"label": "supported", "quote": 3})))
    with pytest.raises(StageFailed) as info:
        judge_on(llm, "anthropic:m").judge(CLAIM, PASSAGES)
    assert info.value.reason == Reason.JUDGE_SCHEMA_MISMATCH


# -- not_found drops the quote ----------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
def test_a_not_found_verdict_drops_the_models_quote(llm: LLMDouble, provider: str) -> None:
    llm.script(verdict("not_found", "At higher altitudes", 0.8))
    reply = judge_on(llm, f"{provider}:m").judge(CLAIM, PASSAGES)
    assert (reply.label, reply.quote) == ("not_found", None)


def test_a_not_found_verdict_reports_no_evidence_quote(llm: LLMDouble, tmp_path: Path) -> None:
    source = tmp_path / "boiling.md"
    source.write_text(f"# Boiling\n\n{PASSAGES[0]}\n")
    llm.script(verdict("not_found", "At sea level, water boils", 0.8))
    verifier = Verifier(
        fetcher=cast(Any, None),
        ranker=cast(Any, None),
        judging=Judging(judge=judge_on(llm, "openai:m")),
    )
    citation = Citation(document="boiling.md", section="Boiling", document_path=source)
    result = verifier.verify_citation(CLAIM, citation)
    assert result.label == Label.NOT_FOUND
    assert result.evidence_quote is None


# -- "could not reach" vs "connected but never answered" ----------------------------------------


def test_nothing_listening_is_could_not_reach() -> None:
    with LLMDouble() as llm:
        judge = judge_on(llm, "ollama:m", retry=RetryPolicy(attempts=1))
    with pytest.raises(StageFailed) as info:
        judge.judge(CLAIM, PASSAGES)
    assert info.value.reason == Reason.JUDGE_UNAVAILABLE
    assert info.value.detail.startswith("could not reach the ollama:m judge")
    assert "no connection" in info.value.detail


def test_a_server_that_closes_without_answering_says_so(llm: LLMDouble) -> None:
    llm.script(Fault("drop"))
    with pytest.raises(StageFailed) as info:
        judge_on(llm, "openai:m", retry=RetryPolicy(attempts=1)).judge(CLAIM, PASSAGES)
    assert info.value.reason == Reason.JUDGE_UNAVAILABLE
    assert "accepted the connection but closed it without answering" in info.value.detail
    assert "could not reach" not in info.value.detail


def test_a_server_that_never_answers_says_so(llm: LLMDouble) -> None:
    llm.script(Fault("hang", seconds=1.0))
    judge = judge_on(llm, "ollama:m", retry=RetryPolicy(attempts=1), timeout=0.2)
    with pytest.raises(StageFailed) as info:
        judge.judge(CLAIM, PASSAGES)
    assert info.value.reason == Reason.JUDGE_UNAVAILABLE
    assert "accepted the connection but sent no answer within 0.2 s" in info.value.detail


# -- the base URL of an openai-compatible judge --------------------------------------------------


def test_a_missing_base_url_names_the_ini_option() -> None:
    with pytest.raises(ConfigurationError) as info:
        make_judge("openai-compatible:smollm2", environ={}, require_key=False, terms=PLUGIN_TERMS)
    message = str(info.value)
    assert "citecheck_judge_base_url" in message
    assert "CITECHECK_JUDGE_BASE_URL" in message


# -- the server's model path stays out of recordings ----------------------------------------------


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        (MODEL_PATH, "SmolLM2-135M-Instruct-Q8_0.gguf"),
        ("models/smollm2.gguf", "smollm2.gguf"),
        ("C:\\models\\smollm2.gguf", "smollm2.gguf"),
        ("~/models/smollm2", "smollm2"),
        ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct"),
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("llama3.1:8b", "llama3.1:8b"),
    ],
)
def test_recordable_model_name(value: str, kept: str) -> None:
    assert recordable_model_name(value) == kept


def test_a_local_model_path_is_not_recorded(tmp_path: Path) -> None:
    import httpx

    from pytest_citecheck.recording.transport import StageTransport

    cassette = tmp_path / "claim.yaml"
    client = httpx.Client(transport=StageTransport())
    with served(served_model=MODEL_PATH) as llm:
        base_url = llm.base_url("openai-compatible")
        live = make_judge("openai-compatible:smollm2", environ={}, base_url=base_url, client=client)
        with open_recording(cassette, "once", "claim", {}) as recording:
            recorded = live.judge(CLAIM, PASSAGES)
            assert recording.finish(ok=True)
    text = cassette.read_text()
    assert "/home/alice" not in text and "models/" not in text
    assert "SmolLM2-135M-Instruct-Q8_0.gguf" in text
    replayer = make_judge("openai-compatible:smollm2", environ={}, base_url=base_url, client=client)
    with open_recording(cassette, "none", "claim", {}) as played:
        assert replayer.judge(CLAIM, PASSAGES) == recorded
        assert all(i.played for i in played.cassette.interactions)
    client.close()


def test_only_json_replies_lose_a_model_path() -> None:
    from pytest_citecheck.recording.transport import Reply, redact_reply

    text = json.dumps({"model": MODEL_PATH, "choices": []}).encode()
    page = Reply(200, "OK", {"content-type": ["text/markdown"]}, text)
    reply = Reply(200, "OK", {"content-type": ["application/json"]}, text)
    assert redact_reply(page, []).body == text  # a page is evidence: kept
    assert MODEL_PATH.encode() not in redact_reply(reply, []).body
