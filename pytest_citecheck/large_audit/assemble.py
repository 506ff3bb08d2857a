"""A Crawler job put together for a command (``citecheck batch --via-crawler``,
``citecheck recheck --via-crawler``): its store, its Crawlers, its push threads and the
live transport that answers the fetcher from the deliveries. The front end chooses
the job's work and prints; :func:`open_job` builds the rest and closes what it opened.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pytest_citecheck.claims.models import Claim
from pytest_citecheck.large_audit.crawler_job import CrawlerJob, JobClaim, JobWork

if TYPE_CHECKING:
    from pytest_citecheck.engine.run_loop import RunLoop
    from pytest_citecheck.large_audit.delivery_transport import DeliveryTransport

R = TypeVar("R")

# The push threads of a job, and the pause before a push refused as "not queued" is
# tried again.
PUSH_THREADS = 4
RETRY_PAUSE = 1.0


class JobSetupError(ValueError):
    """The job cannot be set up as asked (its message names the option to change)."""


@dataclass(frozen=True)
class JobOrder:
    """What a command asks of its job: its name and folder, the command that starts it,
    its Crawlers (``js_crawler``: the JavaScript one, or None), the push rate (pushes a
    second) and how long a run waits with nothing delivered (seconds)."""

    jobs_dir: Path
    name: str
    command: str
    crawler: str
    js_crawler: str | None
    push_rate: float
    idle_timeout: float


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


def claim_ident(path: Path, claim: Claim) -> str:
    """The claim part of its citation ids: its file's name and its id (both kept to
    characters a callback header carries)."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", path.stem)
    return f"{stem}.{claim.id}"


def job_claims(claims: Sequence[tuple[str, Claim, Path, Path]]) -> list[JobClaim]:
    """The job's claims from (key, claim, claim file, cassette)."""
    return [
        JobClaim(key, claim, tape, claim_ident(path, claim)) for key, claim, path, tape in claims
    ]


@contextmanager
def open_job(
    order: JobOrder,
    work: JobWork[R],
    transport: DeliveryTransport,
    environ: Mapping[str, str],
    loop: RunLoop,
) -> Iterator[CrawlerJob[R]]:
    """The job ``order`` names (created, or the one to resume), its claims run on
    ``loop`` (the engine's: its pool and its stop); its Crawlers' clients are closed on
    exit. Raises :class:`JobSetupError` when the job or a Crawler cannot be used."""
    from pytest_citecheck.large_audit.job_store import JobStore
    from pytest_citecheck.large_audit.push_workers import PushWorkers
    from pytest_citecheck.large_audit.pusher import CrawlerPusher, PushRate

    name = order.name
    try:
        store = JobStore.create(order.jobs_dir, name)
        started_by = store.meta("command")
        if started_by is not None and started_by != order.command:
            raise ValueError(
                f"job {name} was started by citecheck {started_by}: name another job with --job"
            )
        store.set_meta("command", order.command)
        pusher = CrawlerPusher.from_env(order.crawler, environ)
    except (ValueError, OSError) as exc:
        raise JobSetupError(f"--via-crawler: {exc}") from None
    js_pusher = None
    if order.js_crawler is not None:
        try:
            js_pusher = CrawlerPusher.from_env(order.js_crawler, environ, kind="javascript")
        except ValueError as exc:
            pusher.close()
            raise JobSetupError(f"--js-crawler: {exc}") from None
    try:
        pushing = PushWorkers(
            store, pusher, js_pusher, PushRate(order.push_rate), PUSH_THREADS, RETRY_PAUSE
        )
        yield CrawlerJob(
            store, work, transport, pushing, loop=loop, idle_timeout=order.idle_timeout
        )
    finally:
        pusher.close()
        if js_pusher is not None:
            js_pusher.close()
