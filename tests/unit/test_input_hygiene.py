"""Text no file, database or terminal can hold is refused where it is read: lone
surrogates, escaped control characters, claims over the length cap -- with the
file, the line and the fix, and every other claim still loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_citecheck.claims.loader import ClaimFileError, load_claim_file, load_valid_claims
from pytest_citecheck.claims.schema import ClaimValidationError, parse_claim
from pytest_citecheck.core.defaults import DEFAULT_MAX_CLAIM_CHARS
from pytest_citecheck.core.text import terminal_safe

GOOD = '{"id": "a", "claim": "Water boils at 100 C.", "urls": ["https://example.com/a"]}'


@pytest.mark.parametrize(
    ("escaped", "phrase"),
    [
        ("\\ud800", "lone surrogate U+D800"),
        ("\\udfff", "lone surrogate U+DFFF"),
        ("\\u001b[2J", "control character U+001B"),
        ("\\u0007", "control character U+0007"),
        ("\\u0000", "control character U+0000"),
    ],
)
def test_a_bad_escape_in_a_jsonl_record_costs_only_that_record(
    tmp_path: Path, escaped: str, phrase: str
) -> None:
    path = tmp_path / "out.jsonl"
    bad = f'{{"id": "b", "claim": "Water {escaped} boils.", "urls": ["https://example.com/b"]}}'
    other = GOOD.replace('"a"', '"c"')
    path.write_text(f"{GOOD}\n{bad}\n{other}\n", encoding="utf-8")
    claim_file, error = load_valid_claims(path)
    assert [c.id for c in claim_file.claims] == ["a", "c"]
    assert error is not None
    assert [p.line for p in error.problems] == [2]
    assert phrase in error.problems[0].problem
    assert "remove the character" in error.problems[0].fix
    assert str(error).startswith(f"{path}:2: claim text is not usable text")


@pytest.mark.parametrize(
    ("field", "escaped"),
    [
        ("claim", "Water \\ud800 boils."),
        ("claim", "Water \\x1b[31mboils\\a."),
        ("quote", "\\e]0;title\\a"),
        ("section", "4.\\x1b1"),
    ],
)
def test_a_bad_escape_in_a_yaml_double_quoted_string_is_refused_at_its_line(
    tmp_path: Path, field: str, escaped: str
) -> None:
    (tmp_path / "doc.md").write_text("# Doc\n\nWater boils.\n", encoding="utf-8")
    if field == "claim":
        claim, extra = f'"{escaped}"', ""
    else:
        claim, extra = "Water boils.", f'\n        {field}: "{escaped}"'
    path = tmp_path / "citecheck_x.yaml"
    path.write_text(
        "claims:\n"
        "  - id: fine\n"
        "    claim: Water boils.\n"
        "    citations: [https://example.com/a]\n"
        "  - id: bad\n"
        f"    claim: {claim}\n"
        "    citations:\n"
        f"      - document: doc.md{extra}\n",
        encoding="utf-8",
    )
    with pytest.raises(ClaimFileError) as info:
        load_claim_file(path)
    error = info.value
    assert error.line == (6 if field == "claim" else 9)
    assert "is not usable text" in error.problem
    assert "remove the character" in error.fix


def test_tab_and_newline_escapes_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text(
        '{"id": "a", "claim": "Water\\tboils\\nat 100 C.", "urls": []}\n', encoding="utf-8"
    )
    claim_file, error = load_valid_claims(path)
    assert error is None
    assert claim_file.claims[0].claim == "Water\tboils\nat 100 C."


def test_a_judge_with_a_control_character_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "citecheck_x.yaml"
    path.write_text(
        'judge: "openai:gpt\\x1b[2J"\nclaims:\n  - id: a\n    claim: c\n    citations: []\n',
        encoding="utf-8",
    )
    with pytest.raises(ClaimFileError) as info:
        load_claim_file(path)
    assert info.value.line == 1
    assert "judge is not usable text" in info.value.problem


def test_the_claim_length_cap_has_a_documented_default_and_can_be_lifted(tmp_path: Path) -> None:
    assert DEFAULT_MAX_CLAIM_CHARS == 2000
    long = "word " * 500  # 2,499 characters once stripped
    path = tmp_path / "out.jsonl"
    path.write_text(f'{GOOD}\n{{"id": "b", "claim": "{long}", "urls": []}}\n', encoding="utf-8")
    claim_file, error = load_valid_claims(path)
    assert [c.id for c in claim_file.claims] == ["a"]
    assert error is not None
    assert error.problems[0].line == 2
    assert error.problems[0].problem == "claim text is 2,499 characters long (at most 2,000)"
    assert "raise the claim length cap; 0 lifts the cap" in error.problems[0].fix
    claim_file, error = load_valid_claims(path, max_claim_chars=3000)
    assert error is None and len(claim_file.claims) == 2
    claim_file, error = load_valid_claims(path, max_claim_chars=0)
    assert error is None and len(claim_file.claims) == 2


def test_the_schema_for_the_fixture_and_the_service_refuses_the_same(tmp_path: Path) -> None:
    with pytest.raises(ClaimValidationError, match="lone surrogate"):
        parse_claim({"id": "a", "claim": "x\ud800", "citations": []})
    with pytest.raises(ClaimValidationError, match="at most 10"):
        parse_claim({"id": "a", "claim": "x" * 11, "citations": []}, max_claim_chars=10)


def test_a_bad_record_reports_all_of_its_problems(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text('{"id": "bad id!", "claim": "x\\ud800", "url": 5}\n', encoding="utf-8")
    _, error = load_valid_claims(path)
    assert error is not None
    problems = [p.problem for p in error.problems]
    assert len(problems) == 3, problems
    assert problems[0] == "record has no 'urls' field; did you mean 'url'?"
    assert any("claim id 'bad id!' cannot be used" in p for p in problems)
    assert any("lone surrogate" in p for p in problems)
    assert {p.line for p in error.problems} == {1}


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[2J\x1b[31mred\x1b[0m text", "red text"),
        ("bell\x07 and \x1b]0;title\x07 osc", "bell and  osc"),
        ("tab\tand\nnewline", "tab\tand\nnewline"),
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
        ("c1 \x9b31m csi", "c1  csi"),
        ("plain", "plain"),
    ],
)
def test_terminal_safe_strips_control_sequences(raw: str, shown: str) -> None:
    assert terminal_safe(raw) == shown


def test_home_directories_and_install_paths_are_scrubbed_from_recorded_error_bodies() -> None:
    from pytest_citecheck.recording.transport import Reply, redact_reply

    body = (
        '{"detail": "Traceback: File \\"/home/alice/llama/.venv/lib/python3.11/'
        'site-packages/llama_cpp/server/app.py\\", line 42; C:\\\\Users\\\\bob\\\\models"}'
    )
    error = redact_reply(Reply(500, "Internal Server Error", {}, body.encode()), ())
    assert b"alice" not in error.body and b"bob" not in error.body
    # The install path is cut to the package: the module that failed, not the machine.
    assert b'File \\"site-packages/llama_cpp/server/app.py\\", line 42' in error.body
    assert b".venv" not in error.body and b"/lib/" not in error.body
    # A page that mentions a path is evidence: a 200 body is kept byte for byte.
    page = b"Configuration lives in /home/alice/.config/app.toml."
    assert redact_reply(Reply(200, "OK", {}, page), ()).body == page
