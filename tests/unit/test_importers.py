"""Importers on the real recorded responses (tests/data/native/, see its SOURCES.md) and
on one small response per edge case of the native citation formats."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.claims.importers import (
    FORMATS,
    ImportedAnswer,
    ResponseImportError,
    detect_format,
    import_response,
)
from pytest_citecheck.claims.importers.answer import claim_id
from pytest_citecheck.claims.models import Claim

NATIVE = Path(__file__).parent.parent / "data" / "native"
FOLDER_FORMAT = {
    "openai_responses": "openai-responses",
    "openai_chat_completions": "openai-chat",
    "anthropic_messages": "anthropic",
    "perplexity_sonar": "perplexity",
    "gemini_grounding": "gemini",
    "anthropic_stream": "anthropic",
    "anthropic_web_fetch": "anthropic",
    "bedrock_converse": "bedrock-converse",
    "cohere_chat_v2": "cohere",
    "gemini_url_context": "gemini",
    "openai_responses_stream": "openai-responses",
    "openai_deep_research": "openai-responses",
    "deepseek_responses": "openai-responses",
    "gemini_interactions": "gemini-interactions",
}


def load(name: str) -> Any:
    (path,) = NATIVE.glob(f"*/{name}.json")
    return json.loads(path.read_text(encoding="utf-8"))


def imported(name: str, **kwargs: Any) -> ImportedAnswer:
    return import_response(load(name), answer_id="a", **kwargs)


def cited(answer: ImportedAnswer) -> dict[str, list[str]]:
    """Claim text -> its citation targets."""
    return {
        c.claim.claim: [x.url or x.document or "" for x in c.claim.citations] for c in answer.claims
    }


def only_claim(answer: ImportedAnswer) -> Claim:
    (claim,) = answer.claim_list
    return claim


# -- every recording: the right format, and nothing lost -----------------------------------

RECORDINGS = sorted(NATIVE.glob("*/*.json"))
# Recordings that cannot be claims, with the reason the error gives.
REFUSED = {
    "pydantic-ai__pause_turn_part1": "pause_turn",
    "pydantic-ai__file_search_retrievedContext": "File Search",
}


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_every_recording_is_detected_and_imports_or_says_why(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert detect_format(data) == FOLDER_FORMAT[path.parent.name]
    if path.stem in REFUSED:
        with pytest.raises(ResponseImportError, match=REFUSED[path.stem]):
            import_response(data)
        return
    answer = import_response(data)
    claim_ids = [c.claim.id for c in answer.claims]
    assert len(set(claim_ids)) == len(claim_ids)
    # Every claim is a sentence of the answer, and every cited sentence a claim.
    assert [s.claim_id for s in answer.sentences if s.claim_id] == claim_ids
    for sentence in answer.sentences:
        assert "](http" not in sentence.text and "**" not in sentence.text
        assert answer.text[sentence.start : sentence.end].strip()


# -- OpenAI Responses -----------------------------------------------------------------------


def test_openai_span_covers_the_marker_and_the_claim_is_the_sentence_before_it() -> None:
    answer = imported("ruby_llm__web_search_gpt-5_2")
    claim = only_claim(answer)
    assert claim.claim == "The latest stable Ruby (MRI/CRuby) version is Ruby 4.0.6."
    # utm_source=openai is not part of the page's address.
    assert [c.url for c in claim.citations] == ["https://www.ruby-lang.org/en/downloads/"]
    assert "ruby-lang.org](" not in answer.text


def test_openai_code_point_offsets_after_dashes_and_curly_quotes() -> None:
    data = load("vercel-ai__openai-web-search-tool.1_gpt-5-mini")
    answer = import_response(data, answer_id="a")
    annotations = data["output"][-1]["content"][0]["annotations"]
    assert len(annotations) == 10 and not answer.unattached
    # Every annotation became a citation of the sentence its marker follows.
    assert sum(len(c.sources) for c in answer.claims) == 10
    claims = cited(answer)
    assert claims[
        "The EU opened a formal antitrust probe into Meta’s WhatsApp AI policy, which "
        "regulators say could block rival AI assistants."
    ] == [
        "https://techstartups.com/2025/12/05/technology-news-today-the-latest-in-tech-ai-"
        "startup-news-december-5-2025/"
    ]


def test_openai_web_search_action_sources_are_not_citations() -> None:
    data = load("vercel-ai__openai-web-search-tool.1_gpt-5-mini")
    consulted = {
        s["url"]
        for item in data["output"]
        if item["type"] == "web_search_call"
        for s in item["action"].get("sources", [])
    }
    annotated = {
        a["url"].split("?utm_source")[0] for a in data["output"][-1]["content"][0]["annotations"]
    }
    only_consulted = consulted - annotated
    assert only_consulted  # the recording has pages it read but did not cite
    urls = {
        u
        for targets in cited(imported("vercel-ai__openai-web-search-tool.1_gpt-5-mini")).values()
        for u in targets
    }
    assert not urls & only_consulted


def test_azure_marker_is_a_bare_link_without_parentheses() -> None:
    answer = imported("vercel-ai__azure-web-search-preview-tool.1")
    claims = [c.claim for c in answer.claim_list]
    assert claims[0].endswith("investment pledge by Saudi Arabia in the U.S.")
    assert "The Straits Times" not in answer.text
    # Only the first of the three identical links is annotated; the other two print the
    # same cited URL and cite their items' sentences too.
    assert claims[1:] == [
        "The resolution now moves to the Senate for consideration.",
        "The aid is part of a 10-year bilateral security and defense agreement signed in 2024 "
        "and includes purchasing U.S. military equipment under NATO’s prioritization.",
    ]
    text = load("vercel-ai__azure-web-search-preview-tool.1")["output"][2]["content"][0]["text"]
    line = text.split("\n")[4]
    column = line.index("[The Straits Times]") + 1
    assert (
        answer.claims[1].sources[0].where == f"output[2].content[0].text, line 5, column {column}"
    )


def test_xai_numeric_link_markers_and_one_url_cited_twice() -> None:
    answer = imported("ruby_llm__xai_grok-4_3_web_search")
    claims = cited(answer)
    assert claims["The latest stable Ruby version is 4.0.6."] == [
        "https://www.ruby-lang.org/en/downloads/"
    ]
    assert claims[
        "It is available for download there, along with related releases like 3.4.10 "
        "(a maintenance branch)."
    ] == ["https://www.ruby-lang.org/en/downloads/"]
    assert "[[1]]" not in answer.text and "[[2]]" not in answer.text


def test_xai_annotations_without_offsets_are_placed_on_their_links() -> None:
    data = copy.deepcopy(load("ruby_llm__xai_grok-4_3_web_search"))
    message = next(item for item in data["output"] if item["type"] == "message")
    for annotation in message["content"][0]["annotations"]:
        del annotation["start_index"], annotation["end_index"]
    assert cited(import_response(data, answer_id="a")) == cited(
        imported("ruby_llm__xai_grok-4_3_web_search")
    )


def test_a_shifted_span_is_snapped_to_its_link() -> None:
    # RECORDER-ALTERED: the span starts 2 characters early and cuts the link short.
    answer = imported("pydantic-ai__temporal_durability_web_search")
    claim = only_claim(answer)
    assert claim.claim.startswith("Mexico's central bank cut its benchmark interest rate")
    assert claim.claim.endswith("signaling the end of its rate‐cut cycle.")
    assert "banxico.org.mx](" not in answer.text and "openai))" not in answer.text


def _responses(text: str, *annotations: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": text, "annotations": list(annotations)}
                ],
            }
        ],
    }


def _url_citation(text: str, marker: str, url: str) -> dict[str, Any]:
    start = text.index(marker)
    return {
        "type": "url_citation",
        "start_index": start,
        "end_index": start + len(marker),
        "url": url,
    }


def test_same_url_with_and_without_utm_is_one_citation() -> None:
    text = "Water boils at 100 °C at sea level. ([a.org](https://a.org/w?utm_source=openai)) ([a.org](https://a.org/w))"
    data = _responses(
        text,
        _url_citation(
            text,
            "([a.org](https://a.org/w?utm_source=openai))",
            "https://a.org/w?utm_source=openai",
        ),
        _url_citation(text, "([a.org](https://a.org/w))", "https://a.org/w"),
    )
    claim = only_claim(import_response(data))
    assert [c.url for c in claim.citations] == ["https://a.org/w"]


def test_a_trailing_list_of_annotated_links_is_not_claims() -> None:
    text = (
        "Ruby 4.0 was released in December. ([r.org](https://r.org/4))\n\n"
        "Recent developments:\n"
        "- [Ruby 4.0.1 released](https://r.org/401)\n"
        "- [Ruby 4.0.2 released](https://r.org/402)"
    )
    data = _responses(
        text,
        _url_citation(text, "([r.org](https://r.org/4))", "https://r.org/4"),
        _url_citation(text, "[Ruby 4.0.1 released](https://r.org/401)", "https://r.org/401"),
        _url_citation(text, "[Ruby 4.0.2 released](https://r.org/402)", "https://r.org/402"),
    )
    answer = import_response(data)
    assert cited(answer) == {"Ruby 4.0 was released in December.": ["https://r.org/4"]}
    assert [s.url for s in answer.unattached] == ["https://r.org/401", "https://r.org/402"]


def test_an_offset_outside_the_text_is_an_error_naming_the_annotation() -> None:
    data = _responses(
        "Short.",
        {"type": "url_citation", "start_index": 3, "end_index": 90, "url": "https://a.org"},
    )
    with pytest.raises(ResponseImportError) as info:
        import_response(data, name="answers/q1.json")
    assert info.value.where == "output[0].content[0].annotations[0].end_index"
    assert "outside the text (6 characters)" in info.value.problem
    assert str(info.value).startswith("answers/q1.json: output[0].content[0].annotations[0]")


def test_tool_calls_but_no_text_is_an_error() -> None:
    data = {
        "output": [{"type": "web_search_call", "status": "completed", "action": {"type": "search"}}]
    }
    with pytest.raises(
        ResponseImportError, match=r"tool calls \(web_search_call\) but no answer text"
    ):
        import_response(data)


def test_file_citation_is_a_document_citation() -> None:
    text = "The handbook says water boils at 100 degrees."
    data = _responses(
        text,
        {
            "type": "file_citation",
            "file_id": "file-1",
            "filename": "handbook.md",
            "index": len(text),
        },
    )
    claim = only_claim(import_response(data))
    assert [(c.document, c.url) for c in claim.citations] == [("handbook.md", None)]


# -- OpenAI Chat Completions ----------------------------------------------------------------


def test_chat_search_model_annotations() -> None:
    claims = cited(imported("ruby_llm__gpt-4o-mini-search-preview_2026-08"))
    dev = "https://dev.to/hsbt/is-your-ruby-version-still-supported-a-maintainers-guide-to-rubys-release-cycle-799"
    assert claims == {
        "As of August 19, 2026, the latest stable version of Ruby is 3.4.7, released on "
        "October 7, 2025.": ["https://www.ruby-lang.org/en/news/2025/10/07/ruby-3-4-7-released/"],
        "Ruby 3.4 is currently in its normal maintenance phase, which typically lasts about "
        "two years.": [dev],
        "The next stable version, Ruby 4.0, was released on December 25, 2025, and is also "
        "in its normal maintenance phase.": [dev],
    }


def test_empty_annotations_leave_every_sentence_uncited() -> None:
    answer = imported("pydantic-ai__search-preview_empty_annotations")
    assert answer.claims == [] and [s.text for s in answer.uncited] == ["May 14, 2025, 8:51:29 AM"]


def test_openrouter_zero_offsets_cite_no_sentence() -> None:
    answer = imported("pydantic-ai__openrouter_web_plugin_deepseek")
    assert answer.claims == []
    assert len(answer.unattached) == 5  # kept, not dropped


# -- Anthropic ------------------------------------------------------------------------------


def test_anthropic_sentence_split_over_blocks_is_rebuilt() -> None:
    answer = imported("ruby_llm__web_search_haiku-4-5")
    assert cited(answer) == {
        "The current stable version is Ruby 4.0.6, according to the official Ruby downloads "
        "page at ruby-lang.org.": ["https://www.ruby-lang.org/en/downloads/"],
        "Ruby 4.0.6 was released on July 14, 2026.": [
            "https://www.ruby-lang.org/en/news/2026/07/14/ruby-4-0-6-released/"
        ],
    }


def test_anthropic_cited_text_is_the_quote_not_the_claim() -> None:
    claim = imported("ruby_llm__web_search_haiku-4-5").claim_list[0]
    assert claim.citations[0].quote == "The current stable version is 4.0.6."
    assert claim.claim != claim.citations[0].quote


def test_anthropic_two_citations_of_one_url_are_one_citation() -> None:
    answer = imported("pydantic-ai__web_search_tool_turn2")
    (both,) = [
        c
        for c in answer.claims
        if c.claim.claim == "Scattered thunderstorms developing during the afternoon."
    ]
    assert len(both.sources) == 2 and {s.quote for s in both.sources} == {
        "TomorrowTue 09/16 High · 75 °F · 71% Precip. / 0.11 °in Scattered thunderstorms "
        "developing during the afternoon.",
        "Winds NNE at 10 to 15 mph. Chance of rain 70%.",
    }
    assert [c.url for c in both.claim.citations] == [
        "https://www.wunderground.com/weather/mx/mexico-city"
    ]
    assert both.claim.citations[0].quote == both.sources[0].quote


def test_anthropic_document_citations() -> None:
    text_doc = only_claim(imported("ruby_llm__char_location_text_document"))
    assert [(c.document, c.quote) for c in text_doc.citations] == [
        ("facts.txt", "The Ruby programming language was created by Yukihiro Matsumoto in 1993.")
    ]
    pdf = imported("ruby_llm__page_location_pdf")
    assert [c.citations[0].document for c in pdf.claim_list] == ["sample.pdf", "sample.pdf"]
    assert pdf.claim_list[0].citations[0].quote == "Sample PDF\r\nThis is a simple PDF file."
    mapped = imported("ruby_llm__char_location_text_document", documents=["sources/facts.txt"])
    assert only_claim(mapped).citations[0].document == "sources/facts.txt"


def test_anthropic_document_index_outside_the_documents_given() -> None:
    with pytest.raises(ResponseImportError) as info:
        imported("ruby_llm__char_location_text_document", documents=[])
    assert info.value.where == "content[0].citations[0].document_index"


def _message(*blocks: dict[str, Any], stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": list(blocks),
        "stop_reason": stop,
    }


def test_anthropic_search_result_location() -> None:
    data = _message(
        {
            "type": "text",
            "text": "The API allows 100 requests a minute.",
            "citations": [
                {
                    "type": "search_result_location",
                    "source": "https://docs.x.org/limits",
                    "title": "Limits",
                    "cited_text": "100 requests per minute",
                    "search_result_index": 0,
                    "start_block_index": 0,
                    "end_block_index": 1,
                },
                {
                    "type": "search_result_location",
                    "source": "kb/limits.md",
                    "title": "KB",
                    "cited_text": "",
                    "search_result_index": 1,
                    "start_block_index": 0,
                    "end_block_index": 1,
                },
            ],
        }
    )
    claim = only_claim(import_response(data))
    assert [(c.url, c.document, c.quote) for c in claim.citations] == [
        ("https://docs.x.org/limits", None, "100 requests per minute"),
        (None, "kb/limits.md", None),
    ]


def test_anthropic_pause_turn_is_not_an_answer() -> None:
    with pytest.raises(ResponseImportError) as info:
        imported("pydantic-ai__pause_turn_part1")
    assert info.value.where == "stop_reason" and "continue the turn" in info.value.fix


def test_anthropic_narration_between_tool_calls_is_not_a_claim() -> None:
    answer = imported("vercel-ai__anthropic-web-search-tool.1")
    texts = [s.text for s in answer.sentences]
    assert not any(t.startswith("Let me search") for t in texts)
    assert "Let me search" not in answer.text
    assert answer.notes == ["1 narration text run(s) between tool calls are not claims"]
    assert len(answer.claims) == 6


def test_anthropic_uncited_sentences_are_kept() -> None:
    answer = imported("pydantic-ai__web_search_tool_turn2")
    assert (
        "Like San Francisco, the air quality is poor, so those with respiratory sensitivities "
        "should take precautions." in [s.text for s in answer.uncited]
    )


# -- Perplexity -----------------------------------------------------------------------------


def test_perplexity_stacked_markers_after_the_punctuation() -> None:
    data = load("vercel-ai__perplexity-citations")
    answer = import_response(data, answer_id="a")
    first = answer.claim_list[0]
    assert first.claim.endswith("from authoritative U.S. data sources.") and "[" not in first.claim
    # [2][3][5][7], 1-based into `citations`.
    assert [c.url for c in first.citations] == [data["citations"][i - 1] for i in (2, 3, 5, 7)]


def test_perplexity_marker_glued_to_a_word() -> None:
    data = load("ruby_llm__sonar_basic_2025-07")
    content = data["choices"][0]["message"]["content"]
    assert "four[3]" in content
    claim = only_claim(import_response(data))
    assert "four" in claim.claim and "[3]" not in claim.claim
    assert [c.url for c in claim.citations] == [data["citations"][2]]


def test_perplexity_marker_past_the_list_is_an_error_with_its_place() -> None:
    data = {
        "model": "sonar",
        "choices": [{"message": {"content": "Fact one.[1]\nFact two.[3]"}}],
        "citations": ["https://a.org", "https://b.org"],
    }
    with pytest.raises(ResponseImportError) as info:
        import_response(data)
    assert info.value.where == "choices[0].message.content, line 2, column 10"
    assert "[3] points at no source" in info.value.problem and "lists 2" in info.value.problem


def test_perplexity_zero_marker_is_an_error() -> None:
    data = {"choices": [{"message": {"content": "Fact.[0]"}}], "citations": ["https://a.org"]}
    with pytest.raises(ResponseImportError, match=r"\[0\] points at no source"):
        import_response(data)


def test_perplexity_attachment_result_and_no_markers() -> None:
    data = load("ruby_llm__sonar-pro_docx_attachment")
    assert len(data["search_results"]) == 8 and len(data["citations"]) == 7
    answer = import_response(data)
    assert answer.claims == [] and len(answer.uncited) == 1
    assert len(answer.unattached) == 7  # the attachment (url "") is no source
    assert "no [n] marker" in answer.notes[0]


def test_perplexity_think_block_is_not_answer() -> None:
    data = load("ruby_llm__sonar-reasoning-pro_think")
    assert data["choices"][0]["message"]["content"].startswith("<think>")
    answer = import_response(data)
    assert "<think>" not in answer.text and "</think>" not in answer.text
    assert answer.sentences[0].text == "This is a elegant logical puzzle."


def test_perplexity_search_results_only_and_titles() -> None:
    data = {
        "model": "sonar",
        "choices": [{"message": {"content": "The bridge opened in 1937.[1]"}}],
        "search_results": [
            {
                "title": "Golden Gate",
                "url": "https://gg.org/history",
                "snippet": "Opened May 27, 1937",
            }
        ],
    }
    answer = import_response(data)
    assert cited(answer) == {"The bridge opened in 1937.": ["https://gg.org/history"]}
    assert answer.claims[0].sources[0].title == "Golden Gate"
    assert answer.claims[0].claim.citations[0].quote is None  # a snippet is not a quote


# -- Gemini ---------------------------------------------------------------------------------


def test_gemini_byte_offsets_after_a_degree_sign() -> None:
    answer = imported("pydantic-ai__gemini-2_5-pro_web_search_1")
    texts = [c.claim for c in answer.claim_list]
    assert texts[1] == "There is a very low chance of rain throughout the day."
    assert texts[3] == "Winds are predicted to come from the west at 10 to 15 mph."
    assert [s.text for s in answer.uncited][-1].startswith("Overall, today's weather")


def test_gemini_segment_without_start_index_and_real_url_context_url() -> None:
    data = load("ellmer__url_context_fetch")
    assert (
        "startIndex"
        not in data["candidates"][0]["groundingMetadata"]["groundingSupports"][0]["segment"]
    )
    claim = only_claim(import_response(data))
    assert claim.claim.startswith("The first movie listed on that page is The Phantom Menace")
    assert [c.url for c in claim.citations] == [
        "https://rvest.tidyverse.org/articles/starwars.html"
    ]


def test_gemini_mid_token_segment_cites_its_whole_sentence_with_every_chunk() -> None:
    answer = imported("ruby_llm__gemini-2_5-flash_citations")
    claim = only_claim(answer)
    assert claim.claim == "The latest stable version of Ruby is 4.0.6."
    assert len(claim.citations) == 3


def test_gemini_redirect_links_are_kept_as_cited() -> None:
    imported_claim = imported("ruby_llm__gemini-2_5-flash_citations").claims[0]
    for source in imported_claim.sources:
        assert source.url is not None
        assert source.url.startswith(
            "https://vertexaisearch.cloud.google.com/grounding-api-redirect/"
        )
        assert source.resolved_url is None and source.title is not None and "." in source.title


def test_gemini_drifting_offsets_fall_back_to_segment_text() -> None:
    # RECORDER-ALTERED: 5 of 9 byte offsets drift; segment.text still matches the answer.
    answer = imported("pydantic-ai__vertex_gemini-3-flash_normalised")
    texts = [c.claim for c in answer.claim_list]
    assert "Humidity: About 73% - 78%." in texts
    assert "For today, however, you can expect typical mild San Francisco summer weather." in texts
    assert len(texts) == 9


def test_gemini_file_search_chunk_is_an_error() -> None:
    with pytest.raises(ResponseImportError) as info:
        imported("pydantic-ai__file_search_retrievedContext")
    assert info.value.where == "candidates[0].groundingMetadata.groundingChunks[1].retrievedContext"


@pytest.mark.parametrize("metadata", [None, {}])
def test_gemini_without_grounding_metadata_has_no_citations(
    metadata: dict[str, Any] | None,
) -> None:
    data = copy.deepcopy(load("ellmer__google_search_no_grounding"))
    if metadata is not None:
        data["candidates"][0]["groundingMetadata"] = metadata
    answer = import_response(data)
    assert answer.claims == [] and [s.text for s in answer.uncited] == ["2014-05-21"]
    assert answer.notes == ["the response has no grounding metadata: no citations"]


def _gemini(
    parts: list[dict[str, Any]], supports: list[dict[str, Any]], chunks: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "groundingMetadata": {"groundingChunks": chunks, "groundingSupports": supports},
            }
        ]
    }


WEB = {
    "web": {
        "uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AB",
        "title": "x.org",
    }
}


def test_gemini_thought_parts_before_the_answer_part() -> None:
    text = "Lake Baikal is 1,642 m deep – the deepest lake."
    data = _gemini(
        [{"text": "I should search.", "thought": True}, {"text": text}],
        [
            {
                "segment": {"partIndex": 1, "endIndex": len(text.encode()), "text": text},
                "groundingChunkIndices": [0],
            }
        ],
        [WEB],
    )
    answer = import_response(data)
    assert cited(answer) == {text: [WEB["web"]["uri"]]}
    assert "I should search" not in answer.text


def test_gemini_offsets_outside_the_text_without_segment_text() -> None:
    data = _gemini(
        [{"text": "Short."}], [{"segment": {"endIndex": 99}, "groundingChunkIndices": [0]}], [WEB]
    )
    with pytest.raises(ResponseImportError) as info:
        import_response(data)
    assert (
        info.value.where == "candidates[0].groundingMetadata.groundingSupports[0].segment.endIndex"
    )
    assert "outside the text (6 bytes)" in info.value.problem


def test_gemini_chunk_index_past_the_chunks() -> None:
    data = _gemini(
        [{"text": "Short."}], [{"segment": {"endIndex": 6}, "groundingChunkIndices": [3]}], [WEB]
    )
    with pytest.raises(ResponseImportError, match="chunk 3 does not exist"):
        import_response(data)


def test_gemini_sdk_snake_case_dump() -> None:
    text = "Water boils at 100 °C at sea level."
    data = {
        "candidates": [
            {
                "content": {"parts": [{"text": text}]},
                "grounding_metadata": {
                    "grounding_chunks": [{"web": {"uri": "https://a.org/w", "title": "a.org"}}],
                    "grounding_supports": [
                        {
                            "segment": {"end_index": len(text.encode())},
                            "grounding_chunk_indices": [0],
                        }
                    ],
                },
            }
        ]
    }
    assert cited(import_response(data, format="gemini")) == {text: ["https://a.org/w"]}


# -- markdown -------------------------------------------------------------------------------


def test_markdown_inline_links_keep_their_text() -> None:
    answer = import_response(
        "Water boils at [100 °C](https://a.org/water) at sea level. It freezes at 0 °C.",
        answer_id="a",
    )
    assert cited(answer) == {"Water boils at 100 °C at sea level.": ["https://a.org/water"]}
    assert [s.text for s in answer.uncited] == ["It freezes at 0 °C."]


def test_markdown_numeric_and_footnote_markers_with_definitions() -> None:
    text = (
        "Water boils at 100 °C at sea level.[1] At altitude it boils lower.[^alt]\n"
        "Use `a[2]` in code.\n\n"
        '[1]: https://a.org/water "Water"\n'
        "[^alt]: Mountain cooking, https://b.org/altitude.\n"
    )
    answer = import_response(text, answer_id="a")
    assert cited(answer) == {
        "Water boils at 100 °C at sea level.": ["https://a.org/water"],
        "At altitude it boils lower.": ["https://b.org/altitude"],
    }
    assert [s.text for s in answer.uncited] == ["Use a[2] in code."]


def test_markdown_sources_list_under_a_heading() -> None:
    text = "Paris is the capital of France [1].\n\n**Sources:**\n1. Britannica – https://brit.org/paris\n"
    answer = import_response(text, answer_id="a")
    assert cited(answer) == {"Paris is the capital of France.": ["https://brit.org/paris"]}
    assert answer.uncited == []


def test_markdown_marker_without_a_definition_is_an_error() -> None:
    with pytest.raises(ResponseImportError) as info:
        import_response("One.\nTwo, as shown.[4]", answer_id="a", name="answer.md")
    assert info.value.where == "line 2, column 15"
    assert "[4] has no definition" in info.value.problem


def test_markdown_definition_without_a_url_is_an_error() -> None:
    with pytest.raises(ResponseImportError, match=r"definition of \[\^1\] holds no http"):
        import_response("Claim.[^1]\n\n[^1]: Smith, personal communication.\n")


def test_markdown_reference_links() -> None:
    text = "The [tower][eiffel] is 330 m tall.\n\n[eiffel]: https://e.org/tower\n"
    assert cited(import_response(text)) == {"The tower is 330 m tall.": ["https://e.org/tower"]}


# -- claim ids ------------------------------------------------------------------------------


def test_editing_one_sentence_keeps_the_other_ids() -> None:
    before = (
        "Water boils at 100 °C.[1] Ice melts at 0 °C.[1] Salt raises the boiling point.[1]\n\n"
        "[1]: https://a.org\n"
    )
    after = before.replace("Ice melts at 0 °C.", "Ice melts at zero degrees.")
    ids_before = [c.id for c in import_response(before, answer_id="water").claim_list]
    ids_after = [c.id for c in import_response(after, answer_id="water").claim_list]
    assert ids_before[0] == ids_after[0] and ids_before[2] == ids_after[2]
    assert ids_before[1] != ids_after[1]
    # Moving a sentence does not rename it either.
    moved = "Salt raises the boiling point.[1] Water boils at 100 °C.[1]\n\n[1]: https://a.org\n"
    assert {c.id for c in import_response(moved, answer_id="water").claim_list} == {
        ids_before[0],
        ids_before[2],
    }


def test_ids_ignore_case_and_spacing_and_follow_the_claim_file_rules() -> None:
    assert claim_id("q1", "Water  boils.") == claim_id("q1", "water boils.")
    assert claim_id("q1", "Water boils.") != claim_id("q2", "Water boils.")
    for answer_id in ("con", "a b/c.d", "x" * 300, "", "日本"):
        cid = claim_id(answer_id, "日本の首都は東京です。" * 20)
        Claim(id=cid, claim="x", citations=[])  # the model's id rules accept it
        assert len(cid) <= 100


def test_a_repeated_sentence_gets_distinct_ids() -> None:
    text = "It rains.[1]\n\nIt rains.[2]\n\n[1]: https://a.org\n[2]: https://b.org\n"
    ids = [c.id for c in import_response(text, answer_id="w").claim_list]
    assert len(ids) == 2 and len(set(ids)) == 2


def test_a_repeated_sentence_s_ids_stay_when_another_copy_is_inserted() -> None:
    """Ids come from content: a copy of a sentence is told apart by what it cites, so
    inserting one more copy renames none of the others (claim-files.md: editing one
    sentence renames only its own claim)."""
    refs = "".join(f"[{n}]: https://s{n}.org\n" for n in range(1, 8))

    def ids(cites: list[int]) -> list[str]:
        body = "\n\n".join(f"See the table.[{n}]" for n in cites)
        text = f"Water boils at 100 °C.[7]\n\n{body}\n\n{refs}"
        return [c.id for c in import_response(text, answer_id="w").claim_list]

    before = ids([1, 2, 3, 4, 5, 6])
    after = ids([1, 2, 7, 3, 4, 5, 6])  # a copy citing page 7 inserted third
    assert len(set(before)) == 7 and len(set(after)) == 8
    assert set(before) <= set(after), (before, after)
    # The sentence that is not repeated, and the first copy, keep the ids they always had.
    assert before[0] == claim_id("w", "Water boils at 100 °C.")
    assert before[1] == claim_id("w", "See the table.")
    # Copies citing the same page are one claim: numbered among themselves.
    same = ids([1, 2, 2, 2])
    assert len(set(same)) == 5 and same[3:] == [f"{same[2]}-2", f"{same[2]}-3"]


# -- the entry point ------------------------------------------------------------------------


def test_json_text_and_explicit_format() -> None:
    data = load("ruby_llm__web_search_gpt-5_2")
    from_text = import_response(json.dumps(data), answer_id="a")
    assert from_text.claim_list == imported("ruby_llm__web_search_gpt-5_2").claim_list
    with pytest.raises(ResponseImportError, match="unknown format"):
        import_response(data, format="openai")
    with pytest.raises(ResponseImportError, match="cannot tell which API"):
        import_response({"hello": 1})
    # Formats with no real recording yet are tested on SDK-built responses
    # (tests/integration/test_importers_sdk_types.py); Inspect messages on the real
    # recordings converted by Inspect's own provider code (test_inspect_import.py).
    assert set(FORMATS) == set(FOLDER_FORMAT.values()) | {
        "markdown",
        "perplexity-agent",
        "mistral",
        "xai",
        "inspect",
    }


def test_the_wrong_format_is_an_error_not_a_traceback() -> None:
    data = load("ruby_llm__web_search_gpt-5_2")
    for fmt in FORMATS:
        if fmt == "perplexity-agent":
            # The Agent API is shaped like OpenAI Responses: its reader reads the same
            # annotations the same way.
            got = import_response(data, format=fmt, answer_id="a")
            assert got.claim_list == imported("ruby_llm__web_search_gpt-5_2").claim_list
        elif fmt != "openai-responses":
            with pytest.raises(ResponseImportError, match="this body is openai-responses"):
                import_response(data, format=fmt)


def test_markdown_stacked_markers_wrapped_lines_and_comments() -> None:
    text = (
        "<!-- a note for editors, not answer -->\n"
        "Water boils at 100 degrees Celsius at sea level.[1][2] At higher altitudes it\n"
        "boils at a lower temperature.\n\n"
        "[1]: https://a.org/water\n"
        "[2]: https://b.org/report\n"
    )
    answer = import_response(text, answer_id="a")
    assert cited(answer) == {
        "Water boils at 100 degrees Celsius at sea level.": [
            "https://a.org/water",
            "https://b.org/report",
        ]
    }
    assert [s.text for s in answer.uncited] == [
        "At higher altitudes it boils at a lower temperature."
    ]


def test_openrouter_relaying_perplexity_numbers_index_the_annotations() -> None:
    data = copy.deepcopy(load("pydantic-ai__openrouter_web_plugin_deepseek"))
    message = data["choices"][0]["message"]
    urls = [a["url_citation"]["url"] for a in message["annotations"]]
    message["content"] = "Pydantic AI is an agent framework.[1][3] It is written in Python."
    answer = import_response(data)
    assert cited(answer) == {"Pydantic AI is an agent framework.": [urls[0], urls[2]]}
    assert len(answer.unattached) == 3
    message["content"] = "Pydantic AI is an agent framework.[9]"
    with pytest.raises(ResponseImportError, match=r"\[9\] points at no source"):
        import_response(data)


def test_gemini_segment_over_the_models_own_sources_list_cites_no_sentence() -> None:
    text = "Crater Lake is 594 m deep.\n\n### Sources\n* [nps.gov](https://www.nps.gov/crla)\n"
    list_start = text.index("* [")
    data = _gemini(
        [{"text": text}],
        [
            {
                "segment": {"endIndex": 26, "text": "Crater Lake is 594 m deep."},
                "groundingChunkIndices": [0],
            },
            {
                "segment": {
                    "startIndex": list_start,
                    "endIndex": len(text),
                    "text": text[list_start:],
                },
                "groundingChunkIndices": [1],
            },
        ],
        [WEB, {"web": {"uri": "https://www.nps.gov/crla", "title": "nps.gov"}}],
    )
    answer = import_response(data)
    assert cited(answer) == {"Crater Lake is 594 m deep.": [WEB["web"]["uri"]]}
    assert [s.url for s in answer.unattached] == ["https://www.nps.gov/crla"]


def test_anthropic_content_block_location_is_a_document_citation() -> None:
    data = _message(
        {
            "type": "text",
            "text": "The tower is 330 m tall.",
            "citations": [
                {
                    "type": "content_block_location",
                    "cited_text": "330 metres",
                    "document_index": 1,
                    "document_title": None,
                    "start_block_index": 2,
                    "end_block_index": 3,
                }
            ],
        }
    )
    claim = only_claim(import_response(data, documents=["a.md", "sources/tower.md"]))
    assert [(c.document, c.quote) for c in claim.citations] == [("sources/tower.md", "330 metres")]
    with pytest.raises(ResponseImportError, match="names document 1 but no title"):
        import_response(data)


def test_anthropic_continuation_starts_with_the_previous_calls_result() -> None:
    # After pause_turn, the next response opens with the result of a call made before.
    data = _message(
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_from_the_last_response",
            "content": [],
        },
        {
            "type": "text",
            "text": "Fog is common in San Francisco in summer.",
            "citations": [
                {
                    "type": "web_search_result_location",
                    "url": "https://sf.org/fog",
                    "cited_text": "fog",
                }
            ],
        },
    )
    assert cited(import_response(data)) == {
        "Fog is common in San Francisco in summer.": ["https://sf.org/fog"]
    }


def test_perplexity_stacked_markers_after_bold_text() -> None:
    data = {
        "model": "sonar",
        "choices": [{"message": {"content": "Winds reach **6 mph**.[1][2] Skies stay clear."}}],
        "citations": ["https://w.org/a", "https://w.org/b"],
    }
    answer = import_response(data)
    assert cited(answer) == {"Winds reach 6 mph.": ["https://w.org/a", "https://w.org/b"]}
    assert [s.text for s in answer.uncited] == ["Skies stay clear."]


def test_gemini_overlapping_segments_cite_each_sentence_they_cover() -> None:
    first = "The 4.0.x branch is current."
    second = "The 3.4.x branch gets security fixes."
    text = f"{first} {second}"
    start = len(first) - 12  # mid-sentence: "x branch..." would start mid-token
    data = _gemini(
        [{"text": text}],
        [
            {
                "segment": {"startIndex": start, "endIndex": len(first)},
                "groundingChunkIndices": [0],
            },
            {"segment": {"startIndex": start, "endIndex": len(text)}, "groundingChunkIndices": [1]},
        ],
        [WEB, {"web": {"uri": "https://r.org/branches", "title": "r.org"}}],
    )
    assert cited(import_response(data)) == {
        first: [WEB["web"]["uri"], "https://r.org/branches"],
        second: ["https://r.org/branches"],
    }


_SOURCES = "\n\n## Sources\n\n[1] A: https://example.com/a\n[2] B: https://example.com/b\n"


@pytest.mark.parametrize(
    ("answer", "first"),
    [
        (
            'The CEO said "We grew fast. Sales doubled." [1] The report confirms it [2].',
            'The CEO said "We grew fast. Sales doubled."',
        ),
        (
            "He wrote “It is done. We won.” [1] Then he left [2].",
            "He wrote “It is done. We won.”",
        ),
    ],
)
def test_a_quotation_of_two_sentences_is_one_claim(answer: str, first: str) -> None:
    imported = import_response(answer + _SOURCES, format="markdown", answer_id="q")

    assert imported.claims[0].claim.claim == first
    assert len(imported.claims) == 2


def test_an_inch_mark_opens_no_quotation() -> None:
    # 5'11" has one straight double quote and nothing closes it: the sentences after
    # it are cut as usual.
    answer = "He is 5'11\" tall. He plays [1]. He wins [2]."
    imported = import_response(answer + _SOURCES, format="markdown", answer_id="q")

    assert [c.claim.claim for c in imported.claims] == ["He plays.", "He wins."]
