"""What does pytest-citecheck cost a project that has it installed but does not use it?

Writes 500 plain test files, then runs ``pytest --co`` on them in fresh
processes, alternating: with the plugin loaded (no ``--citecheck``) and with
``-p no:citecheck`` (the baseline, measured in the same run). Prints median wall
time, peak RSS and the ratio to the baseline. Target: <= 1.03x.

    python bench/idle.py [--files 500] [--repeat 9]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Runs pytest in the child and reports its own peak RSS (KiB on Linux).
CHILD = (
    "import resource, sys, pytest\n"
    "code = pytest.main(sys.argv[1:])\n"
    "print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    "sys.exit(code)\n"
)


def write_suite(root: Path, files: int) -> None:
    for i in range(files):
        (root / f"test_plain_{i:04d}.py").write_text(
            f"def test_a_{i}():\n    assert {i} + 1 == {i + 1}\n\n\n"
            f"def test_b_{i}():\n    assert str({i})\n",
            encoding="utf-8",
        )
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")


def run(root: Path, extra: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system, steadier on a shared machine) and
    peak RSS (KiB) of one ``pytest --co`` in a fresh process."""
    cpu_before = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, "--co", "-q", "-p", "no:cacheprovider", *extra],
        cwd=root,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"pytest --co {' '.join(extra)} failed:\n{proc.stdout[-2000:]}{proc.stderr}")
    rss = next(int(x.split()[1]) for x in proc.stdout.splitlines() if x.startswith("MAXRSS"))
    return elapsed, _children_cpu() - cpu_before, rss


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    modes = {"-p no:citecheck (baseline)": ["-p", "no:citecheck"], "installed, idle": []}
    times: dict[str, list[float]] = {name: [] for name in modes}
    cpus: dict[str, list[float]] = {name: [] for name in modes}
    rss: dict[str, list[int]] = {name: [] for name in modes}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_suite(root, args.files)
        for extra in modes.values():  # warm the file cache and .pyc files
            run(root, extra)
        for _ in range(args.repeat):
            for name, extra in modes.items():  # alternate: drift hits both alike
                elapsed, cpu, peak = run(root, extra)
                times[name].append(elapsed)
                cpus[name].append(cpu)
                rss[name].append(peak)
    base = statistics.median(times["-p no:citecheck (baseline)"])
    base_rss = statistics.median(rss["-p no:citecheck (baseline)"])
    base_cpu = statistics.median(cpus["-p no:citecheck (baseline)"])
    print(f"pytest --co on {args.files} plain test files, median of {args.repeat} runs")
    print(
        f"{'mode':<30} {'wall s':>8} {'ratio':>7} {'cpu s':>7} {'ratio':>7} "
        f"{'peak RSS MiB':>13} {'+MiB':>6}"
    )
    for name in modes:
        wall = statistics.median(times[name])
        cpu = statistics.median(cpus[name])
        peak = statistics.median(rss[name])
        print(
            f"{name:<30} {wall:>8.3f} {wall / base:>6.3f}x {cpu:>7.3f} {cpu / base_cpu:>6.3f}x "
            f"{peak / 1024:>13.1f} {(peak - base_rss) / 1024:>+6.1f}"
        )


if __name__ == "__main__":
    main()
