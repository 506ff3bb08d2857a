"""``citecheck.verify_answer``: an LLM response (SDK object, dict or JSON text) imported
and verified inside an ordinary test, recorded into the test's cassette against the
loopback doubles, replayed offline; its claims join the session totals, the gate and
the answer figures."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted, quote_first_passage, verdict
from tests.plugin.test_recording import RANKER_CONFTEST, SECRETS

ARTICLE = (
    "# Boiling point\n\n"
    + "Water boils at 100 degrees Celsius at sea level. " * 3
    + "\n\n"
    + "At higher altitudes the boiling point is lower because air pressure drops. " * 4
)

# An Anthropic web-search answer: one cited sentence (with the provider's quote, which
# is on the page), one uncited sentence. Synthesized in the Messages API's shape.
ANTHROPIC = {
    "id": "msg_01synthesized",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 20},
    "content": [
        {
            "type": "text",
            "text": "Water boils at 100 degrees Celsius at sea level.",
            "citations": [
                {
                    "type": "web_search_result_location",
                    "url": "https://example.com/science/boiling",
                    "title": "Boiling point",
                    "cited_text": "Water boils at 100 degrees Celsius at sea level.",
                    "encrypted_index": "synthesized",
                }
            ],
        },
        {"type": "text", "text": " Kettles are usually electric."},
    ],
}

# A wrong answer whose provider quote the page does not have (the page changed since, say):
# not fabricated, the provider extracted it; the judge reads the page as it is now.
MADE_UP = json.loads(json.dumps(ANTHROPIC))
MADE_UP["content"][0]["text"] = "Water boils at 90 degrees Celsius at sea level."
MADE_UP["content"][0]["citations"][0]["cited_text"] = "Water boils at 90 degrees Celsius."

TEST_MODULE = f"""
import json

ANTHROPIC = json.loads({json.dumps(json.dumps(ANTHROPIC))})
MADE_UP = json.loads({json.dumps(json.dumps(MADE_UP))})


def test_sdk_object(citecheck):
    from anthropic.types import Message

    answer = citecheck.verify_answer(Message.model_validate(ANTHROPIC))
    assert (len(answer.sentences), answer.cited, answer.uncited) == (2, 1, 1)
    assert (answer.claims, answer.supported, answer.support) == (1, 1, 1.0)
    # ALCE: the uncited sentence counts 0 in recall; the one citation supports.
    assert (answer.citation_recall, answer.citation_precision) == (0.5, 1.0)
    [result] = answer.results
    assert result.label == "supported"
    assert answer.sentences[0].label == "supported"
    assert answer.sentences[1].label is None
    assert answer.result(answer.sentences[0].claim_id) is result
    assert answer.id == "test_sdk_object"
    print("PASSAGES", [p.index for p in result.verdicts[0].passages])


def test_json_text_with_a_provider_quote_the_page_lacks(citecheck):
    answer = citecheck.verify_answer(json.dumps(MADE_UP), format="anthropic", id="made-up")
    [result] = answer.results
    assert result.verdicts[0].label == "contradicted"
    assert result.verdicts[0].provider_quote_not_on_page
    assert answer.support == 0.0


def test_not_a_response(citecheck):
    citecheck.verify_answer({{"hello": "world"}})


def test_a_response_with_a_nul(citecheck):
    hostile = json.loads(json.dumps(ANTHROPIC))
    hostile["content"][1]["text"] = " Kettles\\u0000 are usually electric."
    citecheck.verify_answer(hostile)
"""


@pytest.fixture
def doubles() -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    tokens = {"normal": SECRETS["CRAWLBASE_TOKEN"], "javascript": SECRETS["CRAWLBASE_JS_TOKEN"]}
    with CrawlbaseDouble(tokens=tokens) as api, LLMDouble(api_key=SECRETS["OPENAI_API_KEY"]) as llm:
        api.add("https://example.com/science/boiling", Page(markdown=ARTICLE))
        llm.responder = _reads_the_page
        yield api, llm


def _reads_the_page(call: JudgeCall) -> Scripted:
    """The page says 100 degrees: a claim of 90 is contradicted by the same words."""
    if "90 degrees" in (call.claim or ""):
        return verdict("contradicted", "Water boils at 100 degrees Celsius at sea level.", 0.9)
    return quote_first_passage(call)


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_verify_answer_records_replays_and_joins_the_gate(
    pytester: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    pytester.makeconftest(RANKER_CONFTEST)
    pytester.makepyfile(test_app=TEST_MODULE)
    for name in (*SECRETS, "CITECHECK_CRAWLBASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with monkeypatch.context() as env:
        for name, value in SECRETS.items():
            env.setenv(name, value)
        env.setenv("CITECHECK_CRAWLBASE_URL", api.base_url)
        env.setenv("OPENAI_BASE_URL", llm.base_url("openai"))
        recorded = pytester.runpytest_subprocess(
            "--citecheck", "--citecheck-record=once", "-s", "--citecheck-report=report.json"
        )
    recorded.assert_outcomes(passed=2, failed=2)
    # Both judged: the found quote on its passage, the missing one on retrieval's.
    assert len(llm.calls) == 2
    recorded.stdout.fnmatch_lines(
        [
            "citecheck.verify_answer: test_not_a_response: cannot tell which API this "
            "response is from (a mapping)",
            "citecheck.verify_answer: test_a_response_with_a_nul: content[[]1].text: the text "
            "is not usable: it holds the control character U+0000 at character 9",
            "2 claims, 2 citations: citation precision 0.5000 (1/2)*",
            "provider_quote_not_on_page 1: the provider's quote is not on the page*",
            "2 answers, 4 sentences, 2 uncited: answer support 0.5000 (1/2 claims)",
            "citecheck gate FAILED: 1 citation contradicted*",
        ]
    )
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["answer_totals"]["answer_support"] == 0.5
    assert [a["id"] for a in report["answers"]] == ["test_sdk_object", "made-up"]
    assert {c["answer"] for c in report["claims"]} == {"test_sdk_object", "made-up"}
    cassettes = pytester.path / "cassettes" / "test_app"
    assert sorted(p.name for p in cassettes.iterdir()) == [
        "test_json_text_with_a_provider_quote_the_page_lacks.yaml",
        "test_sdk_object.yaml",
    ]
    made_up = (cassettes / "test_json_text_with_a_provider_quote_the_page_lacks.yaml").read_text()
    assert "chat/completions" in made_up  # judged, not called fabricated

    # Replay: no keys, the doubles stopped.
    urls = (api.base_url, llm.base_url("openai"))
    api.stop()
    llm.stop()
    with monkeypatch.context() as env:
        env.setenv("CITECHECK_CRAWLBASE_URL", urls[0])
        env.setenv("OPENAI_BASE_URL", urls[1])
        replayed = pytester.runpytest_subprocess(
            "--citecheck", "-s", "--citecheck-min-answer-support=0.75"
        )
    replayed.assert_outcomes(passed=2, failed=2)
    replayed.stdout.fnmatch_lines(
        [
            "*PASSAGES ?0?",
            "2 answers, 4 sentences, 2 uncited: answer support 0.5000 (1/2 claims)",
            "citecheck gate FAILED: answer support 0.5000 (1/2 claims of 2 answers) is below "
            "citecheck_min_answer_support 0.7500 (short by 0.2500)",
        ]
    )
