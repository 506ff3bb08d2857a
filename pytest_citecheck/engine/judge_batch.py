"""``--judge-batch``: the judge's requests answered by the provider's batch API, the
pipeline unchanged.

The claims run as usual, on a live transport (:class:`BatchTransport`, under the
claims' cassettes) that answers a judge request from the batch results when the batch
has answered it (keyed by :func:`~pytest_citecheck.stages.judges.batch.custom_id`, the
digest of the request body), and otherwise notes it as pending and stops the claim
(:class:`~pytest_citecheck.core.errors.JudgeDeferred`: no verdict, no cassette saved).
Once every claim has run, :meth:`JudgeBatch.send_pending` sends the pending requests as
one batch per judge endpoint, polls until each ends (or the wait runs out: it is then
cancelled), and the stopped claims run again. A claim whose answer leads to another
question (the confirmation reads the quote alone; a refused feature is asked again
without it) stops there again: one more round, until no claim asks anything new.

The guard, the confirmation and everything after the judge run as they do without a
batch, on the reply the batch gave, and the claim's cassette records that reply as an
ordinary judge exchange (marked with :data:`~pytest_citecheck.stages.judges.batch.BATCH_HEADER`,
so its cost is counted at the batch price): replaying it needs no batch.

A Crawler job (``--via-crawler``) has no rounds over every claim: each claim runs as
its pages arrive, and :class:`~pytest_citecheck.large_audit.job_batches.JobBatches`
parks the one that stopped, sends the pending requests when enough gathered or a
while passed, and gives the claim back once its answer is in; the batches' ids are
kept in the job's file, so a resumed job waits for them again.

A claim's other requests (its page) are not sent twice: the transport keeps the replies
a stopped claim got, and its next run is answered from them in the same order. A
request the batch did not answer (the item errored, expired or was cancelled; the batch
failed or did not end within the wait) is that citation's ``error``
``judge_batch_failed``, never a label.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import httpx

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.core.errors import ConfigurationError, JudgeDeferred, StageFailed
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.core.text import plural
from pytest_citecheck.recording.transport import Reply, read_live
from pytest_citecheck.stages.judges.batch import (
    BATCH_HEADER,
    BatchAnswer,
    BatchAPI,
    Submitted,
    batch_api,
    chunks,
    custom_id,
    failure_text,
)

if TYPE_CHECKING:
    from pytest_citecheck.stages.judges.http import HTTPJudge

log = logging.getLogger("pytest_citecheck")

# The claim whose verification runs in this thread (its node id): what kept replies are
# keyed on.
_claim: ContextVar[str | None] = ContextVar("citecheck.batch_claim", default=None)


@dataclass(frozen=True)
class Kept:
    """A reply a claim got, its body on disk (a large audit keeps many pages a round)."""

    status: int
    reason: str | None
    headers: dict[str, list[str]]
    path: Path

    def reply(self) -> Reply:
        return Reply(self.status, self.reason, self.headers, self.path.read_bytes())


T = TypeVar("T")

# Rounds a run may take: the first reading, its confirmation, and the questions asked
# again without a feature a model refused (at most three per call) leave room to spare;
# a judge still asking after that is an error, not an endless run.
MAX_ROUNDS = 8


@dataclass
class JudgeBatch:
    """One run's batch state: the endpoints judged through a batch, the answers, the
    requests waiting, and the replies kept for claims that run again."""

    poll: float
    wait: float
    terms: Terms = NEUTRAL
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    # The batches sent so far (the run's summary names them).
    sent: list[Submitted] = field(default_factory=list)
    rounds: int = 0
    _apis: dict[str, BatchAPI] = field(default_factory=dict)
    _keys: list[str] = field(default_factory=list, repr=False)
    _answers: dict[str, BatchAnswer] = field(default_factory=dict)
    _pending: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    # Requests in a batch sent and not ended yet: asked again, they wait for it.
    _inflight: set[str] = field(default_factory=set)
    # When a request last joined the pending ones, and when the oldest pending one
    # did (the clock's time).
    last_asked: float = 0.0
    first_asked: float = 0.0
    # Claims on their last round: a request without an answer fails instead of waiting.
    _last_round: set[str] = field(default_factory=set)
    # (claim, request) -> the replies it got in order; and how many its current run used.
    _kept: dict[tuple[str, str], list[Kept]] = field(default_factory=dict)
    _used: dict[tuple[str, str], int] = field(default_factory=dict)
    _spool: Path | None = field(default=None, repr=False)
    _spooled: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # -- the judges -------------------------------------------------------------------

    def register(self, judge: HTTPJudge) -> None:
        """Answer ``judge``'s requests from batches. Raises ConfigurationError for a
        provider without a batch API."""
        api = batch_api(judge.provider, judge.url, judge.api_key, judge.timeout)
        if api is None:
            flag = self.terms.option("judge_batch")
            raise ConfigurationError(
                f"the {judge.name} judge has no batch API: judge batches go to the openai "
                f"and anthropic judges only (run this judge without {flag})"
            )
        with self._lock:
            self._apis[judge.url] = api
            if judge.api_key:
                self._keys.append(judge.api_key)

    def transport(self, inner: httpx.BaseTransport) -> BatchTransport:
        return BatchTransport(self, inner)

    # -- what the transport asks --------------------------------------------------------

    def is_judge(self, request: httpx.Request) -> bool:
        return request.method == "POST" and str(request.url) in self._apis

    def answer(self, request: httpx.Request) -> httpx.Response:
        """The batch's reply to a judge request; raises JudgeDeferred when the batch has
        not answered it yet, StageFailed when it could not."""
        body = request.read()
        cid = custom_id(body)
        with self._lock:
            answer = self._answers.get(cid)
            last = answer is None and _claim.get() in self._last_round
            if answer is None and not last and cid not in self._inflight:
                if cid not in self._pending:
                    self.last_asked = self.clock()
                    if not self._pending:
                        self.first_asked = self.last_asked
                self._pending.setdefault(cid, (str(request.url), body))
        if last:
            raise StageFailed(
                Reason.JUDGE_BATCH_FAILED,
                f"the judge was still asking new questions after {MAX_ROUNDS} batch rounds",
            )
        if answer is None:
            raise JudgeDeferred(cid)
        if answer.failure is not None:
            where = f" ({answer.source})" if answer.source else ""
            raise StageFailed(Reason.JUDGE_BATCH_FAILED, f"{answer.failure}{where}")
        return httpx.Response(
            answer.status,
            headers=[
                ("content-type", "application/json"),
                (BATCH_HEADER, answer.source),
            ],
            content=answer.body,
            request=request,
        )

    @contextmanager
    def claim(self, key: str) -> Iterator[None]:
        """The requests this thread sends belong to the claim ``key`` (its node id)."""
        token = _claim.set(key)
        try:
            yield
        finally:
            _claim.reset(token)

    def kept(self, request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
        """A claim's non-judge request: the reply its earlier run got, else the network's
        (kept for its next run)."""
        claim = _claim.get()
        if claim is None:
            return inner.handle_request(request)
        key = (claim, f"{request.method} {request.url} {custom_id(request.read())}")
        with self._lock:
            replies = self._kept.get(key, [])
            used = self._used.get(key, 0)
            self._used[key] = used + 1
            kept = replies[used] if used < len(replies) else None
        if kept is not None:
            return kept.reply().to_response(request)
        # Read whole (the reader above applies the size cap), kept on disk.
        reply = read_live(inner, request, None)
        self._keep(key, reply)
        return reply.to_response(request)

    def _keep(self, key: tuple[str, str], reply: Reply) -> None:
        with self._lock:
            if self._spool is None:
                self._spool = Path(tempfile.mkdtemp(prefix="citecheck-judge-batch-"))
            self._spooled += 1
            path = self._spool / f"{self._spooled}.body"
        path.write_bytes(reply.body)
        with self._lock:
            kept = Kept(reply.status, reply.reason, reply.headers, path)
            self._kept.setdefault(key, []).append(kept)

    def forget(self, claim: str) -> None:
        """``claim`` ended: its kept replies are not needed again."""
        with self._lock:
            keys = [k for k in self._kept if k[0] == claim]
            gone = [kept.path for k in keys for kept in self._kept.pop(k)]
            for k in keys:
                self._used.pop(k, None)
        for path in gone:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        """Delete the kept replies."""
        with self._lock:
            spool, self._spool = self._spool, None
            self._kept.clear()
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)

    def restart(self, claim: str) -> None:
        """``claim`` runs again from its start (alone, not in a round of every claim):
        its kept replies serve it from the first."""
        with self._lock:
            for key in [k for k in self._used if k[0] == claim]:
                del self._used[key]

    def give_up(self, claim: str) -> None:
        """``claim`` runs a last time: a question the batch has not answered is its
        ``error`` ``judge_batch_failed`` instead of one more wait."""
        with self._lock:
            self._last_round.add(claim)

    def waits_for(self, cid: str) -> bool:
        """Whether the request ``cid`` is pending or in a batch not ended."""
        with self._lock:
            return cid not in self._answers and (cid in self._pending or cid in self._inflight)

    def next_round(self) -> None:
        """Count one more round without restarting the claims (a Crawler job's
        batches go out while other claims run)."""
        with self._lock:
            self.rounds += 1

    def start_round(self) -> None:
        """The claims run again from their start: kept replies serve them from the first."""
        with self._lock:
            self._used.clear()
            self.rounds += 1

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    # -- sending and waiting ------------------------------------------------------------

    def send_pending(
        self, on_submit: Callable[[list[Submitted]], None] | None = None
    ) -> list[Submitted]:
        """Send every pending request (one batch per endpoint, split at the provider's
        limits), wait until each batch ends or the wait runs out, and keep the answers;
        a request without one keeps why. ``on_submit`` is told the batches sent before
        the wait (a Crawler job saves their ids)."""
        return self.send(self.take_pending(), on_submit)

    def take_pending(self) -> dict[str, tuple[str, bytes]]:
        """The pending requests, to :meth:`send`: asked again, they wait for it."""
        with self._lock:
            pending, self._pending = self._pending, {}
            self._inflight.update(pending)
        return pending

    def send(
        self,
        pending: dict[str, tuple[str, bytes]],
        on_submit: Callable[[list[Submitted]], None] | None = None,
    ) -> list[Submitted]:
        """:meth:`send_pending` for the requests :meth:`take_pending` took."""
        with self._lock:
            apis = dict(self._apis)
        batches, failed = submit_all(apis, pending, self._said)
        if on_submit is not None and batches:
            on_submit(batches)
        self._wait(batches)
        self._keep_answers(batches, failed)
        return batches

    def resumed(self, endpoint: str, batch_id: str, ids: list[str]) -> Submitted | None:
        """A batch an earlier run sent to ``endpoint`` (its requests' ``ids``), to wait
        for again with :meth:`wait_resumed`: its requests wait for it from now on, not
        sent twice. None when no judge of this run asks ``endpoint``."""
        with self._lock:
            api = self._apis.get(endpoint)
            if api is None:
                return None
            waiting = [cid for cid in ids if cid not in self._answers]
            self._inflight.update(waiting)
        return Submitted(api, batch_id, waiting, endpoint=endpoint)

    def wait_resumed(self, batch: Submitted) -> None:
        """Wait for a :meth:`resumed` batch and keep the answers it gave. What it did
        not answer, or a batch that cannot be read any more, is no error here: those
        requests are asked again in a new batch."""
        try:
            self._wait([batch])
        finally:
            with self._lock:
                self.sent.append(batch)
                for cid in batch.ids:
                    answer = batch.answers.get(cid)
                    if answer is not None and answer.failure is None:
                        self._answers[cid] = answer
                    self._inflight.discard(cid)

    def _keep_answers(self, batches: list[Submitted], failed: dict[str, BatchAnswer]) -> None:
        with self._lock:
            self.sent += batches
            self._answers.update(failed)
            self._inflight.difference_update(failed)
            for batch in batches:
                source = f"{batch.api.provider} {batch.batch_id}"
                for cid in batch.ids:
                    self._answers[cid] = batch.answers.get(cid) or BatchAnswer(
                        failure=f"the batch ended {batch.status} without an answer for this "
                        "request",
                        source=source,
                    )
                    self._inflight.discard(cid)

    def cancel(self, batches: list[Submitted]) -> None:
        """Cancel the batches not ended (Ctrl-C, the wait ran out); best effort."""
        cancel(batches, self._said)

    def _wait(self, batches: list[Submitted]) -> None:
        deadline = self.clock() + self.wait
        try:
            while True:
                for batch in batches:
                    if not batch.ended:
                        self._look(batch)
                waiting = [b for b in batches if not b.ended]
                if not waiting:
                    return
                left = deadline - self.clock()
                if left <= 0:
                    self.cancel(waiting)
                    flag = self.terms.option("judge_batch_wait")
                    for batch in waiting:
                        out_of_time(batch, self.wait, flag)
                    return
                self.sleep(min(self.poll, left))
        except KeyboardInterrupt:
            self.cancel(batches)
            raise

    def _look(self, batch: Submitted) -> None:
        look(batch, self._said)

    def _said(self, exc: BaseException) -> str:
        with self._lock:
            keys = list(self._keys)
        return failure_text(exc, keys)

    # -- the run's summary --------------------------------------------------------------

    def summary(self) -> str | None:
        """``judge batch: 2 rounds, 2 batches, 14 requests (1 without an answer)``."""
        with self._lock:
            failed = sum(1 for a in self._answers.values() if a.failure is not None)
            return summary_line(self.rounds, list(self.sent), len(self._answers), failed)


def submit_all(
    apis: dict[str, BatchAPI],
    pending: dict[str, tuple[str, bytes]],
    said: Callable[[BaseException], str],
) -> tuple[list[Submitted], dict[str, BatchAnswer]]:
    """Send ``pending`` (request id -> endpoint, body) as one batch per endpoint of
    ``apis``, split at the provider's limits: the batches sent, and the answers of the
    requests whose batch the API refused (why)."""
    by_endpoint: dict[str, dict[str, bytes]] = {}
    for cid, (url, body) in pending.items():
        by_endpoint.setdefault(url, {})[cid] = body
    batches: list[Submitted] = []
    failed: dict[str, BatchAnswer] = {}
    for url, requests in by_endpoint.items():
        api = apis[url]
        for chunk in chunks(api, requests):
            try:
                batch_id = api.submit(chunk)
            except Exception as exc:  # the API refused it: these requests fail, not the run
                why = f"the {api.provider} batch API refused the batch: {said(exc)}"
                failed.update(dict.fromkeys(chunk, BatchAnswer(failure=why)))
                continue
            log.info("%s batch %s: %s sent", api.provider, batch_id, len(chunk))
            batches.append(Submitted(api, batch_id, list(chunk), endpoint=url))
    return batches, failed


def summary_line(rounds: int, sent: list[Submitted], answered: int, failed: int) -> str | None:
    """``judge batch: 2 rounds, 2 batches, 14 requests (1 without an answer)``; None
    when nothing was sent or answered."""
    if not sent and not answered:
        return None
    names = ", ".join(f"{b.api.provider} {b.batch_id} {b.status}" for b in sent)
    line = (
        f"judge batch: {plural(rounds, 'round')}, {len(sent)} batch"
        f"{'' if len(sent) == 1 else 'es'}, "
        f"{plural(answered, 'request')}"
    )
    if failed:
        line += f" ({failed} without an answer: error judge_batch_failed)"
    return f"{line}; {names}" if names else line


def cancel(batches: list[Submitted], said: Callable[[BaseException], str]) -> None:
    """Cancel the batches not ended; best effort (``said``: an error, its secrets
    scrubbed)."""
    for batch in batches:
        if not batch.ended:
            try:
                batch.api.cancel(batch.batch_id)
            except Exception as exc:  # it ends on its own within its window
                log.warning("could not cancel %s: %s", batch.batch_id, said(exc))


def out_of_time(batch: Submitted, wait: float, flag: str) -> None:
    """``batch`` did not end within ``wait`` seconds (``flag`` sets it): it has ended,
    every request of it without an answer."""
    batch.answers = dict.fromkeys(
        batch.ids,
        BatchAnswer(
            failure=f"the batch did not end within {wait:g} s "
            f"({flag}; it was {batch.status} "
            "and was cancelled)",
            source=f"{batch.api.provider} {batch.batch_id}",
        ),
    )
    batch.ended = True


def look(batch: Submitted, said: Callable[[BaseException], str]) -> None:
    """Poll ``batch`` once; its answers once it has ended (an unreadable batch has
    ended, each request failing with why; a transient error is looked past)."""
    api = batch.api
    try:
        batch.status, batch.ended = api.poll(batch.batch_id)
        if batch.ended:
            batch.answers = api.answers(batch.batch_id)
            log.info("%s batch %s %s", api.provider, batch.batch_id, batch.status)
    except Exception as exc:  # unreadable: its requests fail with the reason
        if api.transient(exc):
            # A batch runs for hours: a dropped connection or a 5xx is looked past.
            log.warning("%s batch %s: %s", api.provider, batch.batch_id, said(exc))
            batch.ended = False
            return
        batch.ended = True
        why = f"the {api.provider} batch API could not be read: {said(exc)}"
        batch.answers = dict.fromkeys(
            batch.ids,
            BatchAnswer(failure=why, source=f"{api.provider} {batch.batch_id}"),
        )


def waiting_line(claims: int, record_hint: str) -> str:
    """What an interrupted judge batch run says about the claims that were waiting."""
    were = "claim was" if claims == 1 else "claims were"
    return (
        f"citecheck: {claims} {were} waiting for the judge batch (interrupted): their pages "
        f"were fetched, nothing of them was recorded; {record_hint} asks again"
    )


class BatchTransport(httpx.BaseTransport):
    """The ``live`` transport of a ``--judge-batch`` run (under the claims' cassettes):
    judge requests go to :class:`JudgeBatch`, the others to ``inner``, kept per claim."""

    def __init__(self, batch: JudgeBatch, inner: httpx.BaseTransport) -> None:
        self.batch = batch
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.batch.is_judge(request):
            return self.batch.answer(request)
        return self.batch.kept(request, self.inner)

    def close(self) -> None:
        self.inner.close()
