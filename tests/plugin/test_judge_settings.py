"""The judge ini options reach the judge; a missing base URL names its ini option."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.doubles.llm import LLMDouble

SOURCE = "# Tokens\n\nThe exp claim identifies the expiration time of the token.\n"
CLAIMS = """\
judge: openai-compatible:smollm2
claims:
  - id: exp
    claim: The exp claim gives the expiration time.
    citations:
      - document: source.md
        section: Tokens
"""
MODEL_PATH = "/home/alice/models/SmolLM2-135M-Instruct-Q8_0.gguf"


@pytest.fixture
def llm() -> Iterator[LLMDouble]:
    # llama-cpp-python's server: no json_schema; here also a model refusing temperature.
    with LLMDouble(rejects={"json_schema", "temperature"}, served_model=MODEL_PATH) as double:
        yield double


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".md", source=SOURCE)
    pytester.makefile(".yaml", citecheck_doc=CLAIMS)
    return pytester


def test_ini_settings_reach_the_judge(suite: pytest.Pytester, llm: LLMDouble) -> None:
    suite.makeini(
        "[pytest]\n"
        f"citecheck_judge_base_url = {llm.base_url('openai-compatible')}\n"
        "citecheck_judge_temperature = omit\n"
        "citecheck_judge_response_format = json_object\n"
    )
    result = suite.runpytest("--citecheck", "--citecheck-record=once")
    result.assert_outcomes(passed=1)
    [call] = llm.calls  # no first try to fall back from
    body = call.json()
    assert "temperature" not in body
    assert body["response_format"]["type"] == "json_object"
    cassette = (suite.path / "cassettes" / "citecheck_doc" / "exp.yaml").read_text()
    assert "/home/alice" not in cassette
    llm.stop()
    suite.runpytest("--citecheck").assert_outcomes(passed=1)


def test_default_settings_fall_back_and_replay_offline(
    suite: pytest.Pytester, llm: LLMDouble
) -> None:
    suite.makeini(f"[pytest]\ncitecheck_judge_base_url = {llm.base_url('openai-compatible')}\n")
    # Two claims: the fallback happens for each, the summary says it once.
    suite.makefile(
        ".yaml",
        citecheck_doc=CLAIMS
        + "  - id: exp-again\n    claim: The exp claim is the expiration time.\n"
        "    citations:\n      - document: source.md\n        section: Tokens\n",
    )
    recorded = suite.runpytest("--citecheck", "--citecheck-record=once")
    recorded.assert_outcomes(passed=2)
    # Temperature refused, json_schema refused, answered: the server's response format
    # is learnt once in the run, so every later call (the confirmation, the second
    # claim) is sent json_object at once; only the temperature is refused each time.
    kinds = [c.json()["response_format"]["type"] for c in [*llm.calls, *llm.confirmations]]
    assert kinds == ["json_schema"] * 2 + ["json_object"] * 7
    assert len(llm.calls) == 7
    assert len(llm.confirmations) == 2
    llm.stop()
    replayed = suite.runpytest("--citecheck")
    replayed.assert_outcomes(passed=2)
    for run in (recorded, replayed):
        out = run.stdout.str()
        # In the summary, once, not only as a log record nobody sees in a default run.
        assert out.count("judge openai-compatible:smollm2: the server answered HTTP") == 1, out
        run.stdout.fnmatch_lines(
            [
                "judge openai-compatible:smollm2: the server answered HTTP 400; asked again "
                "without temperature (set citecheck_judge_temperature = omit to skip the first "
                "try); the server answered HTTP *; asked again with response_format "
                '{"type": "json_object", "schema": ...} (set citecheck_judge_response_format '
                "= json_object to skip the first try)",
            ]
        )


@pytest.mark.parametrize(
    ("name", "value"),
    [("citecheck_judge_temperature", "hot"), ("citecheck_judge_response_format", "xml")],
)
def test_a_bad_ini_value_is_a_usage_error(suite: pytest.Pytester, name: str, value: str) -> None:
    suite.makeini(f"[pytest]\n{name} = {value}\n")
    result = suite.runpytest("--citecheck")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*ini option {name}*{value}*"])


def test_replay_without_a_base_url_names_the_ini_option(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--citecheck")
    assert result.ret != 0
    assert "citecheck_judge_base_url" in result.stdout.str() + result.stderr.str()


def test_an_ini_judge_without_a_base_url_is_a_usage_error_naming_it(
    suite: pytest.Pytester,
) -> None:
    suite.makeini("[pytest]\ncitecheck_judge = openai-compatible:smollm2\n")
    result = suite.runpytest("--citecheck")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*set the ini option citecheck_judge_base_url*"])
