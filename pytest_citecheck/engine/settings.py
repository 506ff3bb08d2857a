"""What the engine is told: :class:`EngineSettings` (every front end maps its options
onto it) and :class:`StageHooks` (custom stages). Plain data, no behaviour beyond
which judges a claim asks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_citecheck.claims.models import Claim
from pytest_citecheck.core.defaults import (
    DEFAULT_CONCURRENCY,
    DEFAULT_JUDGE,
    DEFAULT_JUDGE_BATCH_POLL,
    DEFAULT_JUDGE_BATCH_WAIT,
    DEFAULT_MAX_PAGE_BYTES,
    DEFAULT_PANEL_RULE,
    DEFAULT_PDF_FETCH,
    DEFAULT_REVIEW_BELOW,
    DEFAULT_TIMEOUT,
    DEFAULT_URL_POLICY,
)
from pytest_citecheck.core.limits import CRAWLING_API_CAP
from pytest_citecheck.core.prices import Prices
from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.stages.quote_policy import EXACT, QuotePolicy

if TYPE_CHECKING:
    import httpx

    from pytest_citecheck.stages.fetch_rules import Fetcher
    from pytest_citecheck.stages.judges.base import Judge
    from pytest_citecheck.stages.retrieval import Ranker


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
    # True: no confirmation call (stages/confirm.py) for supported/contradicted verdicts.
    no_confirm: bool = False
    # True: no joint judgment (engine/joint.py) of a claim's sources none supports alone.
    no_joint: bool = False
    # True: an unreachable citation is looked up in the Wayback Machine (stages/wayback.py).
    wayback: bool = False
    # True: a rotted citation is also verified against its snapshot (implies wayback).
    wayback_verify: bool = False
    # True: a verdict a person must look at gets its page's picture (stages/screenshot.py).
    screenshots: bool = False
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
    # How a cited .pdf URL is fetched (stages/pdf_fetch.py): the Crawling API or direct.
    pdf_fetch: str = DEFAULT_PDF_FETCH
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
    # The votes (members that answered) a panel needs; None: every member.
    panel_min_votes: int | None = None
    # Judge through the provider's batch API (engine/judge_batch.py): every claim runs
    # until it asks the judge, one batch answers them all, the claims run again. Only
    # Engine.verify_claims_sync runs the rounds (a claim verified alone stops with
    # JudgeDeferred); the batch CLI is its one front end.
    judge_batch: bool = False
    judge_batch_poll: float = DEFAULT_JUDGE_BATCH_POLL
    judge_batch_wait: float = DEFAULT_JUDGE_BATCH_WAIT

    def __post_init__(self) -> None:
        # An API caller may name the mode ("once"); the engine holds a RecordMode.
        object.__setattr__(self, "record_mode", RecordMode(self.record_mode))

    @property
    def looks_up_archive(self) -> bool:
        """Whether a gone page is asked of the Wayback Machine (either setting)."""
        return self.wayback or self.wayback_verify

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
    # Where the stages' HTTP goes when it is not replayed (None: the network). A Crawler
    # job answers the fetcher's Crawling API requests from its deliveries here, so each
    # claim's cassette records them like live replies.
    make_transport: Callable[[], httpx.BaseTransport | None] | None = None
