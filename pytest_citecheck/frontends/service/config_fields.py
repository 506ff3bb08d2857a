"""ServiceConfig's fields for the settings the option table gives the service.

Generated from pytest_citecheck/options/table.py by
``python -m pytest_citecheck.frontends.service.config_fields_gen``: do not edit
(tests/integration/test_settings_mapping.py fails when it is stale).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_citecheck.frontends.service.config_fields_gen import composed_default, serve_default

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_citecheck.core.prices import Prices
    from pytest_citecheck.core.record_mode import RecordMode


@dataclass(frozen=True)
class TableFields:
    """One field per setting the table gives ``citecheck serve``, in table order."""

    record_mode: RecordMode | None = field(default=serve_default("record_mode"))
    cassettes: Path | None = field(default=serve_default("cassettes"))
    judge: str | None = field(default=serve_default("judge"))
    judge_base_url: str | None = field(default=serve_default("judge_base_url"))
    review_below: float = field(default=serve_default("review_below"))
    ranker: str = field(default=serve_default("ranker"))
    url_policy: str = field(default=serve_default("url_policy"))
    concurrency: int = field(default=serve_default("concurrency"))
    max_claim_chars: int = field(default=serve_default("max_claim_chars"))
    audit: Path | None = field(default=serve_default("audit"))
    prices: Prices = field(default_factory=composed_default("prices"))
    max_cost: float | None = field(default=serve_default("max_cost"))
    max_credits: float | None = field(default=serve_default("max_credits"))
    jobs_dir: Path | None = field(default=serve_default("jobs_dir"))
    allowed_judges: tuple[str, ...] = field(default=serve_default("allowed_judges"))
    max_urls: int = field(default=serve_default("max_urls"))
    max_body_bytes: int = field(default=serve_default("max_body_bytes"))
    queue_wait: float = field(default=serve_default("queue_wait"))
    read_timeout: float = field(default=serve_default("read_timeout"))
