"""The plugin's settings mapped onto the layers below it: the gate's and the reports'.

Only the plugin knows its :class:`~pytest_citecheck.plugin.options.Settings`; the
engine, the gate and the reports take their own small settings types, and this
module fills them in (docs/architecture.md, "Front ends").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_citecheck.engine.gate import GateSettings
from pytest_citecheck.plugin.terms import PLUGIN_TERMS

if TYPE_CHECKING:
    from pytest_citecheck.plugin.options import Settings


def gate_settings(settings: Settings) -> GateSettings:
    """The bars a pytest run must clear, worded with the plugin's option names."""
    return GateSettings(
        min_precision=settings.min_precision,
        min_reachable_precision=settings.min_reachable_precision,
        allow_contradicted=settings.allow_contradicted,
        strict_review=settings.strict_review,
        max_drop=settings.max_drop,
        terms=PLUGIN_TERMS,
    )
