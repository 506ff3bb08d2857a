"""The plugin's settings mapped onto the layers below it: the gate's and the reports'.

Only the plugin knows its :class:`~pytest_citecheck.plugin.options.Settings`; the
engine, the gate and the reports take their own small settings types, and this
module fills them in (docs/architecture.md, "Front ends").
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
    from pytest_citecheck.plugin.options import Settings


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
    )
