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


OK = "claims:\n  - id: a\n    claim: A.\n    citations: [https://e.com]\n"


def collected_files(pytester: pytest.Pytester, *args: str) -> list[str]:
    """The claim files pytest --citecheck collects, as paths relative to the project."""
    result = pytester.runpytest("--citecheck", "-p", "no:cacheprovider", "--co", "-q", *args)
    ids = [line.split("::", 1)[0] for line in result.stdout.lines if "::" in line]
    return sorted(dict.fromkeys(ids))


def validated_files(out: str) -> list[str]:
    lines = out.splitlines()[:-1]
    return sorted({line.split(":", 1)[0] for line in lines if not line.startswith(" ")})


def test_validate_searches_a_folder_as_pytest_collects_it(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder is not "a file with no extension": every claim file under it that
    pytest would collect is checked, none that pytest skips."""
    pytester.makeini("[pytest]\ncitecheck_patterns = citecheck_*.yaml claims_*.yml\n")
    for path in (
        "tests/citecheck_a.yaml",
        "tests/deep/er/claims_b.yml",
        "tests/citecheck_c.yaml",
        "tests/.hidden/citecheck_d.yaml",  # norecursedirs: .*
        "tests/build/citecheck_e.yaml",  # norecursedirs: build
        "tests/env/citecheck_f.yaml",  # a virtual environment
        "tests/citecheck_g.yml",  # not one of this project's patterns
    ):
        target = pytester.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(OK.replace("id: a", "idx: a"), encoding="utf-8")
    (pytester.path / "tests" / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    code, out = validate(capsys, "tests")
    assert code == 1
    assert out.splitlines()[-1] == "citecheck validate: 3 problems in 3 of 3 files"
    assert validated_files(out) == [
        "tests/citecheck_a.yaml",
        "tests/citecheck_c.yaml",
        "tests/deep/er/claims_b.yml",
    ]
    assert validated_files(out) == sorted(collected_files(pytester, "tests"))
    assert "unsupported claim file type" not in out


def test_validate_with_no_path_checks_the_current_folder(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makefile(".yaml", citecheck_top=OK)
    (pytester.path / "sub").mkdir()
    (pytester.path / "sub" / "citecheck_inner.yaml").write_text(OK, encoding="utf-8")
    assert validate(capsys) == (0, "citecheck validate: 2 files, 2 claims, no problems\n")
    assert collected_files(pytester) == ["citecheck_top.yaml", "sub/citecheck_inner.yaml"]


def test_validate_with_no_path_follows_the_ini_s_testpaths(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makefile(".toml", pyproject='[tool.pytest.ini_options]\ntestpaths = ["claims"]\n')
    pytester.makefile(".yaml", citecheck_elsewhere="not: [a claim file")
    (pytester.path / "claims").mkdir()
    (pytester.path / "claims" / "citecheck_one.yaml").write_text(OK, encoding="utf-8")
    assert validate(capsys) == (0, "citecheck validate: 1 file, 1 claim, no problems\n")


def test_validate_says_when_a_folder_has_no_claim_files(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    (pytester.path / "empty").mkdir()
    assert validate(capsys, "empty") == (
        0,
        "citecheck validate: no claim files (citecheck_*.yaml citecheck_*.yml "
        "citecheck_*.jsonl) under empty\n",
    )


OUT_OF_ORDER = """\
claims:
  - id: a
    claim: One.
    citations:
      - https://example.com/a
  - id: b
    claim: Two.
    expect: maybe
    citations:
      - url: ftp://example.com/x
  - id: a
    claim: ""
    citations: [https://example.com/c]
judge: nonsense
"""


def test_validate_and_collection_list_the_problems_in_line_order(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makefile(".yaml", citecheck_order=OUT_OF_ORDER)
    code, out = validate(capsys, "citecheck_order.yaml")
    assert code == 1
    *problems, _ = out.splitlines()
    lines = [int(p.split(":")[1]) for p in problems[::2]]
    assert lines == [8, 10, 11, 12, 14], out
    assert problems == collection_problems(pytester, "citecheck_order.yaml")
