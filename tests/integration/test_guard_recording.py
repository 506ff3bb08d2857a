"""The quote policy is recorded with the claim's cassette: replaying a judge reply under
another mode or threshold is a stale recording, like a prompt change."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.core.errors import StageFailed
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.recording.recorder import open_recording
from pytest_citecheck.recording.transport import StageTransport
from pytest_citecheck.stages.judges import make_judge
from pytest_citecheck.stages.quote_policy import EXACT, QuotePolicy
from tests.doubles.llm import LLMDouble, verdict
from tests.e2e.test_example_suite import UNSET
from tests.integration.test_judges import KEYS, NO_SLEEP

CLAIM = "Water boils at 100 degrees Celsius at sea level."
PASSAGES = ["At sea level, water boils at 100 degrees Celsius (212 degrees Fahrenheit)."]
FUZZY = QuotePolicy("fuzzy", 0.9)
NODEID = "citecheck_water.yaml::boiling"


def _client() -> httpx.Client:
    """A judge client whose requests go through the current claim's cassette."""
    return httpx.Client(transport=StageTransport())


def record(cassette: Path, policy: dict[str, Any] | None) -> str:
    """Record one judge call under ``policy``; the base URL the replay must use."""
    with LLMDouble() as llm:
        base_url = llm.base_url("openai")
        llm.script(verdict("supported", "water boils at 100 degrees Celsius", 0.93))
        judge = make_judge(
            "openai:m", environ=KEYS, base_url=base_url, retry=NO_SLEEP, client=_client()
        )
        with open_recording(
            cassette, "once", NODEID, {}, quote_policy=policy, terms=PLUGIN_TERMS
        ) as recording:
            recording.judge(judge).judge(CLAIM, PASSAGES)
            recording.finish(ok=True)
        judge.close()
    return base_url


def replay(cassette: Path, base_url: str, policy: QuotePolicy) -> str:
    judge = make_judge(
        "openai:m",
        environ={},
        base_url=base_url,
        require_key=False,
        retry=NO_SLEEP,
        client=_client(),
    )
    try:
        with open_recording(
            cassette, "none", NODEID, {}, quote_policy=policy.metadata(), terms=PLUGIN_TERMS
        ) as recording:
            checked = recording.judge(judge)
            assert checked.name == "openai:m"
            return checked.judge(CLAIM, PASSAGES).label
    finally:
        judge.close()


def test_the_policy_is_written_into_the_cassette_metadata(tmp_path: Path) -> None:
    cassette = tmp_path / "boiling.yaml"
    record(cassette, FUZZY.metadata())
    meta = yaml.safe_load(cassette.read_text())["metadata"]["citecheck"]
    assert meta["quote_match"] == "fuzzy"
    assert meta["quote_similarity"] == 0.9


@pytest.mark.parametrize(
    ("recorded", "current", "message"),
    [
        (EXACT, FUZZY, "made with quote match exact, the current setting is quote match fuzzy"),
        (FUZZY, EXACT, "made with quote match fuzzy (similarity 0.9), the current setting is"),
        (
            FUZZY,
            QuotePolicy("fuzzy", 0.8),
            "the current setting is quote match fuzzy (similarity 0.8)",
        ),
    ],
)
def test_a_changed_policy_makes_the_recording_stale(
    tmp_path: Path, recorded: QuotePolicy, current: QuotePolicy, message: str
) -> None:
    cassette = tmp_path / "boiling.yaml"
    base_url = record(cassette, recorded.metadata())
    assert replay(cassette, base_url, recorded) == "supported"
    with pytest.raises(StageFailed) as failed:
        replay(cassette, base_url, current)
    assert failed.value.reason == Reason.STALE_RECORDING
    assert message in failed.value.detail
    assert failed.value.detail.endswith(
        "record it with: pytest --citecheck --citecheck-record=rewrite "
        "citecheck_water.yaml::boiling"
    )


def test_a_cassette_from_before_quote_policies_was_recorded_exact(tmp_path: Path) -> None:
    cassette = tmp_path / "boiling.yaml"
    base_url = record(cassette, None)
    assert "quote_match" not in cassette.read_text()
    assert replay(cassette, base_url, EXACT) == "supported"
    with pytest.raises(StageFailed, match="made with quote match exact"):
        replay(cassette, base_url, FUZZY)


def test_a_threshold_change_in_exact_mode_changes_nothing(tmp_path: Path) -> None:
    cassette = tmp_path / "boiling.yaml"
    base_url = record(cassette, EXACT.metadata())
    assert replay(cassette, base_url, QuotePolicy("exact", 0.5)) == "supported"


def test_no_cassette_is_still_no_recording_not_stale(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    with open_recording(
        missing, "none", NODEID, {}, quote_policy=FUZZY.metadata(), terms=PLUGIN_TERMS
    ) as recording:
        # Nothing to compare with: the judge call itself reports the missing recording.
        recording.check_quote_policy()


def test_replaying_the_example_suite_under_fuzzy_asks_for_a_re_recording(
    tmp_path: Path,
) -> None:
    """End to end: the shipped cassettes were recorded exact; switching to fuzzy makes each
    judged citation stale (with the command), the 404 still replays as unreachable."""
    suite = tmp_path / "suite"
    shutil.copytree(Path(__file__).resolve().parents[2] / "example_suite", suite)
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--citecheck",
            "-p",
            "no:cacheprovider",
            "--citecheck-quote-match=fuzzy",
            "--citecheck-report=report.json",
            "citecheck_boiling.yaml",
        ],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((suite / "report.json").read_text())
    policy = {k: v for k, v in report["run"].items() if k.startswith("quote_")}
    assert policy == {"quote_match": "fuzzy", "quote_similarity": 0.9}
    verdicts = {(c["id"], v["url"]): v for c in report["claims"] for v in c["verdicts"]}
    gone = verdicts[("boiling-point", "https://example.com/old-report")]
    assert gone["label"] == "unreachable"
    for key in [
        ("boiling-point", "https://example.com/articles/water-boiling-point"),
        ("boiling-point-50-degrees", "https://example.com/articles/water-boiling-point"),
    ]:
        assert verdicts[key]["label"] == "error"
        assert verdicts[key]["reason"] == "stale_recording"
        assert "made with quote match exact" in verdicts[key]["detail"]
        assert (
            f"--citecheck-record=rewrite citecheck_boiling.yaml::{key[0]}"
            in (verdicts[key]["detail"])
        )
