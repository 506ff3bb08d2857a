"""The stages, built once from :class:`~pytest_citecheck.engine.settings.EngineSettings`:
the HTTP client, the fetcher, the judges, the ranker, each service's retry policy and
adaptive limit. A :class:`~pytest_citecheck.engine.settings.StageHooks` factory that
returns a stage replaces the built-in one. Everything is built lazily (replay never
loads a model) and is shared by the claims in flight, behind one lock.

:meth:`StageBuilder.resolve` gives one claim its judge and panel, resolved once.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_citecheck.claims.models import Claim
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.core.limits import AdaptiveLimit, cap_for
from pytest_citecheck.engine.settings import EngineSettings, StageHooks

if TYPE_CHECKING:
    import httpx

    from pytest_citecheck.core.retry import RetryPolicy
    from pytest_citecheck.engine.judge_batch import JudgeBatch
    from pytest_citecheck.recording.transport import StageTransport
    from pytest_citecheck.stages.fetch_rules import Fetcher
    from pytest_citecheck.stages.judges.base import Judge
    from pytest_citecheck.stages.judges.compat import ServerFormats
    from pytest_citecheck.stages.pdf_fetch import DirectPdfFetcher
    from pytest_citecheck.stages.retrieval import Ranker
    from pytest_citecheck.stages.screenshot import PageShots
    from pytest_citecheck.stages.wayback import WaybackLookup

# The temperature a sampled judge is sent (citecheck_judge_samples > 1, temperature auto).
SAMPLE_TEMPERATURE = 1.0


@dataclass(frozen=True)
class ClaimJudges:
    """One claim's judge and panel, resolved once for everything the claim does:
    its budget estimate, its cassette's prompt version, its pipeline."""

    spec: str
    # None when ``spec`` names no judge that can be built (``error`` says why).
    judge: Judge | None
    panel: tuple[Judge, ...] = ()
    # Why the judge or a panel member cannot be built; the claim is then an error.
    error: str | None = None

    @property
    def name(self) -> str:
        """How reports (and prices) name the judge: its own name (a custom judge's
        may differ from the spec), else the spec."""
        return self.spec if self.judge is None else str(getattr(self.judge, "name", self.spec))


class StageBuilder:
    """Builds each stage once and closes what it opened."""

    def __init__(
        self, settings: EngineSettings, hooks: StageHooks, environ: Mapping[str, str]
    ) -> None:
        self.settings = settings
        self.hooks = hooks
        self.environ = environ
        # One adaptive limit per service recorded from ("crawlbase", each judge provider).
        self.limits: dict[str, AdaptiveLimit] = {}
        self._lock = threading.RLock()
        self._rank_lock = threading.Lock()
        self._transport: StageTransport | None = None
        self._client: httpx.Client | None = None
        self._fetcher: Fetcher | None = None
        self._wayback: WaybackLookup | None = None
        self._judges: dict[str, Judge] = {}
        self._ranker: Ranker | None = None
        self._builtin_ranker = False
        self._judge_batch: JudgeBatch | None = None
        # What each judge server was found to take (response format ``auto``): one
        # finding per run and endpoint, shared by every judge built here.
        self._formats: ServerFormats | None = None

    # -- HTTP: one client, a retry policy and a limit per service ---------------------

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

                from pytest_citecheck.recording.transport import (
                    Borrowed,
                    StageTransport,
                    shared_reads,
                    stage_client,
                )

                batch = self.judge_batch()
                # A hook's transport is its owner's (a Crawler job's serves every
                # engine of the command): lent, never closed here.
                hooked = self.hooks.make_transport() if self.hooks.make_transport else None
                inner: httpx.BaseTransport | None = None if hooked is None else Borrowed(hooked)
                if batch is not None:
                    inner = batch.transport(inner or httpx.HTTPTransport())
                shared = shared_reads() if hooked is None else None  # a Crawler job: none
                self._transport = StageTransport(self.settings.max_page_bytes, inner, shared)
                self._client = stage_client(self._transport)
            return self._client

    def judge_batch(self) -> JudgeBatch | None:
        """The run's judge batch (``judge_batch`` set and not replaying), built once."""
        settings = self.settings
        if not settings.judge_batch or settings.replaying:
            return None
        with self._lock:
            if self._judge_batch is None:
                from pytest_citecheck.engine.judge_batch import JudgeBatch

                self._judge_batch = JudgeBatch(
                    settings.judge_batch_poll, settings.judge_batch_wait, settings.terms
                )
            return self._judge_batch

    # -- the fetcher -----------------------------------------------------------------

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
                        pdf_fetch=self.settings.pdf_fetch,
                        direct=self._direct_pdf(),
                    )
            return self._fetcher

    def wayback(self) -> WaybackLookup:
        """The Wayback Machine lookup of unreachable citations, on the engine's client."""
        with self._lock:
            if self._wayback is None:
                from pytest_citecheck.stages.wayback import WaybackLookup

                self._wayback = WaybackLookup.from_env(
                    self.environ, client=self.http_client(), retry=self.retry_policy("wayback")
                )
            return self._wayback

    def _direct_pdf(self) -> DirectPdfFetcher | None:
        """The direct PDF download (``pdf_fetch = direct``) on the engine's client."""
        if self.settings.pdf_fetch != "direct":
            return None
        from pytest_citecheck.stages.pdf_fetch import DirectPdfFetcher

        return DirectPdfFetcher(
            self.http_client(),
            url_policy=self.settings.url_policy,
            retry=self.retry_policy("crawlbase"),
            timeout=self.settings.timeout or 90.0,
        )

    def screenshots(self) -> PageShots:
        """The cited page's picture (citecheck_screenshots), on the engine's client."""
        from pytest_citecheck.stages.screenshot import PageShots

        return PageShots.from_env(
            self.environ, client=self.http_client(), retry=self.retry_policy("crawlbase")
        )

    @property
    def custom_fetcher(self) -> bool:
        """Whether a hook replaced the built-in fetcher (it needs no Crawlbase token)."""
        from pytest_citecheck.stages.fetch import CrawlbaseFetcher

        if self.hooks.make_fetcher is None:
            return False
        return not isinstance(self.fetcher(), CrawlbaseFetcher)

    # -- judges ----------------------------------------------------------------------

    def judge(self, spec: str) -> Judge:
        """The judge ``spec`` names (built once). Raises ValueError for an unknown
        provider and ConfigurationError for a missing base URL."""
        with self._lock:
            judge = self._judges.get(spec)
            if judge is None:
                custom = self.hooks.make_judge(spec) if self.hooks.make_judge else None
                judge = custom if custom is not None else self.builtin_judge(spec)
                self._judges[spec] = judge
            return judge

    def builtin_judge(self, spec: str, require_key: bool = False, temperature: Any = None) -> Judge:
        """A new built-in judge for ``spec`` (``require_key``: raise ConfigurationError
        when its API key is not set)."""
        from pytest_citecheck.stages.judges import ServerFormats, make_judge

        with self._lock:
            if self._formats is None:
                self._formats = ServerFormats()
            formats = self._formats
        # The ini base URL is for the openai-compatible provider; the hosted
        # providers take theirs from the environment.
        compatible = spec.strip().lower().startswith("openai-compatible:")
        judge = make_judge(
            spec,
            environ=self.environ,
            base_url=self.settings.judge_base_url if compatible else None,
            require_key=require_key,
            retry=self.retry_policy(spec.strip().partition(":")[0].lower()),
            client=self.http_client(),
            temperature=self.settings.judge_temperature if temperature is None else temperature,
            response_format=self.settings.judge_response_format,
            terms=self.settings.terms,
            formats=formats,
        )
        batch = self.judge_batch()
        if batch is not None:
            batch.register(judge)
        return judge

    def is_builtin_judge(self, spec: str) -> bool:
        """Whether the judge built for ``spec`` is a built-in HTTP one (not a hook's)."""
        from pytest_citecheck.stages.judges.http import HTTPJudge

        return isinstance(self._judges.get(spec), HTTPJudge)

    def judge_name(self, spec: str) -> str:
        """How reports (and prices) name the judge ``spec``: the judge's own name
        (a custom judge's may differ from the spec), else the spec."""
        try:
            judge = self.judge(spec)
        except (ValueError, ConfigurationError):
            return spec
        return ClaimJudges(spec, judge).name

    def panel(self, claim: Claim) -> list[Judge]:
        """The claim's panel members (built once per spec), in order; empty: no panel.

        A spec asked for several samples is sampled: when ``citecheck_judge_temperature``
        is ``auto``, its built-in judge is sent temperature 1 instead of 0 (Anthropic is
        sent none; its default is 1), so the replies can differ."""
        members = self.settings.panel_for(claim)
        sampled = self.settings.judge_samples > 1
        return [self._sample_judge(spec) if sampled else self.judge(spec) for spec in members]

    def resolve(self, claim: Claim) -> ClaimJudges:
        """The claim's judge and panel; a judge that cannot be built is the
        returned ``error``, never an exception."""
        spec = self.settings.judge_for(claim)
        judge: Judge | None = None
        try:
            judge = self.judge(spec)
            panel = self.panel(claim)
        except (ValueError, ConfigurationError) as exc:
            return ClaimJudges(spec, judge, error=str(exc))
        return ClaimJudges(spec, judge, tuple(panel))

    def _sample_judge(self, spec: str) -> Judge:
        """The judge ``spec`` names, for sampling (see :meth:`panel`)."""
        judge = self.judge(spec)
        if self.settings.judge_temperature != "auto" or not self.is_builtin_judge(spec):
            return judge
        key = f"{spec}\x00sample"
        with self._lock:
            sampler = self._judges.get(key)
            if sampler is None:
                sampler = self.builtin_judge(spec, temperature=SAMPLE_TEMPERATURE)
                self._judges[key] = sampler
            return sampler

    # -- the ranker ------------------------------------------------------------------

    def live_ranker(self) -> Ranker:
        """The ranker used when recording, serialized (built on first use)."""
        with self._lock:
            if self._ranker is None:
                custom = self.hooks.make_ranker() if self.hooks.make_ranker else None
                self._builtin_ranker = custom is None
                self._ranker = _SerialRanker(custom or self._default_ranker(), self._rank_lock)
            return self._ranker

    @property
    def builtin_ranker(self) -> bool:
        """Whether :meth:`live_ranker` is the built-in one (builds it)."""
        self.live_ranker()
        return self._builtin_ranker

    def _default_ranker(self) -> Ranker:
        # The model loader's own "Loading weights" bar must not reach the terminal
        #: huggingface_hub and transformers read this on import.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        loaded = sys.modules.get("transformers.utils.logging")
        if loaded is not None:
            loaded.disable_progress_bar()
        from pytest_citecheck.core.defaults import DEFAULT_RANKER, DEFAULT_TOP_K
        from pytest_citecheck.stages import retrieval

        # The pipeline shows the judge DEFAULT_TOP_K passages in page order: a page
        # of no more is shown whole, and needs no embedding.
        built = retrieval.make_ranker(
            self.settings.ranker or DEFAULT_RANKER, self.settings.cache_dir
        )
        return retrieval.shows(built, DEFAULT_TOP_K)

    # -- closing ---------------------------------------------------------------------

    def close(self) -> None:
        """Close the HTTP clients the stages opened (a stage asked for afterwards is
        built again)."""
        with self._lock:
            parts = [self._fetcher, *self._judges.values()]
            self._fetcher = None
            self._judges.clear()
            client, self._client = self._client, None
            batch, self._judge_batch = self._judge_batch, None
        if batch is not None:
            batch.close()
        for part in parts:
            close = getattr(part, "close", None)
            if callable(close):
                close()
        if client is not None:
            client.close()


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
