"""The plugin's settings mapped onto the layers below it: the engine's, the gate's
and the reports'.

The values come from the option table (``options/table.py``), which says which
setting sets which field; ``options/settings_map.py`` does the mapping for every
front end. What is left here is what no option sets: the plugin's ``Terms``, the
cache the session resolved, the run id, ``$GITHUB_STEP_SUMMARY``,
``$CITECHECK_REPORT_URL``.
``tests/integration/test_settings_mapping.py`` fails when an engine or gate setting
is neither mapped nor listed there as deliberately not exposed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_citecheck.engine.gate import GateSettings
from pytest_citecheck.options import settings_map
from pytest_citecheck.options.table import fields_for
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.reports.outputs import REPORT_URL_ENV, Outputs

if TYPE_CHECKING:
    from pytest_citecheck.engine.settings import EngineSettings
    from pytest_citecheck.plugin.options import Settings


def engine_settings(
    settings: Settings, *, cache_dir: Path | None, run_id: str | None
) -> EngineSettings:
    """The engine's settings for a pytest run. ``cache_dir`` is the embedding cache the
    session resolved (the option, else pytest's cache); ``run_id`` names the run across
    pytest-xdist workers."""
    return settings_map.engine_settings(
        settings.values,
        judge_origin=settings.judge_origin,
        cache_dir=cache_dir,
        run_id=run_id,
        terms=PLUGIN_TERMS,
    )


def gate_settings(settings: Settings) -> GateSettings:
    """The bars a pytest run must clear, worded with the plugin's option names."""
    return settings_map.gate_settings(settings.values, terms=PLUGIN_TERMS)


def outputs(settings: Settings, environ: Mapping[str, str] | None = None) -> Outputs:
    """The files the session writes at its end; ``$GITHUB_STEP_SUMMARY`` gets the
    markdown summary appended."""
    env = os.environ if environ is None else environ
    step = env.get("GITHUB_STEP_SUMMARY")
    fields = fields_for("outputs", settings.values)
    fields["report_url"] = fields.get("report_url") or env.get(REPORT_URL_ENV) or None
    return Outputs(**fields, step_summary=Path(step) if step else None)
