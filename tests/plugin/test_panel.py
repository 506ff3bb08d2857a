"""A judge panel through pytest: options and a claim file's ``judges:``, recorded against
the loopback doubles and replayed offline; the panel in ``-v``, the summary, JSON, CSV and
HTML; the agreement floor; and a run without a panel unchanged."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator

import pytest

from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted, verdict
from tests.plugin.test_recording import ARTICLE, RANKER_CONFTEST, SECRETS, record, replay, stop

CLAIMS = """\
claims:
  - id: boiling
    claim: Water boils at 100 degrees Celsius at sea level.
    citations:
      - https://example.com/science/boiling
  - id: salt
    claim: Salt raises the boiling point slightly.
    citations:
      - https://example.com/science/boiling
"""
PANEL = "openai:judge-a,openai:judge-b,openai:judge-c"
QUOTES = {
    "boiling": "Water boils at 100 degrees Celsius at sea level.",
    "salt": "Salt raises the boiling point slightly, by a fraction of a degree.",
}


def respond(call: JudgeCall) -> Scripted:
    """judge-a and judge-b support both claims; judge-c finds nothing for the salt claim."""
    claim = call.claim or ""
    key = "salt" if claim.startswith("Salt") else "boiling"
    if call.model == "judge-c" and key == "salt":
        return verdict("not_found", None, 0.7)
    return verdict("supported", QUOTES[key], 0.9 if call.model == "judge-a" else 0.85)


@pytest.fixture
def doubles() -> Iterator[tuple[CrawlbaseDouble, LLMDouble]]:
    tokens = {"normal": SECRETS["CRAWLBASE_TOKEN"], "javascript": SECRETS["CRAWLBASE_JS_TOKEN"]}
    with (
        CrawlbaseDouble(tokens=tokens) as api,
        LLMDouble(respond, api_key=SECRETS["OPENAI_API_KEY"]) as llm,
    ):
        api.add("https://example.com/science/boiling", Page(markdown=ARTICLE))
        yield api, llm


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest(RANKER_CONFTEST)
    pytester.makefile(".yaml", citecheck_water=CLAIMS)
    for name in (*SECRETS, "CITECHECK_CRAWLBASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return pytester


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_a_panel_records_once_and_replays_offline_with_every_report_showing_it(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    args = (f"--citecheck-judges={PANEL}", "-v")
    recorded = record(suite, doubles, monkeypatch, *args, "--citecheck-report=recorded.json")
    recorded.assert_outcomes(passed=2)
    assert len([c for c in llm.calls if c.provider == "openai"]) == 6
    files = ["r.json", "r.csv", "r.html"]
    replayed = replay(
        suite,
        stop(api, llm),
        monkeypatch,
        *args,
        f"--citecheck-report={files[0]}",
        f"--citecheck-csv={files[1]}",
        f"--citecheck-html={files[2]}",
        "--citecheck-md=r.md",
    )
    replayed.assert_outcomes(passed=2)
    replayed.stdout.fnmatch_lines(
        [
            "*citecheck_water.yaml::boiling PASSED [[]supported panel sss]*",
            "*citecheck_water.yaml::salt PASSED [[]supported panel ssn]*",
            "judge panel: 2 citations, 1 unanimous (agreement 0.5000)",
            "  pairwise 1:openai:judge-a ~ 2:openai:judge-b: 1.0000",
            "  pairwise 1:openai:judge-a ~ 3:openai:judge-c: 0.5000",
            "  pairwise 2:openai:judge-b ~ 3:openai:judge-c: 0.5000",
            "review (a person should look):",
            "  supported    0.67  citecheck_water.yaml::salt  https://example.com/science/boiling"
            "  [[]panel split]",
            "citecheck gate passed",
        ]
    )
    report = json.loads((suite.path / "r.json").read_text())
    before = json.loads((suite.path / "recorded.json").read_text())
    assert report["claims"] == before["claims"]
    assert report["run"]["judges"] == ["openai:judge-a", "openai:judge-b", "openai:judge-c"]
    assert report["panel"] == {
        "citations": 2,
        "unanimous": 1,
        "unanimous_share": 0.5,
        "pairwise_agreement": {
            "1:openai:judge-a ~ 2:openai:judge-b": 1.0,
            "1:openai:judge-a ~ 3:openai:judge-c": 0.5,
            "2:openai:judge-b ~ 3:openai:judge-c": 0.5,
        },
        "members": 3,
        "failed_members": [],
        "not_recorded": 0,
    }
    salt = report["claims"][1]["verdicts"][0]
    assert [(m["judge"], m["label"], m["confidence"]) for m in salt["panel"]] == [
        ("openai:judge-a", "supported", 0.9),
        ("openai:judge-b", "supported", 0.85),
        ("openai:judge-c", "not_found", 0.7),
    ]
    assert salt["confidence"] == 0.6667 and salt["review"] is True
    rows = list(csv.DictReader((suite.path / "r.csv").open()))
    assert rows[1]["member_3_judge"] == "openai:judge-c"
    assert rows[1]["member_3_label"] == "not_found"
    assert rows[1]["member_1_quote"] == QUOTES["salt"]
    markdown = (suite.path / "r.md").read_text()
    assert "Judge panel: 2 citations, 1 unanimous (agreement 0.5000)" in markdown
    html = (suite.path / "r.html").read_text()
    assert html.count('class="panel"') == 2
    assert "openai:judge-c" in html


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_a_claim_files_judges_make_the_panel_and_the_agreement_floor_gates(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    suite.makefile(
        ".yaml",
        citecheck_water="judges: [openai:judge-a, openai:judge-b, openai:judge-c]\n" + CLAIMS,
    )
    record(suite, doubles, monkeypatch).assert_outcomes(passed=2)
    urls = stop(api, llm)
    result = replay(suite, urls, monkeypatch, "--citecheck-min-agreement=0.75")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "citecheck gate FAILED: panel agreement 0.5000 (1/2 citations unanimous) is below "
            "citecheck_min_agreement 0.7500"
        ]
    )
    unanimous = replay(suite, urls, monkeypatch, "--citecheck-panel-rule=unanimous", "-v")
    unanimous.stdout.fnmatch_lines(["*::salt PASSED [[]not_found panel ssn]*"])


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_without_a_panel_nothing_about_panels_is_printed_or_written(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    record(suite, doubles, monkeypatch, "--citecheck-judge=openai:judge-c")
    result = replay(
        suite,
        stop(api, llm),
        monkeypatch,
        "--citecheck-judge=openai:judge-c",
        "--citecheck-report=r.json",
        "--citecheck-csv=r.csv",
        "-v",
    )
    result.stdout.fnmatch_lines(["*::salt PASSED [[]not_found]*"])
    assert "judge panel:" not in result.stdout.str()
    assert "[not_found panel" not in result.stdout.str()
    report = json.loads((suite.path / "r.json").read_text())
    assert "panel" not in report
    assert all(
        "panel" not in v and "judge_label" not in v for c in report["claims"] for v in c["verdicts"]
    )
    header = (suite.path / "r.csv").read_text().splitlines()[0]
    assert "member_" not in header


def test_a_bad_panel_option_or_file_key_says_what_to_write(
    suite: pytest.Pytester,
) -> None:
    result = suite.runpytest("--citecheck", "--citecheck-judges=openai:a,,gpt-4o")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*'gpt-4o' is not PROVIDER:MODEL*"])
    suite.makefile(".yaml", citecheck_water="judges: openai:judge-a\n" + CLAIMS)
    bad = suite.runpytest("--citecheck")
    bad.stdout.fnmatch_lines(
        ["*citecheck_water.yaml:1*'judges' must be a list of provider:model specs*"]
    )


def test_an_unknown_provider_in_the_panel_is_a_usage_error(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--citecheck", "--citecheck-judges=openai:a,nosuch:model")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*judge panel member nosuch:model: unknown judge provider*"])


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.mark.parametrize("min_votes", [None, "2"])
@pytest.mark.allow_resend(
    "retries a fault on purpose: the double fails a request and it is sent again"
)
def test_a_member_on_a_closed_port_is_named_and_the_next_run_says_the_same(
    suite: pytest.Pytester,
    doubles: tuple[CrawlbaseDouble, LLMDouble],
    monkeypatch: pytest.MonkeyPatch,
    min_votes: str | None,
) -> None:
    api, llm = doubles
    down = f"http://127.0.0.1:{closed_port()}/v1"
    monkeypatch.setenv("CITECHECK_JUDGE_BASE_URL", down)
    args = [
        "--citecheck-judges=openai:judge-a,openai:judge-b,openai-compatible:down",
        "--citecheck-timeout=2",
        "-p",
        "no:cacheprovider",
    ]
    if min_votes:
        args.append(f"--citecheck-panel-min-votes={min_votes}")
    first = record(
        suite,
        doubles,
        monkeypatch,
        *args,
        "--citecheck-report=first.json",
        "--citecheck-md=first.md",
        "--citecheck-html=first.html",
    )
    first.stdout.fnmatch_lines(
        [
            "  panel member openai-compatible:down failed on 2 citations: judge_unavailable "
            f"(could not reach the openai-compatible:down judge at {down}/chat/completions*",
        ]
    )
    again = replay(suite, stop(api, llm), monkeypatch, *args, "--citecheck-report=again.json")
    before = json.loads((suite.path / "first.json").read_text())
    for page in ("first.md", "first.html"):
        text = (suite.path / page).read_text()
        assert "panel member openai-compatible:down failed on 2 citations: judge_unavailable" in (
            text
        ), page
    after = json.loads((suite.path / "again.json").read_text())
    if min_votes is None:
        first.assert_outcomes(failed=2)
        first.stdout.fnmatch_lines(
            ["  not recorded: 2 claims whose panel lacked votes; rerun them*"]
        )
        assert {v["reason"] for c in before["claims"] for v in c["verdicts"]} == {
            "panel_incomplete"
        }
        assert before["panel"]["failed_members"][0]["judge"] == "openai-compatible:down"
        # Nothing was saved: the next run says so per claim, as the first one did.
        again.assert_outcomes(failed=2)
        assert {v["reason"] for c in after["claims"] for v in c["verdicts"]} == {"no_recording"}
    else:
        first.assert_outcomes(passed=2)
        again.assert_outcomes(passed=2)
        assert after["claims"] == before["claims"]
        again.stdout.fnmatch_lines(["  panel member openai-compatible:down failed on 2 citations*"])
