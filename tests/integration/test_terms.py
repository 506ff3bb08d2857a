"""Each front end reads the engine's messages in its own words (core/terms.py).

The same preflight error, gate failure and missing-recording hint, worded for
``pytest --citecheck``, ``citecheck batch`` and ``citecheck serve``: the plugin
names its ini options and flags, the batch its flags, the service neither (nor a
claim file, nor a command it cannot run).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.claims.results import ClaimResult, Verdict
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.core.terms import Terms
from pytest_citecheck.engine.aggregate import totals
from pytest_citecheck.engine.core import Engine
from pytest_citecheck.engine.gate import GateSettings, evaluate
from pytest_citecheck.engine.settings import EngineSettings
from pytest_citecheck.frontends.cli import batch_terms
from pytest_citecheck.frontends.service import SERVICE_TERMS
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.recording.recorder import MissingRetrieval, open_recording

KEY = "claims.yaml::water"
PLUGIN_WORDS = ("citecheck_", "--citecheck", "ini option")

# (front end, its terms, words its messages use, words they must not use)
FRONT_ENDS = [
    pytest.param(
        PLUGIN_TERMS,
        {
            "preflight": "--citecheck-record=none",
            "gate": "below citecheck_min_precision 0.9000",
            "hint": f"record it with: pytest --citecheck --citecheck-record=once {KEY}",
        },
        (),
        id="plugin",
    ),
    pytest.param(
        batch_terms({KEY: Path("claims.yaml")}),
        {
            "preflight": "(or replay the committed recordings with --record none)",
            "gate": "below --min-precision 0.9000",
            "hint": "record it with: citecheck batch claims.yaml --record once",
        },
        PLUGIN_WORDS,
        id="batch",
    ),
    pytest.param(
        SERVICE_TERMS,
        {
            "preflight": "set CRAWLBASE_TOKEN to your Crawlbase Normal token",
            "gate": "below the min precision 0.9000",
            "hint": "no recording",
        },
        (*PLUGIN_WORDS, "claim file", "record it with", "replay", "--record"),
        id="service",
    ),
]


def preflight_error(terms: Terms) -> str:
    claim = Claim(id="water", claim="Water boils.", citations=[Citation(url="https://e.com/a")])
    engine = Engine.from_settings(EngineSettings(record_mode="all", terms=terms), environ={})
    with engine, pytest.raises(ConfigurationError) as caught:
        engine.preflight([claim])
    return str(caught.value)


def gate_failure(terms: Terms) -> str:
    verdicts = [Verdict(url="https://e.com/a", label=Label.NOT_FOUND)]
    result = ClaimResult(id="water", claim="Water boils.", label=Label.NOT_FOUND, verdicts=verdicts)
    [failure] = evaluate(totals([result]), GateSettings(min_precision=0.9, terms=terms))
    return failure


def missing_recording_hint(terms: Terms, tmp_path: Path) -> str:
    cassette = tmp_path / "cassettes" / "claims" / "water.yaml"
    with open_recording(cassette, "none", KEY, {}, terms=terms) as recording:
        classified = recording.classify_error(MissingRetrieval())
    assert classified is not None
    return classified[1]


@pytest.mark.parametrize(("terms", "says", "never"), FRONT_ENDS)
def test_each_front_end_reads_the_engine_in_its_own_words(
    terms: Terms, says: dict[str, str], never: tuple[str, ...], tmp_path: Path
) -> None:
    messages = {
        "preflight": preflight_error(terms),
        "gate": gate_failure(terms),
        "hint": missing_recording_hint(terms, tmp_path),
    }
    for kind, message in messages.items():
        assert says[kind] in message, (kind, message)
        for word in never:
            assert word not in message, (kind, word, message)
