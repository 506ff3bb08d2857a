"""OpenAI Chat Completions with Structured Outputs (also any OpenAI-compatible server).

The OpenAI wire: ``POST {base}/chat/completions``, ``response_format`` json_schema
strict, ``authorization: Bearer``. The verdict comes back as a JSON *string*
in ``choices[0].message.content``; a refusal as ``message.refusal``; a
truncated one as ``finish_reason: "length"``.

vLLM, llama.cpp's server and LM Studio speak the same wire; they are the
``openai-compatible`` provider: same class, a required base URL, an optional key.

What each model accepts:

- ``temperature``: 0 by default. Reasoning models (``o1``, ``o3``, ``o4-mini``,
  ``gpt-5*``) accept only their default and answer 400 ``unsupported_value``
  otherwise, so for them it is not sent; any other model that answers that 400
  naming ``temperature`` is asked again without it. ``temperature="omit"``
  never sends it, a number always sends that number (no fallback).
- No token limit is sent: ``max_tokens`` is rejected by reasoning models (they
  want ``max_completion_tokens``) and the verdict is short.
- ``response_format``: ``json_schema`` (strict) by default. llama-cpp-python's
  server takes only ``{"type": "json_object", "schema": ...}`` and answers
  HTTP 500 naming ``response_format`` and ``json_object``; an
  ``openai-compatible`` judge then asks again in that form, and asks that server
  so from then on (:class:`~pytest_citecheck.stages.judges.compat.ServerFormats`:
  once per run and endpoint, not once per call).
  ``response_format="json_object"`` uses it from the start, ``"json_schema"``
  never falls back: a server that refuses it is not retried, and the error
  suggests ``auto`` or ``json_object`` (:meth:`OpenAIJudge.refusal_hint`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.core.argtypes import Temperature
from pytest_citecheck.core.errors import StageFailed
from pytest_citecheck.stages.judges.compat import ServerFormats, error_param, error_text
from pytest_citecheck.stages.judges.http import (
    HTTPJudge,
    R,
    answer_from_text,
    bearer,
    field_of,
    shorten,
    usage_of,
)
from pytest_citecheck.stages.judges.prompt import Ask

DEFAULT_BASE_URL = "https://api.openai.com/v1"

# OpenAI's reasoning models: only the default temperature.
REASONING_MODEL = re.compile(r"^(?:o\d|gpt-5)(?![a-z])", re.I)


def is_reasoning_model(model: str) -> bool:
    """``o1``, ``o3-mini``, ``o4-mini``, ``gpt-5``, ``gpt-5-mini``... (not ``gpt-4o``)."""
    return REASONING_MODEL.match(model) is not None


@dataclass(eq=False)
class OpenAIJudge(HTTPJudge):
    """A Chat Completions judge (``openai`` and ``openai-compatible``)."""

    temperature: Temperature = "auto"
    response_format: str = "auto"
    # What each server was found to take (``auto``): the run's, shared by its judges.
    formats: ServerFormats = field(default_factory=ServerFormats, repr=False)

    def ask(self, ask: Ask, parse: Callable[[Any], R]) -> R:
        if not self._learns_format():
            return super().ask(ask, parse)
        _, finding = self.formats.begin(self.url, self.timeout)
        try:
            return super().ask(ask, parse)
        finally:
            if finding:  # learnt in answered_with, or nothing to learn: let the others go
                self.formats.settle(self.url, None)

    def answered_with(self, body: dict[str, Any]) -> None:
        format_type = field_of(body, "response_format", "type")
        if self._learns_format() and isinstance(format_type, str):
            self.formats.settle(self.url, format_type)

    def _learns_format(self) -> bool:
        return self.response_format == "auto" and self.provider == "openai-compatible"

    def _format(self) -> str:
        """The response format this call asks for first."""
        if self.response_format == "json_object":
            return "json_object"
        if self._learns_format() and self.formats.known(self.url) == "json_object":
            return "json_object"
        return "json_schema"

    def body_for(self, ask: Ask) -> dict[str, Any]:
        if self._format() == "json_object":
            response_format: dict[str, Any] = {"type": "json_object", "schema": ask.schema()}
        else:
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": ask.name, "strict": True, "schema": ask.schema()},
            }
        body: dict[str, Any] = {
            "model": self.model,
            "messages": ask.messages(),
            "response_format": response_format,
        }
        temperature = self._temperature()
        if temperature is not None:
            body["temperature"] = temperature
        return body

    def _temperature(self) -> float | None:
        if self.temperature == "omit":
            return None
        if self.temperature == "auto":
            reasoning = self.provider == "openai" and is_reasoning_model(self.model)
            return None if reasoning else 0
        return float(self.temperature)

    def fallback_body(
        self, body: dict[str, Any], status: int, payload: Any
    ) -> tuple[dict[str, Any], str] | None:
        said = error_text(payload)
        if (
            self.temperature == "auto"
            and "temperature" in body
            and status == 400
            and (error_param(payload) == "temperature" or "temperature" in said)
        ):
            rest = {k: v for k, v in body.items() if k != "temperature"}
            omit = self.terms.setting("judge_temperature", "omit")
            return rest, f"without temperature (set {omit} to skip the first try)"
        if (
            self._learns_format()
            and field_of(body, "response_format", "type") == "json_schema"
            and "response_format" in said
            and "json_object" in said
        ):
            schema = field_of(body, "response_format", "json_schema", "schema")
            retry = {**body, "response_format": {"type": "json_object", "schema": schema}}
            use = self.terms.setting("judge_response_format", "json_object")
            return retry, (
                'with response_format {"type": "json_object", "schema": ...} (set '
                f"{use} to skip the first try)"
            )
        return None

    def refusal_hint(self, body: dict[str, Any], status: int, payload: Any) -> str | None:
        """``json_schema`` chosen explicitly and refused by the server (llama-cpp-python
        names ``response_format`` and ``json_object``): set ``auto`` or ``json_object``."""
        said = error_text(payload)
        if (
            self.response_format != "json_schema"
            or field_of(body, "response_format", "type") != "json_schema"
            or status in (401, 402, 403, 429)
            or "response_format" not in said
            or not ("json_object" in said or "json_schema" in said)
        ):
            return None
        terms = self.terms
        chosen = terms.setting("judge_response_format", "json_schema")
        use = terms.setting("judge_response_format", "json_object")
        if self.provider == "openai-compatible":
            # auto sends json_schema and, when the server names json_object, asks again so.
            use = f"{terms.setting('judge_response_format', 'auto')} or {use}"
        return f"the server refuses response_format json_schema, which {chosen} asks for; set {use}"

    def auth_headers(self) -> dict[str, str]:
        return bearer(self.api_key)

    def parse_answer(self, payload: Any, name: str, parse: Callable[[Any], R]) -> R:
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
        reply = answer_from_text(content if isinstance(content, str) else None, parse)
        return reply.model_copy(
            update={"usage": usage_of(payload.get("usage"), "prompt_tokens", "completion_tokens")}
        )
