"""What the confirmation costs on the example suite: extra judge calls and tokens.

    python bench/confirm.py

Replays ``example_suite/`` (offline, its committed cassettes: the judge replies and
their token counts were recorded against the loopback doubles by
``scripts/record_examples.py``) with a JSON report, and counts, from that one run:

- the first readings (today's figures): judge calls and their tokens;
- the confirmation calls (``stages/confirm.py``): calls and their tokens, and how many
  did not confirm;

then the confirmation's share of the judge calls and tokens. Token counts are the
doubles' (about four characters a token, as the recorder scripts them): the ratio is
what carries over to a real judge, whose prompt is the same.
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
UNSET = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CRAWLBASE_TOKEN", "CITECHECK_CRAWLBASE_URL")


def replay_report() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        env = {k: v for k, v in os.environ.items() if k not in UNSET}
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "--citecheck",
                "-p",
                "no:cacheprovider",
                "-q",
                f"--citecheck-report={report}",
                str(SUITE),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            sys.exit(f"the example suite did not pass in replay:\n{result.stdout}")
        data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
        return data


def main() -> None:
    report = replay_report()
    verdicts = [v for claim in report["claims"] for v in claim["verdicts"]]
    first = [v for v in verdicts if v.get("judge") and v.get("usage")]
    confirmations = [v["confirmation"] for v in verdicts if v.get("confirmation")]
    asked = [c for c in confirmations if c["status"] != "not_recorded"]
    rows = {
        "first readings (today)": (
            len(first),
            sum(v["usage"]["input_tokens"] for v in first),
            sum(v["usage"]["output_tokens"] for v in first),
        ),
        "confirmation calls": (
            len(asked),
            sum(c["usage"]["input_tokens"] for c in asked if c.get("usage")),
            sum(c["usage"]["output_tokens"] for c in asked if c.get("usage")),
        ),
    }
    total = tuple(sum(r[i] for r in rows.values()) for i in range(3))
    print(
        f"example suite: {len(report['claims'])} claims, {len(verdicts)} citations, "
        f"{len(first)} judged"
    )
    print(f"| {'':<24} | {'calls':>5} | {'tokens in':>9} | {'tokens out':>10} |")
    print(f"|{'-' * 26}|{'-' * 6}:|{'-' * 10}:|{'-' * 11}:|")
    for name, (calls, tin, tout) in (*rows.items(), ("total", total)):
        print(f"| {name:<24} | {calls:>5} | {tin:>9} | {tout:>10} |")
    calls, tin, tout = rows["confirmation calls"]
    base_calls, base_in, base_out = rows["first readings (today)"]
    print(
        f"confirmation adds {calls / base_calls:.0%} judge calls, {tin / base_in:.0%} input "
        f"tokens, {tout / base_out:.0%} output tokens; "
        f"{sum(c['status'] == 'unconfirmed' for c in confirmations)} unconfirmed, "
        f"{sum(c['status'] == 'not_recorded' for c in confirmations)} not recorded"
    )
    print(f"confirm: calls={calls} input_tokens={tin} output_tokens={tout}")


if __name__ == "__main__":
    main()
