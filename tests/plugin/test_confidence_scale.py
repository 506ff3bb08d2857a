"""A judge that grades on another scale (10, 2.0): the label stands, the number is kept,
the confidence is read as unknown so the verdict goes to review, and the summary warns
once for that judge -- recorded and replayed alike."""

from __future__ import annotations

import json

import pytest

from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted, verdict
from tests.plugin.test_panel import QUOTES, doubles, suite  # noqa: F401
from tests.plugin.test_recording import record, replay, stop

WARNING = (
    "judge openai:judge-a answered confidence on another scale than 0 to 1 (10, 2) in "
    "2 answers: labels kept, confidence read as unknown, sent to review"
)


def off_scale(call: JudgeCall) -> Scripted:
    if (call.claim or "").startswith("Salt"):
        return verdict("supported", QUOTES["salt"], 2.0)
    return verdict("supported", QUOTES["boiling"], 10)


@pytest.mark.allow_resend(
    "runs the same claims more than once on purpose (record, replay, recheck, compare)"
)
def test_confidence_10_and_2_keep_the_label_go_to_review_and_warn_once(
    suite: pytest.Pytester,  # noqa: F811
    doubles: tuple[CrawlbaseDouble, LLMDouble],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    llm.responder = off_scale
    args = ("--citecheck-judge=openai:judge-a", "-p", "no:cacheprovider")
    first = record(suite, doubles, monkeypatch, *args, "--citecheck-report=first.json")
    again = replay(suite, stop(api, llm), monkeypatch, *args, "--citecheck-report=again.json")
    for run in (first, again):
        run.assert_outcomes(passed=2)
        out = run.stdout.str()
        assert out.count("answered confidence on another scale") == 1, out
        run.stdout.fnmatch_lines(
            [
                WARNING,
                "review (a person should look):",
                "  supported    n/a  citecheck_water.yaml::boiling  *",
                "  supported    n/a  citecheck_water.yaml::salt  *",
            ]
        )
    report = json.loads((suite.path / "again.json").read_text())
    verdicts = [c["verdicts"][0] for c in report["claims"]]
    assert [(v["label"], v["confidence"], v["confidence_raw"], v["review"]) for v in verdicts] == [
        ("supported", None, 10.0, True),
        ("supported", None, 2.0, True),
    ]
    assert report == {
        **report,
        "claims": json.loads((suite.path / "first.json").read_text())["claims"],
    }
