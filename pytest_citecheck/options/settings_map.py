"""Setting values (by the option table's names) onto the engine's and the gate's
settings: the one mapping every front end uses.

A front end resolves the settings it exposes (pytest: flag > ini > default; argparse:
flag > default) into a dict keyed by setting name and passes it here with what is not
an option (its ``Terms``, a run id). A setting it does not expose is absent, so the
engine's own default applies. The fields several settings make up together are
composed here, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pytest_citecheck.core.defaults import DEFAULT_QUOTE_SIMILARITY
from pytest_citecheck.core.prices import Prices
from pytest_citecheck.engine.gate import GateSettings
from pytest_citecheck.options.table import OPTIONS, Target, composed_fields, fields_for
from pytest_citecheck.stages.quote_policy import QuotePolicy

if TYPE_CHECKING:
    from pytest_citecheck.engine.settings import EngineSettings


def quote_policy(values: Mapping[str, Any]) -> QuotePolicy:
    similarity = values.get("quote_similarity")
    return QuotePolicy(
        values.get("quote_match") or "exact",
        DEFAULT_QUOTE_SIMILARITY if similarity is None else similarity,
    )


def prices(values: Mapping[str, Any]) -> Prices:
    return Prices(credit=values.get("price_credit"), judges=values.get("prices") or {})


# How each composed field is made, from the values of the settings that make it up.
COMPOSE = {"quote_policy": quote_policy, "prices": prices}


def _composed(target: Target, values: Mapping[str, Any]) -> dict[str, Any]:
    fields = fields_for(target, values)
    for name in composed_fields(target):
        parts = {o.name for o in OPTIONS if o.target == target and o.target_field == name}
        if parts & values.keys():
            fields[name] = COMPOSE[name](values)
    return fields


def engine_settings(values: Mapping[str, Any], **fixed: Any) -> EngineSettings:
    """The engine's settings from setting values; ``fixed``: what is not an option."""
    # Imported here: the engine loads when the first claim runs, not at start-up.
    from pytest_citecheck.engine.settings import EngineSettings

    return EngineSettings(**{**_composed("engine", values), **fixed})


def gate_settings(values: Mapping[str, Any], **fixed: Any) -> GateSettings:
    """The gate's bars from setting values; ``fixed``: the front end's ``Terms``."""
    return GateSettings(**{**_composed("gate", values), **fixed})
