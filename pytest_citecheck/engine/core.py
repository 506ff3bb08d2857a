"""The verification engine: many claims, bounded concurrency, no pytest.

The plugin, the batch CLI and the ``/verify`` service are thin front ends over
this module. It is the one place that builds the stages -- fetcher, judges,
ranker, retry policy -- from settings, and it verifies claims concurrently:
network calls of different claims overlap (a thread per claim in flight, at
most ``concurrency``), ranking (CPU-bound) runs serialized off the event loop,
and each claim records into or replays from its own cassette through
:mod:`pytest_citecheck.recording.transport` (no process-global patching).

The API::

    from pytest_citecheck.engine.core import Engine, EngineSettings

    settings = EngineSettings(record_mode=RecordMode.ONCE, concurrency=4)
    with Engine.from_settings(settings) as engine:
        engine.preflight(claims, cassette_for=path_of)   # ConfigurationError, one message
        results = engine.verify_claims_sync(claims, cassette_for=path_of)
        # in async code:  results = await engine.verify_claims(claims, ...)

- :class:`EngineSettings` -- every knob (record mode, judge, timeouts, caps...).
- :class:`StageHooks` -- optional factories for custom stages (the plugin
  wires pytest's ``pytest_citecheck_make_*`` hooks here); a factory that
  returns None leaves the built-in stage.
- :meth:`Engine.preflight` -- checks, once, every key and token the claims will
  need: the judges they use (``settings.judge``, else each claim's ``judge``,
  else :data:`DEFAULT_JUDGE`) and ``CRAWLBASE_TOKEN`` when URL citations will be
  recorded. Raises :class:`~pytest_citecheck.core.errors.ConfigurationError` naming
  every missing variable (never a value).
- :meth:`Engine.verify_claims` (async) / :meth:`Engine.verify_claims_sync` --
  verify many claims; results come back **in input order**; ``on_result(index,
  result)`` is called as each finishes (any order). ``cassette_for(claim)``
  gives the claim's cassette path, or None to verify live without recording.
  ``nodeid_for(claim)`` names the claim in "record it with: ..." messages.
- :meth:`Engine.verify` -- one claim, in the calling thread (replay uses this:
  no thread hop). :meth:`Engine.submit` -- one claim on the pool, a
  :class:`concurrent.futures.Future`.
- :meth:`Engine.recording` + :meth:`Engine.verify_in` -- several claims in one
  cassette (the ``citecheck`` fixture).
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

A claim never raises: every failure becomes ``error`` verdicts with a reason
(``configuration_error``, ``corrupt_recording``, ``no_recording``...).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_citecheck.claims.models import Claim, ClaimResult, Label, Reason, Verdict
from pytest_citecheck.core.defaults import (
    DEFAULT_CONCURRENCY,
    DEFAULT_JUDGE,
    DEFAULT_MAX_PAGE_BYTES,
    DEFAULT_PANEL_RULE,
    DEFAULT_REVIEW_BELOW,
    DEFAULT_TIMEOUT,
    DEFAULT_URL_POLICY,
)
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.core.limits import CRAWLING_API_CAP, AdaptiveLimit, cap_for
from pytest_citecheck.core.prices import Prices
from pytest_citecheck.core.providers import TOKEN_ENV
from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.core.terms import JUDGE_FROM_CLAIM, NEUTRAL, Terms
from pytest_citecheck.engine.budget import Budget
from pytest_citecheck.stages.quote_policy import EXACT, QuotePolicy

if TYPE_CHECKING:
    import httpx

    from pytest_citecheck.core.retry import RetryPolicy
    from pytest_citecheck.engine.estimate import Plan
    from pytest_citecheck.engine.pipeline import Verifier
    from pytest_citecheck.recording.recorder import Recording
    from pytest_citecheck.recording.transport import StageTransport
    from pytest_citecheck.stages.fetch_rules import Fetcher
    from pytest_citecheck.stages.judges.base import Judge
    from pytest_citecheck.stages.retrieval import Ranker

# The token that recording URL citations needs (preflight checks it).
CRAWLBASE_TOKEN_ENV = TOKEN_ENV["normal"]
# How often a wait for claims wakes up (Ctrl-C is seen at the latest then).
_WAIT_TICK = 0.2
# The temperature a sampled judge is sent (citecheck_judge_samples > 1, temperature auto).
SAMPLE_TEMPERATURE = 1.0


@dataclass(frozen=True)
class EngineSettings:
    """What the engine needs to know; every front end maps its options onto this."""

    record_mode: RecordMode = RecordMode.NONE
    # Overrides every claim's own ``judge``; None: the claim's, else DEFAULT_JUDGE.
    judge: str | None = None
    # Where ``judge`` came from, for messages: "flag", "ini" or None (an API caller).
    judge_origin: str | None = None
    # The openai-compatible judge's base URL (ini citecheck_judge_base_url).
    judge_base_url: str | None = None
    # Passed to every built-in judge (ini citecheck_judge_temperature / _response_format).
    judge_temperature: Any = "auto"
    judge_response_format: str = "auto"
    review_below: float = DEFAULT_REVIEW_BELOW
    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float | None = DEFAULT_TIMEOUT
    max_page_bytes: int | None = DEFAULT_MAX_PAGE_BYTES
    # The persistent embedding cache (None: no cache); the ranker (ini citecheck_ranker).
    cache_dir: Path | None = None
    ranker: str | None = None
    # How the guard matches a judge's quote.
    quote_policy: QuotePolicy = EXACT
    # Identifies one run across processes (xdist workers share it): a cassette this
    # run already saved is replayed, not recorded again. None: this engine alone.
    run_id: str | None = None
    # Which cited URLs may be fetched (pytest_citecheck.stages.url_policy); a refused
    # one is a ``url_refused`` verdict and no request.
    url_policy: str = DEFAULT_URL_POLICY
    # Requests in flight per service (pytest_citecheck.core.limits): the Crawling API's
    # documented 20 per token; None for a judge: its provider's default cap.
    crawl_concurrency: int = CRAWLING_API_CAP
    judge_concurrency: int | None = None
    # The user's prices and the run's budget (pytest_citecheck.engine.budget).
    prices: Prices = field(default_factory=Prices)
    max_cost: float | None = None
    max_credits: float | None = None
    # How messages name options and the record command: the front end's own words.
    terms: Terms = NEUTRAL
    # A judge panel (engine/panel.py): overrides every claim's own ``judges``/``judge``.
    judges: tuple[str, ...] | None = None
    # Replies asked of each panel member (or of the one judge): N > 1 makes a panel.
    judge_samples: int = 1
    panel_rule: str = DEFAULT_PANEL_RULE

    def __post_init__(self) -> None:
        # An API caller may name the mode ("once"); the engine holds a RecordMode.
        object.__setattr__(self, "record_mode", RecordMode(self.record_mode))

    @property
    def replaying(self) -> bool:
        return self.record_mode.replay_only

    def judge_for(self, claim: Claim) -> str:
        return self.judge or claim.judge or DEFAULT_JUDGE

    def panel_for(self, claim: Claim) -> tuple[str, ...]:
        """The claim's panel members' specs, one per reply asked (a spec sampled N
        times appears N times); empty when the claim has one judge, as without a panel.

        ``judges`` (flag/ini) wins over ``judge`` (flag/ini), which wins over the claim
        file's ``judges:``, then its ``judge:``."""
        if self.judges:
            specs: tuple[str, ...] = self.judges
        elif self.judge is None and claim.judges:
            specs = claim.judges
        else:
            specs = (self.judge_for(claim),)
        members = tuple(spec for spec in specs for _ in range(max(1, self.judge_samples)))
        return members if len(members) > 1 else ()

    def specs_for(self, claim: Claim) -> tuple[str, ...]:
        """Every judge spec the claim will ask (its panel's, else its judge)."""
        return tuple(dict.fromkeys(self.panel_for(claim))) or (self.judge_for(claim),)


@dataclass(frozen=True)
class StageHooks:
    """Custom stages; each factory returns None to keep the built-in one."""

    make_fetcher: Callable[[], Fetcher | None] | None = None
    make_judge: Callable[[str], Judge | None] | None = None
    make_ranker: Callable[[], Ranker | None] | None = None


@dataclass
class Progress:
    """How far a run is: shown while recording."""

    total: int = 0
    done: int = 0
    # Submitted claims the engine was stopped before starting (no request made).
    not_started: int = 0
    citations: int = 0
    credits: float = 0.0
    started: float = field(default_factory=time.monotonic)
    # The engine's per-service limits: the line shows requests in flight and back-off.
    limits: Mapping[str, AdaptiveLimit] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, claims: int) -> None:
        with self._lock:
            self.total += claims

    def skipped(self) -> None:
        with self._lock:
            self.not_started += 1

    def finished(self, result: ClaimResult) -> None:
        with self._lock:
            self.done += 1
            self.citations += len(result.verdicts)
            self.credits += sum(v.credits for v in result.verdicts)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def line(self) -> str:
        elapsed = self.elapsed()
        text = (
            f"citecheck: {self.done}/{self.total} claims, {self.citations} "
            f"citation{'' if self.citations == 1 else 's'}, "
            f"{self.credits:g} credits, {elapsed:.1f} s"
        )
        if self.not_started:
            text += f", {self.not_started} not started"
        elif 0 < self.done < self.total:
            left = elapsed / self.done * (self.total - self.done)
            text += f", ~{left:.0f} s left"
        return text + self.services()

    def services(self) -> str:
        """``; crawlbase 18/20 in flight, openai 3/16 in flight`` (empty when idle)."""
        busy = [
            limit.status()
            for limit in list(self.limits.values())
            if limit.in_flight or limit.overloads
        ]
        return "; " + ", ".join(busy) if busy else ""


class ClaimNotStarted(Exception):
    """The engine was stopped before this claim started: no request was made for it."""

    def __init__(self, claim_id: str) -> None:
        super().__init__(f"claim {claim_id} was not started: the run was stopped")
        self.claim_id = claim_id


class Interrupted(Exception):
    """Ctrl-C stopped :meth:`Engine.verify_claims_sync`: the claims in flight finished,
    no other claim started. ``results`` maps an input index to its result."""

    def __init__(self, results: Mapping[int, ClaimResult], not_started: int) -> None:
        super().__init__(f"interrupted: {not_started} claim(s) not started")
        self.results = dict(results)
        self.not_started = not_started


def not_started_line(count: int | None, why: str) -> str:
    """What a stopped run says about the claims it never started (None: how many
    is not known)."""
    if count is None:
        return f"citecheck: the run stopped early ({why}); claims that never ran are not counted"
    claims = "claim was" if count == 1 else "claims were"
    return f"citecheck: {count} {claims} not started ({why}); nothing was billed for them"


def error_result(claim: Claim, reason: str, detail: str) -> ClaimResult:
    """Every citation of ``claim`` is ``error`` for one reason."""
    verdicts = [
        Verdict(url=c.target, label=Label.ERROR, reason=reason, detail=detail)
        for c in claim.citations
    ] or [Verdict(url="", label=Label.ERROR, reason=reason, detail=detail)]
    return ClaimResult(
        id=claim.id,
        claim=claim.claim,
        label=Label.ERROR,
        verdicts=verdicts,
        expect=claim.expect,
        answer=claim.answer,
    )


def outcome(future: Future[ClaimResult]) -> ClaimResult | None:
    """A finished claim future's result; None when the claim was never started
    (the engine was stopped, or closed with the claim still queued)."""
    try:
        return future.result()
    except (ClaimNotStarted, CancelledError):
        return None


def _no_sleep(seconds: float) -> None:
    """Replay plays a recorded 429-then-200 back at once: the wait already happened."""


class _SerialRanker:
    """Ranking is CPU-bound and the model is shared: one claim ranks at a time.

    Claims whose pages arrived meanwhile wait in a queue; whoever ranks next first
    embeds every queued question in one batch (``prepare``, when the ranker has
    it), so concurrent claims share the model's batches instead of taking turns.
    """

    def __init__(self, inner: Ranker, lock: threading.Lock) -> None:
        self._inner = inner
        self._lock = lock
        self._queued: list[tuple[str, Sequence[str]]] = []
        self._queue_lock = threading.Lock()

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        prepare = getattr(self._inner, "prepare", None)
        if prepare is not None:
            with self._queue_lock:
                self._queued.append((claim, passages))
        with self._lock:
            if prepare is not None:
                with self._queue_lock:
                    batch, self._queued = self._queued, []
                if batch:
                    prepare(batch)
            return self._inner.rank(claim, passages, k)

    def __getattr__(self, name: str) -> Any:
        # name, version, embedding_stats: the wrapped ranker's.
        return getattr(self._inner, name)


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
        # Asked before each claim starts: True stops the engine (see :meth:`stop`).
        self.should_stop = should_stop
        self._stop = threading.Event()
        self.hooks = hooks or StageHooks()
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.progress = Progress()
        self.run_id = settings.run_id or uuid.uuid4().hex
        self.budget = Budget(settings.prices, settings.max_cost, settings.max_credits)
        # One adaptive limit per service recorded from ("crawlbase", each judge provider).
        self.limits: dict[str, AdaptiveLimit] = {}
        self.progress.limits = self.limits
        self._lock = threading.RLock()
        self._rank_lock = threading.Lock()
        self._transport: StageTransport | None = None
        self._client: httpx.Client | None = None
        self._fetcher: Fetcher | None = None
        self._judges: dict[str, Judge] = {}
        self._ranker: Ranker | None = None
        self._builtin_ranker = False
        self._pool: ThreadPoolExecutor | None = None

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

    # -- the stages, built once -------------------------------------------------

    def retry_policy(self, service: str | None = None) -> RetryPolicy:
        """The retry policy of ``service``'s requests; recording, they also go
        through its :class:`~pytest_citecheck.core.limits.AdaptiveLimit`."""
        from pytest_citecheck.core.retry import RetryPolicy

        terms = self.settings.terms
        if self.settings.replaying:
            return RetryPolicy(sleep=_no_sleep, deadline=self.settings.timeout, terms=terms)
        limiter = self.limit(service) if service is not None else None
        return RetryPolicy(
            sleep=time.sleep, deadline=self.settings.timeout, terms=terms, limiter=limiter
        )

    def limit(self, service: str) -> AdaptiveLimit:
        """The adaptive limit of ``service`` (built once)."""
        with self._lock:
            limit = self.limits.get(service)
            if limit is None:
                if service == "crawlbase":
                    cap = self.settings.crawl_concurrency
                else:
                    cap = self.settings.judge_concurrency or cap_for(service)
                limit = self.limits[service] = AdaptiveLimit(service, cap)
            return limit

    def http_client(self) -> httpx.Client:
        """The client every built-in stage sends through (per-claim cassettes)."""
        with self._lock:
            if self._client is None:
                import httpx

                from pytest_citecheck.recording.transport import StageTransport

                self._transport = StageTransport(self.settings.max_page_bytes)
                self._client = httpx.Client(transport=self._transport)
            return self._client

    def fetcher(self) -> Fetcher:
        with self._lock:
            if self._fetcher is None:
                custom = self.hooks.make_fetcher() if self.hooks.make_fetcher else None
                if custom is not None:
                    self._fetcher = custom
                else:
                    from pytest_citecheck.stages.fetch import CrawlbaseFetcher

                    # A missing token is checked by preflight; replaying needs none.
                    self._fetcher = CrawlbaseFetcher.from_env(
                        self.environ,
                        require_tokens=False,
                        retry=self.retry_policy("crawlbase"),
                        client=self.http_client(),
                        terms=self.settings.terms,
                    )
            return self._fetcher

    @property
    def custom_fetcher(self) -> bool:
        return self.hooks.make_fetcher is not None and not _is_builtin(self.fetcher())

    def judge(self, spec: str) -> Judge:
        """The judge ``spec`` names (built once). Raises ValueError for an unknown
        provider and ConfigurationError for a missing base URL."""
        with self._lock:
            judge = self._judges.get(spec)
            if judge is None:
                custom = self.hooks.make_judge(spec) if self.hooks.make_judge else None
                judge = custom if custom is not None else self._builtin_judge(spec)
                self._judges[spec] = judge
            return judge

    def _builtin_judge(
        self, spec: str, require_key: bool = False, temperature: Any = None
    ) -> Judge:
        from pytest_citecheck.stages.judges import make_judge

        # The ini base URL is for the openai-compatible provider; the hosted
        # providers take theirs from the environment.
        compatible = spec.strip().lower().startswith("openai-compatible:")
        return make_judge(
            spec,
            environ=self.environ,
            base_url=self.settings.judge_base_url if compatible else None,
            require_key=require_key,
            retry=self.retry_policy(spec.strip().partition(":")[0].lower()),
            client=self.http_client(),
            temperature=self.settings.judge_temperature if temperature is None else temperature,
            response_format=self.settings.judge_response_format,
            terms=self.settings.terms,
        )

    def live_ranker(self) -> Ranker:
        """The ranker used when recording, serialized (built on first use)."""
        with self._lock:
            if self._ranker is None:
                custom = self.hooks.make_ranker() if self.hooks.make_ranker else None
                self._builtin_ranker = custom is None
                self._ranker = _SerialRanker(custom or self._default_ranker(), self._rank_lock)
            return self._ranker

    def _default_ranker(self) -> Ranker:
        # The model loader's own "Loading weights" bar must not reach the terminal
        #: huggingface_hub and transformers read this on import.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        loaded = sys.modules.get("transformers.utils.logging")
        if loaded is not None:
            loaded.disable_progress_bar()
        from pytest_citecheck.stages import retrieval

        # The pipeline shows the judge DEFAULT_TOP_K passages in page order: a page
        # of no more is shown whole, and needs no embedding.
        built = retrieval.make_ranker(
            self.settings.ranker or retrieval.DEFAULT_RANKER, self.settings.cache_dir
        )
        return retrieval.shows(built, retrieval.DEFAULT_TOP_K)

    # -- start-up checks ----------------------------------------------------------

    def will_record(self, cassette: Path | None) -> bool:
        """Whether verifying with this cassette may go to the network (what
        :meth:`preflight` checks keys for). Mode ``none`` never records; without a
        cassette any other mode verifies live."""
        mode = self.settings.record_mode
        if cassette is None:
            return mode.live_without_cassette
        return mode.may_record(cassette.exists())

    def preflight(
        self,
        claims: Iterable[Claim],
        cassette_for: Callable[[Claim], Path | None] | None = None,
    ) -> None:
        """Check every key and token the claims will need, once, before any runs.

        Raises :class:`ConfigurationError` listing each problem: the variable to
        set (never its value) and, when the judge came from ini, the option.
        """
        from pytest_citecheck.engine.pipeline import asks_judge, ranks_passages

        problems: list[str] = []
        needs: dict[str, bool] = {}  # judge spec -> will record
        crawls = ranks = False
        for claim in claims:
            if not claim.citations:
                continue
            records = self.will_record(cassette_for(claim) if cassette_for else None)
            judged = records and any(asks_judge(c) for c in claim.citations)
            for spec in self.settings.specs_for(claim):
                needs[spec] = needs.get(spec, False) or judged
            crawls = crawls or (records and any(c.url for c in claim.citations))
            ranks = ranks or (records and any(ranks_passages(c) for c in claim.citations))
        for spec, records in needs.items():
            problem = self._judge_problem(spec, records)
            if problem:
                problems.append(problem)
        if crawls and not self.environ.get(CRAWLBASE_TOKEN_ENV) and not self.custom_fetcher:
            problems.append(
                f"{CRAWLBASE_TOKEN_ENV} is not set: recording URL citations fetches them through "
                f"the Crawling API; set {CRAWLBASE_TOKEN_ENV} to your Crawlbase Normal token"
                f"{self.settings.terms.replay_hint()}"
            )
        if ranks:
            problem = self._ranker_problem()
            if problem:
                problems.append(problem)
        if self.settings.max_cost is not None:
            terms = self.settings.terms
            missing = self.settings.prices.missing(
                1.0 if crawls else 0.0,
                [self.judge_name(s) for s, records in needs.items() if records],
                terms.option,
            )
            if missing:
                problems.append(
                    f"{terms.option('max_cost')} needs {' and '.join(missing)} to count the "
                    "spend in money"
                )
        if problems:
            raise ConfigurationError("\n".join(f"  - {p}" for p in problems))

    def _ranker_problem(self) -> str | None:
        """What the built-in ranker would miss when it ranks (a custom one is the
        user's): found before any page is fetched and billed, not after."""
        self.live_ranker()
        if not self._builtin_ranker:
            return None
        from pytest_citecheck.stages import retrieval

        name = self.settings.ranker or retrieval.DEFAULT_RANKER
        missing = retrieval.missing_modules(name)
        if not missing:
            return None
        terms = self.settings.terms
        model = any(m in missing for m in retrieval.MODEL_MODULES)
        hint = retrieval.INSTALL_HINT if model else retrieval.BM25_INSTALL_HINT
        light = (
            f", or rank without the model: {terms.setting('ranker', 'bm25')} (the bm25 extra)"
            if model and name != "bm25"
            else ""
        )
        them = "it is" if len(missing) == 1 else "they are"
        return (
            f"recording ranks the pages' passages with the {name} ranker, which needs "
            f"{' and '.join(missing)}; {them} not installed: {hint}{light}"
            f"{terms.replay_hint()}"
        )

    def plan(
        self,
        claims: Iterable[Claim],
        cassette_for: Callable[[Claim], Path | None] | None = None,
    ) -> Plan:
        """The dry run: what recording ``claims`` would do, without any request."""
        from pytest_citecheck.engine.estimate import plan

        return plan(
            claims,
            self.settings.record_mode,
            lambda c: self.will_record(cassette_for(c) if cassette_for else None),
            lambda c: self.judge_name(self.settings.judge_for(c)),
        )

    def judge_name(self, spec: str) -> str:
        """How reports (and prices) name the judge ``spec``: the judge's own name
        (a custom judge's may differ from the spec), else the spec."""
        try:
            return str(getattr(self.judge(spec), "name", spec))
        except (ValueError, ConfigurationError):
            return spec

    def _origin(self, spec: str) -> str:
        s = self.settings
        terms = s.terms
        if s.judges and spec in s.judges:
            return f" (judge {spec} is a member of the judge panel, {terms.option('judges')})"
        if s.judge is not None and spec == s.judge:
            if s.judge_origin is None:
                return ""
            return f" (judge {spec} comes from {terms.judge_origin(s.judge_origin)})"
        if spec == DEFAULT_JUDGE:
            return f" ({spec} is the default judge; choose another with {terms.option('judge')})"
        return f" (judge {spec} comes from {terms.judge_origin(JUDGE_FROM_CLAIM)})"

    def _judge_problem(self, spec: str, records: bool) -> str | None:
        from_flag = bool(self.settings.judges) and spec in (self.settings.judges or ())
        from_file = self.settings.judge is None and spec != DEFAULT_JUDGE and not from_flag
        try:
            self.judge(spec)
            if records and self._is_builtin_judge(spec):
                self._builtin_judge(spec, require_key=True)
        except ValueError as exc:
            # A claim file's bad judge fails that file's claims, not the session.
            return None if from_file else f"{str(exc).rstrip('.')}{self._origin(spec)}"
        except ConfigurationError as exc:
            return f"{str(exc).rstrip('.')}{self._origin(spec)}"
        return None

    def _is_builtin_judge(self, spec: str) -> bool:
        from pytest_citecheck.stages.judges.http import HTTPJudge

        return isinstance(self._judges.get(spec), HTTPJudge)

    # -- verification ----------------------------------------------------------------

    def verify(
        self, claim: Claim, cassette: Path | None = None, nodeid: str | None = None
    ) -> ClaimResult:
        """Verify one claim in the calling thread; never raises for a claim's failure."""
        result = self._verify(claim, cassette, nodeid or claim.id)
        self.progress.finished(result)
        return result

    def submit(
        self, claim: Claim, cassette: Path | None = None, nodeid: str | None = None
    ) -> Future[ClaimResult]:
        """Verify one claim on the engine's pool (at most ``concurrency`` at once);
        once the engine is stopped, the future raises :class:`ClaimNotStarted`."""
        self.progress.add(1)
        return self._executor().submit(self._start, claim, cassette, nodeid)

    def stop(self) -> None:
        """Start no more claims: each submitted one not yet started raises
        :class:`ClaimNotStarted` (no request, no cassette). Claims in flight finish,
        so every cassette on disk is a complete one."""
        self._stop.set()

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called, or ``should_stop`` now says so."""
        if not self._stop.is_set() and self.should_stop is not None and self.should_stop():
            self._stop.set()
        return self._stop.is_set()

    def _start(self, claim: Claim, cassette: Path | None, nodeid: str | None) -> ClaimResult:
        if self.stopped:
            self.progress.skipped()
            raise ClaimNotStarted(claim.id)
        return self.verify(claim, cassette, nodeid)

    async def verify_claims(
        self,
        claims: Sequence[Claim],
        *,
        cassette_for: Callable[[Claim], Path | None] | None = None,
        nodeid_for: Callable[[Claim], str] | None = None,
        on_result: Callable[[int, ClaimResult], None] | None = None,
    ) -> list[ClaimResult]:
        """Verify ``claims`` concurrently; the results are in input order (a stopped
        engine raises :class:`ClaimNotStarted` for a claim it did not start)."""
        futures = [
            asyncio.wrap_future(
                self.submit(
                    claim,
                    cassette_for(claim) if cassette_for else None,
                    nodeid_for(claim) if nodeid_for else None,
                )
            )
            for claim in claims
        ]
        results: list[ClaimResult | None] = [None] * len(futures)

        async def collect(index: int, future: asyncio.Future[ClaimResult]) -> None:
            result = await future
            results[index] = result
            if on_result is not None:
                on_result(index, result)

        await asyncio.gather(*(collect(i, f) for i, f in enumerate(futures)))
        return [r for r in results if r is not None]

    def verify_claims_sync(
        self,
        claims: Sequence[Claim],
        *,
        cassette_for: Callable[[Claim], Path | None] | None = None,
        nodeid_for: Callable[[Claim], str] | None = None,
        on_result: Callable[[int, ClaimResult], None] | None = None,
        on_interrupt: Callable[[], None] | None = None,
    ) -> list[ClaimResult]:
        """:meth:`verify_claims` for code that has no event loop (``on_result`` is
        called in the calling thread).

        Ctrl-C (KeyboardInterrupt) stops the engine (``on_interrupt`` is told): no
        claim starts any more, the ones in flight finish (``on_result`` sees them), then
        :class:`Interrupted` is raised with every result that finished. A second
        Ctrl-C while they finish propagates as KeyboardInterrupt."""
        futures = {
            self.submit(
                claim,
                cassette_for(claim) if cassette_for else None,
                nodeid_for(claim) if nodeid_for else None,
            ): index
            for index, claim in enumerate(claims)
        }
        results: dict[int, ClaimResult] = {}
        not_started = 0
        remaining = dict(futures)
        interrupted = False
        while remaining:
            try:
                done, _ = wait(remaining, timeout=_WAIT_TICK, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=remaining.__getitem__):
                    index = remaining.pop(future)
                    result = outcome(future)
                    if result is None:
                        not_started += 1
                        continue
                    results[index] = result
                    if on_result is not None:
                        on_result(index, result)
            except KeyboardInterrupt:  # wherever it lands, no finished claim is lost
                if interrupted:
                    raise
                interrupted = True
                self.stop()
                if on_interrupt is not None:
                    on_interrupt()
        if interrupted or not_started:
            raise Interrupted(results, not_started)
        return [results[i] for i in range(len(claims))]

    @contextmanager
    def recording(
        self, cassette: Path, nodeid: str, judge_spec: str | None = None
    ) -> Iterator[Recording]:
        """Open one cassette for several claims (:meth:`verify_in`); saved on exit
        when nothing failed. Raises CorruptRecording for an unreadable file.

        Recording takes the cassette's turn (:mod:`pytest_citecheck.recording.lock`):
        another process recording it first is waited for, and a cassette this run
        (:attr:`run_id`) already saved is replayed, so a claim is billed once per run."""
        from pytest_citecheck.recording.lock import recording_turn
        from pytest_citecheck.recording.recorder import open_recording

        judge = self.judge(judge_spec or self.settings.judge or DEFAULT_JUDGE)
        with (
            recording_turn(cassette, self.settings.record_mode, self.run_id) as turn,
            open_recording(
                cassette,
                turn.mode,
                nodeid,
                self._tokens(),
                prompt_version=getattr(judge, "prompt_version", None),
                secrets=self._secrets(),
                max_bytes=self.settings.max_page_bytes,
                quote_policy=self.settings.quote_policy.metadata(),
                terms=self.settings.terms,
            ) as recording,
        ):
            yield recording
            if recording.finish(ok=recording.ok):
                turn.saved()

    def verify_in(self, recording: Recording, claim: Claim) -> ClaimResult:
        """Verify ``claim`` inside an open :meth:`recording`, within the budget as
        :meth:`verify` is (a claim the budget stops fails the recording: nothing of it
        is saved, so recording it again starts from an empty cassette)."""

        records = not recording.replaying and not recording.write_protected
        result = self._within_budget(
            claim, records, recording.nodeid, lambda: self._verify_in(recording, claim)
        )
        if _failed(result):
            recording.ok = False
        return result

    def _verify_in(self, recording: Recording, claim: Claim) -> ClaimResult:
        """:meth:`verify_in` once the budget let the claim start."""
        try:
            judge = self.judge(self.settings.judge_for(claim))
            panel = self.panel(claim)
        except (ValueError, ConfigurationError) as exc:
            return error_result(claim, Reason.CONFIGURATION, str(exc))
        result = self._verifier(judge, recording, panel).verify_claim(claim)
        if _failed(result):
            recording.ok = False
        return result

    def close(self) -> None:
        """Stop the pool and close the HTTP clients the stages opened."""
        with self._lock:
            pool, self._pool = self._pool, None
            parts = [self._fetcher, *self._judges.values()]
            self._fetcher = None
            self._judges.clear()
            client, self._client = self._client, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        for part in parts:
            close = getattr(part, "close", None)
            if callable(close):
                close()
        if client is not None:
            client.close()

    # -- one claim -------------------------------------------------------------------

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self.settings.concurrency, thread_name_prefix="citecheck"
                )
            return self._pool

    def _verify(self, claim: Claim, cassette: Path | None, nodeid: str) -> ClaimResult:
        return self._within_budget(
            claim,
            self.will_record(cassette),
            nodeid,
            lambda: self._verify_unbudgeted(claim, cassette, nodeid),
        )

    def _within_budget(
        self, claim: Claim, records: bool, nodeid: str, run: Callable[[], ClaimResult]
    ) -> ClaimResult:
        """``run()`` once the budget has room for the claim's worst case (its real
        spend is settled after); ``budget_exhausted`` when it never will. ``records``:
        the claim may go to the network (a replayed claim costs nothing)."""
        if not self.budget.limited or not claim.citations or not records:
            return run()
        from pytest_citecheck.engine.estimate import estimate_claim, spend

        judge = self.judge_name(self.settings.judge_for(claim))
        reservation = self.budget.reserve(estimate_claim(claim, judge))
        if isinstance(reservation, str):
            return error_result(
                claim,
                Reason.BUDGET_EXHAUSTED,
                reservation + self.settings.terms.record_hint(nodeid, "once"),
            )
        cost = credits = 0.0
        try:
            result = run()
            credits, _, money = spend([result], self.settings.prices)
            cost = money or 0.0
            return result
        finally:
            self.budget.settle(reservation, cost, credits)

    def _verify_unbudgeted(self, claim: Claim, cassette: Path | None, nodeid: str) -> ClaimResult:
        from pytest_citecheck.recording.recorder import CorruptRecording, corrupt_detail

        try:
            judge = self.judge(self.settings.judge_for(claim))
            panel = self.panel(claim)
        except (ValueError, ConfigurationError) as exc:
            return error_result(claim, Reason.CONFIGURATION, str(exc))
        if cassette is None:
            return self._verifier(judge, None, panel).verify_claim(claim)
        try:
            with self.recording(cassette, nodeid, self.settings.judge_for(claim)) as recording:
                return self._verify_in(recording, claim)  # the budget is already applied
        except CorruptRecording as exc:
            return error_result(
                claim,
                Reason.CORRUPT_RECORDING,
                corrupt_detail(cassette, nodeid, exc.why, self.settings.terms),
            )
        except OSError as exc:
            from pytest_citecheck.recording.recorder import shown_path

            where = shown_path(cassette, self.settings.terms)
            return error_result(
                claim,
                Reason.CONFIGURATION,
                f"could not save the recording {where}: {exc.strerror or exc}",
            )

    def panel(self, claim: Claim) -> list[Judge]:
        """The claim's panel members (built once per spec), in order; empty: no panel.

        A spec asked for several samples is sampled: when ``citecheck_judge_temperature``
        is ``auto``, its built-in judge is sent temperature 1 instead of 0 (Anthropic is
        sent none; its default is 1), so the replies can differ."""
        members = self.settings.panel_for(claim)
        sampled = self.settings.judge_samples > 1
        return [self.sample_judge(spec) if sampled else self.judge(spec) for spec in members]

    def sample_judge(self, spec: str) -> Judge:
        """The judge ``spec`` names, for sampling (see :meth:`panel`)."""
        judge = self.judge(spec)
        if self.settings.judge_temperature != "auto" or not self._is_builtin_judge(spec):
            return judge
        key = f"{spec}\x00sample"
        with self._lock:
            sampler = self._judges.get(key)
            if sampler is None:
                sampler = self._builtin_judge(spec, temperature=SAMPLE_TEMPERATURE)
                self._judges[key] = sampler
            return sampler

    def _verifier(
        self, judge: Judge, recording: Recording | None, panel: Sequence[Judge] = ()
    ) -> Verifier:
        from pytest_citecheck.engine.pipeline import Verifier

        return Verifier(
            fetcher=self.fetcher(),
            ranker=recording.ranker(self.live_ranker) if recording else self.live_ranker(),
            judge=recording.judge(judge) if recording else judge,
            review_below=self.settings.review_below,
            classify_error=recording.classify_error if recording else None,
            max_page_bytes=self.settings.max_page_bytes,
            quote_policy=self.settings.quote_policy,
            url_policy=self.settings.url_policy,
            terms=self.settings.terms,
            panel=[recording.judge(m) if recording else m for m in panel],
            panel_rule=self.settings.panel_rule,
        )

    def _tokens(self) -> dict[str, str | None]:
        return {kind: self.environ.get(env) for kind, env in TOKEN_ENV.items()}

    def _secrets(self) -> list[str]:
        from pytest_citecheck.core.secrets import secret_values

        return secret_values(self.environ)


def _failed(result: ClaimResult) -> bool:
    """An error verdict, or a panel member that failed: then nothing is saved (a
    failed exchange may not be in the cassette, so a replay could not decide alike)."""
    return any(
        v.label is Label.ERROR or any(m.label is Label.ERROR for m in v.panel or ())
        for v in result.verdicts
    )


def _is_builtin(fetcher: object) -> bool:
    from pytest_citecheck.stages.fetch import CrawlbaseFetcher

    return isinstance(fetcher, CrawlbaseFetcher)
