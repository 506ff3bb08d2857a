"""Real recorded responses (tests/data/native, SOURCES.md) turned into Inspect messages by
Inspect AI's own provider code (its Anthropic and OpenAI Responses conversions), then
imported as Inspect messages: the same claims, the same citations and quotes as the
responses imported directly."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.claims.importers import import_response
from pytest_citecheck.claims.importers.answer import ImportedAnswer

pytest.importorskip(
    "inspect_ai", reason="Inspect AI is not installed: pip install 'pytest-citecheck[inspect]'"
)

NATIVE = Path(__file__).resolve().parents[1] / "data" / "native"
# pause_turn_part1 has no answer yet (both ways refuse it).
ANTHROPIC = sorted(
    p for p in (NATIVE / "anthropic_messages").glob("*.json") if "pause_turn" not in p.name
)
RESPONSES = sorted((NATIVE / "openai_responses").glob("*.json"))


def _without_usage(data: dict[str, Any]) -> dict[str, Any]:
    # The recordings predate usage fields today's SDK types require; usage cites nothing.
    return {k: v for k, v in data.items() if k != "usage"}


def via_inspect(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """The response as Inspect's provider turns it into its assistant message (JSON)."""
    if path.parent.name == "anthropic_messages":
        from anthropic.types import Message
        from inspect_ai.model._providers.anthropic import model_output_from_message

        message = Message.model_validate(
            {**_without_usage(data), "usage": {"input_tokens": 1, "output_tokens": 1}}
        )
        output, _ = asyncio.run(model_output_from_message(None, data["model"], message, []))
    else:
        from inspect_ai.model import model_output_from_openai_responses

        output = asyncio.run(model_output_from_openai_responses(_without_usage(data)))
    dumped: dict[str, Any] = output.choices[0].message.model_dump(mode="json", exclude_none=True)
    return dumped


def cited(answer: ImportedAnswer) -> list[tuple[str, list[tuple[str | None, str | None, str]]]]:
    return [
        (
            c.claim.claim,
            [(x.url or x.document, x.quote, x.quote_by) for x in c.claim.citations],
        )
        for c in answer.claims
    ]


@pytest.mark.parametrize("path", [*ANTHROPIC, *RESPONSES], ids=lambda p: p.name)
def test_an_inspect_message_imports_as_the_response_it_came_from(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    direct = import_response(data, answer_id="a")
    inspected = import_response(via_inspect(path, data), format="inspect", answer_id="a")
    assert direct.claims, path.name
    assert cited(inspected) == cited(direct)
    assert [c.claim.id for c in inspected.claims] == [c.claim.id for c in direct.claims]
    assert [s.text for s in inspected.uncited] == [s.text for s in direct.uncited]
