"""Hostile saved responses: each is a clear error naming the response, the JSON path and
the fix (never a traceback, never a silently wrong claim), the others are still
imported (import time against the response's size: tests/integration/test_importers_linear.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.claims.importers import (
    ImportedAnswer,
    ResponseImportError,
    import_response,
)
from pytest_citecheck.claims.importers.checks import MAX_RESPONSE_CHARS
from pytest_citecheck.frontends.cli import main

TEXT = "Water boils at 100 C at sea level. ([a.org](https://a.org/water))"


def openai(text: str = TEXT, annotations: Any = None) -> dict[str, Any]:
    if annotations is None:
        start = text.index(" (")
        annotations = [
            {
                "type": "url_citation",
                "url": "https://a.org/water",
                "start_index": start,
                "end_index": len(text),
            }
        ]
    part = {"type": "output_text", "text": text, "annotations": annotations}
    return {"id": "resp_1", "output": [{"type": "message", "content": [part]}]}


def error(data: object, **kwargs: Any) -> ResponseImportError:
    with pytest.raises(ResponseImportError) as caught:
        import_response(data, answer_id="a", **kwargs)
    return caught.value


def cited(answer: ImportedAnswer) -> dict[str, list[str]]:
    return {c.claim.claim: [x.url or "" for x in c.claim.citations] for c in answer.claims}


# -- characters a claim file cannot hold ------------------------------------------------------


@pytest.mark.parametrize(
    ("char", "said"),
    [
        ("\u0000", "the control character U+0000"),
        ("\u001b", "the control character U+001B"),
        ("\ud800", "a lone surrogate U+D800"),
    ],
)
def test_a_bad_character_in_the_answer_names_its_json_path(char: str, said: str) -> None:
    exc = error(openai(TEXT.replace("boils", f"bo{char}ils")))
    assert exc.where == "output[0].content[0].text"
    assert said in exc.problem
    assert "save it again" in exc.fix or "save the response again" in exc.fix
    assert char not in str(exc)  # the message itself is printable


def test_a_bad_character_in_a_cited_url_names_the_annotation() -> None:
    data = openai()
    annotation = data["output"][0]["content"][0]["annotations"][0]
    annotation.update(url="https://a.org/wa\udffftter", start_index=None, end_index=None)
    exc = error(data)
    assert exc.where == "output[0].content[0].annotations[0].url"
    assert "lone surrogate U+DFFF" in exc.problem


def test_a_bad_character_in_a_field_no_reader_uses_does_not_cost_the_answer() -> None:
    data = openai()
    data["output"].insert(0, {"type": "web_search_call", "action": {"query": "boil\x08ing"}})
    assert cited(import_response(data, answer_id="a")) == {
        "Water boils at 100 C at sea level.": ["https://a.org/water"]
    }


def test_markdown_with_nul_or_esc_names_line_and_column() -> None:
    exc = error("Water boils.\nIt freezes\x1b[2J at 0 C [a](https://a.org/x).", format="markdown")
    assert exc.where == "line 2, column 11"
    assert "U+001B" in exc.problem
    assert error("A\x00b [a](https://a.org/x).").where == "line 1, column 2"


def test_a_response_over_the_size_cap_says_the_cap(tmp_path: Path) -> None:
    exc = error("x" * (MAX_RESPONSE_CHARS + 1))
    assert f"more than the {MAX_RESPONSE_CHARS:,}" in exc.problem
    big = tmp_path / "big.json"
    with big.open("w") as handle:
        handle.truncate(MAX_RESPONSE_CHARS + 1)
    from pytest_citecheck.claims.importers.files import read_saved

    (failure,) = read_saved(big)
    assert isinstance(failure, ResponseImportError)
    assert "bytes, more than the" in failure.problem


def test_cli_import_writes_the_good_responses_beside_hostile_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = openai()
    (tmp_path / "good.json").write_text(json.dumps(good))
    for name, char in (("nul", "\\u0000"), ("esc", "\\u001b"), ("surrogate", "\\ud800")):
        (tmp_path / f"{name}.json").write_text(json.dumps(good).replace("boils", f"bo{char}ils"))
    (tmp_path / "wrong-type.json").write_text(json.dumps(openai(annotations={})))
    (tmp_path / "esc.md").write_text("Cats\x1b[2J bark [a](https://a.org/cats).\n")
    out = tmp_path / "citecheck_out.yaml"
    code = main(["import", str(tmp_path), "-o", str(out)])
    printed = capsys.readouterr()
    assert code == 1
    assert "wrote" in printed.out and "1 claim(s) from 1 response(s); 5 could not" in printed.out
    assert "good-water-boils-at-100-c" in out.read_text()
    for line in (
        "nul.json: output[0].content[0].text: the text is not usable: it holds the control "
        "character U+0000",
        "esc.json: output[0].content[0].text: ",
        "surrogate.json: output[0].content[0].text: the text is not usable: it holds a lone "
        "surrogate U+D800",
        "wrong-type.json: output[0].content[0].annotations: expected a list, found a mapping",
        "esc.md: line 1, column 5: ",
    ):
        assert line in printed.err
    assert "Traceback" not in printed.err


# -- the three silently wrong imports ---------------------------------------------------------


def test_an_annotation_over_a_link_to_another_url_is_refused() -> None:
    text = "Water boils at 100 C [a](https://a.org/water). Ice melts at 0 C."
    start = text.index("[a]")
    annotations = [
        {
            "type": "url_citation",
            "url": "https://b.org/other",
            "start_index": start,
            "end_index": len(text) - 1,
        }
    ]
    exc = error(openai(text, annotations))
    assert exc.where == "output[0].content[0].annotations[0]"
    assert "cites https://b.org/other but the text at its offsets" in exc.problem
    assert "[a](https://a.org/water)" in exc.problem


def test_an_annotation_over_its_own_link_still_cites_the_sentence() -> None:
    assert cited(import_response(openai(), answer_id="a")) == {
        "Water boils at 100 C at sea level.": ["https://a.org/water"]
    }


@pytest.mark.parametrize("marker", ["[9]", "[0]", "[" + "9" * 40 + "]", "[" + "1" * 5000 + "]"])
def test_a_perplexity_marker_pointing_nowhere_is_refused_at_any_length(marker: str) -> None:
    data = {
        "model": "sonar",
        "choices": [{"message": {"content": f"Water boils.{marker} Ice melts.[1]"}}],
        "citations": ["https://a.org/x"],
    }
    exc = error(data)
    assert exc.where == "choices[0].message.content, line 1, column 13"
    assert "points at no source" in exc.problem
    assert len(exc.problem) < 200


def gemini(text: str, supports: list[dict[str, Any]]) -> dict[str, Any]:
    chunks = [{"web": {"uri": f"https://{h}.org/p", "title": h}} for h in ("a", "b")]
    metadata = {"groundingChunks": chunks, "groundingSupports": supports}
    return {"candidates": [{"content": {"parts": [{"text": text}]}, "groundingMetadata": metadata}]}


def test_gemini_segments_in_code_points_without_text_are_refused() -> None:
    first, second = "Über 90 % der Bäume sind krank.", "Der Wald wächst langsam."
    text = f"{first} {second}"
    by_chars = [
        {"segment": {"startIndex": 0, "endIndex": len(first)}, "groundingChunkIndices": [0]},
        {
            "segment": {"startIndex": len(first) + 1, "endIndex": len(text)},
            "groundingChunkIndices": [1],
        },
    ]
    exc = error(gemini(text, by_chars))
    assert exc.where == "candidates[0].groundingMetadata.groundingSupports[0].segment"
    assert "both as UTF-8 bytes" in exc.problem
    # The same segments in UTF-8 bytes, as Gemini gives them, cite one sentence each.
    size = len(first.encode())
    by_bytes = [
        {"segment": {"startIndex": 0, "endIndex": size}, "groundingChunkIndices": [0]},
        {
            "segment": {"startIndex": size + 1, "endIndex": len(text.encode())},
            "groundingChunkIndices": [1],
        },
    ]
    assert cited(import_response(gemini(text, by_bytes), answer_id="g")) == {
        first: ["https://a.org/p"],
        second: ["https://b.org/p"],
    }


# -- messages that were unclear or silent -----------------------------------------------------


@pytest.mark.parametrize("url", ["javascript:alert(1)", "data:text/html,x", "file:///etc/passwd"])
def test_an_inline_link_that_is_no_page_is_refused_like_its_reference_form(url: str) -> None:
    exc = error(f"Water boils [here]({url}).", format="markdown")
    assert exc.where == "line 1, column 13"
    assert f"is a {url.split(':')[0]}: link, not a page" in exc.problem
    reference = error(f"Water boils [1].\n\n[1]: {url}\n", format="markdown")
    assert "holds no http(s) URL" in reference.problem


def test_a_relative_link_stays_plain_text() -> None:
    answer = import_response("Water boils [here](/guide).", format="markdown", answer_id="m")
    assert answer.claims == [] and [s.text for s in answer.sentences] == ["Water boils here."]


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (openai(annotations={}), "output[0].content[0].annotations"),
        (
            {"choices": [{"message": {"content": "A.", "annotations": {}}}]},
            "choices[0].message.annotations",
        ),
    ],
)
def test_annotations_given_as_a_mapping_are_refused(data: dict[str, Any], where: str) -> None:
    exc = error(data)
    assert (exc.where, exc.problem) == (where, "expected a list, found a mapping")


@pytest.mark.parametrize(
    ("data", "field", "said"),
    [
        ({"output": None}, "output", "`output` is an empty value, where OpenAI Responses"),
        ({"content": "text"}, "content", "`content` is the value 'text', where Anthropic"),
    ],
)
def test_an_unknown_body_names_the_field_that_would_tell_the_api(
    data: dict[str, Any], field: str, said: str
) -> None:
    exc = error(data)
    assert exc.where == field
    assert said in exc.problem


def test_a_url_with_a_lone_surrogate_is_called_that() -> None:
    from pytest_citecheck.claims.models import url_problem

    assert url_problem("https://a.org/\udfff") == (
        "it holds a lone surrogate U+DFFF (half of a surrogate pair: the text was cut "
        "inside a character)"
    )
    assert url_problem("https://a.org/a b") == "it contains whitespace or control characters"
