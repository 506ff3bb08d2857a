"""What the joint judgment costs and changes on the examples: calls, tokens, figures.

    python bench/joint.py

Replays ``example_suite/`` and the example answers (``example_suite/answers/``, offline,
their committed cassettes: the replies and their token counts were recorded against the
loopback doubles by ``scripts/record_examples.py``) twice in the same run: with
``--citecheck-no-joint`` (the baseline: what a judge reading one citation at a time gives)
and with the joint judgment (the default). For each it prints the judge calls and tokens
(first readings, confirmations, joint judgments), the citation precision, and, for the
answers, ALCE's citation recall and precision. Token counts are the doubles' (about four
characters a token, as the recorder scripts them): the ratios carry over to a real judge,
whose prompt is the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "example_suite"
ANSWERS = SUITE / "answers"
UNSET = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CRAWLBASE_TOKEN", "CITECHECK_CRAWLBASE_URL")


def replay(target: Path, *args: str) -> dict[str, Any]:
    """The JSON report of replaying ``target``."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        env = {k: v for k, v in os.environ.items() if k not in UNSET}
        command = [sys.executable, "-m", "pytest", "--citecheck", "-p", "no:cacheprovider"]
        result = subprocess.run(
            [*command, "-q", f"--citecheck-report={report}", *args, str(target)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        # Without the joint judgment the two-source claim misses its ``expect:`` (exit 1).
        if result.returncode not in (0, 1) or not report.is_file():
            sys.exit(f"{target.name} did not replay:\n{result.stdout}")
        data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
        return data


def calls(report: dict[str, Any]) -> dict[str, tuple[int, int, int]]:
    """Judge calls and tokens (in, out): first readings, confirmations, joint judgments."""
    verdicts = [v for claim in report["claims"] for v in claim["verdicts"]]
    first = [v["usage"] for v in verdicts if v.get("judge") and v.get("usage")]
    confirmations = [
        v["confirmation"]["usage"]
        for v in verdicts
        if v.get("confirmation") and v["confirmation"].get("usage")
    ]
    joint = report.get("joint") or {}
    return {
        "first readings": _summed(first),
        "confirmations": _summed(confirmations),
        "joint judgments": (
            joint.get("calls", 0),
            joint.get("input_tokens", 0),
            joint.get("output_tokens", 0),
        ),
    }


def _summed(usages: list[dict[str, int]]) -> tuple[int, int, int]:
    return (
        len(usages),
        sum(u["input_tokens"] for u in usages),
        sum(u["output_tokens"] for u in usages),
    )


def figures(report: dict[str, Any]) -> dict[str, str]:
    totals = report["totals"]
    out = {
        "claims supported": str(sum(claim["label"] == "supported" for claim in report["claims"])),
        "citation precision": f"{totals['citation_precision']:.4f}",
    }
    answers = report.get("answer_totals")
    if answers:
        out["ALCE citation recall"] = f"{answers['citation_recall']:.4f}"
        out["ALCE citation precision"] = f"{answers['citation_precision']:.4f}"
    return out


def main() -> None:
    answers = ("-o", "citecheck_patterns=answers.yaml")
    runs = {
        "example suite": (SUITE, ()),
        "example answers": (ANSWERS, answers),
    }
    for name, (target, args) in runs.items():
        baseline = replay(target, *args, "--citecheck-no-joint")
        joint = replay(target, *args)
        print(f"{name} ({len(joint['claims'])} claims), baseline --citecheck-no-joint vs joint:")
        print(f"| {'':<24} | {'no joint':>24} | {'joint':>24} |")
        print(f"|{'-' * 26}|{'-' * 25}:|{'-' * 25}:|")
        before, after = calls(baseline), calls(joint)
        for row in before:
            shown = [f"{c} calls, {i}/{o} tok" for c, i, o in (before[row], after[row])]
            print(f"| {row:<24} | {shown[0]:>24} | {shown[1]:>24} |")
        for row, value in figures(baseline).items():
            print(f"| {row:<24} | {value:>24} | {figures(joint)[row]:>24} |")
        c, i, o = after["joint judgments"]
        first_in = after["first readings"][1]
        print(
            f"{name}: joint_calls={c} input_tokens={i} output_tokens={o} "
            f"({i / first_in:.0%} of the first readings' input tokens)"
        )


if __name__ == "__main__":
    main()
