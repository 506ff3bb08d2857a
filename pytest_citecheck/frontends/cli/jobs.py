"""``citecheck batch --via-crawler NAME``'s job, and ``citecheck jobs status JOB``.

The batch's claims become a Crawler job (large_audit/crawler_job.py, put together by
large_audit/assemble.py) kept in
``--jobs-dir/<job>/``; its pages arrive at ``citecheck serve``'s webhook, which
writes them into the job's store. Running the same command again resumes the job:
nothing is pushed twice, and the claims verified before are replayed from their
cassettes.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeVar

from pytest_citecheck.claims.models import Claim
from pytest_citecheck.core.defaults import BATCH_LIVE
from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.frontends.cli.common import (
    EXIT_GATE_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    subcommands,
)
from pytest_citecheck.options.table import Flag, add_flag, option_named

if TYPE_CHECKING:
    from pytest_citecheck.engine.run_loop import RunLoop
    from pytest_citecheck.large_audit.assemble import JobOrder
    from pytest_citecheck.large_audit.crawler_job import JobWork
    from pytest_citecheck.large_audit.delivery_transport import DeliveryTransport
    from pytest_citecheck.large_audit.job_store import JobState, JobStore

BAR_WIDTH = 30
R = TypeVar("R")


def check_crawler_options(args: argparse.Namespace) -> None:
    """--via-crawler records each claim's cassette from its delivered pages: it needs a
    recording mode (the cassettes are what replays the job offline). --js-crawler is
    part of a Crawler job."""
    check_js_crawler(args)
    if args.via_crawler is None:
        return
    if args.record in (None, BATCH_LIVE) or RecordMode(args.record).replay_only:
        raise UsageError(
            f"--via-crawler records each claim's pages as the Crawler delivers them: add "
            f"--record once (or all, rewrite); --record {args.record or BATCH_LIVE} records "
            "nothing"
        )


def check_js_crawler(args: argparse.Namespace) -> None:
    """--js-crawler is the second Crawler of a Crawler job: it needs --via-crawler."""
    if getattr(args, "js_crawler", None) is not None and args.via_crawler is None:
        raise UsageError(
            "--js-crawler pushes a Crawler job's pages that need JavaScript: add "
            "--via-crawler NAME (the TCP Crawler for the other pages)"
        )


def job_name(args: argparse.Namespace, files: Sequence[Path]) -> str:
    """``--job``, else the first file's name and a digest of the subcommand, the
    Crawler and the files (the same command names the same job, so running it again
    resumes it)."""
    if args.job is not None:
        return str(args.job)
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", files[0].stem).lstrip("._-")[:40] or "job"
    seen = "\n".join([args.command, args.via_crawler, *(str(p.resolve()) for p in files)])
    return f"{stem}-{hashlib.sha256(seen.encode()).hexdigest()[:8]}"


def job_order(args: argparse.Namespace, files: Sequence[Path]) -> JobOrder:
    """What the command's flags ask of its job."""
    from pytest_citecheck.large_audit.assemble import JobOrder

    return JobOrder(
        jobs_dir=args.jobs_dir,
        name=job_name(args, files),
        command=args.command,
        crawler=args.via_crawler,
        js_crawler=getattr(args, "js_crawler", None),
        push_rate=args.crawler_push_rate,
        idle_timeout=args.crawler_wait,
    )


def run_job(
    args: argparse.Namespace,
    work: JobWork[R],
    transport: DeliveryTransport,
    claims: Sequence[tuple[str, Claim, Path, Path]],
    on_result: Callable[[str, R], None],
    *,
    loop: RunLoop,
    environ: Mapping[str, str],
) -> dict[str, R] | None:
    """Run (or resume) the command's job on ``loop`` (the engine's); ``claims`` are
    (key, claim, claim file, cassette). Returns every claim's result, or None when the
    run stopped before the last pages came (what it did is printed on stderr)."""
    from pytest_citecheck.core.errors import ConfigurationError
    from pytest_citecheck.large_audit.assemble import JobSetupError, job_claims, open_job
    from pytest_citecheck.large_audit.job_store import JobBusy

    order = job_order(args, list(dict.fromkeys(path for _, _, path, _ in claims)))
    name = order.name
    try:
        with open_job(order, work, transport, environ, loop) as job:
            print(
                f"citecheck: Crawler job {name} in {args.jobs_dir / name} "
                f"(citecheck jobs status {name} --jobs-dir {args.jobs_dir})",
                file=sys.stderr,
            )
            run = job.run(job_claims(claims), on_result)
    except KeyboardInterrupt:
        # Everything the job did is in its state: nothing to write here but the way back.
        print(
            f"\ncitecheck: job {name} stopped; run the same command again to resume it",
            file=sys.stderr,
        )
        raise
    except JobSetupError as exc:
        raise UsageError(str(exc)) from None
    except JobBusy as exc:
        raise UsageError(str(exc)) from None
    except ConfigurationError as exc:
        raise UsageError(f"--via-crawler: {exc}") from None
    store = job.store
    javascript = javascript_line(store)
    if javascript is not None:
        print(f"citecheck: {javascript}", file=sys.stderr)
    if run.done:
        return run.results
    for line in status_lines(name, store.counts()):
        print(line, file=sys.stderr)
    print(
        f"citecheck: job {name} stopped after {args.crawler_wait:g}s with no page delivered; "
        "the pages still on their way keep arriving at the webhook: run the same command "
        "again to pick them up",
        file=sys.stderr,
    )
    return None


# -- citecheck jobs status ------------------------------------------------------------


def status_lines(name: str, counts: dict[JobState, int]) -> list[str]:
    """A job's counts per state under a progress bar of the finished citations."""
    from pytest_citecheck.large_audit.job_store import JobState

    total = sum(counts.values())
    judged, failed = counts[JobState.JUDGED], counts[JobState.FAILED]
    finished = judged + failed
    filled = BAR_WIDTH * finished // total if total else BAR_WIDTH
    bar = "#" * filled + "-" * (BAR_WIDTH - filled)
    states = ", ".join(f"{state.value} {counts[state]}" for state in JobState)
    return [
        f"job {name}: {total} citation{'' if total == 1 else 's'}",
        f"[{bar}] {finished}/{total} finished ({judged} judged, {failed} failed)",
        f"  {states}",
    ]


def javascript_line(store: JobStore) -> str | None:
    """What the job did with the pages that need JavaScript (None: there were none)."""
    from pytest_citecheck.large_audit.job_store import JobState

    missing = store.needs_javascript()
    if missing:
        pages = "page needs" if missing == 1 else "pages need"
        return (
            f"{missing} {pages} JavaScript and the job has no JavaScript Crawler (each is a "
            "configuration error): add --js-crawler NAME, a Crawler created for your "
            "JavaScript token, and run the same command again"
        )
    pushes = store.javascript_pushes()
    total = sum(pushes.values())
    if not total:
        return None
    done = pushes[JobState.JUDGED] + pushes[JobState.FAILED]
    crawler = store.meta("js_crawler") or "?"
    return (
        f"{total} {'page' if total == 1 else 'pages'} rendered with JavaScript by the "
        f"JavaScript Crawler {crawler} ({done} finished)"
    )


def judge_batch_lines(saved: str | None) -> list[str]:
    """The judge batches a ``--judge-batch`` job sent and waits for (its meta entry)."""
    from pytest_citecheck.large_audit.job_batches import saved_batches

    batches = saved_batches(saved)
    if not batches:
        return []
    asked = sum(len(b["ids"]) for b in batches)
    names = ", ".join(str(b["batch_id"]) for b in batches)
    return [f"  judge batches sent: {len(batches)} ({asked} questions): {names}"]


def run_jobs_status(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Exit 0 when every citation of the job is judged or failed, 1 while some are
    on their way, 2 when there is no such job."""
    from pytest_citecheck.large_audit.job_batches import SAVED_BATCHES
    from pytest_citecheck.large_audit.job_store import JobState, JobStore

    out = out or sys.stdout
    store = JobStore.open(args.jobs_dir, args.job)
    if store is None:
        raise UsageError(f"no job {args.job!r} in {args.jobs_dir} (see --jobs-dir)")
    try:
        counts = store.counts()
        crawler = store.meta("crawler")
        lines = status_lines(args.job, counts)
        if crawler:
            lines[0] += f" (Crawler {crawler})"
        javascript = javascript_line(store)
        if javascript is not None:
            lines.append(f"  {javascript}")
        lines += judge_batch_lines(store.meta(SAVED_BATCHES))
        print(*lines, sep="\n", file=out)
        if args.failed:
            for row in store.rows(JobState.FAILED):
                print(f"  failed {row.citation} {row.url}: {row.detail}", file=out)
        if args.waiting:
            for row in store.awaiting_delivery():
                how = f"rid {row.rid}" if row.rid else "sent, its answer never came"
                print(f"  waiting {row.citation} {row.url} ({how})", file=out)
    finally:
        store.close()
    unfinished = sum(
        n for state, n in counts.items() if state not in (JobState.JUDGED, JobState.FAILED)
    )
    return EXIT_OK if unfinished == 0 else EXIT_GATE_FAILED


def add_jobs_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    jobs = commands.add_parser(
        "jobs",
        help="show a Crawler job's progress (batch --via-crawler).",
        description="Read the state of a Crawler job started by `citecheck batch "
        "--via-crawler NAME`.",
    )
    actions = subcommands(jobs, "jobs_command", "ACTION")
    status = actions.add_parser(
        "status",
        help="counts per state and a progress bar.",
        description="Print how many citations of JOB are queued, pushing, pushed, "
        "delivered, judged and failed, under a progress bar of the finished ones.",
        epilog=f"Exit codes: 0 every citation is judged or failed, 1 some are still on "
        f"their way, {EXIT_USAGE} no such job.",
    )
    status.add_argument("job", metavar="JOB", help="the job's name (printed by the batch).")
    # The jobs folder as the batch that started the job takes it.
    jobs_dir = option_named("jobs_dir")
    batch_flag = jobs_dir.flag_of("batch")
    assert isinstance(batch_flag, Flag)
    add_flag(status, jobs_dir, batch_flag)
    status.add_argument(
        "--failed", action="store_true", help="also list each failed citation and why."
    )
    status.add_argument(
        "--waiting",
        action="store_true",
        help="also list each citation pushed (or maybe pushed) whose page has not come.",
    )
