"""``citecheck batch``: verify the claims of JSONL/YAML files and print precision."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from pytest_citecheck.claims.models import Claim
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.core.defaults import BATCH_LIVE
from pytest_citecheck.core.terms import Terms
from pytest_citecheck.engine.gate import GateSettings
from pytest_citecheck.frontends.cli.common import (
    EXIT_GATE_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    INTERRUPT_NOTICE,
    BatchInput,
    UsageError,
    _open_audit,
    _values,
    batch_terms,
    engine_settings,
    read_batch,
)
from pytest_citecheck.frontends.cli.jobs import check_crawler_options, run_job
from pytest_citecheck.options.table import fields_for

if TYPE_CHECKING:
    from pytest_citecheck.core.prices import Prices
    from pytest_citecheck.engine.aggregate import Totals
    from pytest_citecheck.engine.core import Engine
    from pytest_citecheck.large_audit.delivery_transport import DeliveryTransport
    from pytest_citecheck.reports.finish import AuditRun
    from pytest_citecheck.reports.outputs import Outputs


def _prices(args: argparse.Namespace) -> Prices:
    from pytest_citecheck.options.settings_map import prices

    return prices(_values(args))


def gate_settings(args: argparse.Namespace, terms: Terms | None = None) -> GateSettings:
    """``citecheck batch``'s bars."""
    from pytest_citecheck.options.settings_map import gate_settings as mapped

    return mapped(_values(args), terms=terms or batch_terms())


def outputs(args: argparse.Namespace) -> Outputs:
    """The files ``citecheck batch`` writes."""
    from pytest_citecheck.reports.outputs import Outputs

    return Outputs(**fields_for("outputs", _values(args)))


def _engine(
    args: argparse.Namespace, terms: Terms, transport: DeliveryTransport | None = None
) -> Engine:
    from pytest_citecheck.engine.core import Engine
    from pytest_citecheck.engine.settings import StageHooks

    hooks = StageHooks(make_transport=lambda: transport) if transport is not None else None
    return Engine.from_settings(engine_settings(args, terms), hooks)


def run_batch(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    if args.record == BATCH_LIVE:
        if args.cassettes is not None:
            raise UsageError(
                f"--cassettes has no use with --record {BATCH_LIVE}: a live run neither "
                "replays nor records (record with --record once)"
            )
        args.record = None  # live from here on: no cassette
    check_crawler_options(args)
    _check_outputs(args)
    audit = _open_audit(args.audit, "batch")
    batch = read_batch(args.files, Path.cwd(), args.max_claim_chars)
    # --via-crawler: the fetcher's Crawling API requests are answered from the job's
    # deliveries; everything else (the judges) goes to the network.
    from pytest_citecheck.large_audit.assemble import delivery_transport

    transport = (
        delivery_transport(os.environ, args.js_crawler) if args.via_crawler is not None else None
    )
    # --record live: the engine then fetches and judges for real, with no cassette.
    engine = _engine(args, batch_terms(batch.files, args.cassettes), transport)
    batch.drop_unknown_judges(engine, args.judge)
    for problem in batch.problems:
        print(problem, file=sys.stderr)
    keys = list(batch.claims)
    claims = [batch.claims[k] for k in keys]
    key_of = {id(claim): key for key, claim in batch.claims.items()}

    from pytest_citecheck.recording.recorder import cassette_path

    def cassette_for(claim: Claim) -> Path | None:
        if args.record is None:
            return None
        path = batch.files[key_of[id(claim)]]
        return cassette_path(path, claim.id, args.cassettes)

    from pytest_citecheck.core.errors import ConfigurationError

    if args.dry_run:
        # --record live: every claim would be fetched and judged.
        with engine:
            plan = engine.plan(claims, cassette_for=cassette_for)
        terms = batch_terms(batch.files, args.cassettes)
        print(*plan.lines(_prices(args), terms), sep="\n", file=out)
        return EXIT_GATE_FAILED if batch.problems else EXIT_OK
    with engine:
        try:
            engine.preflight(claims, cassette_for=cassette_for)
        except (ConfigurationError, ValueError) as exc:
            raise UsageError(_problem_list(str(exc))) from None
        progress = _Progress(
            len(claims),
            enabled=not args.no_progress and sys.stderr.isatty(),
            services=engine.progress.services,
        )
        progress.step(0)
        audit_problems: list[str] = []
        on_result = _recorder(audit, progress, keys, audit_problems)
        from pytest_citecheck.engine.stopping import Interrupted

        if transport is not None:
            return _via_crawler(
                args,
                engine,
                transport,
                batch,
                keys,
                cassette_for,
                on_result,
                out,
                audit,
                audit_problems,
                progress,
            )
        try:
            results = engine.verify_claims_sync(
                claims,
                cassette_for=cassette_for,
                nodeid_for=lambda claim: key_of[id(claim)],
                on_result=on_result,
                on_interrupt=lambda: print(INTERRUPT_NOTICE, file=sys.stderr, flush=True),
            )
        except Interrupted as stopped:
            # Ctrl-C: no claim started since; the ones in flight finished and are written.
            progress.close()
            if stopped.waiting:
                from pytest_citecheck.engine.judge_batch import waiting_line

                print(waiting_line(stopped.waiting, "--record once"), file=sys.stderr)
            finished = {keys[i]: r for i, r in sorted(stopped.results.items())}
            return _finish_batch(
                args, finished, batch, audit, out, audit_problems, stopped.not_started
            )
        progress.close()
        _print_judge_batch(engine)
    by_key = dict(zip(keys, results, strict=True))
    return _finish_batch(args, by_key, batch, audit, out, audit_problems)


def _via_crawler(
    args: argparse.Namespace,
    engine: Engine,
    transport: DeliveryTransport,
    batch: BatchInput,
    keys: Sequence[str],
    cassette_for: Callable[[Claim], Path | None],
    on_result: Callable[[int, ClaimResult], None],
    out: TextIO,
    audit: AuditRun | None,
    audit_problems: list[str],
    progress: _Progress,
) -> int:
    """The batch as a Crawler job: each claim verified as its pages are delivered."""
    from pytest_citecheck.large_audit.crawler_job import BatchWork

    index_of = {key: i for i, key in enumerate(keys)}
    claims = [
        (k, batch.claims[k], batch.files[k], _tape(cassette_for, batch.claims[k])) for k in keys
    ]
    work = BatchWork(engine)
    try:
        done = run_job(
            args,
            work,
            transport,
            claims,
            lambda key, result: on_result(index_of[key], result),
            loop=engine.loop,
            environ=engine.environ,
        )
    finally:
        work.close()
        progress.close()
        transport.close()  # this command's: the engines only borrowed it
    _print_judge_batch(engine)
    if done is None:
        return EXIT_GATE_FAILED
    return _finish_batch(args, {k: done[k] for k in keys}, batch, audit, out, audit_problems)


def _print_judge_batch(engine: Engine) -> None:
    """``judge batch: 3 rounds, 2 batches, ...`` on stderr when the judge went through one."""
    judge_batch = engine.stages.judge_batch()
    summary = judge_batch.summary() if judge_batch is not None else None
    if summary is not None:
        print(summary, file=sys.stderr)


def _tape(cassette_for: Callable[[Claim], Path | None], claim: Claim) -> Path:
    path = cassette_for(claim)
    if path is None:  # check_crawler_options made the run a recording one
        raise UsageError("--via-crawler needs a cassette for every claim (--record once)")
    return path


def _check_outputs(args: argparse.Namespace) -> None:
    """--out and --json checked before any work: a usage error, not a lost report."""
    from pytest_citecheck.core.files import unwritable

    for flag, path in (("--out", args.out), ("--json", args.json), ("--otel-file", args.otel_file)):
        if path is not None:
            problem = unwritable(path)
            if problem is not None:
                raise UsageError(f"{flag} {path}: {problem}")
    if args.otel_file is not None or args.otel_endpoint is not None:
        from pytest_citecheck.reports.otel import missing_sdk

        missing = missing_sdk()
        if missing is not None:
            raise UsageError(missing)


def _problem_list(message: str) -> str:
    """A list of problems starts on its own line, under a heading."""
    return "not configured:\n" + message if message.startswith("  - ") else message


def _recorder(
    audit: AuditRun | None,
    progress: _Progress,
    keys: Sequence[str],
    problems: list[str],
) -> Callable[[int, ClaimResult], None]:
    def on_result(index: int, result: ClaimResult) -> None:
        # Written as each claim finishes: an interrupted run keeps what it decided.
        # A write that fails costs its rows, never the other claims or the reports.
        problem = None if audit is None else audit.record({keys[index]: result})
        if problem is not None:
            problems.append(f"{keys[index]}: {problem}")
        progress.step()

    return on_result


def _finish_batch(
    args: argparse.Namespace,
    results: dict[str, ClaimResult],
    batch: BatchInput,
    audit: AuditRun | None,
    out: TextIO,
    audit_problems: Sequence[str] = (),
    not_started: int | None = None,
) -> int:
    """The run's end (:func:`~pytest_citecheck.reports.finish.finish_run`), printed;
    ``not_started`` (Ctrl-C) writes what finished and exits 130 without a gate
    verdict: a part of the claims decides nothing."""
    from pytest_citecheck.reports.finish import finish_run

    problems = []
    if batch.problems:
        records, count = len(batch.bad_records), len(batch.problems)
        counted = "" if count == records else f"{count} problems, "
        problems.append(
            f"{records} {'record' if records == 1 else 'records'} could not be read "
            f"({counted}shown above with file:line and the fix)"
        )
    if audit_problems:
        # The rows were written as each claim finished: the run's end writes none.
        problems.append(
            f"--audit: the rows of {len(audit_problems)} claim(s) could not be written "
            f"({audit_problems[0]})"
        )
    report = finish_run(
        results,
        # The record commands name each claim's own file.
        gate_settings(args, batch_terms(batch.files, args.cassettes)),
        outputs(args),
        not_started=not_started or 0,
        stopped_by="interrupted" if not_started else None,
        prices=_prices(args),
        problems=problems,
    )
    failures = report.gate_failures
    for line in report.lines():
        print(line.text, file=out)
    print(*precision_lines(report.totals), sep="\n", file=out)
    if audit is not None:
        print(f"audit: run {audit.run_id} in {audit.index.path}", file=out)
    if not_started is not None:
        stopped = report.not_started_line()
        if stopped is not None:
            print(stopped, file=out)
        return EXIT_INTERRUPTED
    for failure in failures:
        print(f"citecheck gate FAILED: {failure}", file=out)
    if not failures and report.output_errors:
        print(report.unwritten_line(), file=out)
    elif not failures:
        print("citecheck gate passed", file=out)
    return EXIT_GATE_FAILED if failures or report.output_errors else EXIT_OK


def precision_lines(totals: Totals) -> list[str]:
    """The two summary lines the batch prints, e.g. ``citation_precision=0.2222 (2/9)``."""

    def fmt(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.4f}"

    return [
        f"citation_precision={fmt(totals.citation_precision)} "
        f"({totals.supported}/{totals.citations})",
        f"reachable_precision={fmt(totals.reachable_precision)} "
        f"({totals.supported}/{totals.reachable})",
    ]


class _Progress:
    """A one-line progress bar on stderr, only when it is a terminal."""

    WIDTH = 30

    def __init__(self, total: int, enabled: bool, services: Callable[[], str] = lambda: "") -> None:
        self.total = total
        self.done = 0
        self.enabled = enabled and total > 0
        self.services = services

    def step(self, by: int = 1) -> None:
        self.done += by
        if self.enabled:
            filled = self.WIDTH * self.done // self.total
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            sys.stderr.write(
                f"\rcitecheck [{bar}] {self.done}/{self.total} claims{self.services()}\x1b[K"
            )
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.done:
            sys.stderr.write("\n")
            sys.stderr.flush()
