"""Claim files: what loads, and what a user is told when their file is wrong."""

from __future__ import annotations

import pickle
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.loader import ClaimFile, ClaimFileError, load_claim_file
from pytest_citecheck.claims.models import Citation

Write = Callable[..., Path]


@pytest.fixture(params=["c-loader", "python-loader"])
def both_loaders(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a test with libyaml's loader and with the pure-Python one: same lines either way."""
    if request.param == "python-loader":
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    elif not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML built without libyaml")
    yield request.param


@pytest.fixture
def write(tmp_path: Path) -> Write:
    def _write(text: str, name: str = "citecheck_cases.yaml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return _write


def load_error(path: Path) -> ClaimFileError:
    with pytest.raises(ClaimFileError) as info:
        load_claim_file(path)
    return info.value


def claims_yaml(claim_body: str, header: str = "") -> str:
    """A file whose first claim starts on line 2 (line 3 with a one-line header)."""
    return header + "claims:\n" + textwrap.indent(textwrap.dedent(claim_body).lstrip("\n"), "  ")


# --- a good YAML file ------------------------------------------------------------------

GOOD = """
judge: openai:gpt-4o-mini
claims:
  - id: boiling-point
    claim: Water boils at 100 degrees Celsius at sea level.
    citations:
      - https://example.com/articles/water-boiling-point
      - url: https://example.com/old-report
      - document: sources/rfc7519.txt
        quote: "The exp (expiration time) claim"
        section: 4.10
    expect: supported

  - id: "007"
    claim: >
      A claim written as a folded
      block scalar.
    citations: []

  - id: Jwt.exp_1
    claim: JWTs expire.
    citations:
      - document: ../shared/rfc7519.txt
"""


def test_good_yaml_file_loads_every_citation_form(write: Write, both_loaders: str) -> None:
    path = write(GOOD, "suite/citecheck_good.yaml")
    (path.parent / "sources").mkdir()
    doc = path.parent / "sources" / "rfc7519.txt"
    doc.write_text("RFC 7519\n", encoding="utf-8")
    shared = path.parent.parent / "shared" / "rfc7519.txt"
    shared.parent.mkdir()
    shared.write_text("RFC 7519\n", encoding="utf-8")

    loaded = load_claim_file(path)

    assert isinstance(loaded, ClaimFile)
    assert loaded.path == path
    assert loaded.judge == "openai:gpt-4o-mini"
    assert [c.id for c in loaded.claims] == ["boiling-point", "007", "Jwt.exp_1"]
    assert [c.line for c in loaded.claims] == [3, 13, 19]
    assert {c.judge for c in loaded.claims} == {"openai:gpt-4o-mini"}

    first = loaded.claims[0]
    assert first.claim == "Water boils at 100 degrees Celsius at sea level."
    assert first.expect is Label.SUPPORTED
    assert first.citations[0] == Citation(url="https://example.com/articles/water-boiling-point")
    assert first.citations[1].url == "https://example.com/old-report"
    assert first.citations[1].quote is None
    local = first.citations[2]
    assert local.url is None
    assert local.document == "sources/rfc7519.txt"  # as the user wrote it
    assert local.document_path == doc.resolve()
    assert local.document_path.is_absolute()
    assert local.quote == "The exp (expiration time) claim"
    assert local.section == "4.10"  # as written, not the float 4.1

    second = loaded.claims[1]
    assert second.claim == "A claim written as a folded block scalar."
    assert second.citations == []
    assert second.expect is None

    third = loaded.claims[2]
    assert third.citations[0].document == "../shared/rfc7519.txt"
    assert third.citations[0].document_path == shared.resolve()


def test_yml_extension_and_no_judge(write: Write) -> None:
    path = write(
        """
        claims:
          - id: a
            claim: Text.
            citations: [https://example.com/a, {url: "http://example.org:8080/b?q=1"}]
        """,
        "citecheck_flow.yml",
    )
    loaded = load_claim_file(path)
    assert loaded.judge is None
    assert loaded.claims[0].judge is None
    assert [c.url for c in loaded.claims[0].citations] == [
        "https://example.com/a",
        "http://example.org:8080/b?q=1",
    ]


def test_empty_claims_list_is_a_file_with_no_claims(write: Write) -> None:
    assert load_claim_file(write("claims: []\n")).claims == []


def test_yaml_anchors_and_merge_keys_are_supported(write: Write) -> None:
    path = write(
        """
        claims:
          - &base
            id: first
            claim: Shared text.
            citations: &cites
              - https://example.com/a
          - <<: *base
            id: second
          - id: third
            claim: Other.
            citations: *cites
        """
    )
    loaded = load_claim_file(path)
    assert [(c.id, c.claim) for c in loaded.claims] == [
        ("first", "Shared text."),
        ("second", "Shared text."),
        ("third", "Other."),
    ]
    assert loaded.claims[2].citations == loaded.claims[0].citations


def test_merge_of_a_non_mapping(write: Write) -> None:
    err = load_error(write(claims_yaml("- id: a\n  <<: 5\n  claim: x\n  citations: []\n")))
    assert err.line == 3
    assert "invalid merge key" in err.problem
    assert "<<: *defaults" in err.fix


def test_null_optional_values_mean_absent(write: Write) -> None:
    path = write(
        """
        judge:
        claims:
          - id: a
            claim: Text.
            expect: ~
            citations:
              - url: https://example.com/a
                quote: null
        """
    )
    claim = load_claim_file(path).claims[0]
    assert claim.judge is None
    assert claim.expect is None
    assert claim.citations[0].quote is None


def test_utf8_bom_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "citecheck_bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfclaims:\n  - {id: a, claim: T., citations: []}\n")
    assert load_claim_file(path).claims[0].line == 2


# --- the error itself ------------------------------------------------------------------


def test_error_text_names_file_line_problem_and_fix() -> None:
    err = ClaimFileError(Path("tests/citecheck_x.yaml"), 7, "claim text is empty", "write it")
    assert str(err) == "tests/citecheck_x.yaml:7: claim text is empty\n  fix: write it"
    no_line = ClaimFileError(Path("a.yaml"), None, "the file is empty", "add claims")
    assert str(no_line) == "a.yaml: the file is empty\n  fix: add claims"


def test_error_survives_pickling_for_xdist_workers() -> None:
    err = ClaimFileError(Path("a.yaml"), 3, "problem", "fix")
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.path, copy.line, copy.problem, copy.fix) == (Path("a.yaml"), 3, "problem", "fix")
    assert str(copy) == str(err)


# --- YAML syntax ------------------------------------------------------------------------


def test_colon_in_unquoted_value(write: Write, both_loaders: str) -> None:
    path = write(
        """
        claims:
          - id: a
            claim: Ratio: 3 to 1
            citations: []
        """
    )
    err = load_error(path)
    assert err.path == path
    assert err.line == 3
    assert "invalid YAML" in err.problem
    assert "mapping values are not allowed" in err.problem
    assert err.fix == "a value containing ': ' must be quoted: claim: \"Ratio: 3 to 1\""
    assert str(err).startswith(f"{path}:3: invalid YAML")


def test_tab_indentation(write: Write, both_loaders: str) -> None:
    path = write("claims:\n  - id: a\n\tclaim: x\n")
    err = load_error(path)
    assert err.line == 3
    assert "tab" in err.fix


def test_unclosed_quote_points_where_it_opens(write: Write, both_loaders: str) -> None:
    path = write(
        """
        claims:
          - id: a
            claim: "never closed
            citations: []
          - id: b
        """
    )
    err = load_error(path)
    assert err.line == 3
    assert "close the quote" in err.fix


def test_two_yaml_documents(write: Write) -> None:
    err = load_error(write("claims: []\n---\nclaims: []\n"))
    assert err.line == 2
    assert "'---'" in err.fix


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_empty_file(write: Write, text: str) -> None:
    err = load_error(write(text))
    assert "empty" in err.problem
    assert "claims:" in err.fix


# --- structure -----------------------------------------------------------------------------


def test_top_level_list_says_to_put_claims_under_a_key(write: Write) -> None:
    err = load_error(write("- id: a\n  claim: x\n  citations: []\n"))
    assert err.line == 1
    assert "top level is a list" in err.problem
    assert "claims:" in err.fix


def test_top_level_scalar(write: Write) -> None:
    err = load_error(write("just some text\n"))
    assert err.line == 1
    assert "claims" in err.problem


def test_missing_claims_key(write: Write) -> None:
    err = load_error(write("judge: openai:gpt-4o-mini\n"))
    assert err.line == 1
    assert "no `claims:`" in err.problem


def test_top_level_claim_typo_suggests_claims(write: Write) -> None:
    err = load_error(write("judge: openai:m\nclaim:\n  - id: a\n"))
    assert err.line == 2
    assert "did you mean 'claims'" in err.problem


def test_claims_not_a_list(write: Write) -> None:
    err = load_error(write("claims:\n  id: a\n  claim: x\n"))
    assert err.line == 2
    assert "must be a list" in err.problem


def test_claims_without_value(write: Write) -> None:
    err = load_error(write("judge: openai:m\nclaims:\n"))
    assert err.line == 2
    assert "claims: []" in err.fix


def test_claim_that_is_not_a_mapping(write: Write) -> None:
    err = load_error(write("claims:\n  - id: a\n    claim: x\n    citations: []\n  - just text\n"))
    assert err.line == 5
    assert "must be a mapping" in err.problem


def test_citations_not_a_list(write: Write) -> None:
    err = load_error(write(claims_yaml("- id: a\n  claim: x\n  citations: https://example.com\n")))
    assert err.line == 4
    assert "must be a list" in err.problem
    assert "- https://" in err.fix


def test_citations_without_value(write: Write) -> None:
    err = load_error(write(claims_yaml("- id: a\n  claim: x\n  citations:\n")))
    assert err.line == 4
    assert "citations: []" in err.fix


def test_citation_that_is_a_list(write: Write) -> None:
    err = load_error(write(claims_yaml("- id: a\n  claim: x\n  citations:\n    - [a, b]\n")))
    assert err.line == 5
    assert "a list" in err.problem


def test_empty_citation_item(write: Write) -> None:
    err = load_error(write(claims_yaml("- id: a\n  claim: x\n  citations:\n    -\n")))
    assert err.line == 5
    assert "empty citation" in err.problem


# --- unknown, misplaced and duplicate keys -----------------------------------------------


def test_unknown_top_level_key_suggests_closest(write: Write) -> None:
    err = load_error(write("claims: []\njudeg: openai:m\n"))
    assert err.line == 2
    assert "unknown key 'judeg' at the top level; did you mean 'judge'?" in err.problem
    assert "judge, claims" in err.fix


def test_unknown_claim_key_suggests_closest(write: Write) -> None:
    err = load_error(write(claims_yaml("- id: a\n  claim: x\n  citatons: []\n")))
    assert err.line == 4
    assert "did you mean 'citations'?" in err.problem
    assert "rename 'citatons' to 'citations'" in err.fix
    assert "id, claim, citations, expect" in err.fix


def test_unknown_citation_key_suggests_closest(write: Write) -> None:
    body = """
    - id: a
      claim: x
      citations:
        - url: https://example.com
          qoute: text
    """
    err = load_error(write(claims_yaml(body)))
    assert err.line == 6
    assert "unknown key 'qoute' in a citation; did you mean 'quote'?" in err.problem


def test_unknown_key_without_close_match_lists_allowed_keys(write: Write) -> None:
    err = load_error(write(claims_yaml("- id: a\n  claim: x\n  citations: []\n  zzz: 1\n")))
    assert err.line == 5
    assert err.problem == "unknown key 'zzz' in a claim"
    assert "remove 'zzz'" in err.fix
    assert "id, claim, citations, expect" in err.fix


def test_citation_key_at_claim_level_says_where_it_belongs(write: Write) -> None:
    err = load_error(write(claims_yaml("- id: a\n  claim: x\n  url: https://example.com\n")))
    assert err.line == 4
    assert "belongs to a citation" in err.fix


def test_expect_in_a_citation_says_it_is_per_claim(write: Write) -> None:
    body = """
    - id: a
      claim: x
      citations:
        - url: https://example.com
          expect: supported
    """
    err = load_error(write(claims_yaml(body)))
    assert err.line == 6
    assert "per claim" in err.fix


def test_duplicate_key_in_a_mapping(write: Write) -> None:
    err = load_error(write(claims_yaml("- id: a\n  claim: x\n  claim: y\n  citations: []\n")))
    assert err.line == 4
    assert "duplicate key 'claim' (first on line 3)" in err.problem


# --- claims: required fields, ids, text --------------------------------------------------


@pytest.mark.parametrize(
    ("body", "missing"),
    [
        ("- claim: x\n  citations: []\n", "id"),
        ("- id: a\n  citations: []\n", "claim"),
        ("- id: a\n  claim: x\n", "citations"),
    ],
)
def test_missing_required_field_points_at_the_claim(write: Write, body: str, missing: str) -> None:
    path = write(claims_yaml("- id: ok\n  claim: fine\n  citations: []\n" + body))
    err = load_error(path)
    assert err.line == 5  # where the broken claim starts
    assert err.problem == f"claim has no {missing!r}"
    assert missing in err.fix


def test_duplicate_id_names_both_lines(write: Write) -> None:
    body = """
    - id: same
      claim: x
      citations: []
    - id: same
      claim: y
      citations: []
    """
    err = load_error(write(claims_yaml(body)))
    assert err.line == 5
    assert "duplicate claim id 'same' (first used on line 2)" in err.problem
    assert "rename" in err.fix


def test_ids_differing_only_in_case_would_collide_as_cassettes(write: Write) -> None:
    body = """
    - {id: Boiling, claim: x, citations: []}
    - {id: boiling, claim: y, citations: []}
    """
    err = load_error(write(claims_yaml(body)))
    assert err.line == 3
    assert "only in letter case" in err.problem
    assert "line 2" in err.problem


@pytest.mark.parametrize(
    ("claim_id", "phrase"),
    [
        ("'has space'", "cannot be used as a file name"),
        ("-leading-dash", "cannot be used as a file name"),
        ("a/b", "cannot be used as a file name"),
        ("'..'", "cannot be used as a file name"),
        ("x" * 101, "101 characters long (at most 100)"),
        ("con", "reserved file name on Windows"),
        ("''", "claim id is empty"),
        ("", "claim id is empty"),
    ],
)
def test_ids_that_cannot_be_file_names(write: Write, claim_id: str, phrase: str) -> None:
    err = load_error(write(claims_yaml(f"- claim: x\n  id: {claim_id}\n  citations: []\n")))
    assert err.line == 3
    assert phrase in err.problem
    assert err.fix


def test_bad_id_fix_suggests_a_usable_id(write: Write) -> None:
    err = load_error(write(claims_yaml("- id: water boiling?\n  claim: x\n  citations: []\n")))
    assert "'water-boiling'" in err.fix


def test_id_of_exactly_100_characters_is_fine(write: Write) -> None:
    path = write(claims_yaml(f"- id: {'x' * 100}\n  claim: x\n  citations: []\n"))
    assert load_claim_file(path).claims[0].id == "x" * 100


@pytest.mark.parametrize("value", ["", "''", "'   '", "~"])
def test_empty_claim_text(write: Write, value: str) -> None:
    err = load_error(write(claims_yaml(f"- id: a\n  claim: {value}\n  citations: []\n")))
    assert err.line == 3
    assert err.problem == "claim text is empty"


def test_claim_text_that_is_a_list(write: Write) -> None:
    err = load_error(write(claims_yaml("- id: a\n  claim: [x, y]\n  citations: []\n")))
    assert err.line == 3
    assert "'claim' must be text, not a list" in err.problem


# --- citations --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "phrase", "fix_phrase"),
    [
        ("ftp://example.com/x", "only http and https", "http(s)"),
        ("example.com/page", "no scheme", "'https://example.com/page'"),
        ("https://", "no host", "http(s)"),
        ("'https://exa mple.com/'", "whitespace", "%20"),
        ("file:///etc/hosts", "only http and https", "document:"),
        ("'http://example.com:port/'", "not a usable URL", "http(s)"),
    ],
)
def test_bad_urls_in_both_forms(write: Write, url: str, phrase: str, fix_phrase: str) -> None:
    short = write(
        claims_yaml(f"- id: a\n  claim: x\n  citations:\n    - {url}\n"), "citecheck_s.yaml"
    )
    long = write(
        claims_yaml(f"- id: a\n  claim: x\n  citations:\n    - quote: q\n      url: {url}\n"),
        "citecheck_l.yaml",
    )
    for path, line in ((short, 5), (long, 6)):
        err = load_error(path)
        assert err.line == line
        assert "not a usable URL" in err.problem
        assert phrase in err.problem
        assert fix_phrase in err.fix


def test_citation_with_both_url_and_document(write: Write) -> None:
    body = """
    - id: a
      claim: x
      citations:
        - https://example.com/fine
        - url: https://example.com
          document: doc.txt
    """
    err = load_error(write(claims_yaml(body)))
    assert err.line == 6
    assert "both `url` and `document`" in err.problem
    assert "keep one" in err.fix


def test_citation_with_neither_url_nor_document(write: Write) -> None:
    err = load_error(write(claims_yaml("- id: a\n  claim: x\n  citations:\n    - quote: q\n")))
    assert err.line == 5
    assert "neither `url` nor `document`" in err.problem


def test_missing_document_names_the_resolved_path(write: Write, tmp_path: Path) -> None:
    body = """
    - id: a
      claim: x
      citations:
        - quote: q
          document: sources/missing.txt
    """
    path = write(claims_yaml(body), "suite/citecheck_docs.yaml")
    err = load_error(path)
    assert err.line == 6
    expected = (tmp_path / "suite" / "sources" / "missing.txt").resolve()
    assert f"document 'sources/missing.txt' not found: {expected} does not exist" in err.problem
    assert str((tmp_path / "suite").resolve()) in err.fix


def test_document_that_is_a_folder(write: Write, tmp_path: Path) -> None:
    (tmp_path / "sources").mkdir()
    err = load_error(
        write(claims_yaml("- id: a\n  claim: x\n  citations:\n    - document: sources\n"))
    )
    assert err.line == 5
    assert "not a file" in err.problem


@pytest.mark.parametrize(
    ("extra", "phrase"),
    [
        ("quote: [a, b]", "'quote' must be text, not a list"),
        ("section: {a: 1}", "'section' must be text, not a mapping"),
        ("quote: ''", "'quote' is empty"),
    ],
)
def test_quote_and_section_must_be_text(write: Write, extra: str, phrase: str) -> None:
    body = f"- id: a\n  claim: x\n  citations:\n    - document: d.txt\n      {extra}\n"
    write("text\n", "d.txt")
    err = load_error(write(claims_yaml(body)))
    assert err.line == 6
    assert phrase in err.problem


def test_section_on_a_url_is_refused_not_ignored(write: Write) -> None:
    body = "- id: a\n  claim: x\n  citations:\n    - url: https://example.com\n      section: '2'\n"
    err = load_error(write(claims_yaml(body)))
    assert err.line == 6
    assert "only read for `document` citations" in err.problem
    assert err.fix.startswith("remove")


def test_a_quote_on_a_url_is_kept(write: Write) -> None:
    # What the LLM says it read on the page (Anthropic's cited_text, imported).
    body = (
        "- id: a\n  claim: x\n  citations:\n    - url: https://example.com\n"
        "      quote: '  boils at 100 degrees '\n"
    )
    citation = load_claim_file(write(claims_yaml(body))).claims[0].citations[0]
    assert (citation.url, citation.quote) == ("https://example.com", "boils at 100 degrees")


# --- expect and judge -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ("supportd", "did you mean 'supported'?"),
        ("not found", "did you mean 'not_found'?"),
        ("error", ""),
    ],
)
def test_expect_must_be_a_label(write: Write, value: str, hint: str) -> None:
    body = f"- id: a\n  claim: x\n  citations: []\n  expect: {value}\n"
    err = load_error(write(claims_yaml(body)))
    assert err.line == 5
    assert f"expect {value!r} is not a label" in err.problem
    assert hint in err.problem
    assert err.fix == "use one of: supported, contradicted, not_found, unreachable"


def test_expect_fabricated_explains_the_claim_level_rule(write: Write) -> None:
    body = "- id: a\n  claim: x\n  citations: []\n  expect: fabricated\n"
    err = load_error(write(claims_yaml(body)))
    assert err.line == 5
    assert "contradicted as a whole" in err.problem
    assert err.fix == "write expect: contradicted"


@pytest.mark.parametrize("label", ["supported", "contradicted", "not_found", "unreachable"])
def test_every_claim_label_can_be_expected(write: Write, label: str) -> None:
    path = write(claims_yaml(f"- id: a\n  claim: x\n  citations: []\n  expect: {label}\n"))
    assert load_claim_file(path).claims[0].expect == Label(label)


@pytest.mark.parametrize(
    "judge", ["gpt-4o-mini", "'openai:'", "':gpt-4o'", "'open ai:gpt'", "'1openai:x'"]
)
def test_judge_must_be_provider_colon_model(write: Write, judge: str) -> None:
    err = load_error(write(f"claims: []\njudge: {judge}\n"))
    assert err.line == 2
    assert "judge" in err.problem
    assert "openai:gpt-4o-mini" in err.fix


def test_judge_model_may_contain_colons(write: Write) -> None:
    assert (
        load_claim_file(write("judge: ollama:llama3.1:8b\nclaims: []\n")).judge
        == "ollama:llama3.1:8b"
    )


# --- JSONL batch records -----------------------------------------------------


def test_good_jsonl(write: Write) -> None:
    path = write(
        '{"id": "q1", "claim": "A claim.", "urls": ["https://a.example/1", "https://b.example/2"]}\n'
        "\n"
        "   \n"
        '{"id": 2, "claim": "Line\u2028separator inside.", "urls": [], "answer": "extra field"}\r\n'
        '{"id": "q3", "claim": "Third.", "urls": ["http://c.example/"]}',
        "citecheck_batch.jsonl",
    )
    loaded = load_claim_file(path)
    assert loaded.judge is None
    assert [(c.id, c.line) for c in loaded.claims] == [("q1", 1), ("2", 4), ("q3", 5)]
    first = loaded.claims[0]
    assert first.claim == "A claim."
    assert [c.url for c in first.citations] == ["https://a.example/1", "https://b.example/2"]
    assert loaded.claims[1].citations == []
    assert loaded.claims[1].claim == "Line\u2028separator inside."


GOOD_RECORD = '{"id": "ok", "claim": "Fine.", "urls": ["https://example.com"]}\n'


@pytest.mark.parametrize(
    ("record", "phrase", "fix_phrase"),
    [
        ('{"id": "a", "claim": "x", "urls": [}', "invalid JSON", "one complete JSON object"),
        ('["a", "x", []]', "must be a JSON object, not a list", "one object per line"),
        ('{"claim": "x", "urls": []}', "record has no 'id' field", '"id"'),
        ('{"id": "a", "urls": []}', "record has no 'claim' field", '"claim"'),
        (
            '{"id": "a", "claim": "x", "url": ["https://e.com"]}',
            "record has no 'urls' field; did you mean 'url'?",
            "rename 'url' to 'urls'",
        ),
        (
            '{"id": "a", "claim": "x", "urls": "https://e.com"}',
            "`urls` must be a list of strings",
            "[",
        ),
        ('{"id": "a", "claim": "x", "urls": ["https://e.com", 3]}', "found a number (3)", "["),
        ('{"id": "a", "claim": "x", "urls": ["ftp://e.com"]}', "only http and https", "http(s)"),
        ('{"id": "a", "claim": "x", "urls": ["e.com/x"]}', "no scheme", "https://e.com/x"),
        ('{"id": "a b", "claim": "x", "urls": []}', "cannot be used as a file name", "'a-b'"),
        ('{"id": null, "claim": "x", "urls": []}', "claim id is empty", "id"),
        (
            '{"id": "ok", "claim": "x", "urls": []}',
            "duplicate claim id 'ok' (first used on line 1)",
            "rename",
        ),
        ('{"id": "a", "claim": "  ", "urls": []}', "claim text is empty", "claim"),
        ('{"id": "a", "claim": 5, "urls": []}', "'claim' must be text, not the value 5", "claim"),
    ],
)
def test_bad_jsonl_record(write: Write, record: str, phrase: str, fix_phrase: str) -> None:
    path = write(GOOD_RECORD + "\n" + record + "\n", "citecheck_batch.jsonl")
    err = load_error(path)
    assert err.line == 3
    assert phrase in err.problem
    assert fix_phrase in err.fix
    assert str(err).startswith(f"{path}:3: ")


# --- files -------------------------------------------------------------------------------


def test_unsupported_extension(write: Write) -> None:
    err = load_error(write("claims: []\n", "citecheck_x.json"))
    assert "unsupported claim file type '.json'" in err.problem


def test_unreadable_file(tmp_path: Path) -> None:
    err = load_error(tmp_path / "citecheck_gone.yaml")
    assert err.line is None
    assert "cannot read the file" in err.problem


def test_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "citecheck_latin1.yaml"
    path.write_bytes("claims:\n  - id: a\n    claim: caf\xe9\n".encode("latin-1"))
    err = load_error(path)
    assert err.line == 3
    assert "UTF-8" in err.problem


# --- every problem at once -----------------------------------------------------------------

FIVE_PROBLEMS = """
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


def test_every_problem_of_a_file_is_listed_in_one_round(write: Write) -> None:
    """A duplicate id after an invalid claim, a section on a URL that is itself bad, and a
    missing document of an invalid claim are all reported with the rest, in file order."""
    err = load_error(write(FIVE_PROBLEMS))
    assert [(p.line, p.problem.split(":")[0].split(";")[0]) for p in err.problems] == [
        (3, "claim text is empty"),
        (5, "document 'missing.txt' not found"),
        (6, "duplicate claim id 'a' (first used on line 2)"),
        (9, "'ftp"),
        (10, "'section' is only read for `document` citations"),
        (12, "unknown key 'claimz' in a claim"),
    ]


def test_a_jsonl_record_is_told_its_fix_in_json(write: Write) -> None:
    path = write(
        '{"id": "", "claim": ["a"], "urls": ["file:///etc/passwd"]}\n', "citecheck_batch.jsonl"
    )
    fixes = [p.fix for p in load_error(path).problems]
    assert fixes == [
        'give "id" a short unique text value, e.g. "id": "q1"',
        'write "claim" as one text value, e.g. "claim": "Water boils at 100 °C."',
        'write e.g. "urls": ["https://example.com/a"] (records cite URLs only)',
    ]
    assert not any("`" in fix for fix in fixes)


# --- a known paywall (the citation's paywall: key) ---------------------------------------


def test_a_citation_may_say_who_reported_a_paywall(write: Write) -> None:
    body = """
    - id: a
      claim: The bridge was approved.
      citations:
        - url: https://news.example.com/bridge
          paywall: "Gemini url_context: URL_RETRIEVAL_STATUS_PAYWALL"
    """
    (claim,) = load_claim_file(write(claims_yaml(body))).claims
    assert claim.citations[0].paywall == "Gemini url_context: URL_RETRIEVAL_STATUS_PAYWALL"


def test_paywall_on_a_document_says_it_is_for_urls(write: Write) -> None:
    body = """
    - id: a
      claim: x
      citations:
        - document: notes.md
          paywall: me
    """
    write("# notes\n", "notes.md")
    err = load_error(write(claims_yaml(body)))
    assert "'paywall' is only read for `url` citations" in err.problem
