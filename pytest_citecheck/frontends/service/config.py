"""What ``citecheck serve`` was started with, mapped onto the engine's settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_citecheck.claims.models import Claim
from pytest_citecheck.core.defaults import LOOPBACK_HOSTS
from pytest_citecheck.core.record_mode import LIVE
from pytest_citecheck.engine.settings import EngineSettings
from pytest_citecheck.frontends.service.config_fields import TableFields
from pytest_citecheck.frontends.service.config_fields_gen import by_field
from pytest_citecheck.frontends.service.defaults import (
    DEFAULT_AUDIT_WAIT,
    DEFAULT_MAX_DELIVERY_BYTES,
    DEFAULT_MAX_DELIVERY_PAGE_BYTES,
)
from pytest_citecheck.frontends.service.terms import service_terms
from pytest_citecheck.options import settings_map
from pytest_citecheck.options.table import OPTIONS, composed_fields
from pytest_citecheck.recording.recorder import request_cassette_name


@dataclass(frozen=True)
class ServiceConfig(TableFields):
    """What ``citecheck serve`` was started with: one field per setting the option table
    gives the service (``TableFields``, generated from the table), and these, which are
    not settings of the table."""

    # The bearer key clients must send; None: no key (allowed on loopback only,
    # see binding_problem).
    api_key: str | None = None
    # Host header names accepted ("*" any, "*.example.com" a domain and its subdomains).
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    audit_wait: float = DEFAULT_AUDIT_WAIT
    # A Crawler delivery's largest body, compressed as it arrives and decompressed.
    max_delivery_bytes: int = DEFAULT_MAX_DELIVERY_BYTES
    max_delivery_page_bytes: int = DEFAULT_MAX_DELIVERY_PAGE_BYTES

    def __post_init__(self) -> None:
        # An API caller may name a value by its text ("once"); the service holds the
        # settings' types (a RecordMode).
        for option in OPTIONS:
            if isinstance(option.service, str) and option.convert is not None:
                value = getattr(self, option.service)
                if value is not None:
                    object.__setattr__(self, option.service, option.convert(value))

    @classmethod
    def from_values(cls, values: Mapping[str, Any], **fixed: Any) -> ServiceConfig:
        """The configuration from setting values keyed by the option table's names (a
        setting absent from ``values`` keeps its default); ``fixed``: the fields that
        are not settings of the table (the key, the Host names)."""
        config: dict[str, Any] = {}
        for name, options in by_field().items():
            given = [option.name for option in options if option.name in values]
            if len(options) > 1 and given:
                config[name] = settings_map.COMPOSE[name](values)
            elif given:
                config[name] = values[given[0]]
        return ServiceConfig(**config, **fixed)

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
