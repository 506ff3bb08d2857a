"""The verification engine: many claims, bounded concurrency, no pytest.

The plugin, the batch CLI and the ``/verify`` service are thin front ends over
:class:`Engine`, a facade over one module per job:

- :mod:`~pytest_citecheck.engine.settings` -- :class:`EngineSettings` (every knob:
  record mode, judge, timeouts, caps...) and :class:`StageHooks` (custom stages;
  the plugin wires pytest's ``pytest_citecheck_make_*`` hooks here; a factory that
  returns None leaves the built-in stage).
- :mod:`~pytest_citecheck.engine.stage_builder` -- the stages (fetcher, judges,
  ranker, retry policies, adaptive limits), built once from the settings; one
  claim's judge and panel resolved once.
- :mod:`~pytest_citecheck.engine.preflight` -- every key and token the claims will
  need, checked once before any runs.
- :mod:`~pytest_citecheck.engine.cassettes` -- which claims record, and one
  cassette opened, shared and saved.
- :mod:`~pytest_citecheck.engine.verification` -- one claim: budget, cassette,
  pipeline; a claim never raises (every failure is an ``error`` verdict).
- :mod:`~pytest_citecheck.engine.run_loop` -- claims concurrently: network calls of
  different claims overlap (a thread per claim in flight, at most ``concurrency``),
  ranking (CPU-bound) runs serialized, and each claim records into or replays from
  its own cassette through :mod:`pytest_citecheck.recording.transport` (no
  process-global patching).
- :mod:`~pytest_citecheck.engine.stopping` -- stop starting claims (Ctrl-C, ``-x``).
- :mod:`~pytest_citecheck.engine.progress` -- claims done/total, citations, credits.
- :mod:`~pytest_citecheck.engine.sources` -- the run loop's sources of a known set of
  claims: all at once, and in judge-batch rounds.
- :mod:`~pytest_citecheck.engine.judge_batch` -- ``judge_batch``: the judge asked through
  the provider's batch API, the claims verified in rounds.

The API::

    from pytest_citecheck.api import Engine, EngineSettings

    settings = EngineSettings(record_mode=RecordMode.ONCE, concurrency=4)
    with Engine.from_settings(settings) as engine:
        engine.preflight(claims, cassette_for=path_of)   # ConfigurationError, one message
        results = engine.verify_claims_sync(claims, cassette_for=path_of)

- :meth:`Engine.preflight` -- checks, once, every key and token the claims will
  need: the judges they use (``settings.judge``, else each claim's ``judge``,
  else ``DEFAULT_JUDGE``) and ``CRAWLBASE_TOKEN`` when URL citations will be
  recorded; and the cassette folders they record into (creatable, writable,
  free space). Raises :class:`~pytest_citecheck.core.errors.ConfigurationError` naming
  every missing variable (never a value).
- :meth:`Engine.verify_claims_sync` -- verify many claims; results come back **in
  input order**; ``on_result(index, result)`` is called as each finishes (any
  order). ``cassette_for(claim)`` gives the claim's cassette path, or None to verify
  live without recording. ``nodeid_for(claim)`` names the claim in "record it with:
  ..." messages.
- :meth:`Engine.verify` -- one claim, in the calling thread (replay uses this:
  no thread hop). :meth:`Engine.submit` -- one claim on the pool, a
  :class:`concurrent.futures.Future`.
- :meth:`Engine.recording` + :meth:`Engine.verify_in` -- several claims in one
  cassette (the ``citecheck`` fixture).
- :meth:`Engine.plan` -- the dry run: what recording would do, without a request.
- :attr:`Engine.progress` -- claims done/total, citations, credits, timing.
- :meth:`Engine.stop` / ``should_stop`` -- stop starting claims (Ctrl-C, ``-x``): a
  claim submitted but not started then never starts (no crawl, no judge call, no
  cassette); its future raises :class:`ClaimNotStarted`. Claims in flight finish.
  :meth:`Engine.verify_claims_sync` stops this way on Ctrl-C and raises
  :class:`Interrupted` carrying the results that finished.
- ``EngineSettings.run_id`` -- names one run across processes (the plugin passes
  pytest-xdist's): a cassette the run already saved is replayed, never recorded
  twice (:mod:`pytest_citecheck.recording.lock`).
- :meth:`Engine.close` -- closes the pool and every HTTP client.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_citecheck.claims.models import Claim
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.engine.budget import Budget
from pytest_citecheck.engine.cassettes import Cassettes, will_record
from pytest_citecheck.engine.preflight import preflight
from pytest_citecheck.engine.progress import Progress
from pytest_citecheck.engine.run_loop import RunLoop
from pytest_citecheck.engine.settings import EngineSettings, StageHooks
from pytest_citecheck.engine.sources import BatchRounds, ClaimSet
from pytest_citecheck.engine.stage_builder import StageBuilder
from pytest_citecheck.engine.stopping import Interrupted, StopSignal
from pytest_citecheck.engine.verification import Verification

if TYPE_CHECKING:
    import httpx

    from pytest_citecheck.core.retry import RetryPolicy
    from pytest_citecheck.engine.estimate import Plan
    from pytest_citecheck.recording.recorder import Recording
    from pytest_citecheck.stages.fetch_rules import Fetcher
    from pytest_citecheck.stages.judges.base import Judge
    from pytest_citecheck.stages.retrieval import Ranker


class Engine:
    """Verifies claims with the stages built once from :class:`EngineSettings`."""

    def __init__(
        self,
        settings: EngineSettings,
        hooks: StageHooks | None = None,
        environ: Mapping[str, str] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self.settings = settings
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.run_id = settings.run_id or uuid.uuid4().hex
        self.budget = Budget(settings.prices, settings.max_cost, settings.max_credits)
        self.stages = StageBuilder(settings, hooks or StageHooks(), self.environ)
        # One adaptive limit per service recorded from ("crawlbase", each judge provider).
        self.limits = self.stages.limits
        self.progress = Progress(limits=self.limits)
        self._stop = StopSignal(should_stop)
        self._cassettes = Cassettes(settings, self.environ, self.run_id)
        self._verification = Verification(self.stages, self.budget, self._cassettes)
        # The run loop every source of this engine's claims runs on (its pool, its stop).
        self.loop = RunLoop(settings.concurrency, self._stop)

    @classmethod
    def from_settings(
        cls,
        settings: EngineSettings,
        hooks: StageHooks | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Engine:
        """The engine for ``settings``; stages are built lazily, once."""
        if settings.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        return cls(settings, hooks, environ)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the stages (engine.stage_builder) ------------------------------------------

    def retry_policy(self, service: str | None = None) -> RetryPolicy:
        return self.stages.retry_policy(service)

    def http_client(self) -> httpx.Client:
        return self.stages.http_client()

    def fetcher(self) -> Fetcher:
        return self.stages.fetcher()

    def judge(self, spec: str) -> Judge:
        return self.stages.judge(spec)

    def live_ranker(self) -> Ranker:
        return self.stages.live_ranker()

    # -- before any claim runs (engine.preflight, engine.estimate) --------------------

    def preflight(
        self,
        claims: Iterable[Claim],
        cassette_for: Callable[[Claim], Path | None] | None = None,
    ) -> None:
        """Check every key and token the claims will need, and the cassette folders
        they record into, once, before any runs.

        Raises :class:`~pytest_citecheck.core.errors.ConfigurationError` listing each
        problem: the variable to set (never its value) and, when the judge came from
        ini, the option; a cassette folder by its name, the cause and the fix.
        """
        preflight(self.stages, claims, self._records(cassette_for), cassette_for)

    def plan(
        self,
        claims: Iterable[Claim],
        cassette_for: Callable[[Claim], Path | None] | None = None,
        name_for: Callable[[Claim], str] | None = None,
    ) -> Plan:
        """The dry run: what recording ``claims`` would do, without any request;
        ``name_for(claim)`` names a claim in its lists (default: its id)."""
        from pytest_citecheck.engine.estimate import plan

        out = plan(
            claims,
            self.settings.record_mode,
            self._records(cassette_for),
            lambda c: self.stages.judge_name(self.settings.judge_for(c)),
            name_for,
            confirm=not self.settings.no_confirm,
            batch=self.settings.judge_batch,
            pdf_fetch=self.settings.pdf_fetch,
            has_recording=None if cassette_for is None else lambda c: _exists(cassette_for(c)),
            joint=not self.settings.no_joint,
            screenshots=self.settings.screenshots,
        )
        out.max_cost, out.max_credits = self.settings.max_cost, self.settings.max_credits
        return out

    def _records(
        self, cassette_for: Callable[[Claim], Path | None] | None
    ) -> Callable[[Claim], bool]:
        """Whether a claim may go to the network, given where its cassette is."""
        mode = self.settings.record_mode
        return lambda claim: will_record(mode, cassette_for(claim) if cassette_for else None)

    # -- verification (engine.verification, engine.run_loop) ------------------------------

    def verify(
        self, claim: Claim, cassette: Path | None = None, nodeid: str | None = None
    ) -> ClaimResult:
        """Verify one claim in the calling thread; never raises for a claim's failure
        (a judge batch run's claim stops with JudgeDeferred to wait for the batch)."""
        batch = self.stages.judge_batch()
        if batch is not None:
            with batch.claim(nodeid or claim.id):
                result = self._verification.verify(claim, cassette, nodeid or claim.id)
        else:
            result = self._verification.verify(claim, cassette, nodeid or claim.id)
        self.progress.finished(result)
        return result

    def submit(
        self, claim: Claim, cassette: Path | None = None, nodeid: str | None = None
    ) -> Future[ClaimResult]:
        """Verify one claim on the engine's run loop (at most ``concurrency`` at once);
        once the engine is stopped, the future raises :class:`ClaimNotStarted`."""
        self.progress.add(1)
        return self.loop.submit(
            lambda: self.verify(claim, cassette, nodeid), claim.id, self.progress.skipped
        )

    def verify_claims_sync(
        self,
        claims: Sequence[Claim],
        *,
        cassette_for: Callable[[Claim], Path | None] | None = None,
        nodeid_for: Callable[[Claim], str] | None = None,
        on_result: Callable[[int, ClaimResult], None] | None = None,
        on_interrupt: Callable[[], None] | None = None,
    ) -> list[ClaimResult]:
        """Verify ``claims`` concurrently on the run loop; the results are in input
        order (``on_result`` is called in the calling thread as each finishes).

        Ctrl-C (KeyboardInterrupt) stops the engine (``on_interrupt`` is told): no
        claim starts any more, the ones in flight finish (``on_result`` sees them), then
        :class:`Interrupted` is raised with every result that finished. A second
        Ctrl-C while they finish propagates as KeyboardInterrupt.

        With ``judge_batch`` the judge is asked through the provider's batch API, in
        rounds (:class:`~pytest_citecheck.engine.sources.BatchRounds`)."""
        cassettes = [cassette_for(claim) if cassette_for else None for claim in claims]
        nodeids = [nodeid_for(claim) if nodeid_for else None for claim in claims]

        def work(index: int) -> ClaimResult:
            return self.verify(claims[index], cassettes[index], nodeids[index])

        batch = self.stages.judge_batch()
        source: ClaimSet[ClaimResult]
        if batch is not None:
            from pytest_citecheck.engine.judge_batch import MAX_ROUNDS

            # Each claim's node id: what the replies kept for its next round are keyed on.
            names = [nodeid or claim.id for nodeid, claim in zip(nodeids, claims, strict=True)]
            source = BatchRounds(
                claims, work, names, batch, MAX_ROUNDS, on_result, on_interrupt, self.progress
            )
        else:
            names = [claim.id for claim in claims]
            source = ClaimSet(work, names, on_result, on_interrupt, self.progress)
        results = source.end(self.loop.run(source))
        if results is None:
            waiting = len(source.deferred) if isinstance(source, BatchRounds) else 0
            raise Interrupted(source.results, source.not_started, waiting)
        return results

    @contextmanager
    def recording(
        self, cassette: Path, nodeid: str, judge: Judge | None = None
    ) -> Iterator[Recording]:
        """Open one cassette for several claims (:meth:`verify_in`); saved on exit
        when nothing failed. Raises CorruptRecording for an unreadable file.
        ``judge``: the judge they ask (its prompt version is recorded).

        Recording takes the cassette's turn (:mod:`pytest_citecheck.recording.lock`):
        another process recording it first is waited for, and a cassette this run
        (:attr:`run_id`) already saved is replayed, so a claim is billed once per run."""
        with self._cassettes.open(cassette, nodeid, judge) as recording:
            yield recording

    def verify_in(self, recording: Recording, claim: Claim) -> ClaimResult:
        """Verify ``claim`` inside an open :meth:`recording`, within the budget as
        :meth:`verify` is (a claim the budget stops fails the recording: nothing of it
        is saved, so recording it again starts from an empty cassette)."""
        return self._verification.verify_in(recording, claim)

    # -- stopping (engine.stopping) ---------------------------------------------------

    @property
    def should_stop(self) -> Callable[[], bool] | None:
        """Asked before each claim starts: True stops the engine (see :meth:`stop`)."""
        return self._stop.should_stop

    @should_stop.setter
    def should_stop(self, ask: Callable[[], bool] | None) -> None:
        self._stop.should_stop = ask

    def stop(self) -> None:
        """Start no more claims: each submitted one not yet started raises
        :class:`ClaimNotStarted` (no request, no cassette). Claims in flight finish,
        so every cassette on disk is a complete one."""
        self._stop.set()

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called, or ``should_stop`` now says so."""
        return self._stop.is_set

    def close(self) -> None:
        """Stop the pool (claims in flight finish), then close the HTTP clients the
        stages opened."""
        self.loop.close()
        self.stages.close()


def _exists(cassette: Path | None) -> bool:
    """A claim's cassette is there to replay (None: it verifies live, nothing to replay)."""
    return cassette is not None and cassette.exists()
