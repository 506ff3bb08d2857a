"""Property: no bytes in a claim file stop the session.

Whatever a claim file holds, loading it gives claims or one ``ClaimFileError``
with a line and a fix, never another exception; in a pytest run it is one
failing item, every other file still runs, and nothing prints a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_citecheck.claims.loader import ClaimFileError, load_claim_file
from tests.plugin.fakes import CONFTEST, SUPPORTED, claims_yaml

# Bytes a fuzzer would pick blindly, and text built from YAML's and JSON's syntax so
# that parsing gets past the first character.
SYNTAX = st.sampled_from(
    [
        "claims:",
        "\n",
        "  ",
        "- ",
        "id: ",
        "claim: ",
        "citations:",
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        "&a ",
        "*a",
        "<<: ",
        "!!binary ",
        "!x ",
        "'",
        '"',
        "#",
        "---",
        "\t",
        "\x00",
        "\x1b",
        "https://e.com",
        "document: ",
        "../",
        "~",
        "null",
        '{"id": ',
        '"urls": [',
        "9" * 50,
    ]
)
YAMLISH = st.lists(SYNTAX, max_size=60).map("".join)
CONTENT = st.one_of(st.binary(max_size=400), YAMLISH.map(str.encode), st.text().map(str.encode))
SUFFIX = st.sampled_from([".yaml", ".yml", ".jsonl"])


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=CONTENT, suffix=SUFFIX)
def test_loading_any_bytes_gives_claims_or_one_clear_error(
    tmp_path: Path, content: bytes, suffix: str
) -> None:
    path = tmp_path / f"citecheck_fuzz{suffix}"
    path.write_bytes(content)
    try:
        load_claim_file(path, roots=[tmp_path])
    except ClaimFileError as err:
        assert err.problems and all(p.problem and p.fix for p in err.problems)
        assert str(err).startswith(str(path))


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(files=st.lists(st.tuples(CONTENT, SUFFIX), min_size=4, max_size=4))
def test_a_session_with_any_claim_files_runs_the_good_ones(
    pytester: pytest.Pytester, files: list[tuple[bytes, str]]
) -> None:
    for old in pytester.path.glob("citecheck_*"):
        old.unlink()
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_good=claims_yaml(SUPPORTED))
    for i, (content, suffix) in enumerate(files):
        (pytester.path / f"citecheck_fuzz{i}{suffix}").write_bytes(content)
    result = pytester.runpytest("--citecheck", "--citecheck-record=once", "-p", "no:cacheprovider")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), text
    assert "INTERNALERROR" not in text
    assert "Traceback" not in text
    assert result.parseoutcomes()["passed"] >= 1, text
    assert "citecheck_good.yaml ." in text or "citecheck_good.yaml::boils-100 PASSED" in text
