"""What real models and servers do that the plain wire formats do not say.

Small pure helpers the providers share, each for one documented quirk:

- :data:`Temperature` / :func:`parse_temperature`: ``citecheck_judge_temperature``;
- :func:`error_param` / :func:`error_text`: find the request field a server's
  error names (the providers' fallbacks key on it);
- :func:`json_text`: the JSON out of a ``<think>`` block and a code fence;
- :func:`recordable_model_name` / :func:`recordable_reply`: a local server's
  model path is not written into committed recordings;
- :class:`ServerFormats`: which response format each server was found to take, so
  ``auto`` asks a server that refuses ``json_schema`` once per run, not per call.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any


def error_param(payload: Any) -> str | None:
    """The ``error.param`` of an OpenAI-style error envelope (the field it is about)."""
    error = payload.get("error") if isinstance(payload, dict) else None
    param = error.get("param") if isinstance(error, dict) else None
    return param if isinstance(param, str) else None


def error_text(payload: Any) -> str:
    """Everything an error reply says, as one lower-cased string (to look for a field name)."""
    if payload is None:
        return ""
    return json.dumps(payload, ensure_ascii=False).lower()


_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_FENCED = re.compile(r"```(?:json)?[ \t]*\n(.*?)\n?[ \t]*```", re.S | re.I)


def json_text(text: str) -> str:
    """The JSON a model wrote, out of the two wrappers local models put around it.

    A leading ``<think>…</think>`` block (reasoning models on Ollama and
    OpenAI-compatible servers) is dropped, then a reply that is exactly one
    markdown code block (```` ```json ```` or a bare ```` ``` ````) is
    unwrapped. Nothing else is guessed: prose around the block, two blocks, or
    an object inside prose are left as they are and fail as invalid JSON.
    """
    text = text.strip()
    if text.startswith(_THINK_OPEN):
        end = text.find(_THINK_CLOSE)
        if end < 0:
            return text  # never closed: not JSON, reported as such
        text = text[end + len(_THINK_CLOSE) :].strip()
    fenced = _FENCED.fullmatch(text)
    return fenced.group(1).strip() if fenced else text


# Files a local server loads a model from (llama.cpp, llama-cpp-python, vLLM, LM Studio).
_MODEL_FILE = re.compile(r"\.(?:gguf|ggml|ggmlv3|bin|safetensors|pt|pth|onnx|llamafile)$", re.I)
_ABSOLUTE = re.compile(r"^(?:[/\\~]|\.\.?[/\\]|[A-Za-z]:[/\\])")
_SEPARATORS = re.compile(r"[/\\]")


def recordable_model_name(value: str) -> str:
    """The ``model`` a server reported, fit for a committed recording.

    llama-cpp-python's server reports the file it loaded, e.g.
    ``/home/alice/models/SmolLM2-135M-Instruct-Q8_0.gguf``: a path on the
    recording machine. A value that is a path (absolute, home- or dot-relative,
    or naming a model file) becomes its file name; a model id such as
    ``Qwen/Qwen2.5-7B-Instruct`` or ``gpt-4o-mini`` is kept.
    """
    stripped = value.rstrip("/\\")
    if not (
        _ABSOLUTE.match(stripped) or (_MODEL_FILE.search(stripped) and _SEPARATORS.search(stripped))
    ):
        return value
    return _SEPARATORS.split(stripped)[-1]


def recordable_reply(body: str) -> str:
    """A judge reply body with a local model path (top-level ``model``) replaced by
    :func:`recordable_model_name`, everywhere it occurs; other bytes are kept."""
    if not body.lstrip().startswith("{") or '"model"' not in body:
        return body
    try:
        payload = json.loads(body)
    except ValueError:
        return body
    model = payload.get("model") if isinstance(payload, dict) else None
    if not isinstance(model, str) or recordable_model_name(model) == model:
        return body
    name = recordable_model_name(model)
    for encode in (json.dumps, lambda v: json.dumps(v, ensure_ascii=False)):
        body = body.replace(encode(model)[1:-1], encode(name)[1:-1])
    return body


# Request fields that only a judge setting (citecheck_judge_response_format,
# citecheck_judge_temperature) or a compatibility fallback shapes: the same
# question asked in another form. Replay compares requests without them.
SETTING_FIELDS = frozenset({"response_format", "temperature", "format", "think", "options"})


def question_of(body: Any) -> Any:
    """A judge request body without :data:`SETTING_FIELDS` (nor a tool's ``strict``)."""
    if not isinstance(body, dict):
        return body
    out = {k: v for k, v in body.items() if k not in SETTING_FIELDS}
    tools = out.get("tools")
    if isinstance(tools, list):
        out["tools"] = [
            {k: v for k, v in t.items() if k != "strict"} if isinstance(t, dict) else t
            for t in tools
        ]
    return out


class ServerFormats:
    """The response format each endpoint (a judge's URL) was found to take, for one run.

    ``citecheck_judge_response_format = auto`` sends ``json_schema`` and, when the
    server refuses it naming ``json_object`` (llama-cpp-python's HTTP 500), asks
    again with ``json_object``. Learnt once, the endpoint is asked in the form it
    takes from then on: without this, every judge call was sent twice. While the
    first call to an endpoint finds out, the other calls to it wait for the answer
    (at most ``timeout`` seconds) instead of each being refused once too.

    One instance serves every judge of a run (the engine's stage builder holds it),
    so two models on one local server learn it once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._taken: dict[str, str] = {}
        self._finding: dict[str, threading.Event] = {}

    def known(self, url: str) -> str | None:
        """The format ``url`` was found to take (None: not known yet)."""
        with self._lock:
            return self._taken.get(url)

    def begin(self, url: str, timeout: float | None) -> tuple[str | None, bool]:
        """Before a call to ``url``: the format it takes, when known, and whether this
        call is the one that finds out (then :meth:`settle` must follow)."""
        with self._lock:
            if url in self._taken:
                return self._taken[url], False
            finding = self._finding.get(url)
            if finding is None:
                self._finding[url] = threading.Event()
                return None, True
        finding.wait(timeout)
        return self.known(url), False

    def settle(self, url: str, taken: str | None) -> None:
        """The finding call is over: ``url`` takes ``taken`` (None: nothing learnt,
        e.g. the call failed for another reason; the next call finds out)."""
        with self._lock:
            if taken is not None:
                self._taken[url] = taken
            finding = self._finding.pop(url, None)
        if finding is not None:
            finding.set()
