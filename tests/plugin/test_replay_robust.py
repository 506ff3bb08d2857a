"""Replay plays back what was recorded, and says exactly why when it cannot: a
recorded HTTP 500 stays a 500, a stale recording names what differs, a corrupt
cassette names itself and the command that fixes it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import LLMDouble
from tests.plugin.fakes import CONFTEST, SUPPORTED, claims_yaml
from tests.plugin.test_recording import CLAIMS, doubles, record, replay, stop, suite

__all__ = ["doubles", "suite"]  # fixtures shared with test_recording

REWRITE = "pytest --citecheck --citecheck-record=rewrite citecheck_water.yaml::{}"


def cassette(suite: pytest.Pytester, claim_id: str) -> Path:
    return suite.path / "cassettes" / "citecheck_water" / f"{claim_id}.yaml"


def edit(path: Path, change: Any) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


def judge_interactions(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in data["interactions"] if i["request"]["method"] == "POST"]


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_a_stale_recording_says_what_differs(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    record(suite, doubles, monkeypatch).assert_outcomes(passed=3)
    urls = stop(api, llm)
    (suite.path / "citecheck_water.yaml").write_text(
        CLAIMS.replace("Pasta water should be salted.", "Pasta water must be salted.")
    )
    result = replay(suite, urls, monkeypatch, "--citecheck-judge=openai:gpt-4o")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*citecheck_water/boiling.yaml has no reply for POST *(it differs from the recorded "
            "request in: model 'gpt-4o-mini' (now 'gpt-4o'))*",
            "*citecheck_water/pasta.yaml has no retrieval for this page and claim (claim text "
            "'Pasta water should be salted.' was recorded, now 'Pasta water must be salted.')*",
        ]
    )


def test_a_recorded_http_500_replays_as_a_500(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    record(suite, doubles, monkeypatch, "-k", "pasta").assert_outcomes(passed=1, deselected=2)
    urls = stop(api, llm)

    def server_error(data: dict[str, Any]) -> None:
        reply = judge_interactions(data)[0]  # the first reading (its confirmation follows)
        reply["response"]["status"] = {"code": 500, "message": "Internal Server Error"}
        reply["response"]["body"]["string"] = '{"error": {"message": "the model crashed"}}'

    edit(cassette(suite, "pasta"), server_error)
    result = replay(suite, urls, monkeypatch, "-k", "pasta")
    result.assert_outcomes(failed=1, deselected=2)
    out = result.stdout.str()
    assert "stale_recording" not in out and "has no reply" not in out
    result.stdout.fnmatch_lines(["*judge_http_error*", "*500*the model crashed*"])


@pytest.mark.parametrize("shape", ["header-list", "retrieval-index"])
def test_a_corrupt_cassette_names_itself_and_the_fix(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
    shape: str,
) -> None:
    api, llm = doubles
    record(suite, doubles, monkeypatch, "-k", "pasta").assert_outcomes(passed=1, deselected=2)
    urls = stop(api, llm)

    def corrupt(data: dict[str, Any]) -> None:
        if shape == "header-list":
            data["interactions"][0]["response"]["headers"]["content-type"] = [["text/markdown"]]
        else:
            retrieval = data["metadata"]["citecheck"]["retrieval"]
            for ranked in retrieval.values():
                ranked[0][0] = 99

    edit(cassette(suite, "pasta"), corrupt)
    result = replay(suite, urls, monkeypatch, "-k", "pasta")
    result.assert_outcomes(failed=1, deselected=2)
    out = result.stdout.str()
    assert "internal_error" not in out and "Traceback" not in out
    why = (
        "response header 'content-type' holds a list, not text"
        if shape == "header-list"
        else "names passage 99, but the page has"
    )
    result.stdout.fnmatch_lines(
        [
            "*the recording cassettes/citecheck_water/pasta.yaml is corrupt: "
            f"*{why}*; record it again with: {REWRITE.format('pasta')}*",
            "*corrupt_recording*",
        ]
    )


def test_an_unknown_provider_in_judge_is_an_invalid_claim_file_at_its_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED), citecheck_b="")
    (pytester.path / "citecheck_b.yaml").write_text(
        "# a file with a judge nobody builds\njudge: gemini:pro\n" + claims_yaml(SUPPORTED)
    )
    result = pytester.runpytest("--citecheck", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*invalid claim file: *citecheck_b.yaml:2: unknown judge provider 'gemini' in "
            "'gemini:pro'",
            "  fix: use PROVIDER:MODEL with PROVIDER one of openai*, or override it with "
            "--citecheck-judge or the ini option citecheck_judge",
        ]
    )
    assert "configuration_error" not in result.stdout.str()


def test_a_custom_judge_hook_may_serve_any_provider(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    (pytester.path / "citecheck_b.yaml").write_text("judge: fake:judge\n" + claims_yaml(SUPPORTED))
    result = pytester.runpytest("--citecheck", "--citecheck-record=all")
    result.assert_outcomes(passed=1)


def test_a_claim_file_link_to_a_missing_file_is_an_error_item(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", citecheck_a=claims_yaml(SUPPORTED))
    sub = pytester.mkdir("more")
    os.symlink("../gone/citecheck_lost.yaml", sub / "citecheck_lost.yaml")
    result = pytester.runpytest("--citecheck", "--citecheck-record=all")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*invalid claim file: *more/citecheck_lost.yaml: the claim file is a link to "
            "../gone/citecheck_lost.yaml, which does not exist",
            "FAILED more/citecheck_lost.yaml::invalid-claim-file*",
        ]
    )
