"""What a conversation's tools returned: the URLs a citation may come from.

A cited URL that no tool result of the conversation returned (search results, fetched
pages, the provider's own source lists) is suspect before anything is fetched: it is
marked ``url_not_retrieved`` (:attr:`~pytest_citecheck.claims.models.Citation.retrieved`
is ``False``), with no request made. What counts as returned:

- OpenAI Responses: a ``web_search_call``'s ``action.sources`` and an ``open_page`` /
  ``find`` action's ``url``; every URL in a ``function_call_output``, ``mcp_call`` or
  ``custom_tool_call_output``'s output. A ``search`` action without ``sources`` (the
  request did not ask for ``include=["web_search_call.action.sources"]``) hides what it
  found: the check is off for the rest of the conversation, and a note says why.
- Chat Completions: every URL in a ``tool`` (or ``function``) message. A search model's
  annotations with no tool message before them searched inside the API: off, as above.
- Anthropic: ``web_search_tool_result`` results' ``url``, ``web_fetch_tool_result``'s page,
  every URL in a client ``tool_result`` or ``mcp_tool_result`` (a ``search_result``'s
  ``source`` included).
- Gemini: every URL in a ``functionResponse`` or ``toolResponse`` part, and the
  ``groundingChunks`` of a ``groundingMetadata`` kept with a turn.
- Every conversation: a URL the user (or a system message) wrote was given, not made up.

URLs are compared as citations are de-duplicated (:func:`~.draft.dedup_key`: scheme and
host case, fragment and tracking parameters do not count).
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from pytest_citecheck.claims.importers.draft import dedup_key

__all__ = ["Collector", "anthropic_blocks", "responses_item", "urls_in"]

# A URL in free text (a tool's output, a page's markdown): up to a space, a quote or a
# closing square bracket (a round one only when unbalanced); trailing sentence
# punctuation is not part of it.
_URL = re.compile(r"https?://[^\s<>\"'`\\\]}|]+", re.IGNORECASE)
_TRAILING = ".,;:!?*"
_MAX_DEPTH = 64


class Collector(Protocol):
    """Where what a conversation was given goes (the turn being cut)."""

    def given(self, value: object) -> None: ...

    def opaque(self, why: str) -> None: ...


def urls_in(value: object) -> set[str]:
    """The dedup keys of every http(s) URL in ``value`` (JSON: text, lists, mappings;
    text that is itself JSON is read too, its escaped slashes included)."""
    out: set[str] = set()
    _walk(value, out, 0)
    return out


def _walk(value: object, out: set[str], depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, str):
        text = value.replace("\\/", "/")
        for match in _URL.finditer(text):
            url = match.group().rstrip(_TRAILING)
            while url.endswith(")") and url.count(")") > url.count("("):
                url = url[:-1].rstrip(_TRAILING)  # a markdown link's or a sentence's bracket
            if len(url) > len("https://"):
                out.add(dedup_key(url))
        if text[:1] in "[{" and len(text) < 5_000_000:
            try:
                inner = json.loads(text)
            except (ValueError, RecursionError):
                return
            if not isinstance(inner, str):
                _walk(inner, out, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            _walk(item, out, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _walk(item, out, depth + 1)


_RESPONSES_OUTPUTS = ("function_call_output", "mcp_call", "custom_tool_call_output")


def responses_item(item: dict[str, Any], where: str, cut: Collector) -> None:
    """What one OpenAI Responses item returned to the conversation."""
    kind = item.get("type")
    if kind == "web_search_call":
        action = item.get("action")
        if not isinstance(action, dict):
            cut.opaque(f"{where}: the web_search_call has no action, so what it found is unknown")
            return
        sources = action.get("sources")
        if isinstance(sources, list):
            cut.given(sources)
        elif action.get("type") in (None, "search"):
            cut.opaque(
                f"{where}: the web_search_call lists no sources (request them with "
                'include=["web_search_call.action.sources"])'
            )
        cut.given(action.get("url"))
    elif kind in _RESPONSES_OUTPUTS:
        cut.given(item.get("output"))


def anthropic_blocks(blocks: list[Any], cut: Collector) -> None:
    """What an assistant message's server tools returned (its results are in its content)."""
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if isinstance(kind, str) and kind.endswith("_tool_result"):
            cut.given(block.get("content"))
