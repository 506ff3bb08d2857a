"""Import LLM responses with native citations as claims (no pytest needed).

``import_response(data, format="auto")`` reads one response, as the provider's JSON
(a dict, or its text), an SDK object (openai, anthropic, google-genai), or markdown
text, and returns an :class:`ImportedAnswer`: every sentence, and one claim per cited
sentence whose citations are the distinct URLs or documents cited for it. Formats,
one module each: ``openai-responses``, ``openai-chat``, ``anthropic``, ``perplexity``,
``perplexity-agent``, ``gemini``, ``gemini-interactions``, ``cohere``, ``mistral``,
``bedrock-converse``, ``xai``, ``inspect`` (an Inspect AI assistant message),
``markdown``. A stream saved as its list of events (or as SSE text) is reassembled first
(:mod:`~pytest_citecheck.claims.importers.streams`). Anything that cannot be mapped raises
:class:`ResponseImportError` naming the response and the place.

An answer in which no sentence is cited while the response carries sources gets a
warning naming the format it was read as and how many sources went unused, so a
response read in the wrong format never passes as "all uncited" in silence.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from pytest_citecheck.claims.importers import (
    anthropic,
    bedrock,
    cohere,
    gemini,
    gemini_interactions,
    inspect_message,
    markdown,
    mistral,
    openai_chat,
    openai_responses,
    perplexity,
    perplexity_agent,
    streams,
    xai,
)
from pytest_citecheck.claims.importers.answer import (
    ImportedAnswer,
    Reader,
    ResponseImportError,
    guarded,
)
from pytest_citecheck.claims.importers.checks import (
    MAX_RESPONSE_CHARS,
    check_draft,
    check_response,
    too_large,
)
from pytest_citecheck.claims.importers.draft import LINK, Draft, dedup_key
from pytest_citecheck.claims.importers.text import build
from pytest_citecheck.claims.importers.turns import conversation_format
from pytest_citecheck.claims.models import kind
from pytest_citecheck.core.text import plural, shown, text_problem

# The answer's parts (sentences, claims, sources) live in
# pytest_citecheck.claims.importers.answer.
__all__ = [
    "FORMATS",
    "ImportedAnswer",
    "ResponseImportError",
    "detect_format",
    "import_response",
]

AUTO = "auto"
_READERS: dict[str, Callable[..., tuple[Draft, str | None]]] = {
    openai_responses.FORMAT: openai_responses.read,
    openai_chat.FORMAT: openai_chat.read,
    anthropic.FORMAT: anthropic.read,
    perplexity.FORMAT: perplexity.read,
    perplexity_agent.FORMAT: perplexity_agent.read,
    gemini.FORMAT: gemini.read,
    gemini_interactions.FORMAT: gemini_interactions.read,
    cohere.FORMAT: cohere.read,
    mistral.FORMAT: mistral.read,
    bedrock.FORMAT: bedrock.read,
    xai.FORMAT: xai.read,
    inspect_message.FORMAT: inspect_message.read,
    markdown.FORMAT: markdown.read,
}
# Readers whose citations may name the request's documents by their place.
_WITH_DOCUMENTS = frozenset(
    {anthropic.FORMAT, cohere.FORMAT, mistral.FORMAT, bedrock.FORMAT, inspect_message.FORMAT}
)
FORMATS = tuple(_READERS)


def detect_format(data: object) -> str | None:
    """The format ``data`` is in (JSON already parsed), or None when it is none of them.

    A list of stream events is the format of the response it reassembles into.
    """
    if isinstance(data, str):
        return markdown.FORMAT
    if isinstance(data, list):
        kind = streams.stream_format(data)
        return streams.STREAM_FORMATS[kind] if kind is not None else None
    if not isinstance(data, dict):
        return None
    output = data.get("output")
    if isinstance(output, list):
        model = data.get("model")
        if any(
            isinstance(i, dict) and i.get("type") in perplexity_agent.ITEM_TYPES for i in output
        ) or (isinstance(model, str) and model.startswith(perplexity_agent.MODEL_PREFIX)):
            return perplexity_agent.FORMAT
        return openai_responses.FORMAT
    if isinstance(output, dict) and isinstance(output.get("message"), dict):
        return bedrock.FORMAT
    if "candidates" in data:
        return gemini.FORMAT
    if gemini_interactions.is_interaction(data):
        return gemini_interactions.FORMAT
    if mistral.is_mistral(data):
        return mistral.FORMAT
    if xai.is_xai(data):
        return xai.FORMAT
    message = data.get("message")
    if isinstance(message, dict) and ("citations" in message or "finish_reason" in data):
        return cohere.FORMAT
    if "choices" in data:
        model = data.get("model")
        sonar = isinstance(model, str) and model.startswith("sonar")
        if "citations" in data or "search_results" in data or sonar:
            return perplexity.FORMAT
        return openai_chat.FORMAT
    if inspect_message.is_inspect_message(data):
        return inspect_message.FORMAT
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


def _stream_by_line(text: str) -> list[object] | None:
    """Text holding one stream's events, one JSON event a line (what SDK fixtures such
    as vercel's ``.chunks.txt`` save); None when it is not one."""
    first, newline, _ = text.strip().partition("\n")
    try:
        # A response body written over several lines does not end on its first line.
        json.loads(first)
    except (ValueError, RecursionError):
        return None
    if not newline:
        return None
    events = streams.parse_json_lines(text)
    return events if events is not None and streams.stream_format(events) is not None else None


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
    return guarded(
        label,
        "response",
        (
            "pass the response body as the API returned it",
            "save the response body exactly as the API returned it; if it is, report this "
            "response to citecheck's maintainers",
        ),
        lambda: _import(data, format, answer_id, documents, label),
    )


def _import(
    data: object,
    format: str,
    answer_id: str | None,
    documents: Sequence[str] | None,
    label: str,
) -> ImportedAnswer:
    problem = None if answer_id is None else text_problem(answer_id)
    if problem is not None:
        # The id names the claims and is printed: no escape sequence in it.
        raise ResponseImportError(
            label,
            "id",
            f"the answer id is not usable: {problem}",
            "name the answer with printable text: rename the file (its name is the id), "
            'or give the id: {"id": ..., "response": {...}}',
        )
    data = _plain(data, label)
    if isinstance(data, str) and len(data) > MAX_RESPONSE_CHARS:
        raise too_large(label, "characters", len(data))
    if format != AUTO and format not in _READERS:
        raise ResponseImportError(
            label, "", f"unknown format {format!r}", f"use one of: {AUTO}, {', '.join(FORMATS)}"
        )
    if isinstance(data, str) and format != markdown.FORMAT:
        try:
            events = streams.parse_sse(data)
        except ValueError as exc:
            raise ResponseImportError(
                label, "", f"an event of the stream is not JSON ({exc})", "save the stream unedited"
            ) from None
        if events is None and data.lstrip().startswith("{"):
            events = _stream_by_line(data)
        if events is not None:
            data = events
    if (
        isinstance(data, str)
        and format != markdown.FORMAT
        and (format != AUTO or data.lstrip().startswith(("{", "[")))
    ):
        data = _parse_json_text(data, label)
    bad = check_response(data, label)
    fmt = detect_format(data) if format == AUTO else format
    if fmt is None and conversation_format(data) is not None:
        raise ResponseImportError(
            label,
            "",
            "this is a whole conversation, not one response",
            "import it with import_conversation() (one answer per assistant turn); "
            "`citecheck import` and a claim file's `answers:` read conversations as they are",
        )
    if fmt is None:
        field, detail = _telling_field(data)
        raise ResponseImportError(
            label,
            field,
            f"cannot tell which API this response is from ({kind(data)}{detail})",
            f"pass format= one of {', '.join(FORMATS)}, or save the response body exactly "
            "as the API returned it",
        )
    reader = Reader(label)
    try:
        if isinstance(data, list):
            data = _reassembled(data, fmt, reader)
        if fmt in _WITH_DOCUMENTS:
            draft, response_id = _READERS[fmt](data, reader, documents)
        else:
            draft, response_id = _READERS[fmt](data, reader)
    except ResponseImportError as exc:
        raise _wrong_format(exc, data, fmt) if format != AUTO else exc from None
    check_draft(draft, response_id, bad, label)
    answer = answer_id or response_id or "answer"
    imported = build(draft, answer_id=answer, fmt=fmt, response=label, response_id=response_id)
    warning = ignored_sources(imported, draft, data, auto=format == AUTO)
    if warning is not None:
        imported.warnings.append(shown(warning))  # it names places of the response
    return imported


# The top-level fields that tell the APIs apart, and what each API gives in them.
_TELLING_FIELDS = {
    "output": "where OpenAI Responses gives a list of items and Bedrock an object with `message`",
    "content": "where Anthropic gives a list of content blocks",
    "choices": "where OpenAI Chat, Perplexity and Mistral give a list of choices",
    "message": "where Cohere gives an object with `content` and `citations`",
    "outputs": "where xAI and Gemini Interactions give a list",
}


def _telling_field(data: object) -> tuple[str, str]:
    """The field of a response no format was recognised in that would have told it, and
    what it holds against what it should hold; ``("", "")`` when there is none."""
    if isinstance(data, dict):
        for field, expected in _TELLING_FIELDS.items():
            if field in data:
                return field, f": `{field}` is {kind(data[field])}, {expected}"
    return "", ""


def _wrong_format(exc: ResponseImportError, data: object, fmt: str) -> ResponseImportError:
    """A reader's error on a body of another format names the format the body is in."""
    detected = detect_format(data)
    if detected is None or detected == fmt:
        return exc
    place = f" at {exc.where}" if exc.where else ""
    return ResponseImportError(
        exc.response,
        "",
        f"this body is {detected}, not {fmt} (read as {fmt} it fails{place}: {exc.problem})",
        f"give the format as {detected}, or auto to detect it",
    )


def article(name: str) -> str:
    """ "a" or "an" before a format's name, as it is said: an openai-responses, an xai
    ("ex-AI"), a gemini."""
    return "an" if name[:1].lower() in "aeiox" else "a"


def _reassembled(events: list[object], fmt: str, reader: Reader) -> object:
    """The response a saved stream ends with, in ``fmt``'s unstreamed shape."""
    kind = streams.stream_format(events)
    if kind is None or streams.STREAM_FORMATS[kind] != fmt:
        what = (
            f"{article(kind)} {kind} stream" if kind else "a list that is no stream this tool reads"
        )
        raise reader.fail(
            "",
            f"the response is {what}, not {fmt}",
            "save one response body (or one stream's events, in order); "
            "with --from auto the format is detected",
        )
    return streams.reassemble(events, kind, reader)


_URL_KEYS = frozenset({"url", "uri", "retrievedUrl", "retrieved_url", "sourceUri", "source"})


def _source_urls(value: object, where: str, out: dict[str, str]) -> None:
    """Every http(s) URL the response names as a source (its place, first seen)."""
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{where}.{key}" if where else str(key)
            if (
                key in _URL_KEYS
                and isinstance(item, str)
                and item.strip().lower().startswith(("http://", "https://"))
            ):
                out.setdefault(dedup_key(item), here)
            elif key == "citations" and isinstance(item, list):
                for n, url in enumerate(item):
                    if isinstance(url, str) and url.strip().lower().startswith("http"):
                        out.setdefault(dedup_key(url), f"{here}[{n}]")
                    else:
                        _source_urls(url, f"{here}[{n}]", out)
            else:
                _source_urls(item, here, out)
    elif isinstance(value, list):
        for n, item in enumerate(value):
            _source_urls(item, f"{where}[{n}]", out)


def ignored_sources(
    answer: ImportedAnswer, draft: Draft, data: object, *, auto: bool
) -> str | None:
    """The warning for an answer no sentence of which is cited though the response
    carries sources: which format it was read as, and how many sources went unused."""
    if answer.claims or isinstance(data, str):
        return None
    found: dict[str, str] = {}
    for source in answer.unattached:
        if source.url or source.document:
            found.setdefault(
                dedup_key(source.url) if source.url else source.document or "", source.where
            )
    for url in draft.fetched:
        found.setdefault(dedup_key(url), "a fetched page")
    _source_urls(data, "", found)
    in_text = {dedup_key(m.group("url").strip("<>")) for m in LINK.finditer(draft.text)}
    unused = {k: w for k, w in found.items() if k not in in_text}
    if not unused:
        return None
    places = sorted(set(unused.values()), key=len)[:2]
    how = "auto-detected" if auto else "as asked"
    unplaced = set(draft.no_position)
    if unplaced and set(unused.values()) <= unplaced:
        # The format was right (its annotations were read): they only lack a place.
        one = len(unused) == 1
        return (
            f"read as {answer.format} ({how}): no sentence is cited: the response's "
            f"{plural(len(unused), 'annotation')} (e.g. at {', '.join(places)}) "
            f"{'carries' if one else 'carry'} no position in the text (no start_index/"
            f"end_index, and the text has no link to {'its' if one else 'their'} URL), so "
            f"no sentence can be tied to {'it' if one else 'them'} and "
            f"{'it is' if one else f'all {len(unused)} are'} ignored; a saved stream may add "
            "its annotations without offsets (xAI's does): save the response body itself, "
            "not streamed, or write the claims by hand"
        )
    return (
        f"read as {answer.format} ({how}): no sentence is cited, yet the response carries "
        f"{len(unused)} source(s) (e.g. at {', '.join(places)}) and all {len(unused)} are "
        "ignored"
        + ("; if it is another API's response, pass its format (--from / format:)" if auto else "")
    )
