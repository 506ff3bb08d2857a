"""The second round of formats: streams saved as events, Anthropic web fetch, Bedrock
Converse, Cohere v2, Gemini url_context, on the real recordings in tests/data/native/
(see its SOURCES.md); xAI's native API, of which no public recording exists, on
responses built with its SDK's field names. What needs the SDKs' types (Perplexity's
Agent API, Mistral, the Bedrock and Cohere shapes) is in
tests/integration/test_importers_sdk_types.py."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.claims.importers import (
    ImportedAnswer,
    ResponseImportError,
    detect_format,
    import_response,
)
from pytest_citecheck.claims.importers.files import claim_file_text, read_saved

NATIVE = Path(__file__).parent.parent / "data" / "native"


def load(name: str) -> Any:
    (path,) = NATIVE.glob(f"*/{name}.json")
    return json.loads(path.read_text(encoding="utf-8"))


def targets(answer: ImportedAnswer) -> dict[str, list[tuple[str, str | None]]]:
    """Claim text -> (URL or document, quote's first 40 characters) per citation."""
    return {
        c.claim.claim: [
            (x.url or x.document or "", (x.quote or None) and x.quote[:40])
            for x in c.claim.citations
        ]
        for c in answer.claims
    }


RUBY_QUOTE = "The Ruby programming language was create"

# Each real recording: its claims (text, and per citation the target and the quote's
# start) and how many sentences stay uncited.
EXPECTED: dict[str, tuple[dict[str, list[tuple[str, str | None]]], int]] = {
    "ruby_llm__char_location_text_document.stream": (
        {
            "The Ruby programming language was created by Yukihiro Matsumoto in 1993.": [
                ("facts.txt", RUBY_QUOTE)
            ]
        },
        0,
    ),
    "ruby_llm__web_search_haiku-4-5.stream": (
        {
            "The latest stable Ruby version is 4.0.6, which was released in July 2026.": [
                ("https://www.ruby-lang.org/en/downloads/", "The current stable version is 4.0.6."),
                (
                    "https://www.ruby-lang.org/en/news/2026/07/14/ruby-4-0-6-released/",
                    "Ruby 4.0.6 has been released.",
                ),
            ]
        },
        0,
    ),
    "chatlas__rag_search_result_location.stream": (
        {
            "Based on the available documentation, Flurbo streams responses via the "
            "flb.stream() generator, which yields FlurboChunk objects.": [
                ("kb://flurbo/streaming", "Flurbo streams responses via the flb.str")
            ]
        },
        2,
    ),
    "ruby_llm__claude-haiku-4-5_documentChar.stream": (
        {"Ruby was created by Yukihiro Matsumoto in 1993.": [("facts", RUBY_QUOTE)]},
        0,
    ),
    "ruby_llm__claude-haiku-4-5_documentChar_text": (
        {
            "The Ruby programming language was created by Yukihiro Matsumoto in 1993.": [
                ("facts", RUBY_QUOTE)
            ]
        },
        0,
    ),
    "ruby_llm__claude-haiku-4-5_documentPage_pdf_earlier": (
        {
            'The document is a simple PDF file, with the heading "Fun fun fun."': [
                ("sample", "Sample PDF\r\nThis is a simple PDF file.")
            ],
            "The majority of the content consists of Lorem ipsum placeholder text, beginning "
            'with "Lorem ipsum dolor sit amet, consectetuer adipiscing elit."': [
                ("sample", "Lorem ipsum dolor sit amet, consectetuer")
            ],
        },
        1,
    ),
    "ruby_llm__claude-haiku-4-5_searchResult_tool_results": (
        {
            "Ruby was created by Yukihiro Matsumoto in 1993.": [
                ("https://example.com/ruby-facts", RUBY_QUOTE)
            ]
        },
        0,
    ),
    "ruby_llm__nova-2-lite_web_citations.stream": (
        {
            "The latest stable Ruby version is 4.0.6.": [
                ("https://www.ruby-lang.org/en/downloads/", None),
                ("https://mac.install.guide/ruby/", None),
            ],
            "This version includes various improvements and bug fixes over the previous "
            "releases of the Ruby 4.0 series.": [("https://www.ruby-lang.org/en/downloads/", None)],
        },
        1,
    ),
    "ruby_llm__command-a-plus_documents": (
        {
            "According to the document, Ruby was created by Yukihiro Matsumoto in 1993.": [
                ("facts.txt", None)
            ],
            'The document states that "The Ruby programming language was created by '
            'Yukihiro Matsumoto in 1993."': [("facts.txt", None)],
        },
        0,
    ),
    "ruby_llm__command-a-plus_documents_earlier.stream": (
        {
            "Based on the document, Ruby was created by Yukihiro Matsumoto in 1993.": [
                ("facts.txt", None)
            ],
            'The document states: "The Ruby programming language was created by Yukihiro '
            'Matsumoto in 1993."': [("facts.txt", None)],
        },
        0,
    ),
    "vercel-ai__cohere-citations": (
        {
            "Automation of tasks": [("benefits.txt", None)],
            "Better decision-making": [("benefits.txt", None)],
            "Cost reduction": [("benefits.txt", None)],
        },
        1,
    ),
    "pydantic-ai__gemini-2_5-flash_url_context": (
        {
            "Pydantic AI is a Python agent framework designed to make it less painful to "
            "build production grade applications with Generative AI.": [
                ("https://ai.pydantic.dev", None)
            ]
        },
        0,
    ),
    "chatlas__gemini-3_5-flash_url_context.stream": (
        {
            "The first movie listed on that page is The Phantom Menace.": [
                ("https://rvest.tidyverse.org/articles/starwars.html", None)
            ]
        },
        0,
    ),
    "pydantic-ai__raw_annotations_turn1.stream": (
        {
            "The tallest mountain in Alberta is Mount Columbia (3,747 m / 12,294 ft).": [
                ("https://www.britannica.com/place/Mount-Columbia", None)
            ]
        },
        0,
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_recordings_give_the_right_sentences_urls_and_quotes(name: str) -> None:
    claims, uncited = EXPECTED[name]
    answer = import_response(load(name), answer_id="a")
    assert targets(answer) == claims
    assert len(answer.uncited) == uncited
    assert not answer.warnings


def test_gemini_interactions_annotations_cite_the_sentences_they_span() -> None:
    answer = import_response(load("vercel-ai__interactions-google-search"), answer_id="a")
    assert answer.format == "gemini-interactions"
    # 18 annotations, each over its own sentence or list item.
    assert len(answer.claims) == 18
    first = answer.claims[0]
    assert first.claim.claim == (
        "The platform supports various buying models and integrates with major advertising "
        "and ad-tech firms."
    )
    assert first.claim.citations[0].url is not None
    assert first.claim.citations[0].url.startswith(
        "https://vertexaisearch.cloud.google.com/grounding-api-redirect/"
    )
    assert [s.title for s in first.sources] == ["marketingprofs.com"]
    assert answer.uncited[0].text == (
        "Here's a look at some notable AI developments from the past week:"
    )


def test_provider_quotes_are_marked_as_the_providers() -> None:
    for name in (
        "ruby_llm__web_search_haiku-4-5.stream",  # Anthropic cited_text
        "ruby_llm__claude-haiku-4-5_documentChar_text",  # Bedrock sourceContent
    ):
        answer = import_response(load(name), answer_id="a")
        sources = [s for c in answer.claims for s in c.sources]
        assert sources and all(s.quote and s.quote_by == "provider" for s in sources)
    # Cohere's `text` is the answer's own span, no quote at all.
    cohere = import_response(load("vercel-ai__cohere-citations"), answer_id="a")
    assert all(s.quote is None and s.quote_by is None for c in cohere.claims for s in c.sources)


def test_a_nova_answer_cites_the_sentence_its_url_only_citations_follow() -> None:
    answer = import_response(load("ruby_llm__nova-2-lite_web_citations"), answer_id="a")
    (claim,) = answer.claims
    assert claim.claim.claim.startswith("This update brings continued improvements")
    assert "\u200b" not in claim.claim.claim  # Nova's zero-width space is not answer
    assert [c.url for c in claim.claim.citations] == [
        "https://www.ruby-lang.org/en/downloads/releases/",
        "https://www.ruby-lang.org/en/downloads/",
        "https://mac.install.guide/ruby/",
    ]


# -- streams ----------------------------------------------------------------------------------


def test_a_saved_stream_is_one_response_not_one_per_event(tmp_path: Path) -> None:
    path = tmp_path / "stream.json"
    path.write_text(
        (
            NATIVE
            / "openai_responses_stream/vercel-ai__openai-web-search-tool.1.chunks.stream.json"
        ).read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    (saved,) = read_saved(path)
    assert not isinstance(saved, ResponseImportError)
    # One event a line (.jsonl, as vercel's .chunks.txt fixtures store them) too.
    lines = tmp_path / "stream.jsonl"
    lines.write_text("\n".join(json.dumps(e) for e in json.loads(path.read_text())) + "\n")
    (one,) = read_saved(lines)
    assert not isinstance(one, ResponseImportError)
    assert import_response(one.data, answer_id="a").claim_list == (
        import_response(saved.data, answer_id="a").claim_list
    )


def test_a_list_of_finished_gemini_responses_is_several_answers_not_a_stream(
    tmp_path: Path,
) -> None:
    one = load("pydantic-ai__gemini-2_5-flash_url_context")
    path = tmp_path / "two.json"
    path.write_text(json.dumps([one, one]), encoding="utf-8")
    assert len(read_saved(path)) == 2
    assert detect_format(load("chatlas__gemini-3_5-flash_url_context.stream")) == "gemini"


def test_a_stream_saved_as_sse_text_imports_as_its_event_list() -> None:
    events = load("ruby_llm__web_search_haiku-4-5.stream")
    sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    assert detect_format(events) == "anthropic"
    assert import_response(sse, answer_id="a").claim_list == (
        import_response(events, answer_id="a").claim_list
    )


def test_an_openai_stream_cut_before_completed_is_rebuilt_from_its_finished_items() -> None:
    events = load("vercel-ai__openai-web-search-tool.1.chunks.stream")
    whole = import_response(events, answer_id="a")
    cut = [e for e in events if e["type"] != "response.completed"]
    assert import_response(cut, answer_id="a").claim_list == whole.claim_list
    assert len(whole.claims) == 12
    stopped = [e for e in cut if e["type"] != "response.output_item.done"]
    with pytest.raises(ResponseImportError, match="ends before the response is complete"):
        import_response(stopped, answer_id="a")


def test_a_stream_without_its_start_says_so_once() -> None:
    events = load("ruby_llm__web_search_haiku-4-5.stream")[1:]
    with pytest.raises(ResponseImportError, match="no message_start"):
        import_response(events, answer_id="a")


# -- Anthropic web fetch ------------------------------------------------------------------------


def test_web_fetch_answers_without_citations_warn_about_the_fetched_page() -> None:
    answer = import_response(load("pydantic-ai__web_fetch_tool"), answer_id="a")
    assert answer.claims == []
    (warning,) = answer.warnings
    assert warning.startswith("read as anthropic (auto-detected): no sentence is cited")
    assert "1 source(s)" in warning
    failed = import_response(load("vercel-ai__anthropic-web-fetch-tool.error"), answer_id="a")
    assert "a web fetch failed (unavailable)" in failed.notes[0]


def test_a_citation_of_a_fetched_page_cites_its_url_with_the_fetch_time() -> None:
    data = copy.deepcopy(load("pydantic-ai__web_fetch_tool"))
    (text,) = [b for b in data["content"] if b["type"] == "text"]
    quote = "Pydantic AI is a Python agent framework designed"
    text["citations"] = [
        {
            "type": "char_location",
            "cited_text": quote,
            "document_index": 0,
            "document_title": "Pydantic AI",
            "start_char_index": 0,
            "end_char_index": len(quote),
        }
    ]
    answer = import_response(data, answer_id="a")
    ((source,),) = [c.sources for c in answer.claims]
    assert (source.url, source.quote, source.quote_by) == (
        "https://ai.pydantic.dev",
        quote,
        "provider",
    )
    assert source.retrieved_at == "2025-11-14T23:34:21.151000+00:00"
    written = claim_file_text([(answer, "r.json")], "citecheck import r.json -o citecheck_r.yaml")
    assert "# the provider fetched this page at 2025-11-14T23:34:21.151000+00:00" in written


# -- Gemini url_context (image chunks: test_importers_sdk.py) -------------------------------------


def test_a_retrieved_context_text_is_a_provider_quote() -> None:
    data = copy.deepcopy(load("pydantic-ai__gemini-2_5-flash_url_context"))
    metadata = data["candidates"][0]["groundingMetadata"]
    (chunk,) = metadata["groundingChunks"]
    uri = chunk["web"]["uri"]
    passage = "Pydantic AI is a Python agent framework"
    metadata["groundingChunks"] = [{"retrievedContext": {"uri": uri, "text": passage}}]
    answer = import_response(data, answer_id="a")
    ((source,),) = [c.sources for c in answer.claims]
    assert (source.url, source.quote, source.quote_by) == (uri, passage, "provider")


def test_a_paywalled_url_is_a_note_on_the_answer_and_its_citation() -> None:
    data = copy.deepcopy(load("pydantic-ai__gemini-2_5-flash_url_context"))
    (meta,) = data["candidates"][0]["urlContextMetadata"]["urlMetadata"]
    meta["urlRetrievalStatus"] = "URL_RETRIEVAL_STATUS_PAYWALL"
    answer = import_response(data, answer_id="a")
    assert answer.notes == [f"the provider could not read {meta['retrievedUrl']}: PAYWALL"]
    ((source,),) = [c.sources for c in answer.claims]
    assert source.note == "provider retrieval status PAYWALL"
    written = claim_file_text([(answer, "r.json")], "citecheck import r.json -o citecheck_r.yaml")
    assert "        # note: provider retrieval status PAYWALL" in written


def test_a_paywalled_url_is_a_known_paywall_on_its_citation_and_in_the_claim_file() -> None:
    data = copy.deepcopy(load("pydantic-ai__gemini-2_5-flash_url_context"))
    (meta,) = data["candidates"][0]["urlContextMetadata"]["urlMetadata"]
    meta["urlRetrievalStatus"] = "URL_RETRIEVAL_STATUS_PAYWALL"
    answer = import_response(data, answer_id="a")
    ((citation,),) = [c.claim.citations for c in answer.claims]
    assert citation.paywall == "Gemini url_context: URL_RETRIEVAL_STATUS_PAYWALL"
    written = claim_file_text([(answer, "r.json")], "citecheck import r.json -o citecheck_r.yaml")
    assert '        paywall: "Gemini url_context: URL_RETRIEVAL_STATUS_PAYWALL"' in written


@pytest.mark.parametrize(
    "saved", sorted(p.name for p in (NATIVE / "gemini_url_context").glob("*.json"))
)
def test_the_real_url_context_recordings_name_no_paywall(saved: str) -> None:
    """As recorded (status SUCCESS), no citation is a known paywall: the rule reads the
    provider's status, nothing else in the response."""
    (response,) = read_saved(NATIVE / "gemini_url_context" / saved)
    assert not isinstance(response, Exception), response
    answer = import_response(response.data, answer_id="a")
    citations = [c for claim in answer.claims for c in claim.claim.citations]
    assert citations and all(c.paywall is None for c in citations)


@pytest.mark.parametrize("status", ["URL_RETRIEVAL_STATUS_ERROR", "URL_RETRIEVAL_STATUS_UNSAFE"])
def test_other_retrieval_failures_are_notes_not_paywalls(status: str) -> None:
    data = copy.deepcopy(load("pydantic-ai__gemini-2_5-flash_url_context"))
    (meta,) = data["candidates"][0]["urlContextMetadata"]["urlMetadata"]
    meta["urlRetrievalStatus"] = status
    answer = import_response(data, answer_id="a")
    ((citation,),) = [c.claim.citations for c in answer.claims]
    assert citation.paywall is None


# -- xAI native (gRPC SDK, saved with MessageToDict) --------------------------------------------


def test_xai_inline_citations_in_protobuf_json() -> None:
    text = "Water boils at 100 °C at sea level.[[1]](https://a.org/water) Ice is lighter."
    link = text.index("[[1]]")
    body = {
        "id": "x1",
        "outputs": [
            {
                "index": 0,
                "finishReason": "REASON_STOP",
                "message": {
                    "role": "ROLE_ASSISTANT",
                    "content": text,
                    "citations": [
                        {
                            "id": "1",
                            "startIndex": link,
                            "endIndex": text.index(")", link) + 1,
                            "webCitation": {"url": "https://a.org/water"},
                        },
                        {
                            "id": "2",
                            "startIndex": text.index("Ice"),
                            "endIndex": len(text),
                            "collectionsCitation": {
                                "fileId": "file_9",
                                "chunkContent": "ice is less dense than water",
                            },
                        },
                    ],
                },
            }
        ],
        "citations": ["https://a.org/water"],
    }
    assert detect_format(body) == "xai"
    answer = import_response(body, answer_id="a")
    assert targets(answer) == {
        "Water boils at 100 °C at sea level.": [("https://a.org/water", None)],
        "Ice is lighter.": [("file_9", "ice is less dense than water")],
    }
    (ice,) = [c for c in answer.claims if c.claim.claim == "Ice is lighter."]
    assert ice.sources[0].quote_by == "provider"


# -- a wrong format names the right one -------------------------------------------------------


def test_a_wrong_format_names_the_format_of_the_body() -> None:
    with pytest.raises(ResponseImportError) as info:
        import_response(load("vercel-ai__cohere-citations"), format="gemini", answer_id="a")
    assert info.value.problem.startswith("this body is cohere, not gemini")
    assert info.value.fix == "give the format as cohere, or auto to detect it"
