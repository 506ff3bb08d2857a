"""Anthropic Messages API with a forced tool call.

The Anthropic wire: ``POST {base}/v1/messages`` with ``x-api-key`` and
``anthropic-version: 2023-06-01`` (the documented pair; SDK 2.x sends a bearer
token and a newer version instead -- recordings filter both headers). The
verdict schema is the ``input_schema`` of one tool, and ``tool_choice`` forces
the model to call it, so the verdict arrives as the tool_use block's ``input``
*object*. The tool is ``strict: true`` (grammar-constrained sampling of the
input, so it cannot break the schema); a 400 that names ``strict`` (a model
without structured outputs) is asked again without it. When a reply holds
several tool_use blocks, the first ``record_verdict`` block whose input fits
the schema is the verdict. A text block is used only when there is no
``record_verdict`` block at all (same parsing as the other providers).

No ``temperature``: the SDKs >= 1.0 no longer accept it for ``messages.create``
and whether the API still honours it for every model is unconfirmed. Sending
it risks a 400 on some models for little gain: the forced tool and the schema
already constrain the answer, the guard checks the quote, and CI replays
recordings rather than sampling again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.core.errors import StageFailed
from pytest_citecheck.stages.judges.compat import error_text
from pytest_citecheck.stages.judges.http import (
    HTTPJudge,
    R,
    answer_from_text,
    shorten,
    usage_of,
)
from pytest_citecheck.stages.judges.prompt import Ask

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
MAX_TOKENS = 1024


@dataclass(eq=False)
class AnthropicJudge(HTTPJudge):
    """A Messages API judge answering through a forced ``record_verdict`` tool call."""

    def body_for(self, ask: Ask) -> dict[str, Any]:
        return {
            "model": self.model,
            "max_tokens": MAX_TOKENS,
            "system": ask.system,
            "messages": [{"role": "user", "content": ask.user}],
            "tools": [
                {
                    "name": ask.name,
                    "description": ask.description,
                    "input_schema": ask.schema(),
                    "strict": True,
                }
            ],
            "tool_choice": {"type": "tool", "name": ask.name},
        }

    def fallback_body(
        self, body: dict[str, Any], status: int, payload: Any
    ) -> tuple[dict[str, Any], str] | None:
        tools = body.get("tools")
        if (
            status == 400
            and isinstance(tools, list)
            and any(isinstance(t, dict) and "strict" in t for t in tools)
            and "strict" in error_text(payload)
        ):
            plain = [{k: v for k, v in t.items() if k != "strict"} for t in tools]
            return {**body, "tools": plain}, "without strict on the verdict tool"
        return None

    def auth_headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    def parse_answer(self, payload: Any, name: str, parse: Callable[[Any], R]) -> R:
        content = payload.get("content") if isinstance(payload, dict) else None
        if not isinstance(content, list):
            raise StageFailed(
                Reason.JUDGE_HTTP_ERROR, f"the {self.name} judge's reply has no content list"
            )
        stop = payload.get("stop_reason")
        blocks = [b for b in content if isinstance(b, dict)]
        if stop == "refusal":
            said = " ".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            raise StageFailed(
                Reason.JUDGE_REFUSED,
                shorten(f"the judge refused: {said}" if said.strip() else "the judge refused"),
            )
        if stop in ("max_tokens", "model_context_window_exceeded"):
            raise StageFailed(
                Reason.JUDGE_TRUNCATED, f"the judge's reply was cut off (stop_reason: {stop})"
            )
        usage = usage_of(payload.get("usage"), "input_tokens", "output_tokens")
        calls = [b for b in blocks if b.get("type") == "tool_use" and b.get("name") == name]
        first_problem: StageFailed | None = None
        for block in calls:
            try:
                reply = parse(block.get("input"))
            except StageFailed as exc:
                first_problem = first_problem or exc
                continue
            return reply.model_copy(update={"usage": usage})
        if first_problem is not None:
            raise first_problem
        texts = [
            b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        if texts:
            return answer_from_text("".join(texts), parse).model_copy(update={"usage": usage})
        raise StageFailed(
            Reason.JUDGE_SCHEMA_MISMATCH,
            f"the judge did not call {name} (stop_reason: {stop})",
        )
