"""``inspect eval`` of a small task scored by citecheck_scorer, end to end: the mock model's
output carries citations (ContentText.citations), the scorer verifies them against loopback
pages and a loopback judge, records one cassette per sample, then a second ``inspect eval``
passes from those recordings with no network and no key; a contradicted citation fails its
sample's score. The eval log the run wrote imports back (`citecheck import`) into the same
claims."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import JudgeCall, Scripted, verdict
from tests.integration.test_engine import KEY, TOKENS, StableLLM, env_for

pytest.importorskip(
    "inspect_ai", reason="Inspect AI is not installed: pip install 'pytest-citecheck[inspect]'"
)

ROOT = Path(__file__).resolve().parents[2]
BOIL_URL = "https://science.example/water/boiling"
SALT_URL = "https://kitchen.example/salt-and-water"
BOILS = "Water boils at 100 degrees Celsius at sea level."
RAISES = "Adding salt raises the boiling point of water slightly."
PAGES = {
    BOIL_URL: "# Boiling point\n\n"
    + f"{BOILS} At higher altitudes it boils at a lower temperature. " * 3
    + "\n\nAir pressure falls with altitude, so the boiling point drops as you climb.\n",
    SALT_URL: "# Salt and water\n\n"
    + f"{RAISES} The effect is small for the amounts used in cooking. " * 3
    + "\n\nCooks salt pasta water for taste, not to change how fast it boils.\n",
}
CLAIM_BOILS = "Water boils at 100 degrees Celsius at sea level."
CLAIM_SALT = "Adding salt lowers the boiling point of water."

EXAMPLE = ROOT / "docs" / "examples" / "inspect"


def judge(call: JudgeCall) -> Scripted:
    """Supported on the boiling page, contradicted on the salt page (quoting it)."""
    text = " ".join(call.passages)
    if RAISES in text:
        return verdict("contradicted", RAISES, 0.95)
    if BOILS in text:
        return verdict("supported", BOILS, 0.95)
    return verdict("not_found", None, 0.9)


def copy_example(tmp_path: Path) -> Path:
    """docs/examples/inspect's task, alone in a folder: its cassettes are made anew."""
    task = tmp_path / "cited_task.py"
    shutil.copy(EXAMPLE / "cited_task.py", task)
    return task


def inspect_eval(
    task: Path, logs: Path, env: dict[str, str], cwd: Path | None = None
) -> dict[str, Any]:
    """Run ``inspect eval`` in a child process; the JSON log it wrote."""
    keep = {k: v for k, v in os.environ.items() if not k.endswith(("_KEY", "_TOKEN"))}
    keep.pop("CITECHECK_RECORD", None)
    child_env = {
        **keep,
        **env,
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "INSPECT_TELEMETRY": "",
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "inspect_ai",
            "eval",
            task.relative_to(cwd or task.parent).as_posix(),
            "--log-dir",
            str(logs),
            "--log-format",
            "json",
            "--display",
            "plain",
        ],
        cwd=cwd or task.parent,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (log,) = sorted(logs.glob("*.json"))
    data: dict[str, Any] = json.loads(log.read_text(encoding="utf-8"))
    return data


def scores(log: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["id"]: s["scores"]["citecheck_scorer"] for s in log["samples"]}


def check_scores(log: dict[str, Any]) -> None:
    """The boiling sample passes (its one cited sentence supported), the salt sample fails
    (its citation contradicted, the page's sentence quoted); the task's means."""
    by_sample = scores(log)
    boiling, salt = by_sample["boiling"], by_sample["salt"]
    assert boiling["value"] == {
        "passed": 1.0,
        "support": 1.0,
        "citation_precision": 1.0,
        "citation_recall": 0.5,  # one of the two sentences is cited and supported
    }
    assert "supported: " + CLAIM_BOILS in boiling["explanation"]
    assert boiling["metadata"]["uncited"] == ["Nobody cited this sentence."]
    assert salt["value"]["passed"] == 0.0
    assert salt["value"]["support"] == 0.0
    assert f"{SALT_URL}: contradicted" in salt["explanation"]
    assert RAISES in salt["explanation"]
    (claim,) = salt["metadata"]["claims"]
    assert claim["label"] == "contradicted"
    assert claim["citations"][0]["evidence_quote"] == RAISES
    means = {s["name"]: s["metrics"]["mean"]["value"] for s in log["results"]["scores"]}
    assert means == {
        "passed": 0.5,
        "support": 0.5,
        "citation_precision": 0.5,
        "citation_recall": 0.25,
    }


def test_inspect_eval_records_then_passes_offline_and_fails_a_contradicted_citation(
    tmp_path: Path,
) -> None:
    task = copy_example(tmp_path)
    with CrawlbaseDouble(tokens=TOKENS) as api, StableLLM(judge, api_key=KEY) as llm:
        for url, text in PAGES.items():
            api.add(url, Page(markdown=text))
        recorded = inspect_eval(
            task, tmp_path / "logs-record", {**env_for(api, llm), "CITECHECK_RECORD": "once"}
        )
        crawled = sorted({c.url for c in api.api_calls})
    assert crawled == sorted(PAGES)
    assert sorted(p.name for p in (tmp_path / "cassettes").iterdir()) == [
        "boiling.yaml",
        "salt.yaml",
    ]
    # Replay: no key, no token, the services' addresses dead: only the cassettes answer.
    dead = env_for("http://127.0.0.1:9", "http://127.0.0.1:9/v1", keys=False)
    replayed = inspect_eval(task, tmp_path / "logs-replay", dead)
    check_scores(recorded)
    check_scores(replayed)


def test_the_documented_example_replays_offline_from_its_committed_cassettes(
    tmp_path: Path,
) -> None:
    """docs/inspect.md's command, `inspect eval docs/examples/inspect/cited_task.py`, as a
    user pastes it: no key, no token, no network."""
    dead = env_for("http://127.0.0.1:9", "http://127.0.0.1:9/v1", keys=False)
    check_scores(inspect_eval(EXAMPLE / "cited_task.py", tmp_path / "logs", dead, cwd=ROOT))


def test_citecheck_import_reads_the_eval_log_into_the_scorers_claims(tmp_path: Path) -> None:
    """The log `inspect eval` wrote (.eval, its default format, and .json) imports into a
    claim file with the claims the scorer verified: one per cited sentence, its URL."""
    from inspect_ai.log import EvalLog, EvalSample, write_eval_log
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageUser,
        ContentText,
        ModelOutput,
        UrlCitation,
    )

    from pytest_citecheck.claims.importers.inspect_log import import_eval_log
    from pytest_citecheck.frontends.cli import main

    message = ChatMessageAssistant(
        content=[
            ContentText(
                text=CLAIM_BOILS,
                citations=[UrlCitation(url=BOIL_URL, cited_text="boils at 100 degrees Celsius")],
            ),
            ContentText(text=" Nobody cited this sentence."),
        ]
    )
    sample = EvalSample(
        id="boiling",
        epoch=1,
        input="How hot does water boil?",
        target="",
        messages=[ChatMessageUser(content="How hot does water boil?"), message],
        output=ModelOutput.from_message(message),
    )
    log = EvalLog.model_validate(
        {
            "eval": {
                "task": "cited",
                "dataset": {"name": "cited"},
                "model": "mockllm/model",
                "config": {},
                "created": "2026-12-04T00:00:00+00:00",
            },
            "samples": [sample.model_dump()],
        }
    )
    for suffix in ("eval", "json"):
        path = tmp_path / f"run.{suffix}"
        write_eval_log(log, str(path), format=suffix)
        (answer,) = import_eval_log(path)
        (claim,) = answer.claim_list
        assert answer.id == "boiling"
        assert claim.claim == CLAIM_BOILS
        assert [(c.url, c.quote, c.quote_by) for c in claim.citations] == [
            (BOIL_URL, "boils at 100 degrees Celsius", "provider")
        ]
        out = tmp_path / f"citecheck_{suffix}.yaml"
        assert main(["import", str(path), "-o", str(out)]) == 0
        written = out.read_text(encoding="utf-8")
        assert f"id: {claim.id}" in written and BOIL_URL in written
        assert "Nobody cited this sentence." in written  # uncited, kept as a comment
