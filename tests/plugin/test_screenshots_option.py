"""``--citecheck-screenshots`` through pytest: recorded against the loopback doubles, the
contradicted citation's page pictured and kept beside the cassettes, its picture in the
JSON and HTML reports, and the same from the replay with nothing listening."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.doubles.crawlbase import CrawlbaseDouble
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted, verdict
from tests.plugin.test_panel import QUOTES, doubles, suite  # noqa: F401
from tests.plugin.test_recording import record, replay, stop

# The panel suite's claims, the boiling one now wrong: its page contradicts it.
CLAIMS = """\
claims:
  - id: boiling
    claim: Water boils at 50 degrees Celsius at sea level.
    citations:
      - https://example.com/science/boiling
  - id: salt
    claim: Salt raises the boiling point slightly.
    citations:
      - https://example.com/science/boiling
"""


def boiling_contradicted(call: JudgeCall) -> Scripted:
    if (call.claim or "").startswith("Salt"):
        return verdict("supported", QUOTES["salt"], 0.9)
    return verdict("contradicted", QUOTES["boiling"], 0.9)


def _shot(report: Path) -> tuple[dict[str, object] | None, dict[str, object] | None]:
    data = json.loads(report.read_text(encoding="utf-8"))
    by_id = {c["id"]: c["verdicts"][0] for c in data["claims"]}
    return by_id["boiling"]["screenshot"], by_id["salt"]["screenshot"]


def test_the_flag_pictures_the_contradicted_page_and_the_replay_shows_it(
    suite: pytest.Pytester,  # noqa: F811
    doubles: tuple[CrawlbaseDouble, LLMDouble],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    llm.responder = llm.confirm_responder = boiling_contradicted
    suite.makefile(".yaml", citecheck_water=CLAIMS)
    flags = ("--citecheck-screenshots", "-p", "no:cacheprovider")
    outputs = ("--citecheck-html=first.html", "--citecheck-report=first.json")
    first = record(suite, doubles, monkeypatch, *flags, *outputs)
    first.assert_outcomes(failed=1, passed=1)
    assert [c.kind for c in api.screenshot_calls] == ["javascript"]
    taken, none = _shot(suite.path / "first.json")
    assert none is None
    assert taken is not None and taken["status"] == "taken" and taken["credits"] == 2.0
    stored = list(suite.path.rglob("shots/*.png"))
    assert [p.name for p in stored] == [f"{taken['sha256']}.png"]
    assert stored[0].parent.parent == next(suite.path.rglob("boiling.yaml")).parent
    outputs = ("--citecheck-html=again.html", "--citecheck-report=again.json")
    again = replay(suite, stop(api, llm), monkeypatch, *flags, *outputs)
    again.assert_outcomes(failed=1, passed=1)
    assert _shot(suite.path / "again.json") == _shot(suite.path / "first.json")
    for page in ("first.html", "again.html"):
        assert (suite.path / page).read_text(encoding="utf-8").count("data:image/png;base64,") == 1


def test_without_the_flag_no_picture_is_asked(
    suite: pytest.Pytester,  # noqa: F811
    doubles: tuple[CrawlbaseDouble, LLMDouble],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, llm = doubles
    llm.responder = llm.confirm_responder = boiling_contradicted
    suite.makefile(".yaml", citecheck_water=CLAIMS)
    run = record(suite, doubles, monkeypatch, "-p", "no:cacheprovider", "--citecheck-report=r.json")
    run.assert_outcomes(failed=1, passed=1)
    assert api.screenshot_calls == [] and api.downloads == []
    assert _shot(suite.path / "r.json") == (None, None)
    assert list(suite.path.rglob("shots")) == []
