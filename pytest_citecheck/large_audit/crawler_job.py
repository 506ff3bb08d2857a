"""A Crawler job: push every web citation to Crawlbase's Crawler, run each claim as
soon as its pages have been delivered, and survive being stopped and run again.

The job's state lives in its :class:`~pytest_citecheck.large_audit.job_store.JobStore`; the
webhook receiver (``citecheck serve``) writes the deliveries into it. A run:

1. holds the job (one runner at a time), and puts back in the queue what a dead
   runner took but never sent (:meth:`JobStore.recover_unsent`);
2. queues every web citation whose page the work will ask the Crawling API for (a
   PDF or a URL the URL policy refuses is never crawled, so never pushed); adding
   them again on a resume changes nothing;
3. pushes what is queued, at the Crawler's push rate, from a few threads
   (:class:`~pytest_citecheck.large_audit.push_workers.PushWorkers`): a push
   certainly not queued at Crawlbase goes back to the queue, one that may be queued
   stays ``pushing`` and waits for its delivery -- never for a second push;
4. runs each claim whose web citations have all been delivered, on the engine's run
   loop (:meth:`~pytest_citecheck.engine.run_loop.RunLoop.run`, the job its source:
   :class:`~pytest_citecheck.large_audit.job_source.DeliverySource`; :class:`JobWork`:
   :class:`BatchWork` verifies and records it through the engine's normal path, a
   recheck compares it with its recording) while
   :class:`~pytest_citecheck.large_audit.delivery_transport.DeliveryTransport` answers the
   fetcher's Crawling API requests from the deliveries, so a cassette records the
   pages like a synchronous crawl (marked with the Crawler's rid) and replays offline
   like any recording; each citation is then ``judged`` (its label) or ``failed``
   (with why). With a judge batch (``--judge-batch``) a claim that asks the judge
   something not answered yet stops and waits (its citations stay ``delivered``);
   :class:`~pytest_citecheck.large_audit.job_batches.JobBatches` sends the questions as
   batches and gives the claim back to run again once its answer is in;
5. stops when every claim is done, or when nothing moved for ``idle_timeout``
   seconds and no claim waits for a judge batch (the pages still awaited keep
   arriving at the webhook; running the job again picks them up).

A claim a previous run finished is not run again where the work can say its result
without a request (:meth:`JobWork.finished_before`: the batch replays its cassette);
claims with nothing to push (a cassette to replay, documents only) run at once.

A page the fetcher wants rendered with JavaScript (a thin or blocked normal page) is
answered from the job's JavaScript delivery when it pushes to a JavaScript Crawler
too (``js_pusher``); without that delivery yet the claim stops with nothing recorded
(:class:`~pytest_citecheck.core.errors.CrawlDeferred`), the page is queued for the
JavaScript Crawler as a citation of its own
(:func:`~pytest_citecheck.large_audit.job_store.js_citation_id`), and the claim runs again
when it is delivered. Without a JavaScript Crawler such a page is a configuration
error, as in a synchronous run with no JavaScript token, and the job notes it.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Claim
from pytest_citecheck.claims.results import ClaimResult, Verdict
from pytest_citecheck.core.errors import CrawlDeferred
from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.core.text import truncate
from pytest_citecheck.core.urls import fetch_url
from pytest_citecheck.engine.budget import Budget
from pytest_citecheck.engine.cassettes import will_record
from pytest_citecheck.engine.run_loop import RunLoop
from pytest_citecheck.engine.verification import error_result
from pytest_citecheck.large_audit.job_source import Deferred, DeliverySource, Readiness
from pytest_citecheck.large_audit.job_store import (
    JS_SUFFIX,
    Delivery,
    JobState,
    JobStore,
    citation_id,
    js_citation_id,
)
from pytest_citecheck.large_audit.push_workers import PushWorkers
from pytest_citecheck.large_audit.pusher import CrawlerPusher
from pytest_citecheck.stages.fetch_rules import is_pdf
from pytest_citecheck.stages.url_policy import check as check_url

if TYPE_CHECKING:
    from pytest_citecheck.engine.core import Engine
    from pytest_citecheck.engine.judge_batch import JudgeBatch
    from pytest_citecheck.large_audit.delivery_transport import DeliveryTransport
    from pytest_citecheck.large_audit.job_batches import JobBatches

_DETAIL_CHARS = 300


@dataclass(frozen=True)
class JobClaim:
    """One claim of the job: its name in reports, its cassette, and ``ident``, the
    claim part of its citation ids (unique in the job; no ``:`` or ``|``)."""

    key: str
    claim: Claim
    cassette: Path
    ident: str

    def pushed_citations(self, url_policy: str) -> list[tuple[str, str]]:
        """``(citation id, url)`` of the citations the fetcher will ask the Crawling
        API for (position counts every citation, documents too), each URL its fetch key
        (:func:`~pytest_citecheck.core.urls.fetch_url`: what is pushed, and what the
        fetcher asks the deliveries for)."""
        return [
            (cid, url) for cid, url in fetched_citations(self) if check_url(url_policy, url) is None
        ]


def fetched_citations(jc: JobClaim) -> list[tuple[str, str]]:
    """``(citation id, fetch key)`` of every web citation of ``jc`` whose page is
    crawled by the Crawler (a ``.pdf`` URL never is: the file is crawled synchronously,
    large_audit/delivery_transport.py), by position among all its citations."""
    return [
        (citation_id(jc.ident, position), fetch_url(c.url))
        for position, c in enumerate(jc.claim.citations, 1)
        if c.url and not is_pdf(c.url)
    ]


R = TypeVar("R")


class JobWork(Protocol[R]):
    """What a job does with a claim once its pages are in: verify it (``citecheck
    batch``) or recheck it (``citecheck recheck``)."""

    def pushed_citations(self, jc: JobClaim) -> list[tuple[str, str]]:
        """``(citation id, url)`` of the citations whose pages it will ask for."""
        ...

    def run(self, jc: JobClaim) -> R:
        """The claim, its pages answered from the deliveries (the caller serves them)."""
        ...

    def unpushed(self, jc: JobClaim, refused: Mapping[str, str]) -> R:
        """The claim when a page it needs never reached the Crawler (url -> why)."""
        ...

    def finished_before(self, jc: JobClaim) -> R | None:
        """A claim a previous run finished (every page judged or failed): its result
        without any request, or None to run it again on its stored pages."""
        ...

    def outcomes(self, jc: JobClaim, result: R) -> dict[int, tuple[bool, str]]:
        """Each citation's outcome by 1-based position: (ok, its label or why not)."""
        ...

    def judge_batch(self) -> JudgeBatch | None:
        """The judge batch its runs ask through (``--judge-batch``): a run may then stop
        with JudgeDeferred until the batch has answered."""
        ...


@dataclass
class JobRun(Generic[R]):
    """What one run of a job did."""

    results: dict[str, R] = field(default_factory=dict)
    # Every claim has a result: the job is done.
    done: bool = False
    pushed: int = 0


class CrawlerJob(Generic[R]):
    """Runs one job (see the module docstring). The engine ``work`` runs claims on
    must have ``transport`` as its live transport (``StageHooks(make_transport=...)``).
    """

    def __init__(
        self,
        store: JobStore,
        work: JobWork[R],
        transport: DeliveryTransport,
        pushing: PushWorkers,
        *,
        loop: RunLoop | None = None,
        poll: float = 0.2,
        idle_timeout: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.work = work
        self.transport = transport
        # The push threads, with the Crawler(s) they push to and the push rate.
        self.pushing = pushing
        # The run loop the claims run on (the engine's: its pool and its stop); without
        # one, a loop of its own, closed at the end of each run.
        self.loop = loop or RunLoop(4, name="citecheck-job")
        self._own_loop = loop is None
        self.poll = poll
        self.idle_timeout = idle_timeout
        self.clock = clock

    @property
    def pusher(self) -> CrawlerPusher:
        return self.pushing.pusher

    @property
    def js_pusher(self) -> CrawlerPusher | None:
        """Pushes the pages that need JavaScript to a JavaScript Crawler (None: none)."""
        return self.pushing.js_pusher

    # -- the run ----------------------------------------------------------------------

    def run(
        self,
        claims: Sequence[JobClaim],
        on_result: Callable[[str, R], None] | None = None,
    ) -> JobRun[R]:
        """Push, wait, verify; returns when every claim has a result or the job idled
        ``idle_timeout`` seconds. Raises :class:`~pytest_citecheck.large_audit.job_store.JobBusy`
        when another process runs the job, ConfigurationError when the token is refused,
        KeyboardInterrupt once the claims in flight finished after Ctrl-C (a stop of the
        loop starts no more claims: the job is not done, and running it again resumes
        it)."""
        out: JobRun[R] = JobRun()
        wanted = {jc.key: self.work.pushed_citations(jc) for jc in claims}
        with self.store.lock():
            self.store.recover_unsent()
            self.store.add(pair for pairs in wanted.values() for pair in pairs)
            self.store.set_meta("crawler", self.pusher.crawler)
            if self.js_pusher is not None:
                self.store.set_meta("js_crawler", self.js_pusher.crawler)
            self.pushing.start()
            try:
                batches = self._judge_batches()
                source = DeliverySource(self, claims, wanted, out.results, on_result, batches)
                interrupted = self.loop.run(source)
            finally:
                self.pushing.stop()
                if self._own_loop:
                    self.loop.close()
        if interrupted:
            raise KeyboardInterrupt
        out.pushed = self.pushing.pushed
        out.done = len(out.results) == len(claims)
        self.pushing.raise_errors()
        return out

    def _judge_batches(self) -> JobBatches[JobClaim] | None:
        """The job's judge batch, waiting again for the batches its earlier runs sent."""
        batch = self.work.judge_batch()
        if batch is None:
            return None
        from pytest_citecheck.large_audit.job_batches import SAVED_BATCHES, JobBatches

        return JobBatches(
            batch,
            self.store.meta(SAVED_BATCHES),
            functools.partial(self.store.set_meta, SAVED_BATCHES),
        )

    # -- running one claim (on the run loop's pool) ------------------------------

    def claim(self, jc: JobClaim, pushed: list[tuple[str, str]], before: bool) -> R | Deferred:
        if before:
            earlier = self.work.finished_before(jc)
            if earlier is not None:
                return earlier
        pages: dict[str, Delivery] = {}
        refused: dict[str, str] = {}  # url -> why its push failed
        for cid, url in pushed:
            delivery = self.store.delivery(cid)
            if delivery is None:
                refused[url] = self.store.detail(cid) or "its push failed"
            else:
                pages.setdefault(url, delivery)
        rendered = self._javascript_pages(pushed)
        if not refused and self.js_pusher is not None:
            awaited = self.transport.awaited(pages, rendered, [u for _, u in pushed])
            if awaited:
                return Deferred(tuple(awaited))
        if refused:
            result = self.work.unpushed(jc, refused)
        else:
            with self.transport.serving(pages, rendered) as serving:
                try:
                    result = self.work.run(jc)
                except CrawlDeferred as wait:
                    return Deferred((wait.url,))
            if serving.needs_javascript:
                wanted = set(serving.needs_javascript)
                self.store.note_needs_javascript((c, u) for c, u in pushed if u in wanted)
        js_rows = [
            (js_citation_id(c), u) for c, u in pushed if isinstance(rendered.get(u), Delivery)
        ]
        self._mark(jc, [*pushed, *js_rows], result)
        return result

    def _javascript_pages(self, pushed: list[tuple[str, str]]) -> dict[str, Delivery | str]:
        """The claim's JavaScript deliveries by URL (or why a JavaScript push failed)."""
        out: dict[str, Delivery | str] = {}
        if self.js_pusher is None:
            return out
        for cid, url in pushed:
            js = js_citation_id(cid)
            delivery = self.store.delivery(js)
            if delivery is not None:
                out.setdefault(url, delivery)
            elif self.store.state(js) is JobState.FAILED:
                out.setdefault(url, self.store.detail(js) or "its push failed")
        return out

    def defer(
        self,
        jc: JobClaim,
        pushed: list[tuple[str, str]],
        wait: Deferred,
        ready: Readiness[JobClaim],
    ) -> list[JobClaim]:
        """Queue the JavaScript pushes ``jc`` waits for (once: a push queued before
        stays as it is) and make the claim wait for them; the claims ready again now
        (the pages came while the claim ran)."""
        first = {url: cid for cid, url in reversed(pushed)}  # a URL's first citation
        queued = [(js_citation_id(first[url]), url) for url in wait.urls if url in first]
        if not queued:  # the fetcher asked for a page the claim does not cite: a bug
            raise RuntimeError(f"claim {jc.key} waits for uncited pages {wait.urls}")
        self.store.add(queued)
        self.pushing.start()
        return ready.wait_for(jc, {js: self.store.state(js) for js, _ in queued})

    def _mark(self, jc: JobClaim, pushed: list[tuple[str, str]], result: R) -> None:
        outcomes = self.work.outcomes(jc, result)
        with self.store.batch():  # one commit for the claim's citations
            for cid, _ in pushed:
                position = int(cid.removesuffix(JS_SUFFIX).rpartition("#")[2])
                if position not in outcomes or self._push_failed(cid):
                    continue  # a failed push keeps its own reason
                ok, what = outcomes[position]
                if ok:
                    self.store.mark_judged(cid, what)
                else:
                    self.store.mark_failed(cid, truncate(what, _DETAIL_CHARS, flatten=True))

    def _push_failed(self, cid: str) -> bool:
        return self.store.state(cid) is JobState.FAILED and self.store.copies(cid) == 0


class BatchWork:
    """``citecheck batch``'s work: each claim verified and recorded by the engine (a
    claim a previous run verified is replayed from its cassette)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        self._replay_engine: Engine | None = None
        # The recording budget as the pushes spend it: each claim's worst case, in the
        # job's order (a push is a crawl Crawlbase bills, so it must fit before it goes).
        settings = engine.settings
        self._push_budget = Budget(settings.prices, settings.max_cost, settings.max_credits)
        # Claims the budget kept from pushing: why (their result says it).
        self._over_budget: dict[str, str] = {}

    def pushed_citations(self, jc: JobClaim) -> list[tuple[str, str]]:
        """Its pages, when the budget holds the claim's worst case (else none: the claim
        is ``budget_exhausted`` without a push, as a synchronous run would leave it)."""
        if self._budget_refuses(jc):
            return []
        return jc.pushed_citations(self.engine.settings.url_policy)

    def _budget_refuses(self, jc: JobClaim) -> bool:
        settings = self.engine.settings
        budget = self._push_budget
        if not budget.limited or not jc.claim.citations:
            return False
        if not will_record(settings.record_mode, jc.cassette):
            return False  # replayed: it costs nothing
        from pytest_citecheck.engine.estimate import estimate_claim

        judge = self.engine.stages.judge_name(settings.judge_for(jc.claim))
        estimate = estimate_claim(
            jc.claim, judge, confirm=not settings.no_confirm, batch=settings.judge_batch
        )
        reservation = budget.reserve(estimate)
        if isinstance(reservation, str):
            self._over_budget[jc.key] = reservation
            return True
        budget.settle(reservation, reservation.cost, reservation.credits)
        return False

    def run(self, jc: JobClaim) -> ClaimResult:
        """Raises JudgeDeferred when it waits for the judge batch (its pages and the
        answers it got are kept for its next run)."""
        refused = self._over_budget.get(jc.key)
        if refused is not None:
            hint = self.engine.settings.terms.record_hint(jc.key, "once")
            result = error_result(jc.claim, Reason.BUDGET_EXHAUSTED, refused + hint)
            self.engine.progress.finished(result)
            return result
        batch = self.engine.stages.judge_batch()
        if batch is None:
            return self.engine.verify(jc.claim, jc.cassette, jc.key)
        batch.restart(jc.key)
        result = self.engine.verify(jc.claim, jc.cassette, jc.key)
        batch.forget(jc.key)
        return result

    def judge_batch(self) -> JudgeBatch | None:
        return self.engine.stages.judge_batch()

    def unpushed(self, jc: JobClaim, refused: Mapping[str, str]) -> ClaimResult:
        """Its page is missing, so the claim cannot be verified as a synchronous crawl
        would verify it: nothing is recorded, and every citation says why."""
        return unpushed_result(jc.claim, refused)

    def finished_before(self, jc: JobClaim) -> ClaimResult | None:
        if not jc.cassette.is_file():
            return None  # it failed, so nothing was saved: verified again
        with self._lock:
            if self._replay_engine is None:
                from pytest_citecheck.engine.core import Engine

                settings = replace(self.engine.settings, record_mode=RecordMode.NONE)
                self._replay_engine = Engine.from_settings(settings)
            engine = self._replay_engine
        return engine.verify(jc.claim, jc.cassette, jc.key)

    def outcomes(self, jc: JobClaim, result: ClaimResult) -> dict[int, tuple[bool, str]]:
        verdicts = result.verdicts
        aligned = len(verdicts) == len(jc.claim.citations)
        out: dict[int, tuple[bool, str]] = {}
        for position in range(1, len(jc.claim.citations) + 1):
            verdict = verdicts[position - 1] if aligned else verdicts[0]
            if verdict.label == Label.ERROR:
                why = f"{verdict.reason}: {verdict.detail}" if verdict.detail else verdict.reason
                out[position] = (False, why or "error")
            else:
                out[position] = (True, verdict.label.value)
        return out

    def close(self) -> None:
        if self._replay_engine is not None:
            self._replay_engine.close()


def unpushed_result(claim: Claim, refused: Mapping[str, str]) -> ClaimResult:
    """``claim`` with a page that never reached the Crawler: every citation ``error``
    (the refused ones with why, the others as not verified)."""
    first = next(iter(refused))
    verdicts = [
        Verdict(
            url=c.target,
            label=Label.ERROR,
            reason=Reason.CRAWL_FAILED,
            detail=f"the Crawler never received this page: {refused[fetch_url(c.url)]}"
            if c.url is not None and fetch_url(c.url) in refused
            else f"not verified: {first}, cited by the same claim, never reached the Crawler",
        )
        for c in claim.citations
    ]
    return error_result(claim, Reason.CRAWL_FAILED, "").model_copy(update={"verdicts": verdicts})
