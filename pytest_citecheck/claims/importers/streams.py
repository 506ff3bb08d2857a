"""Streamed responses saved as their event list, reassembled into the final response.

A stream is saved as the list of its events in order (a JSON array of the SSE ``data:``
payloads, one JSON event a line, or the SSE text itself). Each API's events are
merged the way its SDK accumulates them, into the body the same call returns without
streaming, which the format's importer then reads:

- Anthropic Messages: ``message_start``, ``content_block_start``/``_delta``/``_stop``
  (``text_delta``, ``citations_delta``, ``input_json_delta``...), ``message_delta``.
- OpenAI Responses (and xAI, Azure): the ``response`` of ``response.completed`` (or
  ``.incomplete``/``.failed``); without one, the ``response.output_item.done`` items.
- Cohere chat v2: ``message-start``, ``content-start``/``-delta``, ``citation-start``.
- AWS Bedrock ``converse-stream`` (frames as boto3 yields them, ``{"<event>": {...}}``):
  ``contentBlockStart``/``Delta``/``Stop``; a block whose deltas carry a citation is a
  ``citationsContent`` block, as in the non-streamed response.
- Gemini ``streamGenerateContent``: chunks whose text parts are joined; the grounding
  and url-context metadata come with the last chunk that has them.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from pytest_citecheck.claims.importers.answer import Reader

__all__ = ["STREAM_FORMATS", "parse_sse", "reassemble", "stream_format"]

# Stream kind -> the format of the body it reassembles into.
STREAM_FORMATS = {
    "anthropic": "anthropic",
    "openai-responses": "openai-responses",
    "cohere": "cohere",
    "bedrock-converse": "bedrock-converse",
    "gemini": "gemini",
}
_BEDROCK_EVENTS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop"}
    | {"messageStop", "metadata"}
)


def parse_sse(text: str) -> list[Any] | None:
    """The ``data:`` payloads of SSE text, in order; None when ``text`` is not SSE."""
    head = text.lstrip()
    if not head.startswith(("event:", "data:", "id:", ":")):
        return None
    events: list[Any] = []
    data: list[str] = []

    def flush() -> None:
        if data:
            payload = "\n".join(data)
            data.clear()
            if payload.strip() != "[DONE]":
                events.append(json.loads(payload))

    for line in text.splitlines():
        if not line.strip():
            flush()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    flush()
    return events


def _type(event: Any) -> str | None:
    if not isinstance(event, dict):
        return None
    kind = event.get("type")
    return kind if isinstance(kind, str) else None


def stream_format(events: list[Any]) -> str | None:
    """Which API's stream ``events`` is (a list of parsed events), or None."""
    dicts = [e for e in events if isinstance(e, dict)]
    if not dicts or len(dicts) != len(events):
        return None
    kinds = {_type(e) for e in dicts}
    if "message_start" in kinds or "content_block_delta" in kinds:
        return "anthropic"
    if any(k and k.startswith("response.") for k in kinds):
        return "openai-responses"
    if kinds & {"message-start", "content-delta", "citation-start"}:
        return "cohere"
    if all(len(e) == 1 and next(iter(e)) in _BEDROCK_EVENTS for e in dicts):
        return "bedrock-converse"
    if all("candidates" in e or "usageMetadata" in e for e in dicts) and _unfinished(dicts[:-1]):
        return "gemini"
    return None


def _unfinished(chunks: list[dict[str, Any]]) -> bool:
    """Gemini chunks before the last carry no ``finishReason``: a list of finished
    responses is several answers, not one stream."""
    for chunk in chunks:
        candidates = chunk.get("candidates")
        first = candidates[0] if isinstance(candidates, list) and candidates else None
        if isinstance(first, dict) and (first.get("finishReason") or first.get("finish_reason")):
            return False
    return bool(chunks)


def reassemble(events: list[Any], kind: str, reader: Reader) -> dict[str, Any]:
    """The final response ``events`` stream, shaped as the API returns it unstreamed."""
    build = {
        "anthropic": _anthropic,
        "openai-responses": _openai_responses,
        "cohere": _cohere,
        "bedrock-converse": _bedrock,
        "gemini": _gemini,
    }[kind]
    return build(events, reader)


def _block(reader: Reader, value: Any, where: str) -> int:
    index = reader.index(value, where)
    if index is None:
        raise reader.fail(where, "the event names no block index", "save every event unedited")
    return index


def _anthropic(events: list[Any], reader: Reader) -> dict[str, Any]:
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    json_parts: dict[int, list[str]] = {}
    for n, event in enumerate(events):
        where = f"event {n}"
        kind = _type(event)
        if kind == "message_start":
            message = copy.deepcopy(reader.mapping(event.get("message"), f"{where}.message"))
        elif kind == "content_block_start":
            index = _block(reader, event.get("index"), f"{where}.index")
            blocks[index] = copy.deepcopy(
                reader.mapping(event.get("content_block"), f"{where}.content_block")
            )
        elif kind == "content_block_delta":
            index = _block(reader, event.get("index"), f"{where}.index")
            block = blocks.setdefault(index, {"type": "text", "text": ""})
            delta = reader.mapping(event.get("delta"), f"{where}.delta")
            dtype = delta.get("type")
            if dtype == "text_delta":
                block["text"] = block.get("text", "") + reader.text(
                    delta.get("text"), f"{where}.delta.text"
                )
            elif dtype == "citations_delta":
                block.setdefault("citations", []).append(delta.get("citation"))
            elif dtype == "input_json_delta":
                json_parts.setdefault(index, []).append(str(delta.get("partial_json", "")))
            elif dtype == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
        elif kind == "message_delta":
            delta = event.get("delta")
            if message is not None and isinstance(delta, dict):
                message.update({k: v for k, v in delta.items() if v is not None})
    if message is None:
        raise reader.fail(
            "event 0",
            "the stream has no message_start event",
            "save every event of the stream, from the first",
        )
    for index, parts in json_parts.items():
        try:
            blocks[index]["input"] = json.loads("".join(parts) or "{}")
        except ValueError:
            blocks[index]["input"] = "".join(parts)
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


def _openai_responses(events: list[Any], reader: Reader) -> dict[str, Any]:
    final = None
    for event in events:
        if _type(event) in ("response.completed", "response.incomplete", "response.failed"):
            final = event.get("response")
    if isinstance(final, dict) and final.get("output"):
        return final
    items: dict[int, Any] = {}
    for n, event in enumerate(events):
        if _type(event) == "response.output_item.done":
            index = reader.index(event.get("output_index"), f"event {n}.output_index")
            items[index if index is not None else len(items)] = event.get("item")
    if not items:
        raise reader.fail(
            "events",
            "the stream ends before the response is complete (no response.completed and "
            "no finished output item)",
            "save the whole stream, up to response.completed",
        )
    start = next((e.get("response") for e in events if _type(e) == "response.created"), None)
    body = dict(start) if isinstance(start, dict) else {}
    body["output"] = [items[i] for i in sorted(items)]
    return body


def _cohere(events: list[Any], reader: Reader) -> dict[str, Any]:
    body: dict[str, Any] = {}
    content: dict[int, dict[str, Any]] = {}
    citations: list[Any] = []
    for n, event in enumerate(events):
        where = f"event {n}"
        kind = _type(event)
        raw = event.get("delta")
        delta: dict[str, Any] = raw if isinstance(raw, dict) else {}
        inner = delta.get("message")
        msg: dict[str, Any] = inner if isinstance(inner, dict) else {}
        if kind == "message-start":
            body["id"] = event.get("id")
        elif kind == "content-start":
            index = _block(reader, event.get("index"), f"{where}.index")
            content[index] = dict(reader.mapping(msg.get("content"), f"{where}.delta.message"))
        elif kind == "content-delta":
            index = _block(reader, event.get("index"), f"{where}.index")
            item = content.setdefault(index, {"type": "text", "text": ""})
            got = msg.get("content")
            piece: dict[str, Any] = got if isinstance(got, dict) else {}
            for key in ("text", "thinking"):
                if isinstance(piece.get(key), str):
                    item[key] = item.get(key, "") + piece[key]
        elif kind == "citation-start":
            citations.append(msg.get("citations"))
        elif kind == "message-end":
            body["finish_reason"] = delta.get("finish_reason")
    body["message"] = {
        "role": "assistant",
        "content": [content[i] for i in sorted(content)],
        "citations": citations,
    }
    return body


def _bedrock(events: list[Any], reader: Reader) -> dict[str, Any]:
    blocks: dict[int, dict[str, Any]] = {}
    stop = None
    for n, frame in enumerate(events):
        ((name, payload),) = frame.items()
        where = f"event {n}.{name}"
        if not isinstance(payload, dict):
            continue
        if name == "messageStop":
            stop = payload.get("stopReason")
            continue
        if name not in ("contentBlockStart", "contentBlockDelta"):
            continue
        index = _block(reader, payload.get("contentBlockIndex"), f"{where}.index")
        block = blocks.setdefault(index, {"text": [], "citations": [], "other": None})
        if name == "contentBlockStart":
            block["other"] = payload.get("start")
            continue
        delta = reader.mapping(payload.get("delta"), f"{where}.delta")
        if isinstance(delta.get("text"), str):
            block["text"].append(delta["text"])
        if isinstance(delta.get("citation"), dict):
            block["citations"].append(delta["citation"])
    content: list[dict[str, Any]] = []
    for index in sorted(blocks):
        block = blocks[index]
        text = "".join(block["text"])
        if block["citations"]:
            cited = [{"text": text}] if text else []
            content.append(
                {"citationsContent": {"content": cited, "citations": block["citations"]}}
            )
        elif block["text"]:
            content.append({"text": text})
        elif isinstance(block["other"], dict):
            content.append(block["other"])  # a tool call: not answer text
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
    }


def _gemini(events: list[Any], reader: Reader) -> dict[str, Any]:
    texts: list[str] = []
    last: dict[str, Any] = {}
    candidate: dict[str, Any] = {}
    for n, chunk in enumerate(events):
        last = chunk
        for c, value in enumerate(chunk.get("candidates") or []):
            if c:
                break  # the first candidate is the answer
            one = reader.mapping(value, f"event {n}.candidates[0]")
            for key, item in one.items():
                if key != "content":
                    candidate[key] = item
            parts = (one.get("content") or {}).get("parts") or []
            for part in parts:
                text = part.get("text") if isinstance(part, dict) else None
                if isinstance(text, str) and not part.get("thought"):
                    texts.append(text)
    body = {k: v for k, v in last.items() if k != "candidates"}
    candidate["content"] = {"role": "model", "parts": [{"text": "".join(texts)}]}
    body["candidates"] = [candidate]
    return body
