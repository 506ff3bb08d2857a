"""The batch APIs' double speaks the vendors' shapes: what it answers validates against
the SDKs' own types (``openai.types.Batch``/``FileObject``, ``anthropic.types.messages``),
its result lines against the documented line format, and each state it can play is the
one the SDK reads."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TypeVar

import anthropic
import httpx
import openai
import pytest
from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse
from openai.types import Batch, FileObject

from tests.doubles.llm import verdict
from tests.doubles.llm_batch import LLMBatchDouble

CLAIM = "Water boils at 100 degrees Celsius at sea level."
T = TypeVar("T")
PAGE = "Water boils at 100 degrees Celsius at sea level, where the pressure is one atmosphere."


def chat_body(claim: str = CLAIM) -> dict[str, object]:
    user = f'Claim:\n<claim>\n{claim}\n</claim>\n\n<passage n="1">\n{PAGE}\n</passage>'
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": user}]}


def message_params(claim: str = CLAIM) -> dict[str, object]:
    return {**chat_body(claim), "model": "claude-sonnet-4-6", "max_tokens": 64}


def looked_at_until(look: Callable[[], T], done: Callable[[T], bool], tries: int = 5) -> T:
    """``look()`` again until ``done`` says so (a double that never ends fails the test)."""
    for _ in range(tries):
        seen = look()
        if done(seen):
            return seen
    raise AssertionError(f"still not done after {tries} looks: {seen!r}")


@pytest.fixture
def double() -> Iterator[LLMBatchDouble]:
    with LLMBatchDouble(rounds=2) as llm:
        yield llm


def openai_client(llm: LLMBatchDouble) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-double", base_url=llm.base_url("openai"), max_retries=0)


def anthropic_client(llm: LLMBatchDouble) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="sk-ant-double", base_url=llm.base_url("anthropic"), max_retries=0
    )


def openai_batch(llm: LLMBatchDouble, *claims: str) -> tuple[openai.OpenAI, Batch]:
    client = openai_client(llm)
    lines = [
        json.dumps(
            {"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions", "body": b}
        )
        for i, b in enumerate(chat_body(c) for c in claims)
    ]
    upload = client.files.create(file=("in.jsonl", "\n".join(lines).encode()), purpose="batch")
    assert FileObject.model_validate(upload.model_dump()).purpose == "batch"
    created = client.batches.create(
        input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    return client, created


def test_openai_files_and_batches_validate_as_the_sdk_types(double: LLMBatchDouble) -> None:
    double.script(verdict("supported", PAGE, 0.9))
    client, created = openai_batch(double, CLAIM)
    assert created.status == "validating"
    looks = [client.batches.retrieve(created.id) for _ in range(2)]
    assert [b.status for b in looks] == ["in_progress", "completed"]
    done = Batch.model_validate(httpx.get(f"{double.root}/v1/batches/{created.id}").json())
    assert done.request_counts is not None and done.request_counts.completed == 1
    assert done.output_file_id and done.error_file_id is None
    (line,) = client.files.content(done.output_file_id).text.splitlines()
    answer = json.loads(line)
    assert answer["custom_id"] == "r0" and answer["error"] is None
    assert answer["response"]["status_code"] == 200
    content = answer["response"]["body"]["choices"][0]["message"]["content"]
    assert json.loads(content)["label"] == "supported"


def test_openai_partial_failure_and_expiry_go_to_the_error_file(double: LLMBatchDouble) -> None:
    double.fail_claims = {"Water boils at 90 degrees."}
    client, created = openai_batch(double, CLAIM, "Water boils at 90 degrees.")
    batch = looked_at_until(
        lambda: client.batches.retrieve(created.id), lambda b: b.status == "completed"
    )
    assert batch.request_counts is not None and batch.request_counts.failed == 1
    assert batch.error_file_id is not None
    (failed,) = [json.loads(x) for x in client.files.content(batch.error_file_id).text.splitlines()]
    assert failed["response"] is None and failed["error"]["code"] == "request_timeout"

    double.expire = True
    client, created = openai_batch(double, CLAIM)
    batch = looked_at_until(
        lambda: client.batches.retrieve(created.id), lambda b: b.status in ("expired", "completed")
    )
    assert batch.status == "expired" and batch.output_file_id is None
    assert batch.error_file_id is not None
    lines = client.files.content(batch.error_file_id).text.splitlines()
    assert json.loads(lines[0])["error"]["code"] == "batch_expired"


def test_anthropic_message_batches_validate_as_the_sdk_types(double: LLMBatchDouble) -> None:
    double.fail_claims = {"Water boils at 90 degrees."}
    client = anthropic_client(double)
    created = client.messages.batches.create(
        requests=[
            {"custom_id": "ok", "params": message_params()},
            {"custom_id": "bad", "params": message_params("Water boils at 90 degrees.")},
        ]
    )
    assert created.processing_status == "in_progress" and created.results_url is None
    assert client.messages.batches.retrieve(created.id).processing_status == "in_progress"
    raw = httpx.get(f"{double.root}/v1/messages/batches/{created.id}").json()
    assert MessageBatch.model_validate(raw).processing_status == "ended"
    ended = client.messages.batches.retrieve(created.id)
    assert ended.results_url == f"{double.root}/v1/messages/batches/{created.id}/results"
    assert ended.request_counts.succeeded == 1 and ended.request_counts.errored == 1
    results = {r.custom_id: r for r in client.messages.batches.results(created.id)}
    assert results["ok"].result.type == "succeeded"
    assert results["bad"].result.type == "errored"
    for result in results.values():
        MessageBatchIndividualResponse.model_validate(result.model_dump())


def test_anthropic_expired_and_cancelled_batches(double: LLMBatchDouble) -> None:
    client = anthropic_client(double)
    double.expire = True
    created = client.messages.batches.create(
        requests=[{"custom_id": "a", "params": message_params()}]
    )
    looked_at_until(
        lambda: client.messages.batches.retrieve(created.id),
        lambda b: b.processing_status == "ended",
    )
    assert [r.result.type for r in client.messages.batches.results(created.id)] == ["expired"]

    double.expire, double.never_end = False, True
    created = client.messages.batches.create(
        requests=[{"custom_id": "b", "params": message_params()}]
    )
    assert client.messages.batches.retrieve(created.id).processing_status == "in_progress"
    assert client.messages.batches.cancel(created.id).processing_status == "canceling"
    assert client.messages.batches.retrieve(created.id).processing_status == "ended"
    assert [r.result.type for r in client.messages.batches.results(created.id)] == ["canceled"]
