"""Import LLM responses with native citations as claims (no pytest needed).

``import_response(data, format="auto")`` reads one response, as the provider's JSON
(a dict, or its text), an SDK object (openai, anthropic, google-genai), or markdown
text, and returns an :class:`ImportedAnswer`: every sentence, and one claim per cited
sentence whose citations are the distinct URLs or documents cited for it. Formats,
one module each: ``openai-responses``, ``openai-chat``, ``anthropic``, ``perplexity``,
``gemini``, ``markdown``. Anything that cannot be mapped raises
:class:`ResponseImportError` naming the response and the place.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from pytest_citecheck.claims.importers import (
    anthropic,
    gemini,
    markdown,
    openai_chat,
    openai_responses,
    perplexity,
)
from pytest_citecheck.claims.importers.answer import (
    AnswerSentence,
    CitedSource,
    ImportedAnswer,
    ImportedClaim,
    Reader,
    ResponseImportError,
    claim_id,
)
from pytest_citecheck.claims.importers.text import Draft, build
from pytest_citecheck.claims.models import kind

__all__ = [
    "FORMATS",
    "AnswerSentence",
    "CitedSource",
    "ImportedAnswer",
    "ImportedClaim",
    "ResponseImportError",
    "claim_id",
    "detect_format",
    "import_response",
]

AUTO = "auto"
_READERS: dict[str, Callable[..., tuple[Draft, str | None]]] = {
    openai_responses.FORMAT: openai_responses.read,
    openai_chat.FORMAT: openai_chat.read,
    anthropic.FORMAT: anthropic.read,
    perplexity.FORMAT: perplexity.read,
    gemini.FORMAT: gemini.read,
    markdown.FORMAT: markdown.read,
}
FORMATS = tuple(_READERS)


def detect_format(data: object) -> str | None:
    """The format ``data`` is in (JSON already parsed), or None when it is none of them."""
    if isinstance(data, str):
        return markdown.FORMAT
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("output"), list):
        return openai_responses.FORMAT
    if "candidates" in data:
        return gemini.FORMAT
    if "choices" in data:
        model = data.get("model")
        sonar = isinstance(model, str) and model.startswith("sonar")
        if "citations" in data or "search_results" in data or sonar:
            return perplexity.FORMAT
        return openai_chat.FORMAT
    if isinstance(data.get("content"), list) and (
        data.get("type") == "message" or data.get("role") == "assistant"
    ):
        return anthropic.FORMAT
    return None


def _plain(data: object, name: str) -> object:
    """SDK objects and JSON text as plain JSON values."""
    dump = getattr(data, "model_dump", None)
    if callable(dump) and not isinstance(data, dict | list | str):
        try:
            data = dump(mode="json", by_alias=True, exclude_none=True)
        except Exception as exc:  # a foreign object's own failure, reported as ours
            raise ResponseImportError(
                name,
                "",
                f"the object cannot be read as JSON ({exc})",
                "pass the response as a dict",
            ) from None
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ResponseImportError(
                name, f"byte {exc.start}", "the response is not UTF-8 text", "save it as UTF-8"
            ) from None
    return data


def _parse_json_text(data: str, name: str) -> object:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ResponseImportError(
            name,
            "",
            f"the response is not valid JSON ({exc})",
            "pass the response body exactly as the API returned it",
        ) from None


def import_response(
    data: object,
    *,
    format: str = AUTO,
    answer_id: str | None = None,
    documents: Sequence[str] | None = None,
    name: str | None = None,
) -> ImportedAnswer:
    """One response as an :class:`ImportedAnswer`.

    ``answer_id`` names the answer and prefixes its claim ids: give it a name that
    stays when the answer is regenerated (the question, the test), not the provider's
    response id (the default, else ``answer``). ``documents`` maps Anthropic's
    ``document_index`` to paths. ``name`` is how errors name the response (a file).
    """
    label = name or answer_id or "response"
    data = _plain(data, label)
    if format != AUTO and format not in _READERS:
        raise ResponseImportError(
            label, "", f"unknown format {format!r}", f"use one of: {AUTO}, {', '.join(FORMATS)}"
        )
    if (
        isinstance(data, str)
        and format != markdown.FORMAT
        and (format != AUTO or data.lstrip().startswith(("{", "[")))
    ):
        data = _parse_json_text(data, label)
    fmt = detect_format(data) if format == AUTO else format
    if fmt is None:
        raise ResponseImportError(
            label,
            "",
            f"cannot tell which API this response is from ({kind(data)})",
            f"pass format= one of {', '.join(FORMATS)}, or save the response body exactly "
            "as the API returned it",
        )
    reader = Reader(label)
    try:
        if fmt == anthropic.FORMAT:
            draft, response_id = anthropic.read(data, reader, documents)
        else:
            draft, response_id = _READERS[fmt](data, reader)
        answer = answer_id or response_id or "answer"
        return build(draft, answer_id=answer, fmt=fmt, response=label, response_id=response_id)
    except RecursionError:
        raise ResponseImportError(
            label,
            "",
            "the response is nested too deeply",
            "pass the response body as the API returned it",
        ) from None
