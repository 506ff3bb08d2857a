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
- Gemini Interactions (``event_type``): ``interaction.created`` / ``.completed`` (the
  interaction without its steps), ``step.start`` / ``step.delta`` / ``step.stop`` per
  step; a ``model_output`` step's ``text`` deltas are joined into one text item, its
  ``text_annotation_delta`` annotations (byte offsets into that text) kept on it.

Anthropic, Bedrock and Cohere content blocks (and Interactions steps) come one after another,
each index once, between the message's start and stop; a stream that breaks that order
(events reversed, one index for every block) is refused naming the event, never joined
into other text.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from pytest_citecheck.claims.importers.answer import Reader

__all__ = ["STREAM_FORMATS", "parse_json_lines", "parse_sse", "reassemble", "stream_format"]

# Stream kind -> the format of the body it reassembles into.
STREAM_FORMATS = {
    "anthropic": "anthropic",
    "openai-responses": "openai-responses",
    "cohere": "cohere",
    "bedrock-converse": "bedrock-converse",
    "gemini": "gemini",
    "gemini-interactions": "gemini-interactions",
}
_INTERACTION_EVENTS = frozenset(
    {"interaction.created", "interaction.status_update", "interaction.completed"}
    | {"step.start", "step.delta", "step.stop"}
)
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


def parse_json_lines(text: str) -> list[Any] | None:
    """One JSON value a line (a stream's events as SDK fixtures save them, in a ``.txt``
    file too); None unless there are two lines or more and every one is JSON."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    try:
        return [json.loads(line) for line in lines]
    except (ValueError, RecursionError):
        return None


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
    if {e.get("event_type") for e in dicts} & _INTERACTION_EVENTS:
        return "gemini-interactions"
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
        "gemini-interactions": _gemini_interactions,
    }[kind]
    return build(events, reader)


def _block(reader: Reader, value: Any, where: str) -> int:
    index = reader.index(value, where)
    if index is None:
        raise reader.fail(where, "the event names no block index", "save every event unedited")
    return index


_ORDER_FIX = (
    "save the stream's events unedited, in the order they arrived (one block after "
    "another, each its own index)"
)


class _Blocks:
    """The order a stream's content blocks must come in: one after another, each index
    once, nothing after the message's end. A stream that breaks it (events reversed,
    one index for every block) would be joined into the wrong text, or a sentence
    written as cited by another block's citations: refused, naming the event."""

    def __init__(self, reader: Reader, start: str, stop: str) -> None:
        self.reader = reader
        self.start_event, self.stop_event = start, stop
        self.seen: set[int] = set()
        self.stopped: set[int] = set()
        self.last = -1
        self.content = False
        self.ended = False

    def _fail(self, where: str, problem: str) -> Exception:
        return self.reader.fail(where, problem, _ORDER_FIX)

    def message_start(self, where: str) -> None:
        if self.content or self.ended:
            raise self._fail(
                where, f"{self.start_event} comes after the content: the events are out of order"
            )

    def message_stop(self, where: str) -> None:
        self.ended = True

    def event(self, name: str, index: int, where: str, *, opens: bool = False) -> None:
        """An event of block ``index`` (``opens``: its start event)."""
        if self.ended:
            raise self._fail(
                where,
                f"{name} of block {index} comes after {self.stop_event}: the events are "
                "out of order",
            )
        self.content = True
        if index in self.stopped:
            raise self._fail(
                where,
                f"{name} of block {index} comes after that block's stop: one index is "
                "used for two blocks, or the events are out of order",
            )
        if index < self.last:
            raise self._fail(
                where,
                f"{name} of block {index} comes after block {self.last} began: the blocks "
                "are out of order",
            )
        if opens and index in self.seen:
            raise self._fail(where, f"block {index} starts twice: one index is used for two blocks")
        self.seen.add(index)
        self.last = index

    def block_event(
        self, name: str, event: Mapping[str, Any], where: str, *, opens: bool = False
    ) -> int:
        """The block an event names by its ``index`` (``opens``: the block's start
        event), checked against the order: a block's start or delta."""
        index = _block(self.reader, event.get("index"), f"{where}.index")
        self.event(name, index, f"{where}.index", opens=opens)
        return index

    def block_stop(self, name: str, event: Mapping[str, Any], where: str) -> None:
        """A block's stop event, naming the block by its ``index``."""
        self.stop(name, _block(self.reader, event.get("index"), f"{where}.index"), f"{where}.index")

    def stop(self, name: str, index: int, where: str) -> None:
        if self.ended:
            raise self._fail(
                where,
                f"{name} of block {index} comes after {self.stop_event}: the events are "
                "out of order",
            )
        if index not in self.seen:
            raise self._fail(
                where,
                f"{name} of block {index} comes before any event of that block: the events "
                "are out of order",
            )
        if index in self.stopped:
            raise self._fail(where, f"block {index} stops twice: one index is used for two blocks")
        self.stopped.add(index)


def _anthropic(events: list[Any], reader: Reader) -> dict[str, Any]:
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    json_parts: dict[int, list[str]] = {}
    order = _Blocks(reader, "message_start", "message_stop")
    for n, event in enumerate(events):
        where = f"event {n}"
        kind = _type(event)
        if kind == "message_start":
            order.message_start(where)
            message = copy.deepcopy(reader.mapping(event.get("message"), f"{where}.message"))
        elif kind == "message_stop":
            order.message_stop(where)
        elif kind == "content_block_start":
            index = order.block_event(kind, event, where, opens=True)
            blocks[index] = copy.deepcopy(
                reader.mapping(event.get("content_block"), f"{where}.content_block")
            )
        elif kind == "content_block_stop":
            order.block_stop(kind, event, where)
        elif kind == "content_block_delta":
            index = order.block_event(kind, event, where)
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
    order = _Blocks(reader, "message-start", "message-end")
    for n, event in enumerate(events):
        where = f"event {n}"
        kind = _type(event)
        raw = event.get("delta")
        delta: dict[str, Any] = raw if isinstance(raw, dict) else {}
        inner = delta.get("message")
        msg: dict[str, Any] = inner if isinstance(inner, dict) else {}
        if kind == "message-start":
            order.message_start(where)
            body["id"] = event.get("id")
        elif kind == "content-start":
            index = order.block_event(kind, event, where, opens=True)
            content[index] = dict(reader.mapping(msg.get("content"), f"{where}.delta.message"))
        elif kind == "content-end":
            order.block_stop(kind, event, where)
        elif kind == "content-delta":
            index = order.block_event(kind, event, where)
            item = content.setdefault(index, {"type": "text", "text": ""})
            got = msg.get("content")
            piece: dict[str, Any] = got if isinstance(got, dict) else {}
            for key in ("text", "thinking"):
                if isinstance(piece.get(key), str):
                    item[key] = item.get(key, "") + piece[key]
        elif kind == "citation-start":
            citations.append(msg.get("citations"))
        elif kind == "message-end":
            order.message_stop(where)
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
    order = _Blocks(reader, "messageStart", "messageStop")
    for n, frame in enumerate(events):
        ((name, payload),) = frame.items()
        where = f"event {n}.{name}"
        if not isinstance(payload, dict):
            continue
        if name == "messageStart":
            order.message_start(where)
            continue
        if name == "messageStop":
            order.message_stop(where)
            stop = payload.get("stopReason")
            continue
        if name not in ("contentBlockStart", "contentBlockDelta", "contentBlockStop"):
            continue
        index = _block(reader, payload.get("contentBlockIndex"), f"{where}.contentBlockIndex")
        if name == "contentBlockStop":
            order.stop(name, index, f"{where}.contentBlockIndex")
            continue
        order.event(name, index, f"{where}.contentBlockIndex", opens=name == "contentBlockStart")
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


def _gemini_interactions(events: list[Any], reader: Reader) -> dict[str, Any]:
    body: dict[str, Any] = {}
    steps: dict[int, dict[str, Any]] = {}
    whole: list[Any] | None = None
    order = _Blocks(reader, "interaction.created", "interaction.completed")
    for n, event in enumerate(events):
        where = f"event {n}"
        kind = event.get("event_type")
        if kind in ("interaction.created", "interaction.completed"):
            if kind == "interaction.created":
                order.message_start(where)
            else:
                order.message_stop(where)
            got = reader.mapping(event.get("interaction"), f"{where}.interaction")
            body.update({k: copy.deepcopy(v) for k, v in got.items() if k != "steps"})
            if isinstance(got.get("steps"), list):
                whole = copy.deepcopy(got["steps"])  # the interaction with its steps
        elif kind == "step.start":
            index = order.block_event(kind, event, where, opens=True)
            steps[index] = copy.deepcopy(reader.mapping(event.get("step"), f"{where}.step"))
        elif kind == "step.stop":
            order.block_stop(kind, event, where)
        elif kind == "step.delta":
            index = order.block_event(kind, event, where)
            step = steps.setdefault(index, {"type": "model_output"})
            _step_delta(reader, step, reader.mapping(event.get("delta"), f"{where}.delta"), where)
    if not steps and whole:
        return {**body, "object": body.get("object", "interaction"), "steps": whole}
    if not steps:
        raise reader.fail(
            "events",
            "the stream has no step (no step.start or step.delta event)",
            "save every event of the stream, from interaction.created to interaction.completed",
        )
    body.setdefault("object", "interaction")
    body["steps"] = [steps[i] for i in sorted(steps)]
    return body


def _step_delta(reader: Reader, step: dict[str, Any], delta: dict[str, Any], where: str) -> None:
    """One ``step.delta`` into its step: text joined into the step's last text item,
    annotations onto it, a tool step's fields kept as sent."""
    dtype = delta.get("type")
    if step.get("type") != "model_output":
        step.update({k: copy.deepcopy(v) for k, v in delta.items() if k != "type"})
        return
    content: list[dict[str, Any]] = step.setdefault("content", [])
    if dtype == "text":
        text = reader.text(delta.get("text"), f"{where}.delta.text")
        if not content or content[-1].get("type") != "text":
            content.append({"type": "text", "text": ""})
        content[-1]["text"] += text
    elif dtype == "text_annotation_delta":
        annotations = reader.optional_items(delta.get("annotations"), f"{where}.delta.annotations")
        if not content or content[-1].get("type") != "text":
            raise reader.fail(
                f"{where}.delta",
                "the annotations come before any text of their step",
                "save the stream's events unedited, in the order they arrived",
            )
        content[-1].setdefault("annotations", []).extend(copy.deepcopy(annotations))
