"""Malformed inputs, each with the clear error a user gets.

One table per kind of input: claim files (YAML and JSONL), documents, options,
baselines, output paths. Every row names what is wrong and asserts the line, the
problem and the fix the user is shown. Cassettes are the engine's table.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_citecheck.claims.loader import (
    ClaimFileError,
    ClaimValidationError,
    load_claim_file,
    parse_claim,
)
from pytest_citecheck.engine.gate import BaselineError, load_baseline_precision
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from tests.plugin.fakes import CONFTEST, SUPPORTED, claims_yaml


@dataclass(frozen=True)
class Case:
    name: str
    text: str | bytes
    line: int | None
    problem: str  # a phrase of the problem
    fix: str  # a phrase of the fix


def claim(body: str) -> str:
    """A claim file whose one claim starts on line 2."""
    return "claims:\n" + "".join(f"  {line}\n" for line in body.strip("\n").split("\n"))


OK = "- id: a\n  claim: Water boils.\n"

YAML_CASES = [
    Case("nul", "claims:\n  - id: a\n    claim: x\x00y\n", 3, "U+0000", "escaped"),
    Case("esc", "claims:\n  - id: a\n    claim: x\x1b[31m\n", 3, "U+001B", '"\\x1b"'),
    Case("bell", "claims: []\n\x07\n", 2, "control character", "remove it"),
    Case("deep-list", "claims: " + "[" * 10_000 + "]" * 10_000 + "\n", None, "too deeply", "few"),
    Case(
        "deep-map",
        "claims:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 200)),
        52,
        "too deeply",
        "levels",
    ),
    Case("unclosed-bracket", "claims: [\n  {id: a,\n\n", 1, "invalid YAML", "close the"),
    Case("unclosed-flow-map", "claims:\n  - {id: a, claim: x\n", 2, "invalid YAML", "close"),
    Case("unclosed-quote", claim(OK + '  citations: ["https://e.com]\n'), 4, "YAML", "close"),
    Case("tab", "claims:\n\t- id: a\n", 2, "invalid YAML", "tab"),
    Case("colon-in-text", claim("- id: a\n  claim: Ratio: 3\n  citations: []"), 3, "YAML", '"'),
    Case("two-docs", "claims: []\n---\nclaims: []\n", 2, "another document", "'---'"),
    Case("undefined-alias", "claims: *nope\n", 1, "alias", "anchor"),
    Case("binary-tag", claim(OK + "  citations: !!binary aGk="), 4, "tag", "remove the tag"),
    Case(
        "custom-tag", claim("- id: !custom a\n  claim: x\n  citations: []"), 2, "'!custom'", "tag"
    ),
    Case(
        "python-tag",
        claim("- id: a\n  claim: !!python/object/apply:os.system [echo]\n  citations: []"),
        3,
        "python/object",
        "remove the tag",
    ),
    Case("set-tag", "claims: !!set {a: null}\n", 1, "tag", "remove"),
    Case("empty", "", None, "empty", "claims:"),
    Case("comment-only", "# nothing\n", None, "empty", "claims:"),
    Case("top-list", "- id: a\n", 1, "top level is a list", "claims:"),
    Case("top-scalar", "hello\n", 1, "not a mapping", "claims:"),
    Case("no-claims", "judge: openai:m\n", 1, "no `claims:`", "add `claims:`"),
    Case("claims-null", "claims:\n", 1, "has no value", "claims: []"),
    Case("claims-map", "claims:\n  id: a\n", 2, "must be a list", "- id:"),
    Case("claims-typo", "claim: []\n", 1, "did you mean 'claims'", "rename"),
    Case("top-unknown", "claims: []\nfoo: 1\n", 2, "unknown key 'foo'", "remove 'foo'"),
    Case("judge-bad", "judge: gpt4\nclaims: []\n", 1, "provider:model", "openai:gpt-4o-mini"),
    Case("judge-list", "judge: [a]\nclaims: []\n", 1, "'judge' must be text", "provider:model"),
    Case("claim-scalar", "claims:\n  - hello\n", 2, "must be a mapping", "- id:"),
    Case("missing-id", claim("- claim: x\n  citations: []"), 2, "no 'id'", "id:"),
    Case("missing-claim", claim("- id: a\n  citations: []"), 2, "no 'claim'", "claim:"),
    Case("missing-citations", claim(OK), 2, "no 'citations'", "citations: []"),
    Case("id-spaces", claim("- id: a b\n  claim: x\n  citations: []"), 2, "file name", "'a-b'"),
    Case("id-long", claim(f"- id: {'x' * 5000}\n  claim: x\n  citations: []"), 2, "5000", "short"),
    Case("id-windows", claim("- id: aux\n  claim: x\n  citations: []"), 2, "Windows", "aux-"),
    Case("id-dup", claim(OK + "  citations: []\n" + OK + "  citations: []"), 5, "dup", "rename"),
    Case(
        "id-case",
        "claims:\n  - {id: A, claim: x, citations: []}\n  - {id: a, claim: y, citations: []}\n",
        3,
        "letter case",
        "rename",
    ),
    Case(
        "claim-empty", claim("- id: a\n  claim: ''\n  citations: []"), 3, "text is empty", "claim:"
    ),
    Case("claim-map", claim("- id: a\n  claim: {x: 1}\n  citations: []"), 3, "mapping", "text"),
    Case("citations-null", claim(OK + "  citations:"), 4, "has no value", "citations: []"),
    Case("citations-text", claim(OK + "  citations: https://e.com"), 4, "must be a list", "- "),
    Case("citation-null", claim(OK + "  citations:\n  -"), 5, "empty citation", "remove the dash"),
    Case("citation-list", claim(OK + "  citations:\n  - [a]"), 5, "not a list", "url:"),
    Case("url-ftp", claim(OK + "  citations: [ftp://e.com/x]"), 4, "only http and https", "http"),
    Case("url-file", claim(OK + "  citations: [file:///etc/passwd]"), 4, "file:", "document:"),
    Case("url-no-scheme", claim(OK + "  citations: [e.com/x]"), 4, "no scheme", "https://e.com"),
    Case("url-no-host", claim(OK + "  citations: ['https://']"), 4, "no host", "host"),
    Case(
        "url-port",
        claim(OK + "  citations: ['http://e.com:99999/']"),
        4,
        "Port out of range",
        "http",
    ),
    Case(
        "url-and-doc",
        claim(OK + "  citations:\n  - {url: 'https://e.com', document: d}"),
        5,
        "both",
        "keep one",
    ),
    Case("neither", claim(OK + "  citations:\n  - {quote: q}"), 5, "neither", "url:"),
    Case(
        "section-on-url",
        claim(OK + "  citations:\n  - {url: 'https://e.com', section: '2'}"),
        5,
        "only read for `document`",
        "remove 'section'",
    ),
    Case(
        "citation-typo",
        claim(OK + "  citations:\n  - {documnet: d.txt}"),
        5,
        "did you mean 'document'",
        "rename",
    ),
    Case(
        "internal-key",
        claim(OK + "  citations:\n  - {url: 'https://e.com', document_path: /etc/passwd}"),
        5,
        "unknown key 'document_path'",
        "allowed in a citation",
    ),
    Case("line-key", claim(OK + "  line: 3\n  citations: []"), 4, "unknown key 'line'", "remove"),
    Case(
        "judge-in-claim",
        claim(OK + "  judge: openai:m\n  citations: []"),
        4,
        "not allowed",
        "file-level",
    ),
    Case("expect-bad", claim(OK + "  citations: []\n  expect: supportd"), 5, "did you mean", "use"),
    Case(
        "expect-fabricated",
        claim(OK + "  citations: []\n  expect: fabricated"),
        5,
        "contradicted as a whole",
        "contradicted",
    ),
    Case("expect-list", claim(OK + "  citations: []\n  expect: [a]"), 5, "must be text", "text"),
    Case("dup-key", claim(OK + "  claim: y\n  citations: []"), 4, "duplicate key", "keep one"),
    Case("null-key", claim(OK + "  ~: 1\n  citations: []"), 4, "not text", "keys"),
    Case(
        "merge-scalar",
        claim("- <<: 5\n  id: a\n  claim: x\n  citations: []"),
        2,
        "merge",
        "<<: *defaults",
    ),
    Case(
        "billion-laughs",
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n"
            for p, c in zip("abcdefg", "bcdefgh", strict=True)
        )
        + "claims: *h\n",
        1,
        "values",
        "aliases",
    ),
    Case("not-utf8", b"claims:\n  - id: a\n    claim: caf\xe9\n", 3, "UTF-8", "UTF-8"),
]

JSONL_CASES = [
    Case("bad-json", '{"id": "a", "claim": "x", "urls": [}', 1, "invalid JSON", "one complete"),
    Case("array", '["a"]', 1, "JSON object, not a list", "one object"),
    Case(
        "dup-key",
        '{"id": "a", "id": "b", "claim": "x", "urls": []}',
        1,
        "duplicate key 'id'",
        "keep one",
    ),
    Case(
        "long-id",
        '{"id": ' + "7" * 5000 + ', "claim": "x", "urls": []}',
        1,
        "too long",
        "short strings",
    ),
    Case(
        "deep",
        '{"id": "a", "claim": "x", "urls": []' + ', "x": ' + "[" * 10_000 + "]" * 10_000 + "}",
        1,
        "nested too deeply",
        "flat",
    ),
    Case("nul", '{"id": "a\\u0000", "claim": "x", "urls": []}', 1, "file name", "e.g."),
    Case("no-id", '{"claim": "x", "urls": []}', 1, "no 'id'", "records"),
    Case("url-typo", '{"id": "a", "claim": "x", "url": []}', 1, "did you mean 'url'", "rename"),
    Case(
        "urls-string",
        '{"id": "a", "claim": "x", "urls": "https://e.com"}',
        1,
        "list of strings",
        "[",
    ),
    Case("urls-number", '{"id": "a", "claim": "x", "urls": [3]}', 1, "a number (3)", "["),
    Case("url-ftp", '{"id": "a", "claim": "x", "urls": ["ftp://e.com"]}', 1, "only http", "http"),
    Case("claim-number", '{"id": "a", "claim": 5, "urls": []}', 1, "'claim' must be text", "text"),
    Case("id-bool", '{"id": true, "claim": "x", "urls": []}', 1, "'id' must be text", "text"),
    Case("id-null", '{"id": null, "claim": "x", "urls": []}', 1, "claim id is empty", "id"),
    Case("not-utf8", b'{"id": "a", "claim": "\xff", "urls": []}', 1, "UTF-8", "UTF-8"),
]


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def assert_error(path: Path, case: Case, roots: list[Path] | None = None) -> ClaimFileError:
    with pytest.raises(ClaimFileError) as info:
        load_claim_file(path, roots=roots, terms=PLUGIN_TERMS)
    err = info.value
    assert err.line == case.line, str(err)
    assert case.problem in err.problem, str(err)
    assert case.fix in err.fix, str(err)
    assert str(err).startswith(f"{path}:{case.line}: " if case.line else f"{path}: ")
    return err


@pytest.mark.parametrize("case", YAML_CASES, ids=[c.name for c in YAML_CASES])
def test_malformed_yaml(tmp_path: Path, case: Case) -> None:
    assert_error(write(tmp_path, "citecheck_x.yaml", case.text), case)


@pytest.mark.parametrize("case", JSONL_CASES, ids=[c.name for c in JSONL_CASES])
def test_malformed_jsonl(tmp_path: Path, case: Case) -> None:
    assert_error(write(tmp_path, "citecheck_x.jsonl", case.text), case)


def test_every_problem_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    text = claim(
        "- id: a b\n  claim: ''\n  citations: [ftp://x.com]\n"
        "- id: ok\n  claim: fine\n  citations:\n  - {url: 'https://e.com', qoute: q}\n"
        "- id: ok\n  claim: again\n  citations: []\n  expect: maybe"
    )
    err = assert_error(
        write(tmp_path, "citecheck_x.yaml", text),
        Case("", "", 2, "file name", "a-b"),
    )
    lines = [(p.line, p.problem.split(";")[0][:30]) for p in err.problems]
    # The duplicate id (line 9) is listed with the rest, not after they are fixed.
    assert [line for line, _ in lines] == [2, 3, 4, 8, 9, 12]
    assert len(str(err).split("\n  fix: ")) == 7  # six problems, each with its fix


def test_jsonl_reports_every_bad_line(tmp_path: Path) -> None:
    text = '{"id": "a", "claim": "x", "urls": []}\n[1]\n{"id": "b", "claim": "", "urls": []}\n'
    with pytest.raises(ClaimFileError) as info:
        load_claim_file(write(tmp_path, "citecheck_x.jsonl", text))
    assert [p.line for p in info.value.problems] == [2, 3]


# -- documents ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DocCase:
    name: str
    document: Callable[[Path], str]  # given the project folder, what the claim cites
    problem: str
    fix: str


def _symlink_out(project: Path) -> str:
    (project / "link.txt").symlink_to("/etc/hostname")
    return "link.txt"


def _symlink_dir_out(project: Path) -> str:
    (project / "etc").symlink_to("/etc")
    return "etc/hostname"


def _outside_file(project: Path) -> str:
    outside = project.parent / "secret.txt"
    outside.write_text("secret\n")
    return "../secret.txt"


DOC_CASES = [
    DocCase("proc-environ", lambda p: "/proc/self/environ", "outside the project", "roots"),
    DocCase("etc-passwd", lambda p: "/etc/passwd", "outside the project", "copy the file"),
    DocCase("dot-dot", _outside_file, "outside the project", "citecheck_document_roots"),
    DocCase("dot-dot-missing", lambda p: "../../x", "outside the project", "roots"),
    DocCase("symlink-out", _symlink_out, "resolves to /etc/hostname", "roots"),
    DocCase("symlinked-dir-out", _symlink_dir_out, "outside the project", "roots"),
    DocCase("missing", lambda p: "nope.txt", "not found", "relative to the claim file"),
    DocCase("folder", lambda p: (p / "sub").mkdir() or "sub", "not a file", "text file"),
    DocCase("empty", lambda p: "''", "`document` is empty", "path"),
]


@pytest.mark.parametrize("case", DOC_CASES, ids=[c.name for c in DOC_CASES])
def test_documents_must_resolve_inside_the_project(tmp_path: Path, case: DocCase) -> None:
    project = tmp_path / "project"
    project.mkdir()
    document = case.document(project)
    path = write(project, "citecheck_d.yaml", claim(OK + f"  citations:\n  - document: {document}"))
    assert_error(path, Case(case.name, "", 5, case.problem, case.fix), roots=[project])


def test_extra_roots_and_symlinks_inside_are_allowed(tmp_path: Path) -> None:
    project, shared = tmp_path / "project", tmp_path / "shared"
    project.mkdir()
    shared.mkdir()
    (shared / "rfc.txt").write_text("RFC\n")
    (project / "here.txt").write_text("text\n")
    (project / "alias.txt").symlink_to(project / "here.txt")
    body = OK + "  citations:\n  - document: ../shared/rfc.txt\n  - document: alias.txt"
    path = write(project, "citecheck_d.yaml", claim(body))
    cites = load_claim_file(path, roots=[project, shared]).claims[0].citations
    assert [c.document_path for c in cites] == [shared / "rfc.txt", project / "here.txt"]
    with pytest.raises(ClaimFileError, match="outside the project"):
        load_claim_file(path, roots=[project])


# -- the schema for everyone else (fixture, batch CLI, service) --------------------------


@pytest.mark.parametrize(
    ("data", "field", "phrase"),
    [
        ({"id": "a", "claim": "x", "citations": ["ftp://e.com"]}, "citations[0].url", "http"),
        (
            {"id": "a", "claim": "x", "citations": [{"url": "https://e.com", "section": "2"}]},
            "citations[0].section",
            "only read for `document`",
        ),
        (
            {"id": "a", "claim": "x", "citations": [{"documnet": "d"}]},
            "citations[0].documnet",
            "did you mean 'document'",
        ),
        ({"id": "a", "claim": "x", "citations": [], "line": 3}, "line", "unknown key"),
        ({"claim": "x", "citations": []}, "id", "no 'id'"),
        ({"id": "a", "claim": "x", "citations": "https://e.com"}, "citations", "must be a list"),
        ({"id": "a", "claim": "x", "citations": [], "expect": "error"}, "expect", "not a label"),
    ],
)
def test_parse_claim_names_the_field(data: dict[str, object], field: str, phrase: str) -> None:
    with pytest.raises(ClaimValidationError) as info:
        parse_claim(data)
    problem = info.value.problems[0]
    assert (problem.field, phrase in problem.problem) == (field, True), str(info.value)
    assert problem.fix
    assert str(info.value).startswith(f"{field}: ")


def test_fixture_rejects_what_a_claim_file_rejects(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_bad="""
        import pytest
        from pytest_citecheck.claims.loader import ClaimValidationError

        @pytest.mark.parametrize("citation", [
            "ftp://example.com/x",
            {"url": "https://example.com/boiling", "section": "2"},
            {"documnet": "x.txt"},
            {"document": "/etc/passwd"},
        ])
        def test_bad(citecheck, citation):
            with pytest.raises(ClaimValidationError) as info:
                citecheck.verify("Water boils at 100 C.", [citation])
            print("PROBLEM:", info.value.problems[0].problem)
        """
    )
    result = pytester.runpytest("-s", "--citecheck-record=once")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*PROBLEM: *only http and https*",
            "*PROBLEM: *only read for `document`*",
            "*PROBLEM: *did you mean 'document'*",
            "*PROBLEM: *outside the project*",
        ]
    )


# -- baselines ---------------------------------------------------------------------------


BASELINE_CASES = {
    "nan": ('{"totals": {"citation_precision": NaN}}', "nan, not a number between 0 and 1"),
    "null": ('{"totals": {"citation_precision": null}}', "no citation precision (null"),
    "string": ('{"totals": {"citation_precision": "0.9"}}', '"0.9", not a number'),
    "list": ("[1, 2]", "no totals.citation_precision"),
    "bool": ('{"totals": {"citation_precision": true}}', "true, not a number"),
    "above-one": ('{"totals": {"citation_precision": 1.5}}', "1.5, not a number between"),
    "no-totals": ('{"claims": []}', "no totals.citation_precision"),
    "not-json": ("precision: 0.9", "not a citecheck JSON report (JSONDecodeError)"),
    "deep": ("[" * 100_000 + "]" * 100_000, "not a citecheck JSON report"),
    # The JSON report of a run stopped by Ctrl-C: its precision is over a part.
    "stopped": (
        '{"totals": {"citation_precision": 1.0}, "gate": {"passed": false, "decided": false, '
        '"failures": [], "not_started": 6, "stopped_by": "interrupted"}}',
        "from a run that stopped early (interrupted; 6 claims not started), so its "
        "precision covers only the claims that ran; write one with --citecheck-report from "
        "a run that finished",
    ),
}


@pytest.mark.parametrize("name", BASELINE_CASES)
def test_bad_baseline(tmp_path: Path, name: str) -> None:
    text, phrase = BASELINE_CASES[name]
    path = write(tmp_path, "base.json", text)
    with pytest.raises(BaselineError) as info:
        load_baseline_precision(path, PLUGIN_TERMS)
    assert phrase in str(info.value)
    assert "--citecheck-report" in str(info.value)


def test_baseline_folder_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="is a folder"):
        load_baseline_precision(tmp_path)
    with pytest.raises(BaselineError, match="does not exist"):
        load_baseline_precision(tmp_path / "gone.json")
    assert (
        load_baseline_precision(write(tmp_path, "b.json", '{"totals": {"citation_precision": 1}}'))
        == 1.0
    )


# -- options and output paths: usage errors at start-up, before anything runs -------------


def _file_parent(p: pytest.Pytester) -> str:
    (p.path / "afile").write_text("x")
    return "--citecheck-report=afile/report.json"


def _read_only(p: pytest.Pytester) -> str:
    (p.path / "ro").mkdir()
    (p.path / "ro").chmod(0o500)
    return "--citecheck-csv=ro/out.csv"


OPTION_CASES: dict[str, tuple[Callable[[pytest.Pytester], str], str]] = {
    "ini-bool": (
        lambda p: "-o=citecheck_allow_contradicted=maybe",
        "*citecheck_allow_contradicted*maybe*",
    ),
    "ini-float": (lambda p: "-o=citecheck_min_precision=high", "*citecheck_min_precision*high*"),
    "ini-range": (lambda p: "-o=citecheck_review_below=2", "*citecheck_review_below*not between*"),
    "ini-nan": (lambda p: "-o=citecheck_max_drop=nan", "*citecheck_max_drop*not between*"),
    "ini-judge": (lambda p: "-o=citecheck_judge=gpt4", "*citecheck_judge*PROVIDER:MODEL*"),
    "cli-range": (lambda p: "--citecheck-min-precision=1.2", "*not between 0 and 1*"),
    "report-folder": (lambda p: f"--citecheck-report={p.path}", "*--citecheck-report*folder*"),
    "report-under-file": (_file_parent, "*afile is a file*"),
    "csv-read-only": (_read_only, "*--citecheck-csv*not writable*"),
    "baseline-nan": (
        lambda p: (
            write(p.path, "b.json", '{"totals": {"citation_precision": NaN}}')
            and "--citecheck-baseline=b.json"
        ),
        "*--citecheck-baseline*nan*",
    ),
    "baseline-folder": (lambda p: f"--citecheck-baseline={p.path}", "*baseline*folder*"),
}


@pytest.mark.parametrize("name", OPTION_CASES)
def test_bad_option_is_a_usage_error_before_anything_runs(
    pytester: pytest.Pytester, name: str
) -> None:
    if name == "csv-read-only" and os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    make, pattern = OPTION_CASES[name]
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    result = pytester.runpytest("--citecheck", "--citecheck-record=once", make(pytester))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([pattern])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "cassettes").exists()  # nothing ran


def test_native_toml_numbers_are_accepted(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    pytester.makepyprojecttoml(
        "[tool.pytest]\ncitecheck_min_precision = 1\ncitecheck_review_below = 0.5\n"
        "citecheck_allow_contradicted = true\n"
    )
    result = pytester.runpytest("--citecheck", "--citecheck-record=once")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK


def test_bad_files_fail_alone_and_every_other_claim_runs(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    good = [(f"good-{i}", *SUPPORTED[1:]) for i in range(23)]
    pytester.makefile(".yaml", citecheck_good=claims_yaml(*good))
    bad = {
        "citecheck_nul.yaml": "claims:\n  - id: a\n    claim: x\x00\n",
        "citecheck_esc.yaml": "claims:\n  - id: a\n    claim: x\x1b\n",
        "citecheck_deep.yaml": "claims: " + "[" * 10_000 + "]" * 10_000 + "\n",
        "citecheck_deep.jsonl": '{"id": "a", "x": ' + "[" * 10_000 + "]" * 10_000 + "}\n",
        "citecheck_longid.jsonl": '{"id": ' + "9" * 5000 + ', "claim": "x", "urls": []}\n',
    }
    for name, text in bad.items():
        (pytester.path / name).write_text(text, encoding="utf-8")
    result = pytester.runpytest("--citecheck", "--citecheck-record=once", "-p", "no:randomly")
    result.assert_outcomes(passed=23, failed=5)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text
    for name in bad:
        result.stdout.fnmatch_lines([f"*invalid claim file: *{name}*"])


def test_gate_is_a_failing_junit_case_and_named_in_the_last_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(
        ".yaml",
        citecheck_a=claims_yaml(
            SUPPORTED, ("gone", *SUPPORTED[1:2], ["https://example.com/gone"], None)
        ),
    )
    result = pytester.runpytest(
        "--citecheck",
        "--citecheck-record=once",
        "--citecheck-min-precision=0.9",
        "--junitxml=junit.xml",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # (An installed, not worktree, plugin adds "N warnings," in between: pytest cannot
    # assert-rewrite a plugin module the outer run already imported.)
    result.stdout.fnmatch_lines(["*= 2 passed, *1 citecheck gate failed in *"])
    xml = (pytester.path / "junit.xml").read_text()
    assert 'failures="1"' in xml
    assert 'name="gate"' in xml
    assert "citation precision 0.5000 is below citecheck_min_precision 0.9000" in xml
    passing = pytester.runpytest("--citecheck", "--citecheck-record=none", "--junitxml=junit2.xml")
    assert passing.ret == pytest.ExitCode.OK
    assert 'failures="0"' in (pytester.path / "junit2.xml").read_text()


def test_compact_failure_report_for_many_claims(pytester: pytest.Pytester) -> None:
    """Claims without recordings fail with their own reason and no teardown noise."""
    pytester.makeconftest(CONFTEST)
    many = [(f"c{i}", *SUPPORTED[1:]) for i in range(30)]
    pytester.makefile(".yaml", citecheck_many=claims_yaml(*many))
    result = pytester.runpytest("--citecheck")  # replay, nothing recorded
    result.assert_outcomes(failed=30)
    assert result.stdout.str().count("no_recording") >= 30
    result.stdout.fnmatch_lines(["*= 30 failed, *1 citecheck gate failed in *"])


def test_a_report_that_cannot_be_written_at_the_end_keeps_the_summary(
    pytester: pytest.Pytester,
) -> None:
    # Passes the start-up check, then becomes a folder while the run goes on.
    pytester.makeconftest(
        CONFTEST + "\n\n@pytest.hookimpl(trylast=True)\n"
        "def pytest_sessionstart(session):\n"
        "    (session.config.rootpath / 'report.json').mkdir()\n"
    )
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    result = pytester.runpytest(
        "--citecheck", "--citecheck-record=once", "--citecheck-report=report.json"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "1 claim, 1 citation: citation precision 1.0000 (1/1)*",
            "could not write report.json*",
            "citecheck gate passed, but 1 report file could not be written: the run fails",
        ]
    )
    assert "Traceback" not in result.stdout.str()
