"""Every engine, gate and output setting reaches the engine through each front end.

Each front end maps its options onto ``EngineSettings`` / ``GateSettings`` /
``Outputs`` in one function (plugin/adapters.py; frontends/cli/ for ``citecheck
batch``, ``recheck`` and ``serve``, whose ``ServiceConfig.engine_settings`` maps the
service's configuration). The cases are built from ``dataclasses.fields``: a setting
added to the engine, the gate or the outputs is a failing case here until every front
end either maps it (an option that sets a non-default value, and the value the engine
then gets) or lists it as deliberately not exposed, with the reason and the value the
engine always gets from that front end.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.core.prices import Prices
from pytest_citecheck.core.terms import JUDGE_FROM_FLAG, Terms
from pytest_citecheck.engine.core import EngineSettings
from pytest_citecheck.engine.gate import GateSettings
from pytest_citecheck.frontends import cli
from pytest_citecheck.frontends.service import SERVICE_TERMS
from pytest_citecheck.plugin import adapters
from pytest_citecheck.plugin.options import settings_from_config
from pytest_citecheck.plugin.session import CitecheckSession
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.reports.report import Outputs
from pytest_citecheck.stages.quote_policy import QuotePolicy

# The value a front end leaves alone: the dataclass's own default.
DEFAULT: Any = object()


@dataclass(frozen=True)
class Option:
    """Command-line words (and ini lines, for the plugin) that set one setting, and
    the value the engine then gets."""

    argv: tuple[str, ...]
    expected: Any
    ini: str = ""


@dataclass(frozen=True)
class NotExposed:
    """A setting the front end deliberately offers no option for."""

    why: str
    value: Any = DEFAULT


Build = Callable[[pytest.Pytester, tuple[str, ...], str], Any]


@dataclass(frozen=True)
class FrontEnd:
    name: str
    target: type
    build: Build
    mapped: dict[str, Option]
    fixed: dict[str, NotExposed]


# -- how each front end turns its options into the settings below it ---------------------


def _plugin_session(pytester: pytest.Pytester, argv: tuple[str, ...], ini: str) -> CitecheckSession:
    pytester.makeini(f"[pytest]\n{ini}\n")
    config = pytester.parseconfig("--citecheck", *argv)
    return CitecheckSession(config, settings_from_config(config))


def _plugin_engine(pytester: pytest.Pytester, argv: tuple[str, ...], ini: str) -> EngineSettings:
    return _plugin_session(pytester, argv, ini).engine_settings()


def _plugin_gate(pytester: pytest.Pytester, argv: tuple[str, ...], ini: str) -> GateSettings:
    return adapters.gate_settings(_plugin_session(pytester, argv, ini).settings)


def _plugin_outputs(pytester: pytest.Pytester, argv: tuple[str, ...], ini: str) -> Outputs:
    return adapters.outputs(_plugin_session(pytester, argv, ini).settings, environ={})


def _cli_args(pytester: pytest.Pytester, command: str, argv: tuple[str, ...]) -> argparse.Namespace:
    files: tuple[str, ...] = ()
    if command in ("batch", "recheck"):
        claims = pytester.path / "claims.jsonl"
        claims.write_text("", encoding="utf-8")
        files = (str(claims),)
    return cli.build_parser().parse_args([command, *files, *argv])


def _batch_engine(pytester: pytest.Pytester, argv: tuple[str, ...], _ini: str) -> EngineSettings:
    return cli.engine_settings(_cli_args(pytester, "batch", argv), cli.batch_terms())


def _recheck_engine(pytester: pytest.Pytester, argv: tuple[str, ...], _ini: str) -> EngineSettings:
    return cli.engine_settings(_cli_args(pytester, "recheck", argv), cli.batch_terms())


def _batch_gate(pytester: pytest.Pytester, argv: tuple[str, ...], _ini: str) -> GateSettings:
    return cli.gate_settings(_cli_args(pytester, "batch", argv))


def _batch_outputs(pytester: pytest.Pytester, argv: tuple[str, ...], _ini: str) -> Outputs:
    return cli.outputs(_cli_args(pytester, "batch", argv))


def _service_engine(pytester: pytest.Pytester, argv: tuple[str, ...], _ini: str) -> EngineSettings:
    config = cli.service_config(_cli_args(pytester, "serve", argv), key=None)
    return config.engine_settings()


# -- what each front end exposes -------------------------------------------------------------

_JUDGE = "anthropic:claude-x"
_BASE_URL = "http://127.0.0.1:9/v1"
_TERMS = "not an option: the front end's own words for its options"
_RUN_ID = "not an option: pytest-xdist's run id, shared by its workers (session.py)"
_CRAWLS = "no option: the Crawling API's documented cap per token (core/limits.py)"
_JUDGE_CAP = "no option: each provider's default cap (core/limits.py)"
_NO_PANEL = "no panel flags: a claim file's judges: still makes a panel"
_NO_JUDGE_BATCH = {
    "judge_batch": NotExposed("a large audit's setting: citecheck batch --judge-batch"),
    "judge_batch_poll": NotExposed("a large audit's setting: citecheck batch --judge-batch"),
    "judge_batch_wait": NotExposed("a large audit's setting: citecheck batch --judge-batch"),
}

PLUGIN_ENGINE = FrontEnd(
    "plugin",
    EngineSettings,
    _plugin_engine,
    mapped={
        "record_mode": Option(("--citecheck-record=all",), "all"),
        "judge": Option((f"--citecheck-judge={_JUDGE}",), _JUDGE),
        "judge_origin": Option((f"--citecheck-judge={_JUDGE}",), JUDGE_FROM_FLAG),
        "judge_base_url": Option((), _BASE_URL, ini=f"citecheck_judge_base_url = {_BASE_URL}"),
        "judge_temperature": Option((), 0.3, ini="citecheck_judge_temperature = 0.3"),
        "judge_response_format": Option(
            (), "json_object", ini="citecheck_judge_response_format = json_object"
        ),
        "review_below": Option(("--citecheck-review-below=0.5",), 0.5),
        "no_confirm": Option(("--citecheck-no-confirm",), True),
        "concurrency": Option(("--citecheck-concurrency=3",), 3),
        "timeout": Option(("--citecheck-timeout=7",), 7.0),
        "max_page_bytes": Option(("--citecheck-max-page-bytes=1234",), 1234),
        "cache_dir": Option(("--citecheck-cache-dir=/tmp/emb",), Path("/tmp/emb")),
        "ranker": Option(("--citecheck-ranker=bm25",), "bm25"),
        "quote_policy": Option(
            ("--citecheck-quote-match=fuzzy", "--citecheck-quote-similarity=0.7"),
            QuotePolicy("fuzzy", 0.7),
        ),
        "url_policy": Option(("--citecheck-url-policy=public",), "public"),
        "prices": Option(("--citecheck-price-credit=0.002",), Prices(credit=0.002)),
        "max_cost": Option(("--citecheck-max-cost=5",), 5.0),
        "max_credits": Option(("--citecheck-max-credits=100",), 100.0),
        "judges": Option(("--citecheck-judges=openai:a,openai:b",), ("openai:a", "openai:b")),
        "judge_samples": Option(("--citecheck-judge-samples=3",), 3),
        "panel_rule": Option(("--citecheck-panel-rule=unanimous",), "unanimous"),
        "panel_min_votes": Option(("--citecheck-panel-min-votes=2",), 2),
    },
    fixed={
        **_NO_JUDGE_BATCH,
        "run_id": NotExposed(_RUN_ID),
        "crawl_concurrency": NotExposed(_CRAWLS),
        "judge_concurrency": NotExposed(_JUDGE_CAP),
        "terms": NotExposed(_TERMS, PLUGIN_TERMS),
    },
)

BATCH_ENGINE = FrontEnd(
    "citecheck batch",
    EngineSettings,
    _batch_engine,
    mapped={
        # Without --record the batch is live.
        "record_mode": Option(("--record", "once"), "once"),
        "judge": Option(("--judge", _JUDGE), _JUDGE),
        "judge_origin": Option(("--judge", _JUDGE), JUDGE_FROM_FLAG),
        "judge_base_url": Option(("--judge-base-url", _BASE_URL), _BASE_URL),
        "review_below": Option(("--review-below", "0.5"), 0.5),
        "no_confirm": Option(("--no-confirm",), True),
        "concurrency": Option(("--concurrency", "3"), 3),
        "ranker": Option(("--ranker", "bm25"), "bm25"),
        "url_policy": Option(("--url-policy", "public"), "public"),
        "prices": Option(("--price-credit", "0.002"), Prices(credit=0.002)),
        "max_cost": Option(("--max-cost", "5"), 5.0),
        "max_credits": Option(("--max-credits", "100"), 100.0),
        "quote_policy": Option(
            ("--quote-match", "fuzzy", "--quote-similarity", "0.7"), QuotePolicy("fuzzy", 0.7)
        ),
        "judge_batch": Option(("--judge-batch",), True),
        "judge_batch_poll": Option(("--judge-batch-poll", "5"), 5.0),
        "judge_batch_wait": Option(("--judge-batch-wait", "600"), 600.0),
    },
    fixed={
        "judge_temperature": NotExposed("no flag: each judge's automatic temperature"),
        "judge_response_format": NotExposed("no flag: each judge's automatic format"),
        "timeout": NotExposed("no flag: the engine's per-request deadline"),
        "max_page_bytes": NotExposed("no flag: the engine's page-size cap"),
        "cache_dir": NotExposed("no flag: the batch keeps no embedding cache across runs"),
        "run_id": NotExposed("one process: no other process shares its cassettes"),
        "crawl_concurrency": NotExposed(_CRAWLS),
        "judge_concurrency": NotExposed(_JUDGE_CAP),
        "terms": NotExposed(_TERMS, cli.batch_terms()),
        "judges": NotExposed(_NO_PANEL),
        "judge_samples": NotExposed(_NO_PANEL),
        "panel_rule": NotExposed(_NO_PANEL),
        "panel_min_votes": NotExposed(_NO_PANEL),
    },
)

RECHECK_ENGINE = FrontEnd(
    "citecheck recheck",
    EngineSettings,
    _recheck_engine,
    mapped={
        "judge": Option(("--judge", _JUDGE), _JUDGE),
        "judge_origin": Option(("--judge", _JUDGE), JUDGE_FROM_FLAG),
        "judge_base_url": Option(("--judge-base-url", _BASE_URL), _BASE_URL),
        "concurrency": Option(("--concurrency", "3"), 3),
        "ranker": Option(("--ranker", "bm25"), "bm25"),
        "quote_policy": Option(
            ("--quote-match", "fuzzy", "--quote-similarity", "0.7"), QuotePolicy("fuzzy", 0.7)
        ),
    },
    fixed={
        **{
            name: BATCH_ENGINE.fixed[name]
            for name in (
                "judge_temperature",
                "judge_response_format",
                "timeout",
                "max_page_bytes",
                "cache_dir",
                "run_id",
                "crawl_concurrency",
                "judge_concurrency",
                "terms",
                "judges",
                "judge_samples",
                "panel_rule",
                "panel_min_votes",
            )
        },
        **_NO_JUDGE_BATCH,
        "record_mode": NotExposed("the recheck replays, then fetches live (engine/recheck.py)"),
        "no_confirm": NotExposed("a judge asked again confirms its verdict as a run does"),
        "review_below": NotExposed(
            "no flag: a judge asked again uses the default review threshold"
        ),
        "url_policy": NotExposed("no flag: the recheck fetches the URLs the recordings fetched"),
        "prices": NotExposed("no flag: the recheck has no prices or budget"),
        "max_cost": NotExposed("no flag: the recheck has no prices or budget"),
        "max_credits": NotExposed("no flag: the recheck has no prices or budget"),
    },
)

SERVICE_ENGINE = FrontEnd(
    "citecheck serve",
    EngineSettings,
    _service_engine,
    mapped={
        "judge_base_url": Option(("--judge-base-url", _BASE_URL), _BASE_URL),
        "review_below": Option(("--review-below", "0.5"), 0.5),
        "concurrency": Option(("--concurrency", "3"), 3),
        "ranker": Option(("--ranker", "bm25"), "bm25"),
        # The service refuses internal addresses unless told otherwise.
        "url_policy": Option(("--url-policy", "off"), "off"),
        # Without --record (and --cassettes) the service is live ("all").
        "record_mode": Option(("--record", "once", "--cassettes", "cassettes"), "once"),
        # The spending cap of one service run.
        "prices": Option(("--price-credit", "0.002"), Prices(credit=0.002)),
        "max_cost": Option(("--max-cost", "5"), 5.0),
        "max_credits": Option(("--max-credits", "50"), 50.0),
    },
    fixed={
        **_NO_JUDGE_BATCH,
        "no_confirm": NotExposed("the service always confirms"),
        "judge": NotExposed("--judge is the service's default, applied to each request"),
        "judge_origin": NotExposed("the judge is the request's (or the service's default)"),
        "judge_temperature": NotExposed("no flag: each judge's automatic temperature"),
        "judge_response_format": NotExposed("no flag: each judge's automatic format"),
        "timeout": NotExposed("no flag: the engine's per-request deadline"),
        "max_page_bytes": NotExposed("no flag: the engine's page-size cap"),
        "cache_dir": NotExposed("no flag: the service keeps no embedding cache on disk"),
        "quote_policy": NotExposed("no flag: exact quote matching"),
        "run_id": NotExposed("one process"),
        "crawl_concurrency": NotExposed(_CRAWLS),
        "judge_concurrency": NotExposed(_JUDGE_CAP),
        "terms": NotExposed(_TERMS, SERVICE_TERMS),
        "judges": NotExposed("one judge per request"),
        "judge_samples": NotExposed("one judge per request"),
        "panel_rule": NotExposed("one judge per request"),
        "panel_min_votes": NotExposed("one judge per request"),
    },
)

PLUGIN_GATE = FrontEnd(
    "plugin",
    GateSettings,
    _plugin_gate,
    mapped={
        "min_precision": Option(("--citecheck-min-precision=0.9",), 0.9),
        "min_reachable_precision": Option(("--citecheck-min-reachable-precision=0.9",), 0.9),
        "allow_contradicted": Option(("--citecheck-allow-contradicted",), True),
        "strict_review": Option(("--citecheck-strict-review",), True),
        "gate_scope": Option(("--citecheck-gate=full",), "full"),
        "max_drop": Option(("--citecheck-max-drop=0.1",), 0.1),
        "min_answer_support": Option(("--citecheck-min-answer-support=0.9",), 0.9),
        "min_citation_recall": Option(("--citecheck-min-citation-recall=0.9",), 0.9),
        "min_agreement": Option(("--citecheck-min-agreement=0.9",), 0.9),
    },
    fixed={"terms": NotExposed(_TERMS, PLUGIN_TERMS)},
)

BATCH_GATE = FrontEnd(
    "citecheck batch",
    GateSettings,
    _batch_gate,
    mapped={
        "min_precision": Option(("--min-precision", "0.9"), 0.9),
        "min_reachable_precision": Option(("--min-reachable-precision", "0.9"), 0.9),
        "allow_contradicted": Option(("--allow-contradicted",), True),
        "min_answer_support": Option(("--min-answer-support", "0.9"), 0.9),
        "min_citation_recall": Option(("--min-citation-recall", "0.9"), 0.9),
    },
    fixed={
        "strict_review": NotExposed("no flag: a verdict marked for review counts normally"),
        "gate_scope": NotExposed("the batch gates the files it is given: no suite to select from"),
        "max_drop": NotExposed("no baseline in the batch"),
        "min_agreement": NotExposed(_NO_PANEL),
        "terms": NotExposed(_TERMS, cli.batch_terms()),
    },
)

PLUGIN_OUTPUTS = FrontEnd(
    "plugin",
    Outputs,
    _plugin_outputs,
    mapped={
        "json": Option(("--citecheck-report=r.json",), Path("r.json")),
        "csv": Option(("--citecheck-csv=r.csv",), Path("r.csv")),
        "markdown": Option(("--citecheck-md=r.md",), Path("r.md")),
        "html": Option(("--citecheck-html=r.html",), Path("r.html")),
        "sarif": Option(("--citecheck-sarif=r.sarif",), Path("r.sarif")),
        "report_url": Option(
            ("--citecheck-report-url=https://ci.example/r.html",), "https://ci.example/r.html"
        ),
    },
    fixed={"step_summary": NotExposed("not an option: $GITHUB_STEP_SUMMARY (unset here)")},
)

BATCH_OUTPUTS = FrontEnd(
    "citecheck batch",
    Outputs,
    _batch_outputs,
    mapped={
        "json": Option(("--json", "r.json"), Path("r.json")),
        "csv": Option(("--out", "r.csv"), Path("r.csv")),
    },
    fixed={
        "markdown": NotExposed("no flag: the batch prints its summary"),
        "html": NotExposed("no flag: the batch prints its summary"),
        "step_summary": NotExposed("the batch prints its summary"),
        "sarif": NotExposed("no flag: the batch prints its summary"),
        "report_url": NotExposed("no flag: the batch writes no HTML report"),
    },
)

FRONT_ENDS = (
    PLUGIN_ENGINE,
    BATCH_ENGINE,
    RECHECK_ENGINE,
    SERVICE_ENGINE,
    PLUGIN_GATE,
    BATCH_GATE,
    PLUGIN_OUTPUTS,
    BATCH_OUTPUTS,
)

CASES = [
    pytest.param(front, f.name, id=f"{front.name}-{front.target.__name__}-{f.name}")
    for front in FRONT_ENDS
    for f in fields(front.target)
]


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Terms):  # the same words (Terms holds functions)
        return isinstance(actual, Terms) and actual.options == expected.options
    return bool(actual == expected)


# What each front end gives without any option (built once per front end).
_UNTOUCHED: dict[int, Any] = {}


def _untouched(pytester: pytest.Pytester, front: FrontEnd) -> Any:
    if id(front) not in _UNTOUCHED:
        _UNTOUCHED[id(front)] = front.build(pytester, (), "")
    return _UNTOUCHED[id(front)]


def _default(target: type, name: str) -> Any:
    return getattr(target(), name)


@pytest.mark.parametrize(("front", "name"), CASES)
def test_every_setting_is_mapped_or_deliberately_not_exposed(
    pytester: pytest.Pytester, front: FrontEnd, name: str
) -> None:
    option, fixed = front.mapped.get(name), front.fixed.get(name)
    assert (option is None) != (fixed is None), (
        f"{front.name}: {front.target.__name__}.{name} must be either mapped from an option "
        "(in the front end's one mapping function) or listed as not exposed, with why"
    )
    untouched = getattr(_untouched(pytester, front), name)
    if fixed is not None:
        value = _default(front.target, name) if fixed.value is DEFAULT else fixed.value
        assert _same(untouched, value), f"{front.name} sets {name} without an option"
        return
    assert option is not None
    got = getattr(front.build(pytester, option.argv, option.ini), name)
    assert not _same(untouched, option.expected), "the case must set a value the front end lacks"
    assert _same(got, option.expected), f"{front.name}: {option.argv or option.ini} -> {got!r}"


def test_no_mapping_lists_a_setting_that_does_not_exist() -> None:
    for front in FRONT_ENDS:
        names = {f.name for f in fields(front.target)}
        assert set(front.mapped) | set(front.fixed) <= names, front.name
