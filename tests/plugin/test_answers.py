"""Answers in: an imported claim file runs as is, and a claim file's `answers:` are
expanded into claims when it is collected (bad entries fail at file:line)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_citecheck.frontends.cli import main
from tests.plugin.fakes import CONFTEST

# Two responses whose cited sentences the fake judge knows (tests/plugin/fakes.py).
ANTHROPIC = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "stop_reason": "end_turn",
    "content": [
        {
            "type": "text",
            "text": "Water boils at 100 C.",
            "citations": [
                {
                    "type": "web_search_result_location",
                    "url": "https://example.com/boiling",
                    "title": "Boiling",
                    "cited_text": "Water boils at 100 degrees Celsius at sea level.",
                    "encrypted_index": "x",
                }
            ],
        },
        {"type": "text", "text": " Nobody cited this sentence."},
    ],
}
# One claim written by hand, beside saved answers.
BY_HAND = (
    "claims:\n"
    "  - id: by-hand\n"
    "    claim: Water boils at 100 C.\n"
    "    citations: [https://example.com/boiling]\n"
)
MARKDOWN = "Cats bark.[1]\n\n[1]: https://example.com/other\n"


@pytest.fixture
def responses(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    (pytester.path / "responses").mkdir()
    (pytester.path / "responses" / "water.json").write_text(json.dumps(ANTHROPIC))
    (pytester.path / "responses" / "cats.md").write_text(MARKDOWN)
    return pytester


def _ids(result: pytest.RunResult) -> list[str]:
    lines = [line for line in result.stdout.lines if ".yaml::" in line]
    return sorted({line.split("::")[1].split()[0] for line in lines})


def test_an_imported_claim_file_is_collected_and_runs_as_is(
    responses: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    cwd = os.getcwd()
    os.chdir(responses.path)
    try:
        code = main(["import", "responses", "-o", "citecheck_answers.yaml"])
    finally:
        os.chdir(cwd)
    capsys.readouterr()
    assert code == 0
    result = responses.runpytest("--citecheck", "--citecheck-record=once", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "citecheck_answers.yaml::cats-cats-bark-* PASSED*",
            "citecheck_answers.yaml::water-water-boils-at-100-c-* PASSED*",
        ]
    )


def test_an_imported_file_keeps_its_answers_figures_as_the_saved_answers_give_them(
    responses: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same two answers, as saved responses (`answers:`) and as a written claim file.
    responses.makefile(
        ".yaml",
        citecheck_saved=(
            "answers:\n"
            "  - {id: water, response: responses/water.json}\n"
            "  - {id: cats, response: responses/cats.md}\n"
        ),
    )
    saved = responses.runpytest(
        "--citecheck", "--citecheck-record=once", "--citecheck-report=saved.json"
    )
    (responses.path / "citecheck_saved.yaml").unlink()
    cwd = os.getcwd()
    os.chdir(responses.path)
    try:
        assert main(["import", "responses", "-o", "citecheck_answers.yaml"]) == 0
    finally:
        os.chdir(cwd)
    capsys.readouterr()
    written = (responses.path / "citecheck_answers.yaml").read_text(encoding="utf-8")
    assert "outlines:" in written and '- text: "Nobody cited this sentence."' in written
    imported = responses.runpytest(
        "--citecheck", "--citecheck-record=once", "--citecheck-report=imported.json"
    )
    line = "2 answers, 3 sentences, 1 uncited: answer support 0.5000 (1/2 claims)"
    saved.stdout.fnmatch_lines([line])
    imported.stdout.fnmatch_lines([line])

    def answers(name: str) -> list[dict[str, object]]:
        data = json.loads((responses.path / name).read_text(encoding="utf-8"))
        found = [{k: v for k, v in a.items() if k != "file"} for a in data["answers"]]
        return sorted(found, key=lambda a: str(a["id"]))

    assert answers("imported.json") == answers("saved.json")
    water = answers("imported.json")[1]
    assert water["id"] == "water" and water["uncited"] == 1
    assert [s["label"] for s in water["text"]] == ["supported", None]  # type: ignore[attr-defined]


def test_a_written_outline_that_names_a_missing_claim_fails_at_its_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(
        ".yaml",
        citecheck_a=(
            "claims:\n"
            "  - id: water\n"
            "    claim: Water boils at 100 C.\n"
            "    citations: [{url: 'https://example.com/boiling'}]\n"
            "outlines:\n"
            "  - answer: a1\n"
            "    format: markdown\n"
            "    sentences:\n"
            "      - claim: water\n"
            "      - claim: wtaer\n"
            "      - {txt: Kettles whistle.}\n"
        ),
    )
    result = pytester.runpytest("--citecheck")
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*citecheck_a.yaml:10*the outline names claim 'wtaer', which is not in `claims:`*",
            "*citecheck_a.yaml:11*unknown key 'txt' in a sentence of an outline*",
        ],
        consecutive=False,
    )


def test_answers_in_a_claim_file_become_claims(
    responses: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    responses.makefile(
        ".yaml",
        citecheck_saved=(
            "answers:\n"
            "  - id: water\n"
            "    response: responses/water.json\n"
            "  - {id: cats, response: responses/cats.md, format: markdown}\n"
        ),
    )
    result = responses.runpytest("--citecheck", "--citecheck-record=once", "-v")
    result.assert_outcomes(passed=2)
    saved = _ids(result)
    # The same ids `citecheck import` writes for the same answers: cassettes carry over.
    cwd = os.getcwd()
    os.chdir(responses.path)
    try:
        main(["import", "responses", "-o", "imported/citecheck_imported.yaml"])
    finally:
        os.chdir(cwd)
    capsys.readouterr()
    (responses.path / "citecheck_saved.yaml").unlink()
    imported = _ids(responses.runpytest("--citecheck", "--co", "-q"))
    assert saved == imported and len(saved) == 2


def test_answers_and_claims_side_by_side(responses: pytest.Pytester) -> None:
    responses.makefile(
        ".yaml",
        citecheck_mixed=BY_HAND + "answers:\n  - {id: cats, response: responses/cats.md}\n",
    )
    result = responses.runpytest("--citecheck", "--co", "-q")
    result.stdout.fnmatch_lines(
        ["citecheck_mixed.yaml::by-hand", "citecheck_mixed.yaml::cats-cats-bark-*"]
    )


def test_bad_answers_fail_at_file_and_line(responses: pytest.Pytester) -> None:
    (responses.path / "responses" / "bad.json").write_text(
        json.dumps(
            {"model": "sonar", "choices": [{"message": {"content": "X.[4]"}}], "citations": []}
        )
    )
    responses.makefile(
        ".yaml",
        citecheck_bad=(
            "answers:\n"
            "  - id: gone\n"
            "    response: responses/missing.json\n"
            "  - id: typo\n"
            "    response: responses/cats.md\n"
            "    format: markdwn\n"
            "  - id: broken\n"
            "    response: responses/bad.json\n"
            "  - id: extra\n"
            "    response: responses/cats.md\n"
            "    colour: red\n"
            "  - just a string\n"
        ),
    )
    result = responses.runpytest("--citecheck", "--citecheck-record=once")
    # Each bad answer fails alone, as its own item.
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(
        [
            "*citecheck_bad.yaml:3: response 'responses/missing.json' not found*",
            "*citecheck_bad.yaml:6: format 'markdwn' is not a response format; "
            "did you mean 'markdown'?",
            "*citecheck_bad.yaml:8: responses/bad.json at choices[[]0].message.content, line 1, "
            "column 3: the marker [[]4] points at no source*",
            "*citecheck_bad.yaml:11: unknown key 'colour' in a saved answer*",
            "*citecheck_bad.yaml:12: an answer must be a mapping with id and response*",
        ]
    )


def test_duplicate_answer_ids_are_refused(responses: pytest.Pytester) -> None:
    responses.makefile(
        ".yaml",
        citecheck_twice=(
            "answers:\n"
            "  - {id: cats, response: responses/cats.md}\n"
            "  - {id: Cats, response: responses/water.json}\n"
        ),
    )
    result = responses.runpytest("--citecheck", "--citecheck-record=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*citecheck_twice.yaml:3: duplicate answer id 'Cats' (first used on line 2)*"]
    )


def test_a_response_outside_the_project_is_refused(responses: pytest.Pytester) -> None:
    outside = responses.path.parent / "elsewhere.md"
    outside.write_text(MARKDOWN)
    responses.makefile(
        ".yaml", citecheck_far="answers:\n  - {id: far, response: ../elsewhere.md}\n"
    )
    result = responses.runpytest("--citecheck", "--citecheck-record=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*citecheck_far.yaml:2: response '../elsewhere.md' resolves to *, outside the project*"]
    )


# A response that cites a request document the user did not give (Anthropic names it
# by its title) beside one that cites a web page.
DOCUMENT_CITED = {
    "id": "msg_2",
    "type": "message",
    "role": "assistant",
    "stop_reason": "end_turn",
    "content": [
        {
            "type": "text",
            "text": "Ruby was created in 1993.",
            "citations": [
                {
                    "type": "char_location",
                    "cited_text": "Ruby was created in 1993.",
                    "document_index": 0,
                    "document_title": "facts.txt",
                    "start_char_index": 0,
                    "end_char_index": 25,
                }
            ],
        }
    ],
}


def test_claims_citing_documents_not_given_are_comments_and_the_rest_runs(
    responses: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (responses.path / "responses" / "ruby.json").write_text(json.dumps(DOCUMENT_CITED))
    monkeypatch.chdir(responses.path)
    code = main(["import", "responses", "-o", "citecheck_answers.yaml"])
    out = capsys.readouterr().out
    assert code == 0
    assert (
        "not checked: 1 claim(s) cite document(s) that are no file beside citecheck_answers.yaml "
        "(facts.txt): written as comments. Fix: import again with the request's documents "
        "in order (--document PATH, once each)"
    ) in out
    written = (responses.path / "citecheck_answers.yaml").read_text(encoding="utf-8")
    assert '  # not checked: the claim cites document(s) "facts.txt", which is no file here' in (
        written
    )
    assert '  #     - document: "facts.txt"' in written
    result = responses.runpytest("--citecheck", "--citecheck-record=once", "-v")
    # The two web claims run; the file is no invalid-claim-file item.
    result.assert_outcomes(passed=2)
    assert "invalid" not in result.stdout.str()


def test_a_wrong_format_under_answers_names_the_format_of_the_body(
    responses: pytest.Pytester,
) -> None:
    responses.makefile(
        ".yaml",
        citecheck_wrong=(
            "answers:\n  - id: water\n    response: responses/water.json\n    format: gemini\n"
        ),
    )
    result = responses.runpytest("--citecheck", "--citecheck-record=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*citecheck_wrong.yaml:3: responses/water.json: this body is anthropic, not gemini "
            "(read as gemini it fails at candidates: *",
            "*fix: give the format as anthropic, or auto to detect it*",
        ]
    )


def test_an_answer_with_sources_and_no_cited_sentence_is_a_pytest_warning(
    responses: pytest.Pytester,
) -> None:
    deepseek = (
        Path(__file__).parent.parent
        / "data/native/deepseek_responses/ruby_llm__deepseek-v4-flash_web_search.json"
    )
    (responses.path / "responses" / "deepseek.json").write_text(
        deepseek.read_text(encoding="utf-8"), encoding="utf-8"
    )
    responses.makefile(
        ".yaml",
        citecheck_ds=("answers:\n  - id: ds\n    response: responses/deepseek.json\n"),
    )
    result = responses.runpytest("--citecheck", "--citecheck-record=once")
    result.stdout.fnmatch_lines(
        [
            "*citecheck_ds.yaml:3: UncitedSourcesWarning: responses/deepseek.json: read as "
            "openai-responses (auto-detected): no sentence is cited, yet the response carries "
            "3 source(s)*",
        ]
    )


def test_one_hostile_answer_fails_alone_and_every_other_claim_runs(
    responses: pytest.Pytester,
) -> None:
    water = json.dumps(ANTHROPIC)
    for name, char in (("nul", "\\u0000"), ("esc", "\\u001b"), ("surrogate", "\\ud800")):
        # The escapes as JSON writes them: the file itself is plain UTF-8.
        (responses.path / "responses" / f"{name}.json").write_text(
            water.replace("Water boils", f"Water{char} boils")
        )
    (responses.path / "responses" / "esc.md").write_text(
        "Cats\x1b[2J bark.[1]\n\n[1]: https://example.com/other\n"
    )
    responses.makefile(
        ".yaml",
        citecheck_mixed=(
            BY_HAND + "answers:\n"
            "  - {id: water, response: responses/water.json}\n"
            "  - {id: nul, response: responses/nul.json}\n"
            "  - {id: esc, response: responses/esc.json}\n"
            "  - {id: surrogate, response: responses/surrogate.json}\n"
            "  - {id: markdown, response: responses/esc.md}\n"
            "  - {id: cats, response: responses/cats.md}\n"
        ),
    )
    result = responses.runpytest("--citecheck", "--citecheck-record=once", "-v")
    result.assert_outcomes(passed=3, failed=4)
    assert result.ret == 1  # tests failed; the session was not stopped (2)
    result.stdout.fnmatch_lines_random(
        [
            "*citecheck_mixed.yaml::by-hand PASSED*",
            "*citecheck_mixed.yaml::water-water-boils-* PASSED*",
            "*citecheck_mixed.yaml::cats-cats-bark-* PASSED*",
            "*invalid saved answer: *citecheck_mixed.yaml:7: responses/nul.json at "
            "content[[]0].text: the text is not usable: it holds the control character U+0000*",
            "*citecheck_mixed.yaml:8: responses/esc.json at content[[]0].text: * U+001B*",
            "*citecheck_mixed.yaml:9: responses/surrogate.json at content[[]0].text: "
            "* a lone surrogate U+D800*",
            "*citecheck_mixed.yaml:10: responses/esc.md at line 1, column 5: * U+001B*",
        ]
    )
