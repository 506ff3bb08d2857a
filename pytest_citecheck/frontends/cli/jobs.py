"""``citecheck batch --via-crawler NAME``'s job, and ``citecheck jobs status JOB``.

The batch's claims become a Crawler job (large_audit/crawler_job.py) kept in
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
from pytest_citecheck.frontends.cli.common import EXIT_GATE_FAILED, EXIT_OK, EXIT_USAGE, UsageError
from pytest_citecheck.options.table import Flag, add_flag, option_named

if TYPE_CHECKING:
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


def claim_ident(path: Path, claim: Claim) -> str:
    """The claim part of its citation ids: its file's name and its id (both kept to
    characters a callback header carries)."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", path.stem)
    return f"{stem}.{claim.id}"


def delivery_transport(
    environ: Mapping[str, str], js_crawler: str | None = None
) -> DeliveryTransport:
    """The live transport of a job's engine: the Crawling API at its usual base URL
    answered from the deliveries (a JavaScript-token request from the JavaScript
    Crawler's, when ``js_crawler`` is set)."""
    from pytest_citecheck.core.providers import TOKEN_ENV
    from pytest_citecheck.large_audit.delivery_transport import DeliveryTransport
    from pytest_citecheck.stages.fetch import base_url_from

    js_token = environ.get(TOKEN_ENV["javascript"])
    return DeliveryTransport(
        base_url_from(environ),
        js_tokens=[js_token] if js_token else [],
        js_crawler=js_crawler is not None,
    )


def run_job(
    args: argparse.Namespace,
    work: JobWork[R],
    transport: DeliveryTransport,
    claims: Sequence[tuple[str, Claim, Path, Path]],
    on_result: Callable[[str, R], None],
    *,
    concurrency: int,
    environ: Mapping[str, str],
) -> dict[str, R] | None:
    """Run (or resume) the command's job; ``claims`` are (key, claim, claim file,
    cassette). Returns every claim's result, or None when the run stopped before the
    last pages came (what it did is printed on stderr)."""
    from pytest_citecheck.core.errors import ConfigurationError
    from pytest_citecheck.large_audit.crawler_job import CrawlerJob, JobClaim
    from pytest_citecheck.large_audit.job_store import JobBusy, JobStore
    from pytest_citecheck.large_audit.pusher import CrawlerPusher, PushRate

    files = list(dict.fromkeys(path for _, _, path, _ in claims))
    name = job_name(args, files)
    try:
        store = JobStore.create(args.jobs_dir, name)
        started_by = store.meta("command")
        if started_by is not None and started_by != args.command:
            raise ValueError(
                f"job {name} was started by citecheck {started_by}: name another job with --job"
            )
        store.set_meta("command", args.command)
        pusher = CrawlerPusher.from_env(args.via_crawler, environ)
    except (ValueError, OSError) as exc:
        raise UsageError(f"--via-crawler: {exc}") from None
    js_pusher = None
    if getattr(args, "js_crawler", None) is not None:
        try:
            js_pusher = CrawlerPusher.from_env(args.js_crawler, environ, kind="javascript")
        except ValueError as exc:
            pusher.close()
            raise UsageError(f"--js-crawler: {exc}") from None
    print(
        f"citecheck: Crawler job {name} in {args.jobs_dir / name} "
        f"(citecheck jobs status {name} --jobs-dir {args.jobs_dir})",
        file=sys.stderr,
    )
    job = CrawlerJob(
        store,
        work,
        transport,
        pusher,
        rate=PushRate(args.crawler_push_rate),
        concurrency=concurrency,
        idle_timeout=args.crawler_wait,
        js_pusher=js_pusher,
    )
    wanted = [
        JobClaim(key, claim, tape, claim_ident(path, claim)) for key, claim, path, tape in claims
    ]
    try:
        run = job.run(wanted, on_result)
    except KeyboardInterrupt:
        # Everything the job did is in its state: nothing to write here but the way back.
        print(
            f"\ncitecheck: job {name} stopped; run the same command again to resume it",
            file=sys.stderr,
        )
        raise
    except JobBusy as exc:
        raise UsageError(str(exc)) from None
    except ConfigurationError as exc:
        raise UsageError(f"--via-crawler: {exc}") from None
    finally:
        pusher.close()
        if js_pusher is not None:
            js_pusher.close()
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
    jobs.set_defaults(help_parser=jobs)
    actions = jobs.add_subparsers(dest="jobs_command", metavar="ACTION")
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
