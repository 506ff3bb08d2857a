"""What ``citecheck serve`` was started with, mapped onto the engine's settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, make_dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_citecheck.claims.models import Claim
from pytest_citecheck.core.record_mode import LIVE
from pytest_citecheck.engine.settings import EngineSettings
from pytest_citecheck.frontends.service.defaults import (
    DEFAULT_AUDIT_WAIT,
    DEFAULT_MAX_DELIVERY_BYTES,
    DEFAULT_MAX_DELIVERY_PAGE_BYTES,
    LOOPBACK_HOSTS,
)
from pytest_citecheck.frontends.service.terms import service_terms
from pytest_citecheck.options import settings_map
from pytest_citecheck.options.table import OPTIONS, Flag, Option, cli_default, composed_fields
from pytest_citecheck.recording.recorder import request_cassette_name

if TYPE_CHECKING:
    from pytest_citecheck.core.prices import Prices
    from pytest_citecheck.core.record_mode import RecordMode


def _by_field() -> dict[str, list[Option]]:
    """The settings the service exposes, by the ServiceConfig field they set (several
    settings make up one field, e.g. ``prices`` from ``price_credit`` and ``prices``)."""
    fields: dict[str, list[Option]] = {}
    for option in OPTIONS:
        if isinstance(option.service, str):
            fields.setdefault(option.service, []).append(option)
    return fields


def _serve_default(option: Option) -> Any:
    """A field's default: what ``citecheck serve`` starts with when its flag is not given."""
    if option.action == "append":
        return ()
    flag = option.flag_of("serve")
    return cli_default(option, flag) if isinstance(flag, Flag) else option.default


def _table_fields() -> list[tuple[str, Any, Any]]:
    """ServiceConfig's fields for the option table's settings, in table order."""
    fields: list[tuple[str, Any, Any]] = []
    for name, options in _by_field().items():
        if len(options) > 1:
            empty = partial(settings_map.COMPOSE[name], {})
            fields.append((name, Any, field(default_factory=empty)))
        else:
            fields.append((name, Any, field(default=_serve_default(options[0]))))
    return fields


class _TableFields:
    """The table's fields the service's own code reads, typed for mypy. At run time
    every such field is made from the option table (see ``_table_fields``); a test
    checks that each name here is one of them."""

    if TYPE_CHECKING:
        judge: str | None
        concurrency: int
        audit: Path | None
        max_urls: int
        max_body_bytes: int
        max_claim_chars: int
        allowed_judges: tuple[str, ...]
        url_policy: str
        queue_wait: float
        read_timeout: float
        # The spending cap of this service run (pytest_citecheck.engine.budget) and the
        # prices it counts money at.
        prices: Prices
        max_cost: float | None
        max_credits: float | None
        # Record into / replay from DIR/<request_cassette_name>.yaml, as batch's --record;
        # None: live, nothing recorded.
        record_mode: RecordMode | None
        cassettes: Path | None
        # The folder of the Crawler jobs whose deliveries ``POST /crawler/deliveries``
        # accepts (``<jobs_dir>/<job>/job.sqlite``); None: it accepts none.
        jobs_dir: Path | None


@dataclass(frozen=True)
class _ServiceConfig(_TableFields):
    """What ``citecheck serve`` was started with that is not a setting of the table."""

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
        for name, options in _by_field().items():
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


if TYPE_CHECKING:

    class ServiceConfig(_ServiceConfig):
        """What ``citecheck serve`` was started with."""

        def __init__(self, **fields: Any) -> None: ...

else:
    # One field per setting the option table gives the service, so a setting added
    # there reaches ``citecheck serve`` with no edit here.
    ServiceConfig = make_dataclass(
        "ServiceConfig",
        _table_fields(),
        bases=(_ServiceConfig,),
        frozen=True,
        namespace={"__doc__": "What ``citecheck serve`` was started with.", "__module__": __name__},
    )
