"""``citecheck recheck``: fetch recorded citations live again (citation rot)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from pytest_citecheck.frontends.cli.common import (
    EXIT_GATE_FAILED,
    EXIT_OK,
    UsageError,
    batch_terms,
    engine_settings,
    read_batch,
)
from pytest_citecheck.frontends.cli.jobs import check_js_crawler, run_job


def run_recheck(args: argparse.Namespace, out: TextIO | None = None) -> int:
    import os

    from pytest_citecheck.core.defaults import RecheckStatus
    from pytest_citecheck.core.errors import ConfigurationError
    from pytest_citecheck.engine.recheck import ClaimRecheck, Rechecker
    from pytest_citecheck.engine.settings import StageHooks
    from pytest_citecheck.engine.sources import ClaimSet
    from pytest_citecheck.large_audit.recheck_work import RecheckWork
    from pytest_citecheck.reports.finish import finish_recheck
    from pytest_citecheck.reports.outputs import Outputs

    out = out or sys.stdout
    check_js_crawler(args)
    batch = read_batch(args.files, Path.cwd())
    for problem in batch.problems:
        print(problem, file=sys.stderr)
    settings = engine_settings(args, batch_terms(batch.files, args.cassettes))
    # --via-crawler: the live fetches are answered from the Crawler job's deliveries.
    from pytest_citecheck.large_audit.assemble import delivery_transport

    transport = (
        delivery_transport(os.environ, args.js_crawler) if args.via_crawler is not None else None
    )
    hooks = StageHooks(make_transport=lambda: transport) if transport is not None else None

    from pytest_citecheck.recording.recorder import cassette_path

    def cassette(key: str) -> Path:
        claim, path = batch.claims[key], batch.files[key]
        return cassette_path(path, claim.id, args.cassettes)

    with Rechecker(settings, update=args.update, hooks=hooks) as rechecker:
        try:
            rechecker.preflight(cassette(k) for k in batch.claims)
        except ConfigurationError as exc:
            raise UsageError(str(exc)) from None

        if transport is not None:
            claims = [(k, batch.claims[k], batch.files[k], cassette(k)) for k in batch.claims]
            try:
                done = run_job(
                    args,
                    RecheckWork(rechecker),
                    transport,
                    claims,
                    lambda key, result: None,
                    loop=rechecker.live.loop,
                    environ=os.environ,
                )
            finally:
                transport.close()  # this command's: the engines only borrowed it
            if done is None:
                return EXIT_GATE_FAILED
            results = [done[k] for k in batch.claims]
        else:
            keys = list(batch.claims)

            def recheck(index: int) -> ClaimRecheck:
                key = keys[index]
                return rechecker.recheck(batch.claims[key], cassette(key), key)

            # A recheck's set on the live engine's run loop: Ctrl-C starts no more claims.
            source = ClaimSet(recheck, keys)
            rechecked = source.end(rechecker.live.loop.run(source))
            if rechecked is None:
                raise KeyboardInterrupt
            results = rechecked
    fail_on = [RecheckStatus(name) for name in args.fail_on]
    names = ",".join(s.value for s in fail_on)

    def gate_line(failing: dict[RecheckStatus, int]) -> str:
        counts = ", ".join(
            f"{n} {'citation' if n == 1 else 'citations'} {status.value}"
            for status, n in failing.items()
        )
        return f"{counts} (--fail-on {names})"

    problems: list[str] = []
    if batch.problems:
        problems.append(
            f"{len(batch.problems)} record(s) could not be read (shown above with file:line "
            "and the fix)"
        )
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    report = finish_recheck(
        results,
        fail_on,
        gate_line,
        Outputs(
            json=args.json,
            markdown=args.md,
            step_summary=Path(step_summary) if step_summary else None,
            html=args.html,
        ),
        update=args.update,
        problems=problems,
    )
    failures = report.gate_failures
    for line in report.lines():
        print(line.text, file=out)
    for failure in failures:
        print(f"citecheck recheck FAILED: {failure}", file=out)
    if not failures:
        print("citecheck recheck passed", file=out)
    return EXIT_GATE_FAILED if failures else EXIT_OK
