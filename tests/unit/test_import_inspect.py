"""Inspect AI samples as Inspect saves them (plain JSON, no inspect_ai needed): where each
kind of citation points, what a sample's tools returned (url_not_retrieved, found without a
request), and the failures that name the place."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_citecheck.claims.importers import ResponseImportError, import_response
from pytest_citecheck.claims.importers.inspect_log import import_sample, sample_answer_id

FIRST = "Water boils at 100 degrees Celsius at sea level."
SECOND = "Salt raises the boiling point slightly."
BOIL = "https://science.example/boiling"
SALT = "https://kitchen.example/salt"


def text(value: str, *citations: dict[str, Any]) -> dict[str, Any]:
    return {"type": "text", "text": value, "citations": list(citations) or None}


def url(address: str, cited: object = None) -> dict[str, Any]:
    return {"type": "url", "url": address, "cited_text": cited}


def sample(
    *content: dict[str, Any], messages: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    message = {"role": "assistant", "content": list(content)}
    return {
        "id": "q1",
        "epoch": 1,
        "messages": [{"role": "user", "content": "How hot?"}, *(messages or []), message],
        "output": {"model": "m", "choices": [{"message": message, "stop_reason": "stop"}]},
    }


def cited(content: list[dict[str, Any]]) -> list[tuple[str, list[str | None]]]:
    answer = import_response({"role": "assistant", "content": content}, format="inspect")
    return [
        (c.claim.claim, [x.url or x.document for x in c.claim.citations]) for c in answer.claims
    ]


def test_a_range_over_plain_text_cites_the_sentences_it_covers() -> None:
    # Gemini's grounding segments through Inspect: a range over the supported text.
    part = text(f"{FIRST} {SECOND}", url(SALT, [len(FIRST) + 1, len(FIRST) + 1 + len(SECOND)]))
    assert cited([part]) == [(SECOND, [SALT])]


def test_a_citation_without_a_place_supports_its_whole_part() -> None:
    # Inspect's definition: ContentText.citations support the text block.
    assert cited([text(FIRST, url(BOIL)), text(f" {SECOND}")]) == [(FIRST, [BOIL])]


def test_a_document_citation_names_its_document_and_keeps_its_quote() -> None:
    doc = {"type": "document", "title": "sources/handbook.md", "cited_text": "boils at 100"}
    answer = import_response({"role": "assistant", "content": [text(FIRST, doc)]}, format="inspect")
    (citation,) = answer.claims[0].claim.citations
    assert (citation.document, citation.quote, citation.quote_by) == (
        "sources/handbook.md",
        "boils at 100",
        "provider",
    )


def test_a_content_citation_is_refused_naming_its_place() -> None:
    with pytest.raises(ResponseImportError) as caught:
        cited([text(FIRST, {"type": "content", "title": "somewhere"})])
    assert caught.value.where == "content[0].citations[0]"
    assert "names no URL and no document" in caught.value.problem


def test_a_range_outside_its_part_is_refused() -> None:
    with pytest.raises(ResponseImportError, match="outside the text"):
        cited([text(FIRST, url(BOIL, [0, len(FIRST) + 40]))])


def test_a_cited_url_no_tool_returned_is_not_retrieved_without_a_request() -> None:
    tool = {"role": "tool", "content": f"Results: [Boiling]({BOIL}) ...", "function": "search"}
    answer = import_sample(
        sample(text(FIRST, url(BOIL)), text(f" {SECOND}", url(SALT)), messages=[tool])
    )
    retrieved = {c.claim.claim: [x.retrieved for x in c.claim.citations] for c in answer.claims}
    assert retrieved == {FIRST: [True], SECOND: [False]}
    assert any("no tool of the conversation returned" in n and SALT in n for n in answer.notes)
    assert answer.id == "q1" and answer.conversation == "q1"


def test_a_sample_without_tool_results_leaves_the_check_off_and_says_why() -> None:
    answer = import_sample(sample(text(FIRST, url(BOIL))))
    assert [c.retrieved for c in answer.claims[0].claim.citations] == [None]
    assert any("no tool result" in n for n in answer.notes)


def test_a_server_search_in_the_message_counts_as_returned() -> None:
    search = {
        "type": "tool_use",
        "tool_type": "web_search",
        "id": "ws_1",
        "name": "web_search",
        "arguments": "{}",
        "result": f'[{{"url": "{BOIL}"}}]',
    }
    answer = import_sample(sample(search, text(FIRST, url(BOIL))))
    assert [c.retrieved for c in answer.claims[0].claim.citations] == [True]


def test_the_answer_id_is_the_sample_id_and_its_epoch_past_the_first() -> None:
    assert sample_answer_id("q1") == "q1"
    assert sample_answer_id(7, 2) == "7-e2"
