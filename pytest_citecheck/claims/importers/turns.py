"""A saved conversation cut into its assistant turns, each in its API's response shape.

A conversation is what an SDK keeps and sends back: an OpenAI Responses
``input``/``output`` item list, a Chat Completions ``messages`` array, an Anthropic
``messages`` list, a Gemini ``contents`` list; or a request body holding one of them
(``{"messages": [...]}``, ``{"input": [...]}``, ``{"contents": [...]}``). A turn is
what the assistant side wrote between two user messages: its messages, tool calls and
the tool results in between (a user message that only carries ``tool_result`` blocks or
``functionResponse`` parts is the tools answering, not the user). Each turn becomes
the body its format's per-response reader reads (``{"output": [...]}``,
``{"choices": [{"message": ...}]}``, ``{"content": [...]}``, ``{"candidates": [...]}``),
so a turn is imported exactly as that response would be.

Beside the body, a turn knows which URLs the conversation had been given by then
(:mod:`~pytest_citecheck.claims.importers.retrieved`): what its tools returned, the
provider's own source lists, and what the user wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_citecheck.claims.importers import retrieved as found
from pytest_citecheck.claims.importers.answer import Reader

__all__ = ["CONVERSATION_FORMATS", "Turn", "conversation_format", "conversation_items", "turns"]

RESPONSES = "openai-responses"
CHAT = "openai-chat"
ANTHROPIC = "anthropic"
GEMINI = "gemini"
CONVERSATION_FORMATS = (RESPONSES, CHAT, ANTHROPIC, GEMINI)

# Item types only an OpenAI Responses item list has.
_RESPONSES_ITEMS = frozenset(
    {
        "web_search_call",
        "function_call",
        "function_call_output",
        "reasoning",
        "file_search_call",
        "mcp_call",
        "mcp_list_tools",
        "computer_call",
        "computer_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "item_reference",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_fetch_call",
    }
)
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})
# Content blocks only Anthropic's messages carry.
_ANTHROPIC_BLOCKS = frozenset(
    {
        "tool_use",
        "tool_result",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "thinking",
        "redacted_thinking",
        "mcp_tool_use",
        "mcp_tool_result",
        "search_result",
        "document",
    }
)
# Keys of a whole response (a list of them is several answers, not a conversation).
_RESPONSE_KEYS = frozenset({"choices", "candidates", "output", "stop_reason", "usage"})
# Where a request body keeps its conversation, by the key of the response it is not.
_WRAPPERS = (("input", "output"), ("messages", "choices"), ("contents", "candidates"))


@dataclass
class Turn:
    """One assistant turn: ``body`` in its format's response shape, ``where`` its items."""

    number: int
    where: str
    body: dict[str, Any]
    # Dedup keys of every URL the conversation had returned or been given by the end
    # of this turn; ``unknown`` says why that cannot be told (a search whose results
    # the conversation does not hold), None when it can.
    retrieved: set[str] = field(default_factory=set)
    unknown: str | None = None
    # The turn has no answer text (it ended on a tool call): nothing to import.
    empty: bool = False


def conversation_items(data: object) -> list[Any] | None:
    """The conversation's list: ``data`` itself, or the list a request body holds."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key, response_key in _WRAPPERS:
            value = data.get(key)
            if isinstance(value, list) and response_key not in data and value:
                if key == "messages" and "content" in data:
                    continue  # an Anthropic response, not a request
                return value
    return None


def conversation_format(data: object) -> str | None:
    """The API whose conversation ``data`` is (parsed JSON), or None when it is none."""
    items = conversation_items(data)
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    if any(_RESPONSE_KEYS & i.keys() for i in items):
        return None  # a list of saved responses, each its own answer
    roles = {i.get("role") for i in items}
    if "user" not in roles and not (roles == {None} and any("parts" in i for i in items)):
        return None  # a conversation starts with someone asking
    types = {i.get("type") for i in items}
    if any("parts" in i for i in items) and roles <= {"user", "model", "function", None}:
        return GEMINI
    blocks = {
        b.get("type")
        for i in items
        if isinstance(i.get("content"), list)
        for b in i["content"]
        if isinstance(b, dict)
    }
    if types & _RESPONSES_ITEMS or blocks & _RESPONSES_PARTS:
        return RESPONSES
    if not roles & {"assistant", "user"} or not roles <= {
        "user",
        "assistant",
        "system",
        "developer",
        "tool",
        "function",
        None,
    }:
        return None
    if roles & {"tool", "function", "system", "developer"} or any("tool_calls" in i for i in items):
        return CHAT
    if blocks & _ANTHROPIC_BLOCKS or any(
        isinstance(b, dict) and "citations" in b
        for i in items
        if isinstance(i.get("content"), list)
        for b in i["content"]
    ):
        return ANTHROPIC
    if any(i.get("annotations") for i in items) or all(
        isinstance(i.get("content"), str | None) for i in items
    ):
        return CHAT
    return ANTHROPIC


def turns(data: object, fmt: str, reader: Reader) -> list[Turn]:
    """The assistant turns of the conversation ``data`` (in ``fmt``), in order."""
    items = conversation_items(data)
    if items is None:
        raise reader.fail(
            "",
            "this is not a conversation (a list of messages or items)",
            "save the conversation's list as the SDK keeps it",
        )
    split = _SPLITTERS.get(fmt)
    if split is None:
        raise reader.fail(
            "",
            f"{fmt} has no conversation shape",
            f"a conversation is one of: {', '.join(CONVERSATION_FORMATS)}",
        )
    return split(items, reader)


# -- cutting a list into turns ----------------------------------------------------------------


class _Cutter:
    """Collects the items of the turn being read and what the conversation was given."""

    def __init__(self, reader: Reader, build: Callable[[list[tuple[int, Any]]], dict[str, Any]]):
        self.reader = reader
        self.build = build
        self.current: list[tuple[int, Any]] = []
        self.retrieved: set[str] = set()
        self.unknown: str | None = None
        self.out: list[Turn] = []

    def given(self, value: object) -> None:
        self.retrieved |= found.urls_in(value)

    def opaque(self, why: str) -> None:
        self.unknown = self.unknown or why

    def end_turn(self, has_text: bool) -> None:
        if not self.current:
            return
        first, last = self.current[0][0], self.current[-1][0]
        where = f"[{first}]" if first == last else f"[{first}..{last}]"
        body = self.build(self.current) if has_text else {}
        self.out.append(
            Turn(
                number=len(self.out) + 1,
                where=where,
                body=body,
                retrieved=set(self.retrieved),
                unknown=self.unknown,
                empty=not has_text,
            )
        )
        self.current = []


def _responses(items: list[Any], reader: Reader) -> list[Turn]:
    def build(turn: list[tuple[int, Any]]) -> dict[str, Any]:
        output = [item for _, item in turn]
        ids = [i.get("id") for i in output if i.get("type") == "message"]
        return {"id": ids[-1] if ids and isinstance(ids[-1], str) else None, "output": output}

    cut = _Cutter(reader, build)
    has_text = False
    for n, raw in enumerate(items):
        item = dict(reader.mapping(raw, f"[{n}]"))
        role = item.get("role")
        if role in ("user", "system", "developer"):
            cut.end_turn(has_text)
            has_text = False
            cut.given(item.get("content"))
            continue
        if role == "assistant" and item.get("type") in (None, "message"):
            item["type"] = "message"
            content = item.get("content")
            if isinstance(content, str):
                item["content"] = [{"type": "output_text", "text": content, "annotations": []}]
            has_text = has_text or any(
                isinstance(p, dict) and p.get("type") == "output_text"
                for p in _listed(item.get("content"))
            )
        found.responses_item(item, f"[{n}]", cut)
        cut.current.append((n, item))
    cut.end_turn(has_text)
    return cut.out


def _chat(items: list[Any], reader: Reader) -> list[Turn]:
    def build(turn: list[tuple[int, Any]]) -> dict[str, Any]:
        answers = [m for _, m in turn if m.get("role") == "assistant" and _chat_text(m)]
        msg = dict(answers[-1])
        msg["content"] = _chat_text(msg)
        return {"id": msg.get("id"), "choices": [{"index": 0, "message": msg}]}

    cut = _Cutter(reader, build)
    tools = False
    for n, raw in enumerate(items):
        msg = reader.mapping(raw, f"[{n}]")
        role = msg.get("role")
        if role in ("user", "system", "developer"):
            cut.end_turn(_chat_answer(cut.current))
            tools = False
            cut.given(msg.get("content"))
            continue
        if role in ("tool", "function"):
            tools = True
            cut.given(msg.get("content"))
        elif role == "assistant" and msg.get("annotations") and not tools:
            cut.opaque(
                f"[{n}]: the search model searched inside the API and the conversation does "
                "not hold what it returned"
            )
        cut.current.append((n, msg))
    cut.end_turn(_chat_answer(cut.current))
    return cut.out


def _chat_text(msg: dict[str, Any]) -> str:
    content = msg.get("content")
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return content if isinstance(content, str) else ""


def _chat_answer(turn: list[tuple[int, Any]]) -> bool:
    return any(m.get("role") == "assistant" and _chat_text(m).strip() for _, m in turn)


def _anthropic(items: list[Any], reader: Reader) -> list[Turn]:
    def build(turn: list[tuple[int, Any]]) -> dict[str, Any]:
        content: list[Any] = []
        ids = []
        for _, msg in turn:
            if msg.get("role") != "assistant":
                continue  # the client's tool results: read for their URLs only
            content += _blocks(msg.get("content"))
            ids.append(msg.get("id"))
        last = ids[-1] if ids and isinstance(ids[-1], str) else None
        return {"id": last, "type": "message", "role": "assistant", "content": content}

    cut = _Cutter(reader, build)
    for n, raw in enumerate(items):
        msg = reader.mapping(raw, f"[{n}]")
        blocks = _blocks(msg.get("content"))
        if msg.get("role") == "user":
            cut.given(blocks)
            if any(b.get("type") != "tool_result" for b in blocks if isinstance(b, dict)):
                cut.end_turn(_anthropic_text(cut.current))
                continue
        else:
            found.anthropic_blocks(blocks, cut)
        cut.current.append((n, msg))
    cut.end_turn(_anthropic_text(cut.current))
    return cut.out


def _listed(value: object) -> list[Any]:
    """A list field as a list; anything else is no items (the reader names a bad one)."""
    return list(value) if isinstance(value, list) else []


def _blocks(content: object) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _anthropic_text(turn: list[tuple[int, Any]]) -> bool:
    return any(
        isinstance(b, dict) and b.get("type") == "text" and str(b.get("text", "")).strip()
        for _, msg in turn
        if msg.get("role") == "assistant"
        for b in _blocks(msg.get("content"))
    )


def _gemini(items: list[Any], reader: Reader) -> list[Turn]:
    def build(turn: list[tuple[int, Any]]) -> dict[str, Any]:
        parts: list[Any] = []
        candidate: dict[str, Any] = {}
        for _, content in turn:
            if content.get("role") != "model":
                continue
            parts += _listed(content.get("parts"))
            for key in ("groundingMetadata", "grounding_metadata"):
                if isinstance(content.get(key), dict):
                    candidate["groundingMetadata"] = content[key]
        candidate["content"] = {"role": "model", "parts": parts}
        return {"candidates": [candidate]}

    cut = _Cutter(reader, build)
    for n, raw in enumerate(items):
        content = reader.mapping(raw, f"[{n}]")
        parts = [p for p in _listed(content.get("parts")) if isinstance(p, dict)]
        if content.get("role", "user") != "model":
            cut.given(parts)
            tool_only = parts and all(
                "functionResponse" in p or "function_response" in p for p in parts
            )
            if not tool_only:
                cut.end_turn(_gemini_text(cut.current))
                continue
        else:
            for key in ("groundingMetadata", "grounding_metadata"):
                cut.given(content.get(key))
            cut.given([p.get("toolResponse") or p.get("tool_response") for p in parts])
        cut.current.append((n, content))
    cut.end_turn(_gemini_text(cut.current))
    return cut.out


def _gemini_text(turn: list[tuple[int, Any]]) -> bool:
    return any(
        isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
        for _, content in turn
        if content.get("role") == "model"
        for p in _listed(content.get("parts"))
    )


_SPLITTERS: dict[str, Callable[[list[Any], Reader], list[Turn]]] = {
    RESPONSES: _responses,
    CHAT: _chat,
    ANTHROPIC: _anthropic,
    GEMINI: _gemini,
}
