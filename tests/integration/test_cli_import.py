"""``citecheck import``: saved responses in, a claim file the loader reads back unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_citecheck.claims.importers import import_response
from pytest_citecheck.claims.importers.answer import (
    AnswerSentence,
    CitedSource,
    ImportedAnswer,
    ImportedClaim,
)
from pytest_citecheck.claims.importers.files import claim_file_text
from pytest_citecheck.claims.loader import load_claim_file
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.frontends.cli import main

NATIVE = Path(__file__).parent.parent / "data" / "native"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_import_a_folder_of_real_responses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The recordings keep their subfolders: a folder is read with its subfolders.
    responses = tmp_path / "responses"
    shutil.copytree(NATIVE, responses, ignore=shutil.ignore_patterns("*.md"))
    # The documents two of Anthropic's document citations name, beside the claim file;
    # the others name documents that are not there.
    (tmp_path / "facts.txt").write_text("The Ruby programming language was created by ...\n")
    (tmp_path / "sample.pdf").write_text("Sample PDF\n")
    out_file = tmp_path / "citecheck_native.yaml"
    code, out, err = run(capsys, "import", str(responses), "-o", str(out_file))
    # Two recordings cannot be claims; the others are written all the same.
    assert code == 1
    assert err.startswith("citecheck import: 2 response(s) could not be imported:\n")
    assert len(err.splitlines()) == 3  # one line per response
    assert "pydantic-ai__pause_turn_part1.json: stop_reason: " in err
    assert "groundingChunks[1].retrievedContext" in err
    loaded = load_claim_file(out_file).claims
    expected = []
    held = 0
    paths = sorted(p for p in responses.rglob("*.json"))
    for path in paths:
        if path.stem in (
            "pydantic-ai__pause_turn_part1",
            "pydantic-ai__file_search_retrievedContext",
        ):
            continue
        answer = import_response(json.loads(path.read_text(encoding="utf-8")), answer_id=path.stem)
        for claim in answer.claim_list:
            documents = [c.document for c in claim.citations if c.document is not None]
            if all((tmp_path / d).is_file() for d in documents):
                expected.append(claim)
            else:
                held += 1
        assert f"{path.stem}: {len(answer.claims)} claim(s), {len(answer.uncited)} uncited" in out
    assert held > 0
    assert sorted(c.id for c in loaded) == sorted(c.id for c in expected)
    by_id = {c.id: c for c in loaded}
    assert [by_id[c.id].model_dump(include={"id", "claim", "citations"}) for c in expected] == [
        c.model_dump(include={"id", "claim", "citations"}) for c in expected
    ]
    text = out_file.read_text(encoding="utf-8")
    assert "  # uncited: Overall, today's weather in San Francisco is pleasant" in text
    assert text.startswith("# Written by `citecheck import --from auto ")
    assert (
        f"wrote {out_file}: {len(expected)} claim(s) from {len(paths) - 2} response(s); 2 could not"
    ) in out
    assert f"not checked: {held} claim(s) cite document(s) that are no file beside" in out


def test_jsonl_of_responses_with_named_answers_and_a_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gpt = json.loads((NATIVE / "openai_responses/ruby_llm__web_search_gpt-5_2.json").read_text())
    lines = [
        json.dumps({"id": "ruby-version", "response": gpt}),
        "",
        "{not json",
        json.dumps("Water boils at [100 °C](https://a.org/water)."),
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out_file = tmp_path / "citecheck_log.yaml"
    code, _, err = run(capsys, "import", str(log), "-o", str(out_file))
    assert code == 1
    assert f"{log}:3: invalid JSON" in err
    ids = [c.id for c in load_claim_file(out_file).claims]
    assert ids[0].startswith("ruby-version-the-latest-stable-ruby")
    # The third response of the file (blank lines do not count).
    assert ids[1].startswith("log-3-water-boils-at-100")


def test_two_answers_with_one_id_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "q1.md").write_text("Fact.[1]\n\n[1]: https://a.org\n")
    out_file = tmp_path / "citecheck_q.yaml"
    code, _, err = run(
        capsys, "import", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(out_file)
    )
    assert code == 1
    assert "answer id 'q1' is also the id of" in err
    assert len(load_claim_file(out_file).claims) == 1


def test_the_format_flag_is_checked_per_response(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    response = tmp_path / "r.json"
    shutil.copy(NATIVE / "openai_responses/ruby_llm__web_search_gpt-5_2.json", response)
    code, _, err = run(
        capsys,
        "import",
        "--from",
        "anthropic",
        str(response),
        "-o",
        str(tmp_path / "citecheck_r.yaml"),
    )
    # The error names the format the body is in, not the place the wrong reader stopped.
    assert code == 1
    assert f"{response}: this body is openai-responses, not anthropic" in err
    code, _, err = run(capsys, "import", "--from", "openai", str(response), "-o", "x.yaml")
    assert code == 2 and "invalid choice: 'openai'" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["missing.json", "-o", "citecheck_x.yaml"], "no such file or folder: missing.json"),
        (["{dir}", "-o", "citecheck_x.json"], "a claim file is written as YAML"),
        (["{dir}", "-o", "{dir}"], "a claim file is written as YAML"),
        (["{dir}", "-o", "citecheck_x.yaml"], "no saved responses found"),
    ],
)
def test_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    monkey_argv = [a.replace("{dir}", str(tmp_path)) for a in argv]
    code, _, err = run(capsys, "import", *monkey_argv)
    assert code == 2 and message in err


def test_o_refuses_to_overwrite_a_file_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    response = tmp_path / "r.json"
    shutil.copy(NATIVE / "openai_responses/ruby_llm__web_search_gpt-5_2.json", response)
    mine = tmp_path / "citecheck_mine.yaml"
    hand_written = "claims:\n  - id: x\n    claim: A claim written by hand.\n    citations: []\n"
    mine.write_text(hand_written, encoding="utf-8")
    code, _, err = run(capsys, "import", str(response), "-o", str(mine))
    assert code == 2
    assert "the file exists and was not written by `citecheck import`" in err
    assert "--force to replace it" in err
    assert mine.read_text(encoding="utf-8") == hand_written
    # Its own file is regenerated without asking; a foreign one with --force.
    assert run(capsys, "import", str(response), "-o", str(mine), "--force")[0] == 0
    assert run(capsys, "import", str(response), "-o", str(mine))[0] == 0
    assert mine.read_text(encoding="utf-8").startswith("# Written by `citecheck import ")


def test_folders_are_read_with_their_subfolders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "responses" / "2026" / "june"
    deep.mkdir(parents=True)
    shutil.copy(NATIVE / "openai_responses/ruby_llm__web_search_gpt-5_2.json", deep / "r.json")
    (tmp_path / "responses" / ".git").mkdir()
    (tmp_path / "responses" / ".git" / "x.json").write_text("{}")
    out_file = tmp_path / "citecheck_r.yaml"
    code, out, err = run(capsys, "import", str(tmp_path / "responses"), "-o", str(out_file))
    assert (code, err) == (0, "")
    assert f"wrote {out_file}: 1 claim(s) from 1 response(s)" in out


def test_a_saved_stream_is_one_response_and_a_broken_one_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = (
        NATIVE / "openai_responses_stream/vercel-ai__openai-web-search-tool.1.chunks.stream.json"
    )
    good = tmp_path / "good.json"
    shutil.copy(stream, good)
    events = json.loads(stream.read_text(encoding="utf-8"))
    cut = [
        e for e in events if e["type"] not in ("response.completed", "response.output_item.done")
    ]
    (tmp_path / "cut.json").write_text(json.dumps(cut), encoding="utf-8")
    out_file = tmp_path / "citecheck_s.yaml"
    code, out, err = run(
        capsys, "import", str(good), str(tmp_path / "cut.json"), "-o", str(out_file)
    )
    assert code == 1
    assert err.splitlines() == [
        "citecheck import: 1 response(s) could not be imported:",
        f"  {tmp_path / 'cut.json'}: events: the stream ends before the response is complete "
        "(no response.completed and no finished output item) (fix: save the whole stream, up "
        "to response.completed)",
    ]
    assert "good: 12 claim(s), 15 uncited sentence(s) (openai-responses, " in out


def test_a_response_with_sources_and_no_cited_sentence_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    response = tmp_path / "deepseek.json"
    shutil.copy(NATIVE / "deepseek_responses/ruby_llm__deepseek-v4-flash_web_search.json", response)
    code, out, _ = run(capsys, "import", str(response), "-o", str(tmp_path / "citecheck_d.yaml"))
    assert code == 0
    assert (
        "  warning: read as openai-responses (auto-detected): no sentence is cited, yet the "
        "response carries 3 source(s)"
    ) in out
    assert "all 3 are ignored; if it is another API's response, pass its format" in out


def test_written_text_survives_any_characters(tmp_path: Path) -> None:
    odd = 'Quote "this" \\ and\u2028that\u0085 tab\there: # not a comment — ünïcode 🌊'
    claim = Claim(
        id="a-1", claim=odd, citations=[Citation(url="https://a.org/x?q=1&r=2", quote=odd)]
    )
    answer = ImportedAnswer(
        id="a",
        format="markdown",
        text=odd,
        sentences=[AnswerSentence(text=odd, claim_id="a-1", start=0, end=len(odd))],
        claims=[ImportedClaim(claim=claim, sources=[CitedSource(url="https://a.org/x?q=1&r=2")])],
        notes=["a note\nover two lines"],
    )
    path = tmp_path / "citecheck_odd.yaml"
    path.write_text(
        claim_file_text([(answer, "odd.json")], "citecheck import odd.json"), encoding="utf-8"
    )
    (loaded,) = load_claim_file(path).claims
    assert loaded.claim == odd
    assert loaded.citations[0].quote == odd


def test_the_claim_files_page_shows_what_the_import_of_the_example_answers_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Path(__file__).resolve().parents[2]
    readme = (repo / "docs" / "claim-files.md").read_text(encoding="utf-8")
    command = "$ citecheck import --from auto example_suite/answers -o citecheck_answers.yaml\n"
    shown = readme.split(command, 1)[1].split("```", 1)[0]
    shutil.copytree(repo / "example_suite" / "answers", tmp_path / "example_suite" / "answers")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, *command[2:].split()[1:])
    assert code == 0
    assert out == shown
    written = (tmp_path / "citecheck_answers.yaml").read_text(encoding="utf-8")
    excerpt = readme.split("```yaml\n  # answer better-call-saul.anthropic", 1)[1].split("```", 1)[
        0
    ]
    assert "  # answer better-call-saul.anthropic" + excerpt in written


def test_a_stream_no_reader_knows_is_one_error_line_with_its_count_and_hostile_text_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chunks = NATIVE / "gemini_interactions/vercel-ai__interactions-google-search.chunks.txt"
    known = tmp_path / "news.txt"
    shutil.copy(chunks, known)
    events = [json.loads(line) for line in chunks.read_text(encoding="utf-8").splitlines()]
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text(
        "\n".join(json.dumps({**e, "event_type": "x." + e["event_type"]}) for e in events),
        encoding="utf-8",
    )
    hostile = tmp_path / "hostile.json"
    text = "Paris is big [x](https://a.com/). Lyon is small."
    url = "https://example.com/a\x1b[2J\x07\x00b"
    annotation = {"type": "url_citation", "url": url, "start_index": 13, "end_index": 31}
    hostile.write_text(
        json.dumps(
            {
                "output": [
                    {
                        "type": "message",
                        "content": [
                            {"type": "output_text", "text": text, "annotations": [annotation]}
                        ],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    out_file = tmp_path / "citecheck_s.yaml"
    code, out, err = run(
        capsys, "import", str(known), str(unknown), str(hostile), "-o", str(out_file)
    )
    assert code == 1
    lines = err.splitlines()
    assert lines[0] == "citecheck import: 2 response(s) could not be imported:"
    assert len(lines) == 3  # one line per saved response, not one per event
    assert f"  {unknown}: cannot tell which API" in lines[1]
    assert "all 27 responses of this file alike" in lines[1]
    assert not any(ch in err for ch in "\x1b\x07\x00")
    assert "<U+001B>[2J<U+0007><U+0000>" in lines[2]
    assert "news: 8 claim(s)" in out and "(gemini-interactions, " in out


def test_when_every_response_fails_no_claim_file_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty claim file would pass every run: nothing is written, the exit is 1."""
    response = tmp_path / "r.json"
    shutil.copy(NATIVE / "openai_responses/ruby_llm__web_search_gpt-5_2.json", response)
    out_file = tmp_path / "citecheck_r.yaml"
    code, out, err = run(
        capsys, "import", "--from", "anthropic", str(response), "-o", str(out_file)
    )
    assert code == 1
    assert not out_file.exists()
    assert "wrote" not in out
    assert err.splitlines()[-1] == (
        "citecheck import: no claim file written: none of the responses could be imported; "
        f"{out_file} was not created"
    )
    # A file written by an earlier import is left as it was.
    code, _, _ = run(capsys, "import", str(response), "-o", str(out_file))
    assert code == 0
    before = out_file.read_text(encoding="utf-8")
    code, _, err = run(capsys, "import", "--from", "anthropic", str(response), "-o", str(out_file))
    assert code == 1 and out_file.read_text(encoding="utf-8") == before
    assert err.splitlines()[-1].endswith(f"{out_file} was not changed")


def test_a_saved_xai_stream_s_warning_names_the_real_cause_and_no_format_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """xAI's stream adds its annotations after the text with no offsets: the warning
    says so, and no message sends the user from one format to the other and back."""
    stream = tmp_path / "grok.json"
    shutil.copy(
        NATIVE / "openai_responses_stream/vercel-ai__xai-web-search-tool.1.chunks.stream.json",
        stream,
    )
    out_file = str(tmp_path / "citecheck_g.yaml")
    code, out, _ = run(capsys, "import", str(stream), "-o", out_file)
    assert code == 0
    (warning,) = [line for line in out.splitlines() if line.startswith("  warning: ")]
    assert "the response's 5 annotations (e.g. at output[1].content[0].annotations[" in warning
    assert "carry no position in the text (no start_index/end_index" in warning
    assert "save the response body itself, not streamed" in warning
    assert "pass its format" not in warning and "another API" not in warning
    code, _, err = run(capsys, "import", "--from", "xai", str(stream), "-o", out_file)
    assert code == 1
    assert "the response is an openai-responses stream, not xai" in err
    assert "give the format as openai-responses" in err
    # Following that fix gives the same cause, not a new format to try.
    code, out, _ = run(capsys, "import", "--from", "openai-responses", str(stream), "-o", out_file)
    assert code == 0
    assert "(as asked): no sentence is cited: the response's 5 annotations" in out
    assert "pass its format" not in out
