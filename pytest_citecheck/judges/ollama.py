"""Ollama ``/api/chat`` with a JSON-schema ``format``.

WIRE.md §5: ``POST {host}/api/chat`` with ``format`` = the verdict schema,
``stream: false`` (otherwise the reply is NDJSON chunks) and
``options.temperature`` 0. The SDK's default timeout is infinite; ours is
explicit. The verdict is a JSON *string* in ``message.content``; a reply cut
at ``num_predict`` says ``done_reason: "length"``. Ollama has no refusal
field: a model that declines writes prose, which fails as invalid JSON.

``OLLAMA_API_KEY`` (ollama.com's hosted models) is optional and sent as a bearer token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pytest_citecheck.errors import StageFailed
from pytest_citecheck.judges.base import JudgeReply
from pytest_citecheck.judges.http import HTTPJudge, bearer, field_of, usage_of, verdict_from_text
from pytest_citecheck.judges.prompt import build_messages, verdict_schema
from pytest_citecheck.models import Reason

DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_PORT = 11434


def normalise_host(host: str) -> str:
    """``OLLAMA_HOST`` as the SDK reads it: scheme defaults to http, port to 11434."""
    host = host.strip().rstrip("/")
    if not host:
        return DEFAULT_HOST
    if "://" not in host:
        host = f"http://{host}"
        if urlsplit(host).port is None:
            host = f"{host}:{DEFAULT_PORT}"
    return host


@dataclass(eq=False)
class OllamaJudge(HTTPJudge):
    """A local (or hosted) Ollama model as the judge."""

    def request_body(self, claim: str, passages: Sequence[str]) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": build_messages(claim, passages),
            "format": verdict_schema(),
            "stream": False,
            "options": {"temperature": 0},
        }

    def auth_headers(self) -> dict[str, str]:
        return bearer(self.api_key)

    def parse_reply(self, payload: Any) -> JudgeReply:
        content = field_of(payload, "message", "content")
        if not isinstance(payload, dict) or not isinstance(payload.get("message"), dict):
            raise StageFailed(
                Reason.JUDGE_HTTP_ERROR, f"the {self.name} judge's reply has no message"
            )
        if payload.get("done_reason") == "length":
            raise StageFailed(
                Reason.JUDGE_TRUNCATED, "the judge's reply was cut off (done_reason: length)"
            )
        reply = verdict_from_text(content if isinstance(content, str) else None)
        return reply.model_copy(
            update={"usage": usage_of(payload, "prompt_eval_count", "eval_count")}
        )
