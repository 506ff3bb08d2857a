"""Judge providers against the loopback double: request shape, parsing, faults, secrets."""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation
from pytest_citecheck.claims.results import Usage, Verdict
from pytest_citecheck.core.errors import ConfigurationError, StageFailed
from pytest_citecheck.core.retry import RetryPolicy
from pytest_citecheck.engine.judging import Judging
from pytest_citecheck.engine.pipeline import Verifier
from pytest_citecheck.stages.judges import (
    DEFAULT_JUDGE,
    PROMPT_VERSION,
    PROVIDERS,
    HTTPJudge,
    JudgeReply,
    build_messages,
    make_judge,
    parse_judge_spec,
    recorded_prompt_version,
)
from pytest_citecheck.stages.judges.ollama import normalise_host
from pytest_citecheck.stages.judges.prompt import SYSTEM_PROMPT, VERDICT_SCHEMA, dump_body
from tests.doubles.llm import (
    FAULT_KINDS,
    Answer,
    Fault,
    FaultKind,
    LLMDouble,
    Raw,
    render_fault,
    verdict,
)

CLAIM = "Water boils at 100 degrees Celsius at sea level."
PASSAGES = [
    "At sea level, water boils at 100 degrees Celsius (212 degrees Fahrenheit).",
    "At higher altitudes the boiling point is lower.",
]
QUOTE = "water boils at 100 degrees Celsius"
KEYS = {
    "OPENAI_API_KEY": "sk-planted-openai-0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-planted-anthropic-0123456789",
    "OLLAMA_API_KEY": "planted-ollama-key-0123456789",
    "CITECHECK_JUDGE_API_KEY": "planted-compat-key-0123456789",
}
KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "ollama": "OLLAMA_API_KEY",
    "openai-compatible": "CITECHECK_JUDGE_API_KEY",
}
NO_SLEEP = RetryPolicy(sleep=lambda seconds: None)


@pytest.fixture
def llm() -> Iterator[LLMDouble]:
    with LLMDouble() as double:
        yield double


def judge_for(
    llm: LLMDouble, provider: str, *, environ: dict[str, str] | None = None, **kw: Any
) -> HTTPJudge:
    kw.setdefault("retry", NO_SLEEP)
    return make_judge(
        f"{provider}:test-model",
        environ=KEYS if environ is None else environ,
        base_url=llm.base_url(provider),
        **kw,
    )


# -- the prompt ------------------------------------------------------------------


def test_prompt_carries_its_version_and_the_rules() -> None:
    system, user = build_messages(CLAIM, PASSAGES)
    assert system["role"] == "system" and user["role"] == "user"
    assert PROMPT_VERSION in system["content"]
    for rule in (
        "only evidence",
        "supported",
        "contradicted",
        "not_found",
        "null",
        "character for character",
        "0 to 1",
        "number or source",
    ):
        assert rule in system["content"]
    assert CLAIM in user["content"]
    assert '<passage n="1">\n' + PASSAGES[0] in user["content"]
    assert '<passage n="2">\n' + PASSAGES[1] in user["content"]


def test_prompt_is_deterministic_and_versioned_in_the_body() -> None:
    one = dump_body({"messages": build_messages(CLAIM, PASSAGES)})
    two = dump_body({"messages": build_messages(CLAIM, list(PASSAGES))})
    assert one == two
    assert recorded_prompt_version(one) == PROMPT_VERSION
    assert recorded_prompt_version(b'{"messages": []}') is None
    assert recorded_prompt_version(None) is None


def test_a_document_section_is_the_only_passage() -> None:
    _, user = build_messages(CLAIM, ['4.1.4. "exp" (Expiration Time) Claim ...'])
    assert user["content"].count("<passage ") == 1


def test_schema_is_strict_mode_compatible() -> None:
    assert VERDICT_SCHEMA["additionalProperties"] is False
    assert set(VERDICT_SCHEMA["required"]) == set(VERDICT_SCHEMA["properties"])
    assert VERDICT_SCHEMA["properties"]["quote"]["type"] == ["string", "null"]
    assert VERDICT_SCHEMA["properties"]["label"]["enum"] == [
        "supported",
        "contradicted",
        "not_found",
    ]


# -- the factory -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("openai:gpt-4o-mini", ("openai", "gpt-4o-mini")),
        ("ollama:llama3.1:8b", ("ollama", "llama3.1:8b")),
        ("anthropic:claude-sonnet-4-6", ("anthropic", "claude-sonnet-4-6")),
        ("openai-compatible:Qwen/Qwen2.5-7B", ("openai-compatible", "Qwen/Qwen2.5-7B")),
    ],
)
def test_parse_judge_spec(spec: str, expected: tuple[str, str]) -> None:
    assert parse_judge_spec(spec) == expected


@pytest.mark.parametrize("spec", ["gpt-4o-mini", "mistral:large", "openai", "openai:", ""])
def test_bad_spec_is_a_value_error_listing_providers(spec: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_judge_spec(spec)
    for provider in PROVIDERS:
        assert provider in str(info.value)
    assert DEFAULT_JUDGE in str(info.value)


def test_judge_exposes_name_and_prompt_version() -> None:
    judge = make_judge("ollama:llama3.1:8b", environ={})
    assert judge.name == "ollama:llama3.1:8b"
    assert judge.prompt_version == PROMPT_VERSION
    assert judge.url == "http://127.0.0.1:11434/api/chat"


def test_default_endpoints_and_env_overrides() -> None:
    env = dict(KEYS)
    assert make_judge("openai:m", environ=env).url == "https://api.openai.com/v1/chat/completions"
    assert make_judge("anthropic:m", environ=env).url == "https://api.anthropic.com/v1/messages"
    env.update(
        OPENAI_BASE_URL="http://127.0.0.1:9/v1/",
        ANTHROPIC_BASE_URL="http://127.0.0.1:8",
        OLLAMA_HOST="127.0.0.1:7",
        CITECHECK_JUDGE_BASE_URL="http://127.0.0.1:6/v1",
    )
    assert make_judge("openai:m", environ=env).url == "http://127.0.0.1:9/v1/chat/completions"
    assert make_judge("anthropic:m", environ=env).url == "http://127.0.0.1:8/v1/messages"
    assert make_judge("ollama:m", environ=env).url == "http://127.0.0.1:7/api/chat"
    assert (
        make_judge("openai-compatible:m", environ=env).url
        == "http://127.0.0.1:6/v1/chat/completions"
    )


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("localhost", "http://localhost:11434"),
        ("0.0.0.0:8080", "http://0.0.0.0:8080"),
        ("https://ollama.example.com/", "https://ollama.example.com:443"),
        ("http://ollama.example.com", "http://ollama.example.com:80"),
        ("", "http://127.0.0.1:11434"),
        # The two cases real servers showed (the ollama client's own answers):
        (":56789", "http://127.0.0.1:56789"),
        ("example.com/path", "http://example.com:11434/path"),
        ("example.com:56789/path/", "http://example.com:56789/path"),
        ("[::1]:56789", "http://[::1]:56789"),
    ],
)
def test_ollama_host_is_read_like_the_sdk(host: str, expected: str) -> None:
    assert normalise_host(host) == expected


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_missing_key_is_a_configuration_error_naming_the_variable(provider: str) -> None:
    with pytest.raises(ConfigurationError, match=KEY_ENV[provider]):
        make_judge(f"{provider}:m", environ={})


def test_openai_compatible_needs_a_base_url_but_no_key() -> None:
    with pytest.raises(ConfigurationError, match="CITECHECK_JUDGE_BASE_URL"):
        make_judge("openai-compatible:m", environ={})
    judge = make_judge("openai-compatible:m", environ={}, base_url="http://127.0.0.1:1/v1")
    assert judge.api_key is None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_replay_without_a_key_sends_no_auth_header(llm: LLMDouble, provider: str) -> None:
    judge = judge_for(llm, provider, environ={}, require_key=False)
    llm.script(verdict("supported", QUOTE, 0.95))
    assert judge.judge(CLAIM, PASSAGES).label == "supported"
    headers = llm.calls[-1].headers
    assert "authorization" not in headers and "x-api-key" not in headers


# -- happy paths: request shape, reply, usage ------------------------------------------


def test_openai_request_and_reply(llm: LLMDouble) -> None:
    judge = judge_for(llm, "openai")
    llm.script(verdict("supported", QUOTE, 0.93, input_tokens=812, output_tokens=24))
    reply = judge.judge(CLAIM, PASSAGES)
    assert reply == JudgeReply(
        label="supported",
        quote=QUOTE,
        confidence=0.93,
        usage=Usage(input_tokens=812, output_tokens=24),
    )
    call = llm.calls[-1]
    assert call.path == "/v1/chat/completions"
    assert call.headers["authorization"] == f"Bearer {KEYS['OPENAI_API_KEY']}"
    body = call.json()
    assert body["model"] == "test-model"
    assert body["temperature"] == 0
    assert body["messages"] == build_messages(CLAIM, PASSAGES)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "record_verdict", "strict": True, "schema": VERDICT_SCHEMA},
    }
    assert call.claim == CLAIM and call.passages == PASSAGES


def test_openai_compatible_request_and_reply(llm: LLMDouble) -> None:
    judge = judge_for(llm, "openai-compatible")
    llm.script(verdict("contradicted", QUOTE, 0.7))
    reply = judge.judge(CLAIM, PASSAGES)
    assert (reply.label, reply.quote, reply.confidence) == ("contradicted", QUOTE, 0.7)
    call = llm.calls[-1]
    assert call.headers["authorization"] == f"Bearer {KEYS['CITECHECK_JUDGE_API_KEY']}"
    assert call.json()["response_format"]["json_schema"]["strict"] is True
    assert judge.name == "openai-compatible:test-model"


def test_anthropic_request_and_reply(llm: LLMDouble) -> None:
    judge = judge_for(llm, "anthropic")
    llm.script(verdict("not_found", None, 0.8, input_tokens=950, output_tokens=61))
    reply = judge.judge(CLAIM, PASSAGES)
    assert reply == JudgeReply(
        label="not_found",
        quote=None,
        confidence=0.8,
        usage=Usage(input_tokens=950, output_tokens=61),
    )
    call = llm.calls[-1]
    assert call.path == "/v1/messages"
    assert call.headers["x-api-key"] == KEYS["ANTHROPIC_API_KEY"]
    assert call.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in call.headers
    body = call.json()
    assert body["system"] == SYSTEM_PROMPT
    assert body["messages"] == [build_messages(CLAIM, PASSAGES)[1]]
    assert body["tool_choice"] == {"type": "tool", "name": "record_verdict"}
    assert body["tools"][0]["input_schema"] == VERDICT_SCHEMA
    assert body["max_tokens"] > 0
    assert "temperature" not in body  # see judges/anthropic.py


def test_anthropic_text_reply_is_parsed_like_the_others(llm: LLMDouble) -> None:
    judge = judge_for(llm, "anthropic")
    llm.script(Answer(json.dumps({"label": "supported", "quote": QUOTE, "confidence": 1})))
    assert judge.judge(CLAIM, PASSAGES).confidence == 1.0


def test_ollama_request_and_reply(llm: LLMDouble) -> None:
    judge = judge_for(llm, "ollama", timeout=12.5)
    llm.script(verdict("supported", QUOTE, 0.6, input_tokens=34, output_tokens=12))
    reply = judge.judge(CLAIM, PASSAGES)
    assert reply == JudgeReply(
        label="supported",
        quote=QUOTE,
        confidence=0.6,
        usage=Usage(input_tokens=34, output_tokens=12),
    )
    call = llm.calls[-1]
    assert call.path == "/api/chat"
    assert call.headers["authorization"] == f"Bearer {KEYS['OLLAMA_API_KEY']}"
    body = call.json()
    assert body["format"] == VERDICT_SCHEMA
    assert body["stream"] is False
    assert body["options"] == {"temperature": 0}
    assert body["messages"] == build_messages(CLAIM, PASSAGES)
    request = judge.build_request(CLAIM, PASSAGES)
    assert request.extensions["timeout"]["read"] == 12.5


@pytest.mark.allow_resend("asks the same question twice on purpose (its bodies are compared)")
def test_the_request_body_is_byte_identical_across_calls(llm: LLMDouble) -> None:
    for provider in PROVIDERS:
        judge = judge_for(llm, provider)
        judge.judge(CLAIM, PASSAGES)
        judge.judge(CLAIM, list(PASSAGES))
        assert llm.calls[-1].body == llm.calls[-2].body


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_a_judge_honours_retry_after_then_backs_off(llm: LLMDouble, provider: str) -> None:
    slept: list[float] = []
    judge = judge_for(llm, provider, retry=RetryPolicy(sleep=slept.append))
    llm.script(
        Fault("rate_limited", retry_after_ms=25), Fault("drop"), verdict("supported", QUOTE, 0.9)
    )
    reply = judge.judge(CLAIM, PASSAGES)
    assert (reply.label, reply.quote) == ("supported", QUOTE)
    assert slept == [0.025, 1.0]  # retry-after-ms honoured, then backoff 0.5 * 2**1
    assert len({c.body for c in llm.calls}) == 1


def test_a_callers_client_is_used(llm: LLMDouble) -> None:
    seen: list[str] = []
    with httpx.Client(event_hooks={"request": [lambda r: seen.append(r.url.path)]}) as client:
        judge = judge_for(llm, "openai", client=client)
        judge.judge(CLAIM, PASSAGES)
    assert seen == ["/v1/chat/completions"]


# -- faults ------------------------------------------------------------------------------

RETRIED: list[FaultKind] = ["rate_limited", "server_error", "overloaded", "drop"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("kind", RETRIED)
@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_transient_fault_is_retried_then_ok(llm: LLMDouble, provider: str, kind: Any) -> None:
    slept: list[float] = []
    judge = judge_for(llm, provider, retry=RetryPolicy(sleep=slept.append))
    llm.script(Fault(kind), Fault(kind), verdict("supported", QUOTE, 0.9))
    assert judge.judge(CLAIM, PASSAGES).label == "supported"
    assert len(llm.calls) == 3 and len(slept) == 2


@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_timeout_is_retried_then_ok(llm: LLMDouble) -> None:
    judge = judge_for(llm, "ollama", timeout=0.2)
    llm.script(Fault("hang", seconds=1.0), verdict("supported", QUOTE, 0.9))
    assert judge.judge(CLAIM, PASSAGES).label == "supported"


# provider -> fault -> (expected reason or ConfigurationError, calls made with 4 attempts)
def expected_failure(provider: str, kind: str) -> tuple[str, int]:
    wire = "openai" if provider == "openai-compatible" else provider
    if kind in ("unauthorized", "forbidden"):
        return "config", 1
    if kind == "quota_exhausted":
        return ("config", 1) if wire != "ollama" else (Reason.JUDGE_HTTP_ERROR, 4)
    if kind == "refusal":
        return (Reason.JUDGE_REFUSED if wire != "ollama" else Reason.JUDGE_INVALID_JSON), 1
    return {
        "rate_limited": (Reason.JUDGE_HTTP_ERROR, 4),
        "server_error": (Reason.JUDGE_HTTP_ERROR, 4),
        "overloaded": (Reason.JUDGE_HTTP_ERROR, 4),
        "model_not_found": (Reason.JUDGE_HTTP_ERROR, 1),
        "bad_request": (Reason.JUDGE_HTTP_ERROR, 1),
        "truncated": (Reason.JUDGE_TRUNCATED, 1),
        "invalid_json": (Reason.JUDGE_INVALID_JSON, 1),
        "schema_breaking": (Reason.JUDGE_SCHEMA_MISMATCH, 1),
        "drop": (Reason.JUDGE_UNAVAILABLE, 4),
    }[kind]


# Every fault of the double but "hang" (a timeout, tested on its own).
FAILING: list[FaultKind] = [kind for kind in FAULT_KINDS if kind != "hang"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("kind", FAILING)
@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_fault_table(llm: LLMDouble, provider: str, kind: Any) -> None:
    """Every persistent fault is an error with its reason -- never a verdict."""
    judge = judge_for(llm, provider)
    llm.script(*[Fault(kind)] * 4, verdict("supported", QUOTE, 0.99))
    expected, calls = expected_failure(provider, kind)
    with pytest.raises((StageFailed, ConfigurationError)) as info:
        judge.judge(CLAIM, PASSAGES)
    if expected == "config":
        assert isinstance(info.value, ConfigurationError)
        assert KEY_ENV[provider] in str(info.value)
    else:
        assert isinstance(info.value, StageFailed)
        assert info.value.reason == expected, info.value.detail
    assert len(llm.calls) == calls


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ({"label": "supported", "quote": QUOTE, "confidence": "0.9"}, Reason.JUDGE_SCHEMA_MISMATCH),
        ({"label": "supported", "quote": QUOTE, "confidence": True}, Reason.JUDGE_SCHEMA_MISMATCH),
        ({"label": "supported", "confidence": 0.9}, Reason.JUDGE_SCHEMA_MISMATCH),
        ({"label": "Supported", "quote": QUOTE, "confidence": 0.9}, Reason.JUDGE_SCHEMA_MISMATCH),
        ({"label": "supported", "quote": 7, "confidence": 0.9}, Reason.JUDGE_SCHEMA_MISMATCH),
        (["supported", QUOTE, 0.9], Reason.JUDGE_SCHEMA_MISMATCH),
        ("", Reason.JUDGE_INVALID_JSON),
        ('{"label": "supported", "quote": "x", "confidence": 0.9', Reason.JUDGE_INVALID_JSON),
    ],
)
@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_replies_that_break_the_schema(
    llm: LLMDouble, provider: str, content: Any, reason: str
) -> None:
    judge = judge_for(llm, provider)
    llm.script(Answer(content))
    with pytest.raises(StageFailed) as info:
        judge.judge(CLAIM, PASSAGES)
    assert info.value.reason == reason


@pytest.mark.parametrize("confidence", [10, 2.0, 85, -1])
@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_a_confidence_on_another_scale_keeps_the_label_and_the_number(
    llm: LLMDouble, provider: str, confidence: float
) -> None:
    judge = judge_for(llm, provider)
    llm.script(Answer({"label": "supported", "quote": QUOTE, "confidence": confidence}))
    reply = judge.judge(CLAIM, PASSAGES)
    assert (reply.label, reply.quote, reply.confidence_raw) == ("supported", QUOTE, confidence)


def test_a_model_cannot_smuggle_usage_into_its_verdict(llm: LLMDouble) -> None:
    judge = judge_for(llm, "openai")
    llm.script(
        Answer(
            {
                "label": "not_found",
                "quote": None,
                "confidence": 0.5,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
            input_tokens=7,
            output_tokens=3,
        )
    )
    assert judge.judge(CLAIM, PASSAGES).usage == Usage(input_tokens=7, output_tokens=3)


def test_a_long_retry_after_is_not_waited_for(llm: LLMDouble) -> None:
    judge = judge_for(llm, "anthropic")
    llm.script(Fault("rate_limited", retry_after="3600"))
    with pytest.raises(StageFailed) as info:
        judge.judge(CLAIM, PASSAGES)
    assert info.value.reason == Reason.JUDGE_HTTP_ERROR
    assert len(llm.calls) == 1


def test_x_should_retry_false_is_honoured(llm: LLMDouble) -> None:
    judge = judge_for(llm, "openai")
    llm.script(
        Raw(
            503,
            '{"error":{"message":"no","type":"server_error"}}',
            {"content-type": "application/json", "x-should-retry": "false"},
        )
    )
    with pytest.raises(StageFailed):
        judge.judge(CLAIM, PASSAGES)
    assert len(llm.calls) == 1


def test_a_non_json_success_body_is_an_error(llm: LLMDouble) -> None:
    judge = judge_for(llm, "openai")
    llm.script(Raw(200, "<html>proxy login</html>", {"content-type": "text/html"}))
    with pytest.raises(StageFailed) as info:
        judge.judge(CLAIM, PASSAGES)
    assert info.value.reason == Reason.JUDGE_HTTP_ERROR


def test_nothing_listening_is_unavailable() -> None:
    with LLMDouble() as llm:
        judge = judge_for(llm, "ollama")
    with pytest.raises(StageFailed) as info:
        judge.judge(CLAIM, PASSAGES)
    assert info.value.reason == Reason.JUDGE_UNAVAILABLE


# -- secrets -----------------------------------------------------------------------------


def _texts(exc: BaseException) -> list[str]:
    return [str(exc), repr(exc), "".join(traceback.format_exception(exc))]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_planted_keys_never_leak(provider: str, caplog: pytest.LogCaptureFixture) -> None:
    """Every fault, including a 401 whose body quotes the key, with logging at DEBUG."""
    caplog.set_level(logging.DEBUG)
    key = KEYS[KEY_ENV[provider]]
    texts: list[str] = []
    # The double expects another key: the planted one is answered with a 401.
    with LLMDouble(api_key="the-right-key-0123456789") as llm:
        judge = judge_for(llm, provider)
        texts.append(repr(judge))
        try:
            judge.judge(CLAIM, PASSAGES)
        except ConfigurationError as exc:
            texts += _texts(exc)
        else:  # pragma: no cover
            pytest.fail("a wrong key must be a configuration error")
        unauthorized = llm.calls[-1]
    if provider in ("openai", "openai-compatible"):
        # the 401 the judge got really did quote the key, as OpenAI's does
        echoed = render_fault(unauthorized, 1, Fault("unauthorized"))
        assert echoed is not None and key in str(echoed.body)
    with LLMDouble() as llm:
        judge = judge_for(llm, provider)
        for kind in FAILING:
            llm.script(*[Fault(kind)] * 4)
            try:
                judge.judge(CLAIM, PASSAGES)
            except (StageFailed, ConfigurationError) as exc:
                texts += _texts(exc)
            llm.reset()
    texts += [record.getMessage() for record in caplog.records]
    texts += [str(record.__dict__) for record in caplog.records]
    for text in texts:
        assert key not in text
        assert KEYS["OPENAI_API_KEY"] not in text


def test_openai_401_with_the_key_in_the_message_is_scrubbed(llm: LLMDouble) -> None:
    judge = judge_for(llm, "openai")
    body = {
        "error": {
            "message": f"Incorrect API key provided: {KEYS['OPENAI_API_KEY']}.",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }
    # A 400 (not 401) so the provider's message is shown: it must still be scrubbed.
    llm.script(Raw(400, json.dumps(body), {"content-type": "application/json"}))
    with pytest.raises(StageFailed) as info:
        judge.judge(CLAIM, PASSAGES)
    assert "Incorrect API key provided" in info.value.detail
    for text in _texts(info.value):
        assert KEYS["OPENAI_API_KEY"] not in text


# -- through the pipeline: a failed judge is an error verdict, never a label -------------


def _verify_section(judge: HTTPJudge, tmp_path: Path) -> Verdict:
    source = tmp_path / "boiling.md"
    source.write_text(f"# Boiling\n\n{PASSAGES[0]}\n\n# Freezing\n\nWater freezes at 0 C.\n")
    verifier = Verifier(
        fetcher=cast(Any, None), ranker=cast(Any, None), judging=Judging(judge=judge)
    )
    citation = Citation(document="boiling.md", section="Boiling", document_path=source)
    return verifier.verify_citation(CLAIM, citation)


def test_pipeline_believes_a_good_reply(llm: LLMDouble, tmp_path: Path) -> None:
    llm.script(verdict("supported", QUOTE, 0.95))
    verdict_ = _verify_section(judge_for(llm, "anthropic"), tmp_path)
    assert verdict_.label == Label.SUPPORTED
    assert verdict_.judge == "anthropic:test-model"
    assert verdict_.usage == Usage(input_tokens=120, output_tokens=18)
    assert llm.calls[-1].passages[0].startswith("# Boiling")


@pytest.mark.parametrize("kind", FAILING)
@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_pipeline_turns_every_fault_into_error(llm: LLMDouble, tmp_path: Path, kind: Any) -> None:
    llm.script(*[Fault(kind)] * 4, verdict("supported", QUOTE, 0.99))
    verdict_ = _verify_section(judge_for(llm, "openai"), tmp_path)
    assert verdict_.label == Label.ERROR
    assert verdict_.reason is not None and verdict_.detail
    assert KEYS["OPENAI_API_KEY"] not in verdict_.model_dump_json()


def test_every_provider_is_a_versioned_judge() -> None:
    from pytest_citecheck.stages.judges import VersionedJudge

    judge: VersionedJudge = make_judge("ollama:m", environ={})
    assert judge.prompt_version == PROMPT_VERSION
