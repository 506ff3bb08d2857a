"""Hypothesis: any input gives an answer or one clear error of ours; markers never cite a
URL the response does not contain."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_citecheck.claims.importers import (
    FORMATS,
    ImportedAnswer,
    ResponseImportError,
    import_response,
)
from pytest_citecheck.claims.importers.draft import clean_url
from pytest_citecheck.claims.models import Claim

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=25,
)

URLS = [
    "https://a.org/water",
    "https://a.org/water?utm_source=openai",
    "https://b.org/x_(y)",
    "http://c.net/page#part",
    "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AB",
]
POOL = {clean_url(u) for u in URLS}
# No ':' or '/': random text cannot spell a URL of its own.
WORDS = st.text(alphabet="abcXYZ019 .,!?*_`[]()^#>|-–°\n\t", max_size=12)
MARKERS = st.sampled_from(["[1]", "[2]", "[5]", "[0]", "[^1]", "[^x]", "[12]", "[[1]]"])


def pieces(*extra: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(WORDS, MARKERS, *extra), max_size=14).map("".join)


links = st.builds(
    lambda t, u: f"[{t}]({u})",
    st.sampled_from(["a.org", "1", "", "the report"]),
    st.sampled_from(URLS),
)
definitions = st.builds(
    lambda n, u: f"\n[{n}]: {u}\n", st.sampled_from(["1", "2", "^1", "x"]), st.sampled_from(URLS)
)


def check(answer_or_error: ImportedAnswer | ResponseImportError) -> None:
    if isinstance(answer_or_error, ResponseImportError):
        assert answer_or_error.problem and answer_or_error.fix
        assert str(answer_or_error).startswith(answer_or_error.response)
        return
    answer = answer_or_error
    for imported in answer.claims:
        Claim.model_validate(imported.claim.model_dump())  # a valid claim
        for citation in imported.claim.citations:
            assert citation.url is None or citation.url in POOL, citation.url
    ids = [c.claim.id for c in answer.claims]
    assert len(ids) == len(set(ids))


def attempt(data: object, fmt: str = "auto") -> ImportedAnswer | ResponseImportError:
    try:
        return import_response(data, format=fmt, answer_id="p")
    except ResponseImportError as exc:
        return exc


@SETTINGS
@given(data=json_values, fmt=st.sampled_from(["auto", *FORMATS]))
def test_any_json_value_gives_an_answer_or_our_error(data: Any, fmt: str) -> None:
    result = attempt(data, fmt)
    if isinstance(result, ImportedAnswer):
        assert result.format in FORMATS


@SETTINGS
@given(text=pieces(links, definitions))
def test_markdown_markers_cite_only_urls_in_the_text(text: str) -> None:
    check(attempt(text, "markdown"))


@SETTINGS
@given(
    content=pieces(),
    citations=st.lists(st.sampled_from(URLS), max_size=3),
    think=st.booleans(),
)
def test_perplexity_markers_cite_only_listed_urls(
    content: str, citations: list[str], think: bool
) -> None:
    body = ("<think>[1] reasoning</think>" if think else "") + content
    data = {"model": "sonar", "choices": [{"message": {"content": body}}], "citations": citations}
    result = attempt(data)
    check(result)
    if isinstance(result, ImportedAnswer):
        assert "<think>" not in result.text


offsets = st.one_of(st.none(), st.integers(min_value=0, max_value=80))


@SETTINGS
@given(
    text=pieces(links),
    annotations=st.lists(
        st.fixed_dictionaries(
            {"type": st.just("url_citation"), "url": st.sampled_from(URLS)},
            optional={"start_index": offsets, "end_index": offsets},
        ),
        max_size=4,
    ),
    chat=st.booleans(),
)
def test_openai_annotations_cite_only_their_urls(
    text: str, annotations: list[dict[str, Any]], chat: bool
) -> None:
    if chat:
        wrapped = [{"type": "url_citation", "url_citation": a} for a in annotations]
        data: dict[str, Any] = {"choices": [{"message": {"content": text, "annotations": wrapped}}]}
    else:
        content = [{"type": "output_text", "text": text, "annotations": annotations}]
        data = {"output": [{"type": "message", "content": content}]}
    check(attempt(data))


@SETTINGS
@given(
    blocks=st.lists(
        st.one_of(
            st.fixed_dictionaries({"type": st.just("text"), "text": WORDS}),
            st.fixed_dictionaries(
                {
                    "type": st.just("text"),
                    "text": WORDS,
                    "citations": st.lists(
                        st.fixed_dictionaries(
                            {
                                "type": st.just("web_search_result_location"),
                                "url": st.sampled_from(URLS),
                                "cited_text": WORDS,
                            }
                        ),
                        max_size=2,
                    ),
                }
            ),
            st.just({"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}),
        ),
        max_size=8,
    ),
    stop=st.sampled_from(["end_turn", "pause_turn"]),
)
def test_anthropic_blocks_cite_only_their_urls(blocks: list[dict[str, Any]], stop: str) -> None:
    data = {"type": "message", "role": "assistant", "content": blocks, "stop_reason": stop}
    check(attempt(data))


@SETTINGS
@given(
    text=pieces(),
    supports=st.lists(
        st.fixed_dictionaries(
            {
                "segment": st.fixed_dictionaries(
                    {},
                    optional={
                        "startIndex": st.integers(0, 60),
                        "endIndex": st.integers(0, 60),
                        "text": WORDS,
                        "partIndex": st.integers(0, 2),
                    },
                ),
                "groundingChunkIndices": st.lists(st.integers(0, 4), max_size=3),
            }
        ),
        max_size=4,
    ),
)
def test_gemini_supports_cite_only_their_chunks(text: str, supports: list[dict[str, Any]]) -> None:
    chunks = [{"web": {"uri": u, "title": "t"}} for u in URLS]
    data = {
        "candidates": [
            {
                "content": {"parts": [{"text": text}]},
                "groundingMetadata": {"groundingChunks": chunks, "groundingSupports": supports},
            }
        ]
    }
    check(attempt(data))


ANSWER_SYNTAX = st.sampled_from(
    [
        "answers:",
        "\n",
        "  ",
        "- ",
        "id: ",
        "response: ",
        "format: ",
        "documents: ",
        "r.json",
        "r.md",
        "missing.json",
        "../r.json",
        "markdown",
        "gemini",
        "auto",
        "[",
        "]",
        "{",
        "}",
        ",",
        "x",
    ]
)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.lists(ANSWER_SYNTAX, max_size=40).map("".join))
@example(text="answers:\n- id: x\n  response: r.md\n- {id: y, response: r.json, format: auto}\n")
def test_answers_in_a_claim_file_give_claims_or_a_claim_file_error(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    from pytest_citecheck.claims.loader import ClaimFileError, load_claim_file

    folder = tmp_path_factory.mktemp("answers")
    (folder / "r.json").write_text(
        '{"choices": [{"message": {"content": "A.[1]"}}], "citations": ["https://a.org/water"]}'
    )
    (folder / "r.md").write_text("B is [true](https://b.org/x_(y)).\n")
    path = folder / "citecheck_p.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        claims = load_claim_file(path, roots=[folder]).claims
    except ClaimFileError as exc:
        assert all(p.problem and p.fix for p in exc.problems)
        return
    for claim in claims:
        assert all(c.url in POOL for c in claim.citations)
    if text.startswith("answers:\n- id: x\n  response: r.md"):
        assert [c.claim for c in claims] == ["B is true.", "A."]


# -- hostile text: every code point, lone surrogates and control characters included ----------

ANY_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(exclude_categories=()),  # every code point, surrogates included
        st.sampled_from(["\x00", "\x1b", "\ud800", "\udfff", "\u2028", "\r", "\n", "["]),
    ),
    max_size=40,
)
hostile_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | ANY_TEXT,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(ANY_TEXT, children, max_size=4)
    ),
    max_leaves=25,
)


def never_raises_but_ours(data: object, fmt: str) -> None:
    """An answer whose claim file can be written, or one of our errors: never another
    exception, and never the catch-all for a reader's own failure."""
    from pytest_citecheck.claims.importers.files import claim_file_text

    result = attempt(data, fmt)
    if isinstance(result, ResponseImportError):
        assert result.problem and result.fix
        assert "cannot be imported (" not in result.problem, result.problem
        assert result.__cause__ is None
        return
    claim_file_text([(result, "p")], "citecheck import p").encode("utf-8")


@SETTINGS
@given(data=hostile_json, fmt=st.sampled_from(["auto", *FORMATS]))
def test_any_json_with_any_text_is_an_answer_or_our_error(data: Any, fmt: str) -> None:
    never_raises_but_ours(data, fmt)


@SETTINGS
@given(text=ANY_TEXT, fmt=st.sampled_from(["auto", "markdown", *FORMATS]))
def test_any_text_is_an_answer_or_our_error(text: str, fmt: str) -> None:
    never_raises_but_ours(text, fmt)


@SETTINGS
@given(
    text=st.lists(st.one_of(WORDS, ANY_TEXT, links), max_size=6).map("".join),
    url=st.one_of(st.sampled_from(URLS), ANY_TEXT.map(lambda t: "https://a.org/" + t)),
    start=offsets,
    end=offsets,
    shape=st.sampled_from(["responses", "anthropic", "perplexity", "markdown"]),
)
def test_hostile_text_in_real_shapes_is_an_answer_or_our_error(
    text: str, url: str, start: int | None, end: int | None, shape: str
) -> None:
    data: object
    if shape == "responses":
        annotation = {"type": "url_citation", "url": url, "start_index": start, "end_index": end}
        content = [{"type": "output_text", "text": text, "annotations": [annotation]}]
        data = {"output": [{"type": "message", "content": content}]}
    elif shape == "anthropic":
        citation = {"type": "web_search_result_location", "url": url, "cited_text": text}
        blocks = [{"type": "text", "text": text, "citations": [citation]}]
        data = {"type": "message", "role": "assistant", "content": blocks}
    elif shape == "perplexity":
        data = {"model": "sonar", "choices": [{"message": {"content": text}}], "citations": [url]}
    else:
        data = f"{text} [1]\n\n[1]: {url}\n"
    never_raises_but_ours(data, "auto")
