"""--citecheck-judge / citecheck_judge / file-level judge: which provider answers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.doubles.llm import LLMDouble

SOURCE = "# Tokens\n\nThe exp claim identifies the expiration time of the token.\n"
CLAIMS = """\
judge: ollama:llama3.1
claims:
  - id: exp
    claim: The exp claim gives the expiration time.
    citations:
      - document: source.md
        quote: The exp claim identifies the expiration time
"""


@pytest.fixture
def llm() -> Iterator[LLMDouble]:
    with LLMDouble() as double:
        yield double


@pytest.fixture
def suite(
    pytester: pytest.Pytester, llm: LLMDouble, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    pytester.makefile(".md", source=SOURCE)
    pytester.makefile(".yaml", citecheck_doc=CLAIMS)
    monkeypatch.setenv("OLLAMA_HOST", llm.base_url("ollama"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm.base_url("anthropic"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "planted-anthropic-key-0123456789")
    return pytester


def test_file_level_judge_is_the_default(suite: pytest.Pytester, llm: LLMDouble) -> None:
    result = suite.runpytest("--citecheck", "--citecheck-record=once")
    result.assert_outcomes(passed=1)
    assert [(c.provider, c.model) for c in llm.calls] == [("ollama", "llama3.1")]


def test_ini_openai_compatible_with_base_url(suite: pytest.Pytester, llm: LLMDouble) -> None:
    suite.makeini(
        "[pytest]\ncitecheck_judge = openai-compatible:local-model\n"
        f"citecheck_judge_base_url = {llm.base_url('openai-compatible')}\n"
    )
    result = suite.runpytest("--citecheck", "--citecheck-record=once")
    result.assert_outcomes(passed=1)
    assert [(c.provider, c.model) for c in llm.calls] == [("openai", "local-model")]
    assert "authorization" not in {k.lower() for k in llm.calls[0].headers}
    llm.stop()
    replayed = suite.runpytest("--citecheck")
    replayed.assert_outcomes(passed=1)


def test_flag_wins_over_ini_and_file(suite: pytest.Pytester, llm: LLMDouble) -> None:
    suite.makeini("[pytest]\ncitecheck_judge = ollama:mistral\n")
    result = suite.runpytest(
        "--citecheck", "--citecheck-record=once", "--citecheck-judge=anthropic:claude-sonnet-4-6"
    )
    result.assert_outcomes(passed=1)
    assert [(c.provider, c.model) for c in llm.calls] == [("anthropic", "claude-sonnet-4-6")]
    cassette = (suite.path / "cassettes" / "citecheck_doc" / "exp.yaml").read_text()
    assert "planted-anthropic-key" not in cassette
    assert "x-api-key" not in cassette.lower()
