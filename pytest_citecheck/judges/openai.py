"""OpenAI Chat Completions with Structured Outputs (also any OpenAI-compatible server).

WIRE.md §3: ``POST {base}/chat/completions``, ``response_format`` json_schema
strict, ``authorization: Bearer``. The verdict comes back as a JSON *string*
in ``choices[0].message.content``; a refusal as ``message.refusal``; a
truncated one as ``finish_reason: "length"``.

vLLM, llama.cpp's server and LM Studio speak the same wire; they are the
``openai-compatible`` provider: same class, a required base URL, an optional key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_citecheck.errors import StageFailed
from pytest_citecheck.judges.base import JudgeReply
from pytest_citecheck.judges.http import (
    HTTPJudge,
    bearer,
    field_of,
    shorten,
    usage_of,
    verdict_from_text,
)
from pytest_citecheck.judges.prompt import VERDICT_NAME, build_messages, verdict_schema
from pytest_citecheck.models import Reason

DEFAULT_BASE_URL = "https://api.openai.com/v1"


@dataclass(eq=False)
class OpenAIJudge(HTTPJudge):
    """A Chat Completions judge (``openai`` and ``openai-compatible``)."""

    def request_body(self, claim: str, passages: Sequence[str]) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": build_messages(claim, passages),
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": VERDICT_NAME, "strict": True, "schema": verdict_schema()},
            },
            "temperature": 0,
        }

    def auth_headers(self) -> dict[str, str]:
        return bearer(self.api_key)

    def parse_reply(self, payload: Any) -> JudgeReply:
        choice = field_of(payload, "choices", 0)
        message = field_of(payload, "choices", 0, "message")
        if not isinstance(choice, dict) or not isinstance(message, dict):
            raise StageFailed(
                Reason.JUDGE_HTTP_ERROR, f"the {self.name} judge's reply has no choices[0].message"
            )
        refusal = message.get("refusal")
        finish = choice.get("finish_reason")
        if refusal:
            raise StageFailed(Reason.JUDGE_REFUSED, shorten(f"the judge refused: {refusal}"))
        if finish == "content_filter":
            raise StageFailed(
                Reason.JUDGE_REFUSED, "the judge's reply was blocked by its content filter"
            )
        if finish == "length":
            raise StageFailed(
                Reason.JUDGE_TRUNCATED, "the judge's reply was cut off (finish_reason: length)"
            )
        content = message.get("content")
        reply = verdict_from_text(content if isinstance(content, str) else None)
        return reply.model_copy(
            update={"usage": usage_of(payload.get("usage"), "prompt_tokens", "completion_tokens")}
        )
