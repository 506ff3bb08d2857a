"""AWS Bedrock Converse: quote pieces joined as the source has them; mangled streams
(events reversed, one index for every block, blocks out of order) refused naming the
event, never joined into other text or other citations."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.claims.importers import ResponseImportError, import_response
from pytest_citecheck.stages.documents import Document

NATIVE = Path(__file__).parent.parent / "data" / "native"
SOURCE = "The Ruby programming language was created by Yukihiro Matsumoto in 1993. "


def load(name: str) -> Any:
    (path,) = NATIVE.glob(f"*/{name}.json")
    return json.loads(path.read_text(encoding="utf-8"))


# -- quote pieces -------------------------------------------------------------------


@pytest.mark.parametrize("cut", [49, 58, 73])  # inside "Yukihiro", inside "Matsumoto", a space
def test_a_quote_in_pieces_reads_as_the_source_and_is_found_there(tmp_path: Path, cut: int) -> None:
    body = load("ruby_llm__claude-haiku-4-5_documentChar_text")
    citation = body["output"]["message"]["content"][0]["citationsContent"]["citations"][0]
    assert [p["text"] for p in citation["sourceContent"]] == [SOURCE]
    citation["sourceContent"] = [{"text": SOURCE[:cut]}, {"text": SOURCE[cut:] + "It is "}]
    facts = tmp_path / "facts.txt"
    facts.write_text(SOURCE + "It is dynamic.\n", encoding="utf-8")
    (claim,) = import_response(body, answer_id="a", documents=[str(facts)]).claim_list
    (cited,) = claim.citations
    assert cited.quote == SOURCE + "It is"
    assert cited.quote_by == "provider"
    # The document holds the quote: a provider quote found, never "not on the page".
    assert Document.load(facts).find_quote(cited.quote) is not None


# -- mangled streams ---------------------------------------------------------------

STREAMS = [
    "ruby_llm__claude-haiku-4-5_documentChar.stream",
    "ruby_llm__nova-2-lite_web_citations.stream",
]


def _index(frame: dict[str, Any]) -> int | None:
    ((_, payload),) = frame.items()
    return payload.get("contentBlockIndex") if isinstance(payload, dict) else None


@pytest.mark.parametrize("name", STREAMS)
def test_the_real_streams_still_import(name: str) -> None:
    assert import_response(load(name), answer_id="a").claims


@pytest.mark.parametrize("name", STREAMS)
def test_a_reversed_stream_is_refused_naming_the_event(name: str) -> None:
    events = list(reversed(load(name)))
    with pytest.raises(ResponseImportError, match=r"event \d+") as caught:
        import_response(events, answer_id="a")
    assert "order" in caught.value.problem or "after" in caught.value.problem


def test_one_block_index_for_every_block_is_refused() -> None:
    # Merged, the uncited "Ruby 4.0.6 was released..." read as cited by block 5's URL.
    events = copy.deepcopy(load("ruby_llm__nova-2-lite_web_citations.stream"))
    for frame in events:
        ((_, payload),) = frame.items()
        if isinstance(payload, dict) and "contentBlockIndex" in payload:
            payload["contentBlockIndex"] = 0
    with pytest.raises(ResponseImportError) as caught:
        import_response(events, answer_id="a")
    assert caught.value.where == "event 4.contentBlockStart.contentBlockIndex"
    assert "block 0" in caught.value.problem and "two blocks" in caught.value.problem


def test_nova_blocks_out_of_order_are_refused() -> None:
    events = load("ruby_llm__nova-2-lite_web_citations.stream")
    indexed = [n for n, frame in enumerate(events) if _index(frame) is not None]
    # Move the last block's events to the front of the content.
    last = max(_index(events[n]) or 0 for n in indexed)
    moved = [events[n] for n in indexed if _index(events[n]) == last]
    rest = [e for e in events if e not in moved]
    first = next(n for n, e in enumerate(rest) if _index(e) is not None)
    with pytest.raises(ResponseImportError, match="order"):
        import_response([*rest[:first], *moved, *rest[first:]], answer_id="a")
