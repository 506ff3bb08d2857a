"""Whole conversations in: real recorded multi-turn transcripts (tests/data/conversations,
SOURCES.md there) import as one answer per assistant turn, one claim per cited sentence
of each turn with the right URLs; a cited URL that no tool of the conversation returned
is ``retrieved: False`` (``url_not_retrieved``), found with no request at all."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_citecheck.claims.importers.answer import ImportedAnswer, ResponseImportError
from pytest_citecheck.claims.importers.conversation import (
    import_conversation,
    is_conversation,
    turn_answer_id,
)
from pytest_citecheck.claims.importers.files import import_saved_answers, read_saved
from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation
from pytest_citecheck.claims.results import ClaimResult, JudgeReply, Verdict
from pytest_citecheck.engine.aggregate import answer_figures, conversation_figures, totals
from pytest_citecheck.engine.gate import GateSettings, claim_problems, evaluate
from pytest_citecheck.engine.judging import Judging
from pytest_citecheck.engine.pipeline import Verifier
from pytest_citecheck.stages.fetch import FetchResult

DATA = Path(__file__).parents[1] / "data" / "conversations"
ANTHROPIC = DATA / "ruby_llm__anthropic_haiku-4-5_web_search.messages.json"
ANTHROPIC_TOOLS = DATA / "ruby_llm__anthropic_haiku-4-5_tool_result_search_results.messages.json"
OPENAI = DATA / "ruby_llm__openai_gpt-5_2_web_search.responses.json"
XAI = DATA / "ruby_llm__xai_grok-4_3_web_search.responses.json"
CHAT = DATA / "ruby_llm__openai_gpt-4o-mini-search-preview.chat.json"
GEMINI = DATA / "ruby_llm__gemini-2_5-flash_function_calling.contents.json"

DOWNLOADS = "https://www.ruby-lang.org/en/downloads/"
RELEASED = "https://www.ruby-lang.org/en/news/2026/07/14/ruby-4-0-6-released/"
# A URL none of the transcripts' tools returned.
PLANTED = "https://www.ruby-lang.org/en/news/2026/07/15/ruby-4-0-7-released/"


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def cited(answer: ImportedAnswer) -> list[tuple[str, list[tuple[str, bool | None]]]]:
    """Each claim's text and its citations' (URL, retrieved)."""
    return [
        (c.claim.claim, [(x.target, x.retrieved) for x in c.claim.citations]) for c in answer.claims
    ]


@pytest.mark.parametrize(
    ("path", "fmt", "turns"),
    [
        (
            ANTHROPIC,
            "anthropic",
            [
                [
                    ("The current stable version is 4.0.6.", [(DOWNLOADS, True)]),
                    ("Ruby 4.0.6 was released on July 14, 2026.", [(RELEASED, True)]),
                ],
                [],
            ],
        ),
        (
            ANTHROPIC_TOOLS,
            "anthropic",
            [
                [
                    (
                        "The Ruby programming language was created by Yukihiro Matsumoto in 1993.",
                        [("https://example.com/ruby-facts", True)],
                    )
                ]
            ],
        ),
        (
            XAI,
            "openai-responses",
            [
                [
                    ("The latest stable Ruby version is 4.0.6.", [(DOWNLOADS, True)]),
                    (
                        "It is available for download there, along with related releases "
                        "like 3.4.10 (a maintenance branch).",
                        [(DOWNLOADS, True)],
                    ),
                    (
                        "GitHub's ruby/ruby releases page also lists 4.0.6 as the latest release.",
                        [("https://github.com/ruby/ruby/releases", True)],
                    ),
                ],
                [],
            ],
        ),
        (
            # Its web_search_call lists no sources: whether a URL was returned is unknown.
            OPENAI,
            "openai-responses",
            [
                [
                    (
                        "The latest stable Ruby (MRI/CRuby) version is Ruby 4.0.6.",
                        [(DOWNLOADS, None)],
                    )
                ],
                [],
            ],
        ),
        (GEMINI, "gemini", [[], []]),
    ],
    ids=["anthropic-web-search", "anthropic-tool-result", "xai", "openai", "gemini"],
)
def test_real_transcripts_import_one_claim_per_cited_sentence_per_turn(
    path: Path, fmt: str, turns: list[list[tuple[str, list[tuple[str, bool | None]]]]]
) -> None:
    answers = import_conversation(load(path), conversation_id="c", name=str(path))
    assert [a.id for a in answers] == [f"c-t{n}" for n in range(1, len(turns) + 1)]
    assert [a.turn for a in answers] == list(range(1, len(turns) + 1))
    assert {a.conversation for a in answers} == {"c"}
    assert {a.format for a in answers} == {fmt}
    assert [cited(a) for a in answers] == turns
    for answer in answers:
        assert all(c.claim.id.startswith(f"{answer.id}-") for c in answer.claims)
        assert answer.outline().turn == answer.turn


def test_the_uncited_sentences_of_each_turn_are_kept() -> None:
    xai = import_conversation(load(XAI), conversation_id="ruby")
    assert [len(a.sentences) - len(a.claims) for a in xai] == [4, 1]
    gemini = import_conversation(load(GEMINI), conversation_id="weather")
    assert [[s.text for s in a.sentences] for a in gemini] == [
        ["The weather in Berlin is 15°C, with wind at 10 km/h."],
        ["The weather in Paris is 15°C, with wind at 10 km/h."],
    ]


def test_a_search_that_hides_its_results_says_the_check_was_not_made() -> None:
    first, _ = import_conversation(load(OPENAI), conversation_id="ruby")
    assert any("web_search_call lists no sources" in note for note in first.notes)
    chat = import_conversation(load(CHAT), conversation_id="chat")
    assert len(chat[0].claims) == 3
    assert {x.retrieved for c in chat[0].claims for x in c.claim.citations} == {None}
    assert any("searched inside the API" in note for note in chat[0].notes)


def planted_anthropic() -> list[Any]:
    """The real Anthropic transcript with its second citation moved to a URL that no
    search result of the conversation lists."""
    data = load(ANTHROPIC)
    for message in data:
        for block in message["content"] if isinstance(message["content"], list) else ():
            for citation in block.get("citations") or ():
                if citation["url"] == RELEASED:
                    citation["url"] = PLANTED
    return data


def test_a_planted_citation_no_tool_returned_is_not_retrieved() -> None:
    first, _ = import_conversation(planted_anthropic(), conversation_id="ruby")
    assert cited(first) == [
        ("The current stable version is 4.0.6.", [(DOWNLOADS, True)]),
        ("Ruby 4.0.6 was released on July 14, 2026.", [(PLANTED, False)]),
    ]
    assert any("url_not_retrieved" in note and PLANTED in note for note in first.notes)


def test_a_planted_link_in_a_real_responses_transcript_is_not_retrieved() -> None:
    github = "https://github.com/ruby/ruby/releases"
    planted = "https://ruby-news.example.org/4-0-7/x"
    assert len(planted) == len(github)  # the annotation offsets stay right
    data = load(XAI)
    # Only the answer's link and annotation: the search still lists the GitHub page.
    (message,) = [item for item in data if item.get("role") == "assistant"][:1]
    message["content"] = json.loads(json.dumps(message["content"]).replace(github, planted))
    first, _ = import_conversation(data, conversation_id="ruby")
    assert [x for _, xs in cited(first) for x in xs] == [
        (DOWNLOADS, True),
        (DOWNLOADS, True),
        (planted, False),
    ]


def test_urls_count_as_returned_from_tool_messages_and_what_the_user_wrote() -> None:
    # A Chat Completions agent: the answer cites with links it wrote (no annotations).
    conversation = [
        {"role": "user", "content": "Compare https://example.org/given with the news."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"q": "news"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": json.dumps([{"url": "https://example.org/found", "title": "Found"}]),
        },
        {
            "role": "assistant",
            "content": (
                "The page says one thing ([given](https://example.org/given)). "
                "The news says another ([found](https://example.org/found)). "
                "A third source agrees ([other](https://example.org/invented))."
            ),
        },
    ]
    (answer,) = import_conversation(conversation, conversation_id="agent")
    assert answer.format == "markdown"
    assert [x for _, xs in cited(answer) for x in xs] == [
        ("https://example.org/given", True),
        ("https://example.org/found", True),
        ("https://example.org/invented", False),
    ]


def test_a_later_tool_result_does_not_count_for_an_earlier_turn() -> None:
    turn = [
        {"role": "user", "content": "Where?"},
        {"role": "assistant", "content": "Here ([a](https://example.org/a))."},
        {"role": "user", "content": "And now?"},
        {"role": "tool", "tool_call_id": "x", "content": "https://example.org/a"},
        {"role": "assistant", "content": "There ([a](https://example.org/a))."},
    ]
    first, second = import_conversation(turn, conversation_id="c")
    assert cited(first)[0][1] == [("https://example.org/a", False)]
    assert cited(second)[0][1] == [("https://example.org/a", True)]


def test_claim_ids_stay_when_a_turn_is_added_and_keep_the_turn_with_a_long_id() -> None:
    data = load(ANTHROPIC)
    before = import_conversation(data, conversation_id="ruby")
    longer = [
        *copy.deepcopy(data),
        {"role": "user", "content": [{"type": "text", "text": "And the one before?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Ruby 4.0.4."}]},
    ]
    after = import_conversation(longer, conversation_id="ruby")
    assert [c.claim.id for c in after[0].claims] == [c.claim.id for c in before[0].claims]
    assert len(after) == 3
    long_id = "a-conversation-id-well-over-forty-characters-long"
    turns = import_conversation(longer, conversation_id=long_id)
    assert len({a.id for a in turns}) == 3
    assert [a.id[-3:] for a in turns] == ["-t1", "-t2", "-t3"]
    assert all(c.claim.id.startswith(turns[0].id + "-") for c in turns[0].claims)


def test_a_saved_conversation_is_one_file_and_a_list_of_responses_is_not_one(
    tmp_path: Path,
) -> None:
    saved = read_saved(ANTHROPIC)
    assert len(saved) == 1 and not isinstance(saved[0], ResponseImportError)
    answers = import_saved_answers(saved[0])
    # The answer ids are the file's stem, cut so that claim ids keep the turn.
    assert [a.id for a in answers] == [turn_answer_id(ANTHROPIC.stem, n) for n in (1, 2)]
    assert [a.id for a in answers] == [
        "ruby_llm__anthropic_haiku-4-5_web_sea-t1",
        "ruby_llm__anthropic_haiku-4-5_web_sea-t2",
    ]
    assert {a.conversation for a in answers} == {ANTHROPIC.stem}
    response = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "Hi."}],
    }
    assert not is_conversation([response, response])
    (tmp_path / "two.json").write_text(json.dumps([response, response]))
    assert len(read_saved(tmp_path / "two.json")) == 2
    assert is_conversation(ANTHROPIC.read_text(encoding="utf-8"))
    assert is_conversation({"model": "gpt-5.2", "input": load(OPENAI)})


def test_a_conversation_with_no_answer_is_an_error_naming_it() -> None:
    with pytest.raises(ResponseImportError, match="no assistant answer"):
        import_conversation(
            [{"role": "user", "content": "Hello?"}, {"role": "assistant", "content": None}],
            name="empty.json",
        )


# -- the check makes no request ----------------------------------------------------------------


class CountingPage:
    """A fetcher that counts its requests; every page says what the claim says."""

    def __init__(self) -> None:
        self.requests: list[str] = []

    def fetch(self, url: str) -> FetchResult:
        self.requests.append(url)
        text = "Ruby 4.0.6 was released on July 14, 2026, by the Ruby core team."
        return FetchResult(url=url, text=text, final_url=url, original_status=200)


class First:
    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        return [(i, 1.0) for i in range(min(k, len(passages)))]


class Supports:
    name = "scripted:test"

    def judge(self, claim: str, passages: Sequence[str]) -> JudgeReply:
        quote = "Ruby 4.0.6 was released on July 14, 2026"
        return JudgeReply(label="supported", quote=quote, confidence=0.95)


def test_the_flag_costs_no_request_and_the_page_is_still_verified() -> None:
    first, _ = import_conversation(planted_anthropic(), conversation_id="ruby")
    claim = first.claims[1].claim
    assert [c.retrieved for c in claim.citations] == [False]
    counted = CountingPage()
    verifier = Verifier(fetcher=counted, ranker=First(), judging=Judging(judge=Supports()))
    flagged = verifier.verify_claim(claim)
    fetched_flagged = list(counted.requests)
    counted.requests.clear()
    plain = claim.model_copy(update={"citations": [Citation(url=PLANTED)]})
    unflagged = verifier.verify_claim(plain)
    # The page is fetched and judged as for any citation, and nothing more is asked.
    assert fetched_flagged == counted.requests == [PLANTED]
    (verdict,) = flagged.verdicts
    assert verdict.label is Label.SUPPORTED
    assert verdict.url_not_retrieved and verdict.review
    assert not unflagged.verdicts[0].url_not_retrieved


def result(flagged: bool) -> ClaimResult:
    verdict = Verdict(url=PLANTED, label=Label.SUPPORTED, url_not_retrieved=flagged, review=flagged)
    return ClaimResult(id="c", claim="x", label=Label.SUPPORTED, verdicts=[verdict])


def test_a_setting_makes_it_a_gate_failure() -> None:
    flagged = result(True)
    assert claim_problems(flagged, GateSettings()) == []
    strict = GateSettings(fail_not_retrieved=True)
    assert claim_problems(result(False), strict) == []
    (problem,) = claim_problems(flagged, strict)
    assert Reason.URL_NOT_RETRIEVED in problem
    t = totals([flagged, result(False)])
    assert t.url_not_retrieved == 1
    assert evaluate(t, GateSettings()) == []
    assert any(Reason.URL_NOT_RETRIEVED in f for f in evaluate(t, strict))


def test_figures_per_turn_and_per_conversation() -> None:
    answers = import_conversation(load(XAI), conversation_id="ruby")
    results = []
    for answer in answers:
        outline = answer.outline(origin="f.yaml")
        for n, imported in enumerate(answer.claims):
            label = Label.SUPPORTED if n else Label.NOT_FOUND
            verdict = Verdict(url=imported.claim.citations[0].target, label=label)
            results.append(
                ClaimResult(
                    id=imported.claim.id,
                    claim=imported.claim.claim,
                    label=label,
                    verdicts=[verdict],
                    answer=outline,
                )
            )
    per_turn = answer_figures(results)
    assert [(a.id, a.turn, a.claims, a.supported) for a in per_turn] == [("ruby-t1", 1, 3, 2)]
    (conversation,) = conversation_figures(per_turn)
    assert (conversation.id, conversation.claims, conversation.supported) == ("ruby", 3, 2)
    # Turn 2's sentence ("OK") ran no claim, so only turn 1's outline is in the results:
    # the conversation's ALCE recall is over the sentences of the turns that ran.
    assert conversation.citation_recall == pytest.approx(2 / 7)
    assert conversation.citation_precision == pytest.approx(2 / 3)


def test_a_whole_conversation_given_as_one_response_says_how_to_import_it() -> None:
    from pytest_citecheck.claims.importers import import_response

    with pytest.raises(ResponseImportError, match="whole conversation") as caught:
        import_response(load(ANTHROPIC), name="chat.json")
    assert "import_conversation" in caught.value.fix


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
_ITEM = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "model", "system"])},
    optional={
        "content": _JSON,
        "parts": _JSON,
        "type": st.sampled_from(["message", "web_search_call", "function_call_output"]),
        "annotations": _JSON,
        "tool_calls": _JSON,
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ITEM, min_size=1, max_size=6))
def test_any_list_of_messages_imports_or_fails_as_an_import_error(items: list[Any]) -> None:
    try:
        import_conversation(items, name="x.json")
    except ResponseImportError as exc:
        # A problem named where it is, never an internal failure caught as a last resort.
        assert "cannot be imported" not in exc.problem, exc
