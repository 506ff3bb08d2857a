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
    assert [
        by_id[c.id].model_dump(include={"id", "claim", "citations"}) for c in expected
    ] == [c.model_dump(include={"id", "claim", "citations"}) for c in expected]
    text = out_file.read_text(encoding="utf-8")
    assert "  # uncited: Overall, today's weather in San Francisco is pleasant" in text
    assert text.startswith("# Written by `citecheck import --from auto ")
    assert (
        f"wrote {out_file}: {len(expected)} claim(s) from {len(paths) - 2} response(s); "
        "2 could not"
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
