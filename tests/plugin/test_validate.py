"""``citecheck validate``: the schema check alone, offline, worded as collection words it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from pytest_citecheck.frontends.cli import main

REPO = Path(__file__).resolve().parents[2]

BROKEN = """\
claims:
  - id: a
    claim: ""
    citations:
      - document: missing.txt
  - id: a
    claim: Two.
    citations:
      - url: ftp://example.com/x
        section: hidden behind the bad URL
  - id: b
    claimz: Three.
    citations: []
"""


def validate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["validate", *argv])
    captured = capsys.readouterr()
    assert captured.err == ""
    return code, captured.out


def collection_problems(pytester: pytest.Pytester, name: str) -> list[str]:
    """The problem lines pytest --citecheck prints for the file's invalid-claim-file item."""
    result = pytester.runpytest("--citecheck", "-p", "no:cacheprovider", name)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    body = out.split("invalid claim file: ", 1)[1]
    lines = []
    for line in body.splitlines():
        if line.startswith(("=", "_")):
            break
        lines.append(line.replace(str(pytester.path / name), name))
    return lines


def test_validate_prints_what_collection_prints_for_a_broken_file(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makefile(".yaml", citecheck_broken=BROKEN)
    code, out = validate(capsys, "citecheck_broken.yaml")
    assert code == 1
    *problems, summary = out.splitlines()
    assert summary == "citecheck validate: 6 problems in 1 of 1 file"
    assert problems == collection_problems(pytester, "citecheck_broken.yaml")
    # Every problem, with its line and fix, in one round.
    assert [re.match(r"citecheck_broken.yaml:(\d+): ", p).group(1) for p in problems[::2]] == [  # type: ignore[union-attr]
        "3",
        "5",
        "6",
        "9",
        "10",
        "12",
    ]
    assert all(fix.startswith("  fix: ") for fix in problems[1::2])


def test_validate_passes_the_example_suites_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for suite in ("example_suite", "example_suite_failing"):
        shutil.copytree(REPO / suite, tmp_path / suite)
    monkeypatch.chdir(tmp_path)
    files = sorted(
        str(p.relative_to(tmp_path)) for p in tmp_path.glob("example_suite*/citecheck_*")
    )
    assert len(files) >= 5
    code, out = validate(capsys, *files)
    assert code == 0, out
    assert re.fullmatch(rf"citecheck validate: {len(files)} files, \d+ claims, no problems\n", out)


def test_validate_a_broken_copy_of_the_failing_suite_matches_collection(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    source = (REPO / "example_suite_failing" / "citecheck_answers.yaml").read_text()
    broken = source.replace("  - id: le-fondre-bolton-contract", "  - id: charlie-russell-death")
    broken = broken.replace("claim: In 2014", "expect: maybe\n    claim: In 2014")
    pytester.makefile(".yaml", citecheck_answers=broken)
    code, out = validate(capsys, "citecheck_answers.yaml")
    assert code == 1
    *problems, summary = out.splitlines()
    assert summary == "citecheck validate: 2 problems in 1 of 1 file"
    assert "duplicate claim id 'charlie-russell-death' (first used on line 4)" in problems[0]
    assert problems == collection_problems(pytester, "citecheck_answers.yaml")


def test_validate_needs_no_key_and_touches_no_network(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CRAWLBASE_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    import socket

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("citecheck validate opened a connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    pytester.makefile(
        ".yaml", citecheck_ok="claims:\n  - id: a\n    claim: A.\n    citations: [https://e.com]\n"
    )
    assert validate(capsys, "citecheck_ok.yaml") == (
        0,
        "citecheck validate: 1 file, 1 claim, no problems\n",
    )


def test_pre_commit_hook_runs_validate_on_claim_files() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = hooks
    assert hook["id"] == "citecheck-validate"
    assert hook["entry"] == "citecheck validate"
    assert hook["language"] == "python"
    files = re.compile(hook["files"])
    for name in (
        "citecheck_a.yaml",
        "docs/citecheck_b.yml",
        "example_suite/citecheck_batch.jsonl",
    ):
        assert files.search(name), name
    for name in ("example_suite/cassettes/citecheck_jwt/jwt-exp.yaml", "pytest.ini", "a.yaml"):
        assert not files.search(name), name
