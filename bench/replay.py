"""How long does CI pay for replaying a citecheck suite?

Runs pytest on a suite folder (default: example_suite) several times in fresh
processes and prints a table of median wall times, each with its ratio to the
baseline measured in the same run: pytest starting with the plugin disabled.

    python bench/replay.py [SUITE] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 5):
        sys.exit(f"pytest {' '.join(args)} failed:\n{proc.stdout[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", nargs="?", default=str(ROOT / "example_suite"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    suite = Path(args.suite).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cases = [
            ("pytest, plugin disabled (baseline)", ["-p", "no:citecheck", str(suite)]),
            ("collect claims only", ["--citecheck", "--collect-only", str(suite)]),
            ("replay", ["--citecheck", f"--citecheck-report={report}", str(suite)]),
            ("replay, -n 2", ["--citecheck", "-n", "2", str(suite)]),
        ]
        timings = {name: [run(a, suite) for _ in range(args.repeat)] for name, a in cases}
        totals = json.loads(report.read_text())["totals"]
    claims, citations = totals["claims"], totals["citations"]
    base = statistics.median(timings[cases[0][0]])
    print(
        f"suite: {suite.name}, {claims} claims, {citations} citations, "
        f"median of {args.repeat} runs each"
    )
    print(f"{'case':<38} {'median s':>9} {'x baseline':>11} {'ms/citation':>12}")
    for name, _ in cases:
        median = statistics.median(timings[name])
        extra = (median - base) * 1000 / citations if name != cases[0][0] else 0.0
        print(f"{name:<38} {median:>9.2f} {median / base:>11.2f} {extra:>12.1f}")


if __name__ == "__main__":
    main()
