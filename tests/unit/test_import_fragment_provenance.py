"""Who wrote a URL's ``#:~:text=`` fragment: the provider only where
its API produced the URL (a native citation annotation); a link the model printed in
its answer text, or a URL typed into a claim file, brings a quote of the model or the
person, which the page must have (else ``fabricated``)."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_citecheck.claims.importers import import_response
from pytest_citecheck.claims.importers.files import claim_file_text
from pytest_citecheck.claims.loader import load_claim_file
from pytest_citecheck.claims.models import Citation

FRAGMENT = "#:~:text=Paris%20is%20the%20capital%20of%20France"
URL = "https://example.com/paris" + FRAGMENT
QUOTE = "Paris is the capital of France"


def _openai(text: str, annotations: list[dict[str, object]]) -> dict[str, object]:
    return {
        "output": [
            {
                "type": "message",
                "content": [{"type": "output_text", "text": text, "annotations": annotations}],
            }
        ]
    }


def test_a_native_annotation_url_brings_a_provider_quote() -> None:
    text = "Paris is the capital of France."
    body = _openai(text, [{"type": "url_citation", "url": URL, "start_index": 0, "end_index": 30}])
    (claim,) = import_response(body, answer_id="a").claim_list
    (citation,) = claim.citations
    assert citation.url == URL
    assert citation.own_quote() == (QUOTE, "provider")


def test_a_markdown_link_the_model_wrote_brings_the_models_quote() -> None:
    answer = import_response(f"Paris is the capital of [France]({URL}).", answer_id="a")
    (claim,) = answer.claim_list
    (citation,) = claim.citations
    assert citation.own_quote() == (QUOTE, "model")
    # A [n] marker and its definition are the model's too.
    (marked,) = import_response(f"Paris is big [1].\n\n[1]: {URL}\n", answer_id="b").claim_list
    assert marked.citations[0].own_quote() == (QUOTE, "model")


def test_a_link_the_model_repeated_without_annotation_is_the_models() -> None:
    # Azure annotates the first of two links to one page: the second, printed by the
    # model with a fragment of its own, is no provider quote.
    first = "https://example.com/paris"
    text = f"Paris is big ([a]({first})). France is old ([b]({URL}))."
    annotation = {"type": "url_citation", "url": first, "start_index": 13, "end_index": 40}
    answer = import_response(_openai(text, [annotation]), answer_id="a")
    by_claim = {c.claim: c.citations for c in answer.claim_list}
    (second,) = by_claim["France is old."]
    assert second.own_quote() == (QUOTE, "model")


def test_the_claim_file_written_keeps_who_wrote_the_fragment(tmp_path: Path) -> None:
    native = import_response(
        _openai(
            "Paris is the capital of France.",
            [{"type": "url_citation", "url": URL, "start_index": 0, "end_index": 30}],
        ),
        answer_id="native",
    )
    markdown = import_response(f"Lyon is in [France]({URL}).", answer_id="md")
    path = tmp_path / "citecheck_imported.yaml"
    path.write_text(
        claim_file_text([(native, "native.json"), (markdown, "md.md")], "citecheck import x"),
        encoding="utf-8",
    )
    assert "quote_by: provider" in path.read_text(encoding="utf-8")
    loaded = {c.id.split("-")[0]: c.citations[0] for c in load_claim_file(path).claims}
    assert loaded["native"].own_quote() == (QUOTE, "provider")
    assert loaded["md"].own_quote() == (QUOTE, "model")


def test_a_fragment_typed_into_a_claim_file_is_the_persons(tmp_path: Path) -> None:
    path = tmp_path / "citecheck_hand.yaml"
    path.write_text(
        "claims:\n"
        "  - id: hand\n"
        "    claim: Paris is the capital of France.\n"
        f"    citations:\n      - {URL}\n"
        "  - id: said\n"
        "    claim: Paris is the capital of France.\n"
        f"    citations:\n      - url: {URL}\n        quote_by: provider\n",
        encoding="utf-8",
    )
    hand, said = load_claim_file(path).claims
    assert hand.citations[0].own_quote() == (QUOTE, "user")
    assert said.citations[0].own_quote() == (QUOTE, "provider")
    # Without a fragment, quote_by still says nothing and is dropped.
    assert Citation(url="https://example.com/", quote_by="provider").quote_by == "user"


def test_the_real_deep_research_fragments_are_the_providers() -> None:
    # The one public recording with text fragments: o4-mini-deep-research url_citation
    # annotations (tests/data/native/SOURCES.md).
    path = (
        Path(__file__).parent.parent
        / "data/native/openai_deep_research/ruby_llm__o4-mini-deep-research.json"
    )
    answer = import_response(json.loads(path.read_text(encoding="utf-8")), answer_id="a")
    quoted = [
        x.own_quote() for c in answer.claim_list for x in c.citations if x.url and ":~:" in x.url
    ]
    assert (
        quoted
        == [
            (
                "Atmospheric pressure also affects the ... and freezes at higher temperatures",
                "provider",
            )
        ]
        * 2
    )
