"""What ``citecheck serve`` was started with, mapped onto the engine's settings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_citecheck.claims.models import Claim
from pytest_citecheck.core.defaults import DEFAULT_CONCURRENCY, DEFAULT_REVIEW_BELOW
from pytest_citecheck.core.option_table import OPTIONS, composed_fields
from pytest_citecheck.core.prices import Prices
from pytest_citecheck.core.record_mode import LIVE, RecordMode
from pytest_citecheck.engine import settings_map
from pytest_citecheck.engine.core import EngineSettings
from pytest_citecheck.frontends.service.words import service_terms
from pytest_citecheck.frontends.service_defaults import (
    DEFAULT_AUDIT_WAIT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CLAIM_CHARS,
    DEFAULT_MAX_DELIVERY_BYTES,
    DEFAULT_MAX_DELIVERY_PAGE_BYTES,
    DEFAULT_MAX_URLS,
    DEFAULT_QUEUE_WAIT,
    DEFAULT_READ_TIMEOUT,
    LOOPBACK_HOSTS,
)
from pytest_citecheck.recording.recorder import request_cassette_name
from pytest_citecheck.stages.url_policy import PUBLIC


@dataclass(frozen=True)
class ServiceConfig:
    """What ``citecheck serve`` was started with."""

    judge: str | None = None
    judge_base_url: str | None = None
    ranker: str | None = None
    review_below: float | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    audit: Path | None = None
    max_urls: int = DEFAULT_MAX_URLS
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_claim_chars: int = DEFAULT_MAX_CLAIM_CHARS
    # The bearer key clients must send; None: no key (allowed on loopback only,
    # see binding_problem).
    api_key: str | None = None
    # Host header names accepted ("*" any, "*.example.com" a domain and its subdomains).
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    # Judges a caller may name besides the service's own (judge, else DEFAULT_JUDGE).
    allowed_judges: tuple[str, ...] = ()
    url_policy: str = PUBLIC
    queue_wait: float = DEFAULT_QUEUE_WAIT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    audit_wait: float = DEFAULT_AUDIT_WAIT
    # The spending cap of this service run (pytest_citecheck.engine.budget) and the
    # prices it counts money at.
    prices: Prices = field(default_factory=Prices)
    max_cost: float | None = None
    max_credits: float | None = None
    # Record into / replay from DIR/<request_cassette_name>.yaml, as batch's --record;
    # None: live, nothing recorded.
    record_mode: RecordMode | None = None
    cassettes: Path | None = None
    # The folder of the Crawler jobs whose deliveries ``POST /crawler/deliveries``
    # accepts (``<jobs_dir>/<job>/job.sqlite``); None: it accepts none.
    jobs_dir: Path | None = None
    # A delivery's largest body, compressed as it arrives and decompressed.
    max_delivery_bytes: int = DEFAULT_MAX_DELIVERY_BYTES
    max_delivery_page_bytes: int = DEFAULT_MAX_DELIVERY_PAGE_BYTES

    def __post_init__(self) -> None:
        # An API caller may name the mode ("once"); the service holds a RecordMode.
        if self.record_mode is not None:
            object.__setattr__(self, "record_mode", RecordMode(self.record_mode))

    def engine_settings(self) -> EngineSettings:
        """The service's one mapping onto the engine's settings (``citecheck serve``'s
        flags reach this class through ``cli.service_config``): every field the option
        table says sets an engine setting; what it leaves out is listed, with why, in
        the table and in tests/integration/test_settings_mapping.py."""
        composed = composed_fields("engine")
        values = {
            option.name: getattr(self, option.service)
            for option in OPTIONS
            if option.target == "engine"
            and isinstance(option.service, str)
            and option.target_field not in composed
        }
        if values.get("review_below") is None:
            values["review_below"] = DEFAULT_REVIEW_BELOW
        return settings_map.engine_settings(
            values,
            # The judge is each request's (or the service's default), never a run-wide one.
            judge=None,
            # Without cassettes the service is live: nothing is recorded or replayed.
            record_mode=self.record_mode if self.record_mode and self.cassette_folder else LIVE,
            prices=self.prices,
            terms=service_terms(self.cassettes if self.cassette_folder else None),
        )

    @property
    def cassette_folder(self) -> bool:
        """Whether requests record into / replay from :attr:`cassettes`."""
        return self.cassettes is not None and self.record_mode is not None

    def cassette_for(self, claim: Claim, judges: Sequence[str]) -> Path | None:
        """The cassette of a request's claim (None: the service is live)."""
        if self.cassettes is None or self.record_mode is None:
            return None
        targets = [c.target for c in claim.citations]
        return self.cassettes / request_cassette_name(claim.claim, targets, judges)
