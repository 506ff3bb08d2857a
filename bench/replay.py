"""How cheap is replay? The engine against the floor of a bare VCR.py + httpx loop.

1. Records N claims (default 1,000; one URL citation each, over 20 WiCE pages)
   against the loopback doubles with the engine (model-free ranker).
2. Times, in fresh processes, alternately and ``--repeat`` times each:
   - the floor: for every cassette, ``vcr.use_cassette`` and the cassette's own
     requests sent through an httpx client (the request list is read before
     the clock starts);
   - the engine: ``Engine.verify`` of every claim from its cassette, as the
     plugin does in replay (the whole pipeline: fetch rules, passages, the
     recorded retrieval, the judge reply, the guard).
   The engine process also reports whether torch, sentence-transformers or
   transformers were imported (they must not be). Printed: each back-to-back
   pair's ratio, the CPU-time ratio (steadier on a shared machine) and, last,
   ``replay: ratio=<engine median / floor median>``.
3. Runs ``pytest --citecheck`` over M claims (default 10,000: the recordings
   reused under ten claim files) and prints its wall time and peak RSS.

    python bench/replay.py [--claims 1000] [--repeat 3] [--memory-claims 10000] [--workers 2]

Recordings are synthetic (loopback doubles), made fresh in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import claims_for, doubles, wice_pages  # noqa: E402
from pytest_citecheck.claims.models import Claim  # noqa: E402
from pytest_citecheck.engine.core import Engine  # noqa: E402
from pytest_citecheck.engine.settings import EngineSettings, StageHooks  # noqa: E402
from tests.doubles.ranking import WordOverlap  # noqa: E402

HEAVY = ("torch", "sentence_transformers", "transformers")

BARE = """
import json, sys, time
import httpx, vcr, yaml
work = json.load(open(sys.argv[1]))
plan = []
for path in work["cassettes"]:
    data = yaml.load(open(path).read(), Loader=yaml.CSafeLoader)
    plan.append((path, [(i["request"]["method"], i["request"]["uri"],
                         (i["request"]["body"] or "").encode()) for i in data["interactions"]]))
client = httpx.Client()
start, cpu = time.perf_counter(), time.process_time()
for path, requests in plan:
    with vcr.use_cassette(path, record_mode="none"):
        for method, uri, body in requests:
            client.request(method, uri, content=body).read()
print(json.dumps({"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu}))
"""

ENGINE = f"""
HEAVY = {HEAVY!r}
import json, sys, time
from pathlib import Path
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.settings import EngineSettings
from pytest_citecheck.claims.models import Claim
work = json.load(open(sys.argv[1]))
claims = [Claim.model_validate(c) for c in work["claims"]]
paths = [Path(p) for p in work["cassettes"]]
engine = Engine.from_settings(EngineSettings(record_mode="none"), environ=work["env"])
engine.verify(claims[0], paths[0])  # build the stages before the clock starts
start, cpu = time.perf_counter(), time.process_time()
labels = [engine.verify(c, p).label for c, p in zip(claims, paths)]
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
heavy = sorted(m for m in HEAVY if m in sys.modules)
errors = labels.count("error")
print(json.dumps({{"seconds": seconds, "cpu": cpu, "heavy": heavy, "errors": errors}}))
"""


def run(code: str, work: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(work)], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        sys.exit(proc.stderr[-3000:])
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def record(tmp: Path, claims: list[Claim], pages: list) -> tuple[list[Path], dict[str, str]]:
    paths = [tmp / "cassettes" / "citecheck_bench" / f"{c.id}.yaml" for c in claims]
    where = dict(zip([c.id for c in claims], paths, strict=True))
    with doubles(pages) as env:
        settings = EngineSettings(record_mode="all", concurrency=8)
        with Engine.from_settings(settings, StageHooks(make_ranker=WordOverlap), env) as engine:
            results = engine.verify_claims_sync(claims, cassette_for=lambda c: where[c.id])
    errors = [r.id for r in results if r.label == "error"]
    if errors:
        sys.exit(f"recording failed for {len(errors)} claims, e.g. {errors[0]}")
    replay_env = {k: v for k, v in env.items() if k.endswith("_URL")}
    return paths, replay_env


def write_suite(suite: Path, claims: list[Claim], paths: list[Path], total: int) -> None:
    """``total`` claims as claim files of ``len(claims)`` each, their cassettes hard-linked."""
    per_file = len(claims)
    for part in range(total // per_file):
        stem = f"citecheck_part{part:02d}"
        folder = suite / "cassettes" / stem
        folder.mkdir(parents=True)
        lines = [
            json.dumps({"id": c.id, "claim": c.claim, "urls": [c.citations[0].url]}) for c in claims
        ]
        (suite / f"{stem}.jsonl").write_text("\n".join(lines) + "\n")
        for claim, path in zip(claims, paths, strict=True):
            os.link(path, folder / f"{claim.id}.yaml")
    (suite / "pytest.ini").write_text("[pytest]\n")


def memory_run(
    tmp: Path, claims: list[Claim], paths: list[Path], total: int, workers: int = 0
) -> tuple[float, int]:
    """``pytest --citecheck`` over ``total`` claims (``-n workers`` when > 0);
    (seconds, peak RSS in KiB of the largest process)."""
    suite = tmp / "suite"
    if not suite.exists():  # built once, shared by the serial and the -n runs
        write_suite(suite, claims, paths, total)
    xdist = f"'-n', '{workers}'" if workers else "'-p', 'no:xdist'"
    wrapper = (
        "import resource, subprocess, sys, time\n"
        "start = time.perf_counter()\n"
        "code = subprocess.run([sys.executable, '-m', 'pytest', '--citecheck', '-q',"
        f" '-p', 'no:cacheprovider', {xdist}, '-p', 'no:randomly'],"
        " stdout=subprocess.DEVNULL).returncode\n"
        "print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,"
        " code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name in ("CRAWLBASE_TOKEN", "OPENAI_API_KEY", "CITECHECK_CRAWLBASE_URL", "OPENAI_BASE_URL"):
        env.pop(name, None)
    env.update(json.loads((tmp / "work.json").read_text())["env"])
    out = subprocess.run(
        [sys.executable, "-c", wrapper], cwd=suite, capture_output=True, text=True, env=env
    ).stdout.split()
    seconds, rss, code = float(out[0]), int(out[1]), int(out[2])
    if code != 0:
        sys.exit(f"pytest over {total} replayed claims exited {code}")
    return seconds, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memory-claims", type=int, default=10_000)
    parser.add_argument(
        "--workers", type=int, default=0, help="also run the pytest step with -n WORKERS"
    )
    args = parser.parse_args()
    pages = wice_pages(20)
    claims = claims_for(pages, args.claims)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        started = time.perf_counter()
        paths, env = record(tmp, claims, pages)
        recorded_in = time.perf_counter() - started
        work = tmp / "work.json"
        work.write_text(
            json.dumps(
                {
                    "claims": [c.model_dump(mode="json") for c in claims],
                    "cassettes": [str(p) for p in paths],
                    "env": env,
                }
            )
        )
        bare: list[float] = []
        engine: list[float] = []
        bare_cpu: list[float] = []
        engine_cpu: list[float] = []
        heavy: object = None
        for _ in range(args.repeat):
            floor_run = run(BARE, work)
            bare.append(float(floor_run["seconds"]))  # type: ignore[arg-type]
            bare_cpu.append(float(floor_run["cpu"]))  # type: ignore[arg-type]
            result = run(ENGINE, work)
            engine.append(float(result["seconds"]))  # type: ignore[arg-type]
            engine_cpu.append(float(result["cpu"]))  # type: ignore[arg-type]
            heavy = result["heavy"]
            if result["errors"]:
                sys.exit(f"replay gave {result['errors']} errors")
        memory = memory_run(tmp, claims, paths, args.memory_claims) if args.memory_claims else None
        spread = (
            memory_run(tmp, claims, paths, args.memory_claims, args.workers)
            if args.memory_claims and args.workers
            else None
        )
    floor, ours = statistics.median(bare), statistics.median(engine)
    n = len(claims)
    print(
        f"{n} claims (1 citation, 2 recorded requests each) over {len(pages)} WiCE pages, "
        f"recorded in {recorded_in:.1f} s; median of {args.repeat} fresh processes each"
    )
    print(f"{'case':<44} {'s':>7} {'ms/citation':>12} {'x floor':>8}")
    print(
        f"{'bare vcr.use_cassette + httpx loop (floor)':<44} {floor:>7.2f} "
        f"{floor * 1000 / n:>12.2f} {1.0:>8.2f}"
    )
    print(
        f"{'engine replay (pipeline, guard, results)':<44} {ours:>7.2f} "
        f"{ours * 1000 / n:>12.2f} {ours / floor:>8.2f}"
    )
    print(f"heavy modules imported by the engine replay: {', '.join(heavy or []) or 'none'}")  # type: ignore[arg-type]
    pairs = [e / b for b, e in zip(bare, engine, strict=True)]
    print(
        "engine / floor per run (each pair back to back): "
        + ", ".join(
            f"{b:.2f}/{e:.2f} s = {r:.2f}x" for b, e, r in zip(bare, engine, pairs, strict=True)
        )
    )
    if memory is not None:
        seconds, rss = memory
        print(
            f"pytest --citecheck over {args.memory_claims} replayed claims: {seconds:.1f} s, "
            f"peak RSS {rss / 1024:.0f} MiB"
        )
    if spread is not None:
        seconds, rss = spread
        print(
            f"pytest --citecheck -n {args.workers} over {args.memory_claims} replayed claims: "
            f"{seconds:.1f} s, peak RSS {rss / 1024:.0f} MiB (largest process)"
        )
    # On a shared machine wall time swings with the neighbours' load; the CPU time
    # each process spent is the steadier figure of the same work.
    cpu_ratio = statistics.median(engine_cpu) / statistics.median(bare_cpu)
    print(
        f"CPU time (median): floor {statistics.median(bare_cpu):.2f} s, "
        f"engine {statistics.median(engine_cpu):.2f} s, {cpu_ratio:.2f}x"
    )
    # The figure to compare: the engine's median over the floor's (lower is faster).
    print(
        f"replay: ratio={ours / floor:.2f} (runs {min(pairs):.2f}-{max(pairs):.2f}; "
        f"CPU time {cpu_ratio:.2f})"
    )


if __name__ == "__main__":
    main()
