"""A saved conversation in a claim file's `answers:` (and through `citecheck import`): its
turns run as claims, a citation of a URL no tool returned is `url_not_retrieved` for review
(with no request made for the mark), and `--citecheck-fail-not-retrieved` fails the gate."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_citecheck.frontends.cli import main
from tests.plugin.fakes import stage_hooks
from tests.unit.test_conversations import PLANTED, planted_anthropic

# Every page says what the transcript's two cited sentences say (and the provider's
# quotes); the requests are written down, one line each.
CONFTEST = """
import os
import pytest
from pytest_citecheck.stages.fetch_rules import FetchResult
from pytest_citecheck.claims.results import JudgeReply, Usage

PAGE = (
    "The current stable version is 4.0.6. It is on the downloads page.\\n\\n"
    "Posted by k0kubun on 14 Jul 2026 · Ruby 4.0.6 has been released\\n\\n"
    "Posted by k0kubun on 14 Jul 2026 · Ruby 4.0.6 has been released. "
    "Ruby 4.0.6 was released on July 14, 2026."
)
QUOTES = {
    "The current stable version is 4.0.6.": "The current stable version is 4.0.6.",
    "Ruby 4.0.6 was released on July 14, 2026.": "Ruby 4.0.6 was released on July 14, 2026.",
}
LOG = os.path.join(os.path.dirname(__file__), "requests.log")


class CountingFetcher:
    def fetch(self, url):
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(url + "\\n")
        return FetchResult(url=url, text=PAGE, final_url=url, original_status=200)


class QuotingJudge:
    name = "fake:judge"
    prompt_version = "fake-1"

    def judge(self, claim, passages):
        return JudgeReply(label="supported", quote=QUOTES[claim], confidence=0.95,
                          usage=Usage(input_tokens=10, output_tokens=2))


class FirstPassages:
    def rank(self, claim, passages, k):
        return [(i, 1.0 - i / 10) for i in range(min(k, len(passages)))]
""" + stage_hooks("CountingFetcher", "QuotingJudge", "FirstPassages")


@pytest.fixture
def conversation(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    (pytester.path / "saved").mkdir()
    (pytester.path / "saved" / "ruby.json").write_text(json.dumps(planted_anthropic()))
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    log = pytester.path / "requests.log"
    if log.exists():
        log.unlink()
    return pytester.runpytest(
        "--citecheck",
        "--citecheck-record=all",
        "--citecheck-report=report.json",
        "--citecheck-html=report.html",
        "--citecheck-md=summary.md",
        *args,
    )


def requests(pytester: pytest.Pytester) -> list[str]:
    return (pytester.path / "requests.log").read_text(encoding="utf-8").split()


def report(pytester: pytest.Pytester) -> dict[str, object]:
    data: dict[str, object] = json.loads((pytester.path / "report.json").read_text("utf-8"))
    return data


def check_run(pytester: pytest.Pytester, xdist: tuple[str, ...] = ()) -> None:
    result = run(pytester, *xdist)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "url_not_retrieved 1: cited URL(s) that no tool result of the conversation returned*",
            # Turn 2 ("OK.") cites nothing, so no claim of it ran.
            "conversation ruby (turn 1): answer support 1.0000 (2/2 claims), ALCE citation "
            "recall 1.0000, citation precision 1.0000",
            "review (a person should look):",
            f"*supported*{PLANTED}*[[]url_not_retrieved]",
        ]
    )
    # Each cited page fetched once to verify it, the planted one too; nothing else.
    assert sorted(requests(pytester)) == sorted(
        ["https://www.ruby-lang.org/en/downloads/", PLANTED]
    )
    data = report(pytester)
    claims = data["claims"]
    assert isinstance(claims, list)
    flags = {v["url"]: v.get("url_not_retrieved", False) for c in claims for v in c["verdicts"]}
    assert {(c["conversation"], c["turn"]) for c in claims} == {("ruby", 1)}
    assert flags == {"https://www.ruby-lang.org/en/downloads/": False, PLANTED: True}
    answers = data["answers"]
    assert isinstance(answers, list)
    assert [(a["id"], a["conversation"], a["turn"]) for a in answers] == [("ruby-t1", "ruby", 1)]
    (whole,) = data["conversations"]  # type: ignore[misc]
    assert (whole["id"], whole["claims"], whole["sentences"]) == ("ruby", 2, 2)
    html = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert '<span class="turn">turn 1 of ruby</span>' in html
    assert html.count('<span class="review">url_not_retrieved</span>') == 1
    summary = (pytester.path / "summary.md").read_text(encoding="utf-8")
    assert "url_not_retrieved 1: cited URL(s) that no tool result" in summary
    failed = run(pytester, *xdist, "--citecheck-fail-not-retrieved")
    assert failed.ret == pytest.ExitCode.TESTS_FAILED
    failed.stdout.fnmatch_lines(
        [
            "citecheck gate FAILED: 1 citation cite a URL that no tool result of the "
            "conversation returned (url_not_retrieved; --citecheck-fail-not-retrieved)*"
        ]
    )


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["no-xdist", "n2"])
def test_a_saved_conversation_in_answers_runs_turn_by_turn(
    conversation: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    conversation.makefile(
        ".yaml", citecheck_saved="answers:\n  - {id: ruby, response: saved/ruby.json}\n"
    )
    check_run(conversation, xdist)


def test_an_imported_conversation_keeps_its_turns_and_the_mark(
    conversation: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    cwd = os.getcwd()
    os.chdir(conversation.path)
    try:
        (conversation.path / "saved" / "ruby.json").rename(Path("saved") / "ruby.json")
        assert main(["import", "saved", "-o", "citecheck_ruby.yaml"]) == 0
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "ruby-t1: 2 claim(s), 0 uncited sentence(s)" in out
    written = (conversation.path / "citecheck_ruby.yaml").read_text(encoding="utf-8")
    assert written.count("retrieved: false") == 1
    assert '    conversation: "ruby"\n    turn: 2' in written
    check_run(conversation)
