"""Conformance with the official SDKs: our request builders and our doubles vs the real types.

The doubles in tests/doubles were written from our own reading of the APIs; the
official packages (``openai`` 3.57, ``anthropic`` 2.14, ``ollama`` 0.6.3,
``crawlbase`` 1.1.0, in the ``dev`` extra) are an independent reference. Here:

- every request body each provider builds -- defaults, per-model settings and
  every fallback form -- validates against the SDK's request type
  (``CompletionCreateParamsNonStreaming``, ``MessageCreateParamsNonStreaming``,
  ollama's ``ChatRequest``) and uses only keys the type knows;
- every reply the double produces validates against the SDK's response model
  (``ChatCompletion``, ``Message``, ``ChatResponse``) and every error envelope
  makes the SDK raise the exception class its status means;
- the Crawling API query string our fetcher sends is byte-identical to the one
  ``crawlbase.CrawlingAPI`` builds for the same arguments, and the SDK reads the
  Crawlbase double's replies (both failed-crawl shapes included) as documented.

A double or a builder that drifts from the real API then fails here, not in a
user's recording. Only loopback servers are ever called.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, get_args

import anthropic
import crawlbase
import crawlbase.base_api
import httpx
import ollama
import openai
import pytest
from anthropic.types import Message, MessageCreateParams
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from ollama._types import ChatRequest, ChatResponse
from openai.types.chat import ChatCompletion
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import TypeAdapter
from typing_extensions import get_type_hints, is_typeddict

from pytest_citecheck.core.retry import RetryPolicy
from pytest_citecheck.stages.fetch import CrawlbaseFetcher
from pytest_citecheck.stages.judges import make_judge
from pytest_citecheck.stages.judges.ollama import normalise_host
from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import (
    FAULT_KINDS,
    Answer,
    Fault,
    FaultKind,
    LLMDouble,
    Rejected,
    Scripted,
    ToolCalls,
    verdict,
)

CLAIM = "Water boils at 100 degrees Celsius at sea level."
PASSAGES = [
    "At sea level, water boils at 100 degrees Celsius (212 degrees Fahrenheit).",
    "At higher altitudes the boiling point is lower.",
]
QUOTE = "water boils at 100 degrees Celsius"
NO_SLEEP = RetryPolicy(sleep=lambda seconds: None, attempts=1)

OPENAI_PARAMS: TypeAdapter[Any] = TypeAdapter(CompletionCreateParamsNonStreaming)
ANTHROPIC_PARAMS: TypeAdapter[Any] = TypeAdapter(MessageCreateParamsNonStreaming)


@pytest.fixture
def llm() -> Iterator[LLMDouble]:
    with LLMDouble() as double:
        yield double


# -- request bodies ------------------------------------------------------------------------

# (spec, make_judge keywords, what the double rejects): every body shape we can send.
VARIANTS: list[tuple[str, dict[str, Any], tuple[Rejected, ...]]] = [
    ("openai:gpt-4o-mini", {}, ()),
    ("openai:gpt-5-mini", {}, ()),
    ("openai:o4-mini", {"temperature": 0.7}, ()),
    ("openai:my-finetune", {}, ("temperature",)),
    ("openai-compatible:qwen2.5", {"temperature": "omit"}, ()),
    ("openai-compatible:smollm2", {}, ("json_schema",)),
    ("anthropic:claude-sonnet-4-6", {}, ()),
    ("anthropic:claude-3-5-haiku-latest", {}, ("strict",)),
    ("ollama:qwen3:8b", {}, ()),
    ("ollama:llama3.1", {"temperature": "omit"}, ("think",)),
]


def sent_bodies(
    spec: str, options: dict[str, Any], rejects: tuple[Rejected, ...], joint: bool = False
) -> list[Any]:
    """Every body one judge call sends (fallbacks included), as the server got them;
    ``joint``: the joint judgment's call (two sources) instead of a verdict's."""
    provider = spec.partition(":")[0]
    with LLMDouble(rejects=rejects) as llm:
        judge = make_judge(
            spec,
            environ={},
            base_url=llm.base_url(provider),
            require_key=False,
            retry=NO_SLEEP,
            **options,
        )
        if joint:
            judge.judge_jointly(CLAIM, [PASSAGES[:1], PASSAGES[1:]])
        else:
            judge.judge(CLAIM, PASSAGES)
        return [call.json() for call in [*llm.calls, *llm.joint_calls]]


# Keys whose value is the verdict's JSON Schema: open by design, not descended into.
JSON_SCHEMAS = frozenset({"input_schema", "schema"})


def typeddict_keys(kind: Any) -> set[str]:
    return set(kind.__required_keys__) | set(kind.__optional_keys__)


def unknown_keys(value: Any, kind: Any, where: str = "") -> list[str]:
    """Keys of ``value`` that the TypedDict ``kind`` (or, for a union, every
    TypedDict member whose literal ``type`` matches) does not declare."""
    if not isinstance(value, dict):
        return []
    members = [m for m in (get_args(kind) or (kind,)) if is_typeddict(m)]
    if not members:
        return []
    if "type" in value and len(members) > 1:
        matching = [
            m
            for m in members
            if value["type"] in get_args(get_type_hints(m, include_extras=False).get("type"))
        ]
        members = matching or members
    best: list[str] | None = None
    for member in members:
        hints = get_type_hints(member)
        problems = [f"{where}{k}" for k in value if k not in typeddict_keys(member)]
        for key, item in value.items():
            if key in hints and key not in JSON_SCHEMAS:
                inner = hints[key]
                items = item if isinstance(item, list) else [item]
                listed = isinstance(item, list) and get_args(inner)
                element = get_args(inner)[0] if listed else inner
                for entry in items:
                    problems += unknown_keys(entry, element, f"{where}{key}.")
        if best is None or len(problems) < len(best):
            best = problems
    return best or []


@pytest.mark.parametrize("joint", [False, True], ids=["verdict", "joint"])
@pytest.mark.parametrize(("spec", "options", "rejects"), VARIANTS)
def test_every_request_body_validates_against_the_sdk_types(
    spec: str, options: dict[str, Any], rejects: tuple[Rejected, ...], joint: bool
) -> None:
    bodies = sent_bodies(spec, options, rejects, joint)
    assert len(bodies) == 1 + len(rejects)  # each rejection: one fallback, then answered
    for body in bodies:
        if spec.startswith("anthropic:"):
            ANTHROPIC_PARAMS.validate_python(body)
            assert unknown_keys(body, MessageCreateParamsNonStreaming) == []
        elif spec.startswith("ollama:"):
            request = ChatRequest.model_validate(body)
            assert set(body) <= set(ChatRequest.model_fields)
            assert request.stream is False
            assert request.think is False or "think" not in body
        else:
            OPENAI_PARAMS.validate_python(body)
            extra = unknown_keys(body, CompletionCreateParamsNonStreaming)
            if body["response_format"]["type"] == "json_object":
                # llama-cpp-python's documented extension of json_object.
                assert extra == ["response_format.schema"]
            else:
                assert extra == []


def test_the_key_check_can_fail() -> None:
    body = {"model": "m", "messages": [], "response_format": {"type": "json_schema"}}
    body["temprature"] = 0
    assert unknown_keys(body, CompletionCreateParamsNonStreaming) == ["temprature"]
    tool = {"name": "t", "input_schema": {"type": "object"}, "stricct": True}
    anthropic_body = {"model": "m", "max_tokens": 1, "messages": [], "tools": [tool]}
    assert unknown_keys(anthropic_body, MessageCreateParams) == ["tools.stricct"]


# -- the SDKs send our bodies and parse the double's replies -----------------------------------


def openai_client(llm: LLMDouble) -> openai.OpenAI:
    return openai.OpenAI(base_url=llm.base_url("openai"), api_key="sk-test", max_retries=0)


def anthropic_client(llm: LLMDouble) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=llm.base_url("anthropic"), api_key="k", max_retries=0)


def ollama_client(llm: LLMDouble) -> ollama.Client:
    return ollama.Client(host=llm.base_url("ollama"))


def body_of(spec: str) -> dict[str, Any]:
    judge = make_judge(spec, environ={}, base_url="http://127.0.0.1:1/v1", require_key=False)
    return judge.request_body(CLAIM, PASSAGES)


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-5-mini"])
def test_openai_sdk_sends_our_body_and_parses_the_double(llm: LLMDouble, model: str) -> None:
    llm.script(verdict("supported", QUOTE, 0.9))
    completion = openai_client(llm).chat.completions.create(**body_of(f"openai:{model}"))
    assert json.loads(completion.choices[0].message.content or "")["quote"] == QUOTE
    assert completion.usage is not None and completion.usage.prompt_tokens == 120


def test_anthropic_sdk_sends_our_body_and_parses_the_double(llm: LLMDouble) -> None:
    llm.script(verdict("supported", QUOTE, 0.9))
    message = anthropic_client(llm).messages.create(**body_of("anthropic:claude-sonnet-4-6"))
    [block] = message.content
    assert block.type == "tool_use" and block.input["quote"] == QUOTE


def test_ollama_sdk_sends_our_body_and_parses_the_double(llm: LLMDouble) -> None:
    llm.script(verdict("supported", QUOTE, 0.9))
    response = ollama_client(llm).chat(**body_of("ollama:qwen3:8b"))
    assert json.loads(response.message.content or "")["quote"] == QUOTE
    assert response.done_reason == "stop"


# -- the double's replies validate against the SDK response models ---------------------------

OK_REPLIES: list[Scripted] = [
    verdict("supported", QUOTE, 0.9),
    verdict("not_found", None, 0.5),
    Answer(f"```json\n{json.dumps({'label': 'supported', 'quote': QUOTE, 'confidence': 1})}\n```"),
    Answer("<think>hm</think>{}"),
    Fault("refusal"),
    Fault("truncated"),
    Fault("invalid_json"),
    Fault("schema_breaking"),
]
ROUTE = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "ollama": "/api/chat"}
MODELS = {"openai": ChatCompletion, "anthropic": Message, "ollama": ChatResponse}


def reply_of(llm: LLMDouble, provider: str, item: Scripted) -> httpx.Response:
    llm.script(item)
    spec = f"{provider}:test-model"
    body = body_of(spec)
    return httpx.post(f"{llm.root}{ROUTE[provider]}", json=body, timeout=10)


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
@pytest.mark.parametrize("served_model", [None, "/home/alice/models/smollm2.gguf"])
def test_every_200_reply_validates_against_the_sdk_model(
    provider: str, served_model: str | None
) -> None:
    items = list(OK_REPLIES)
    if provider == "anthropic":
        bad = {"label": "maybe"}
        items.append(ToolCalls((bad, {"label": "supported", "quote": QUOTE, "confidence": 1})))
    with LLMDouble(served_model=served_model) as llm:
        for item in items:
            response = reply_of(llm, provider, item)
            assert response.status_code == 200, item
            parsed = MODELS[provider].model_validate(response.json())
            if served_model is not None:
                assert parsed.model == served_model


ERROR_KINDS: list[FaultKind] = [
    kind
    for kind in FAULT_KINDS
    if kind not in ("refusal", "truncated", "invalid_json", "schema_breaking", "drop", "hang")
]
OPENAI_ERRORS = {
    "rate_limited": openai.RateLimitError,
    "server_error": openai.InternalServerError,
    "overloaded": openai.InternalServerError,
    "unauthorized": openai.AuthenticationError,
    "forbidden": openai.PermissionDeniedError,
    "quota_exhausted": openai.RateLimitError,
    "model_not_found": openai.NotFoundError,
    "bad_request": openai.BadRequestError,
}
ANTHROPIC_ERRORS = {
    "rate_limited": anthropic.RateLimitError,
    "server_error": anthropic.InternalServerError,
    "overloaded": anthropic.OverloadedError,
    "unauthorized": anthropic.AuthenticationError,
    "forbidden": anthropic.PermissionDeniedError,
    # The SDK knows the spend limit by its error_code (a RateLimitError subclass).
    "quota_exhausted": anthropic.EnforcedSpendLimitReachedError,
    "model_not_found": anthropic.NotFoundError,
    "bad_request": anthropic.BadRequestError,
}


def test_the_error_table_covers_every_error_fault() -> None:
    assert set(ERROR_KINDS) == set(OPENAI_ERRORS) == set(ANTHROPIC_ERRORS)


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_openai_sdk_raises_the_class_each_error_means(llm: LLMDouble, kind: FaultKind) -> None:
    llm.script(Fault(kind))
    with pytest.raises(openai.APIStatusError) as info:
        openai_client(llm).chat.completions.create(**body_of("openai:gpt-4o-mini"))
    assert type(info.value) is OPENAI_ERRORS[kind]
    if kind == "quota_exhausted":
        assert info.value.code == "insufficient_quota"


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_anthropic_sdk_raises_the_class_each_error_means(llm: LLMDouble, kind: FaultKind) -> None:
    llm.script(Fault(kind))
    with pytest.raises(anthropic.APIStatusError) as info:
        anthropic_client(llm).messages.create(**body_of("anthropic:claude-sonnet-4-6"))
    assert type(info.value) is ANTHROPIC_ERRORS[kind]


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_ollama_sdk_reads_each_error(llm: LLMDouble, kind: FaultKind) -> None:
    llm.script(Fault(kind))
    with pytest.raises(ollama.ResponseError) as info:
        ollama_client(llm).chat(**body_of("ollama:llama3.1"))
    assert info.value.status_code >= 400
    assert info.value.error and not info.value.error.startswith("{")  # parsed from the JSON


def test_a_refused_temperature_is_what_the_openai_sdk_reports() -> None:
    with LLMDouble(rejects={"temperature"}) as llm, pytest.raises(openai.BadRequestError) as bad:
        openai_client(llm).chat.completions.create(**body_of("openai:my-finetune"))
    assert (bad.value.code, bad.value.param) == ("unsupported_value", "temperature")


def test_llama_cpp_pythons_500_is_what_the_openai_sdk_reports() -> None:
    with (
        LLMDouble(rejects={"json_schema"}) as llm,
        pytest.raises(openai.InternalServerError) as failed,
    ):
        openai_client(llm).chat.completions.create(**body_of("openai-compatible:m"))
    assert "json_object" in failed.value.message


def test_a_refused_strict_is_what_the_anthropic_sdk_reports() -> None:
    with LLMDouble(rejects={"strict"}) as llm, pytest.raises(anthropic.BadRequestError) as bad:
        anthropic_client(llm).messages.create(**body_of("anthropic:m"))
    assert "strict" in bad.value.message


def test_a_refused_think_is_what_the_ollama_sdk_reports() -> None:
    with LLMDouble(rejects={"think"}) as llm, pytest.raises(ollama.ResponseError) as bad:
        ollama_client(llm).chat(**body_of("ollama:m"))
    assert bad.value.status_code == 400
    assert "thinking" in bad.value.error


# -- OLLAMA_HOST: the client's own parser ------------------------------------------------------

HOSTS = [
    "",
    "1.2.3.4",
    ":56789",
    "1.2.3.4:56789",
    "http://1.2.3.4",
    "https://1.2.3.4:56789",
    "example.com",
    "example.com/",
    "example.com/path",
    "example.com:56789/path/",
    "https://example.com",
    "[0001:002:003:0004::1]",
    "[0001:002:003:0004::1]:56789/path",
    "https://[::1]:56789/path/",
]


@pytest.mark.parametrize("host", HOSTS)
def test_ollama_host_matches_the_client(host: str) -> None:
    from ollama._client import _parse_host

    assert normalise_host(host) == _parse_host(host)


# -- the Crawling API ---------------------------------------------------------------------------

TARGETS = [
    "https://example.com/articles/water-boiling-point",
    "https://example.com/a b?x=1&y=é#frag",
    "https://github.com/crawlbase?tab=repositories",
    "http://example.org/path/with%20escape/and+plus",
]


@pytest.fixture
def crawlbase_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[CrawlbaseDouble]:
    with CrawlbaseDouble() as double:
        # The SDK reads this module global on every call: loopback only.
        monkeypatch.setattr(crawlbase.base_api, "CRAWLBASE_API_URL", double.base_url)
        yield double


def sdk_get(api: CrawlbaseDouble, url: str, options: dict[str, str], kind: str = "normal") -> Any:
    sdk = crawlbase.CrawlingAPI({"token": api.tokens[kind], "timeout": 10})
    return sdk.get(url, dict(options))  # a fresh dict: the SDK mutates it


@pytest.mark.filterwarnings("ignore:ssl.PROTOCOL_TLS is deprecated:DeprecationWarning")
@pytest.mark.parametrize("target", TARGETS)
def test_the_query_string_is_the_sdks(crawlbase_api: CrawlbaseDouble, target: str) -> None:
    api = crawlbase_api
    # Thin with readability: the fetcher makes both calls it can make with one token.
    api.add(target, Page(markdown="thin", full_markdown="# Page\n\n" + "word " * 100))
    with CrawlbaseFetcher(
        token=api.tokens["normal"], js_token=api.tokens["javascript"], base_url=api.base_url
    ) as fetcher:
        fetcher.fetch(target)
    ours = [c.query for c in api.api_calls]
    api.reset()
    sdk_get(api, target, {"format": "md", "md_readability": "true", "store": "true"})
    sdk_get(api, target, {"format": "md", "store": "true"})
    assert ours == [c.query for c in api.api_calls]


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
@pytest.mark.filterwarnings("ignore:ssl.PROTOCOL_TLS is deprecated:DeprecationWarning")
def test_the_sdk_reads_the_doubles_replies(crawlbase_api: CrawlbaseDouble) -> None:
    api = crawlbase_api
    url = "https://example.com/docs/page"
    options = {"format": "md", "md_readability": "true", "store": "true"}
    api.add(url, Page(markdown="# Example page\n", final_url=url + "?r=1"))
    ok = sdk_get(api, url, options)
    assert ok["status_code"] == 200 and ok["body"] == b"# Example page\n"
    assert ok["headers"] == {
        "original_status": "200",
        "cb_status": "200",
        "pc_status": "200",
        "url": url + "?r=1",
    }
    # A failed crawl, both shapes: HTTP 520, or 200 with pc_status 520.
    api.add(url, Page(http_status=520))
    assert sdk_get(api, url, options) == {"headers": {}, "body": "", "status_code": 520}
    api.add(url, Page(pc_status=525, markdown="ignored"))
    inside = sdk_get(api, url, options)
    assert (inside["status_code"], inside["body"]) == (200, b"")
    assert inside["headers"]["cb_status"] == inside["headers"]["pc_status"] == "525"
    # The SDK prefers cb_status over the legacy header, as the fetcher does.
    api.add(url, Page(markdown="x", pc_status=200, cb_status=525))
    assert sdk_get(api, url, options)["headers"]["pc_status"] == "525"
