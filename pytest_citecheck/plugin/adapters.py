"""The plugin's settings mapped onto the layers below it: the engine's, the gate's
and the reports'.

Only the plugin knows its :class:`~pytest_citecheck.plugin.options.Settings`; the
engine, the gate and the reports take their own small settings types, and this
module alone fills them in, one line per setting the plugin exposes
(docs/architecture.md, "Adding a front end"). ``tests/plugin/test_settings_mapping.py``
fails when an engine or gate setting is neither mapped here nor listed there as
deliberately not exposed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_citecheck.engine.gate import GateSettings
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.reports.report import Outputs

if TYPE_CHECKING:
    from pytest_citecheck.engine.core import EngineSettings
    from pytest_citecheck.plugin.options import Settings


def engine_settings(
    settings: Settings, *, cache_dir: Path | None, run_id: str | None
) -> EngineSettings:
    """The engine's settings for a pytest run. ``cache_dir`` is the embedding cache the
    session resolved (the option, else pytest's cache); ``run_id`` names the run across
    pytest-xdist workers."""
    # Imported here: the engine loads when the first claim runs, not at start-up.
    from pytest_citecheck.engine.core import EngineSettings

    s = settings
    return EngineSettings(
        record_mode=s.record_mode,
        judge=s.judge,
        judge_origin=s.judge_origin,
        judge_base_url=s.judge_base_url,
        judge_temperature=s.judge_temperature,
        judge_response_format=s.judge_response_format,
        review_below=s.review_below,
        concurrency=s.concurrency,
        timeout=s.timeout,
        max_page_bytes=s.max_page_bytes,
        cache_dir=cache_dir,
        ranker=s.ranker,
        quote_policy=s.quote_policy,
        url_policy=s.url_policy,
        run_id=run_id,
        prices=s.prices,
        max_cost=s.max_cost,
        max_credits=s.max_credits,
        terms=PLUGIN_TERMS,
        judges=s.judges,
        judge_samples=s.judge_samples,
        panel_rule=s.panel_rule,
    )


def gate_settings(settings: Settings) -> GateSettings:
    """The bars a pytest run must clear, worded with the plugin's option names."""
    return GateSettings(
        min_precision=settings.min_precision,
        min_reachable_precision=settings.min_reachable_precision,
        min_answer_support=settings.min_answer_support,
        allow_contradicted=settings.allow_contradicted,
        strict_review=settings.strict_review,
        max_drop=settings.max_drop,
        terms=PLUGIN_TERMS,
        min_agreement=settings.min_agreement,
    )


def outputs(settings: Settings, environ: Mapping[str, str] | None = None) -> Outputs:
    """The files the session writes at its end; ``$GITHUB_STEP_SUMMARY`` gets the
    markdown summary appended."""
    env = os.environ if environ is None else environ
    step = env.get("GITHUB_STEP_SUMMARY")
    return Outputs(
        json=settings.report,
        csv=settings.csv,
        markdown=settings.markdown,
        html=settings.html,
        step_summary=Path(step) if step else None,
        sarif=settings.sarif,
    )
