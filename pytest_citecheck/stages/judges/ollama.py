"""Ollama ``/api/chat`` with a JSON-schema ``format``.

The Ollama wire: ``POST {host}/api/chat`` with ``format`` = the verdict schema,
``stream: false`` (otherwise the reply is NDJSON chunks) and
``options.temperature`` 0. The SDK's default timeout is infinite; ours is
explicit. The verdict is a JSON *string* in ``message.content``; a reply cut
at ``num_predict`` says ``done_reason: "length"``. Ollama has no refusal
field: a model that declines writes prose, which fails as invalid JSON.

``think: false`` asks a reasoning model (qwen3, deepseek-r1...) not to think
first: the verdict then comes sooner, and an older server that would put the
thinking in ``content`` as a ``<think>…</think>`` block does not (that block is
dropped anyway, see :func:`pytest_citecheck.stages.judges.compat.json_text`). A server
that answers 400 naming ``think`` (a model or version without it) is asked
again without it.

``OLLAMA_API_KEY`` (ollama.com's hosted models) is optional and sent as a bearer token.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.core.argtypes import Temperature
from pytest_citecheck.core.errors import StageFailed
from pytest_citecheck.stages.judges.compat import error_text
from pytest_citecheck.stages.judges.http import (
    HTTPJudge,
    R,
    answer_from_text,
    bearer,
    field_of,
    usage_of,
)
from pytest_citecheck.stages.judges.prompt import Ask

DEFAULT_HOST = "http://127.0.0.1:11434"
_NAMES_THINK = re.compile(r"\bthink")
DEFAULT_PORT = 11434


def normalise_host(host: str | None) -> str:
    """``OLLAMA_HOST`` read by the ollama client's own rules (``ollama._client._parse_host``).

    The scheme defaults to http; the port to 11434 without a scheme, else to
    the scheme's (80/443); a missing host name is 127.0.0.1; a path is kept
    after the port, without its trailing slash: ``:56789`` ->
    ``http://127.0.0.1:56789``, ``example.com/path`` ->
    ``http://example.com:11434/path``, ``https://example.com`` ->
    ``https://example.com:443``.
    """
    host = (host or "").strip()
    port = DEFAULT_PORT
    scheme, _, hostport = host.partition("://")
    if not hostport:
        scheme, hostport = "http", host
    elif scheme == "http":
        port = 80
    elif scheme == "https":
        port = 443
    split = urlsplit(f"{scheme}://{hostport}")
    name = split.hostname or "127.0.0.1"
    port = split.port or port
    try:
        if isinstance(ipaddress.ip_address(name), ipaddress.IPv6Address):
            name = f"[{name}]"
    except ValueError:
        pass
    path = split.path.strip("/")
    return f"{scheme}://{name}:{port}/{path}" if path else f"{scheme}://{name}:{port}"


@dataclass(eq=False)
class OllamaJudge(HTTPJudge):
    """A local (or hosted) Ollama model as the judge."""

    temperature: Temperature = "auto"

    def body_for(self, ask: Ask) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": ask.messages(),
            "format": ask.schema(),
            "stream": False,
            "think": False,
        }
        if self.temperature != "omit":
            temperature = 0 if self.temperature == "auto" else self.temperature
            body["options"] = {"temperature": temperature}
        return body

    def fallback_body(
        self, body: dict[str, Any], status: int, payload: Any
    ) -> tuple[dict[str, Any], str] | None:
        if "think" in body and status == 400 and _NAMES_THINK.search(error_text(payload)):
            rest = {k: v for k, v in body.items() if k != "think"}
            return rest, "without think: false (the model or server does not take it)"
        return None

    def auth_headers(self) -> dict[str, str]:
        return bearer(self.api_key)

    def parse_answer(self, payload: Any, name: str, parse: Callable[[Any], R]) -> R:
        content = field_of(payload, "message", "content")
        if not isinstance(payload, dict) or not isinstance(payload.get("message"), dict):
            raise StageFailed(
                Reason.JUDGE_HTTP_ERROR, f"the {self.name} judge's reply has no message"
            )
        if payload.get("done_reason") == "length":
            raise StageFailed(
                Reason.JUDGE_TRUNCATED, "the judge's reply was cut off (done_reason: length)"
            )
        reply = answer_from_text(content if isinstance(content, str) else None, parse)
        return reply.model_copy(
            update={"usage": usage_of(payload, "prompt_eval_count", "eval_count")}
        )
