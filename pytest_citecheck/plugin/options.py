"""Command-line flags and ini options, all in one group, validated at parse time.

Precedence, for every setting that has both: the CLI flag wins over the ini
option, which wins over a claim file's own default (``judge:``), which wins
over the built-in default.
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_citecheck.core.argtypes import (
    amount,
    claim_chars,
    fraction,
    judge_prices,
    judge_spec,
    positive_int,
    positive_seconds,
    recheck_statuses,
)
from pytest_citecheck.core.defaults import (
    DEFAULT_CONCURRENCY,
    DEFAULT_JUDGE,
    DEFAULT_MAX_CLAIM_CHARS,
    DEFAULT_MAX_DROP,
    DEFAULT_MAX_PAGE_BYTES,
    DEFAULT_PANEL_RULE,
    DEFAULT_RANKER,
    DEFAULT_RECHECK_FAIL_ON,
    DEFAULT_REVIEW_BELOW,
    DEFAULT_TIMEOUT,
    DEFAULT_URL_POLICY,
    PANEL_RULES,
    RANKERS,
    RECORD_MODES,
    URL_POLICIES,
)
from pytest_citecheck.core.prices import Prices
from pytest_citecheck.core.providers import providers_help
from pytest_citecheck.stages.quote_policy import (
    DEFAULT_QUOTE_SIMILARITY,
    EXACT,
    QUOTE_MATCH_MODES,
    QuotePolicy,
)

if TYPE_CHECKING:
    from pytest_citecheck.engine.gate import Baseline
    from pytest_citecheck.stages.judges.compat import Temperature

DEFAULT_PATTERNS = ["citecheck_*.yaml", "citecheck_*.yml", "citecheck_*.jsonl"]


SETTINGS_KEY = pytest.StashKey["Settings"]()


# -- the engine's options: concurrency, deadline, size cap, cache ------------------------


def _add_engine_options(parser: pytest.Parser, group: pytest.OptionGroup) -> None:
    group.addoption(
        "--citecheck-concurrency",
        dest="citecheck_concurrency",
        default=None,
        type=positive_int,
        metavar="N",
        help=f"claims recorded at once (ini citecheck_concurrency; default "
        f"{DEFAULT_CONCURRENCY}); replay does not need it.",
    )
    group.addoption(
        "--citecheck-timeout",
        dest="citecheck_timeout",
        default=None,
        type=positive_seconds,
        metavar="SECONDS",
        help=f"seconds one HTTP request may take, retries included (ini citecheck_timeout; "
        f"default {DEFAULT_TIMEOUT:g}).",
    )
    group.addoption(
        "--citecheck-max-page-bytes",
        dest="citecheck_max_page_bytes",
        default=None,
        type=positive_int,
        metavar="BYTES",
        help=f"largest page that is judged (ini citecheck_max_page_bytes; default "
        f"{DEFAULT_MAX_PAGE_BYTES}).",
    )
    group.addoption(
        "--citecheck-max-claim-chars",
        dest="citecheck_max_claim_chars",
        default=None,
        type=claim_chars,
        metavar="N",
        help="longest claim text accepted; a longer one makes its claim file invalid "
        f"(ini citecheck_max_claim_chars; default {DEFAULT_MAX_CLAIM_CHARS}; 0: no cap).",
    )
    group.addoption(
        "--citecheck-cache-dir",
        dest="citecheck_cache_dir",
        default=None,
        type=Path,
        metavar="DIR",
        help="where the embedding cache lives (default: pytest's cache directory, "
        ".pytest_cache/d/citecheck; none with -p no:cacheprovider).",
    )
    parser.addini(
        "citecheck_concurrency",
        f"claims recorded at once (default {DEFAULT_CONCURRENCY})",
        type="int",
        default=None,
    )
    parser.addini(
        "citecheck_timeout",
        f"seconds one HTTP request may take, retries included (default {DEFAULT_TIMEOUT:g})",
        type="float",
        default=None,
    )
    parser.addini(
        "citecheck_max_page_bytes",
        f"largest page (bytes of markdown) that is judged (default {DEFAULT_MAX_PAGE_BYTES})",
        type="int",
        default=None,
    )
    parser.addini(
        "citecheck_max_claim_chars",
        f"longest claim text accepted, in characters (default {DEFAULT_MAX_CLAIM_CHARS}; "
        "0: no cap)",
        default=None,
    )


def _engine_settings(config: pytest.Config) -> dict[str, object]:
    """The engine options, resolved (flag > ini > default); bad ini values name the option."""

    def ini(name: str, parse: object, default: object) -> object:
        raw = _getini(config, name)
        if raw in (None, ""):
            return default
        try:
            return parse(str(raw).strip())  # type: ignore[operator]
        except argparse.ArgumentTypeError as exc:
            raise pytest.UsageError(f"ini option {name}: {exc}") from None

    opt = config.option

    def pick(name: str, parse: object, default: object) -> object:
        flag = getattr(opt, name)
        return flag if flag is not None else ini(name, parse, default)

    return {
        "concurrency": pick("citecheck_concurrency", positive_int, DEFAULT_CONCURRENCY),
        "timeout": pick("citecheck_timeout", positive_seconds, DEFAULT_TIMEOUT),
        "max_page_bytes": pick("citecheck_max_page_bytes", positive_int, DEFAULT_MAX_PAGE_BYTES),
        "max_claim_chars": pick("citecheck_max_claim_chars", claim_chars, DEFAULT_MAX_CLAIM_CHARS),
        # None: pytest's cache directory, resolved when recording needs it (session).
        "cache_dir": opt.citecheck_cache_dir,
    }


# -- the dry run, prices and the budget ---------------------------------------------------


def _add_cost_options(parser: pytest.Parser, group: pytest.OptionGroup) -> None:
    group.addoption(
        "--citecheck-dry-run",
        dest="citecheck_dry_run",
        action="store_true",
        default=False,
        help="list what recording would do under --citecheck-record (claims, crawls, judge "
        "calls, tokens, credits, cost) and stop before any request; needs no token or key.",
    )
    group.addoption(
        "--citecheck-price-credit",
        dest="citecheck_price_credit",
        default=None,
        type=amount,
        metavar="PRICE",
        help="price of one Crawling API credit (ini citecheck_price_credit; default: not set, "
        "reports show credits only).",
    )
    group.addoption(
        "--citecheck-prices",
        dest="citecheck_prices",
        default=None,
        type=judge_prices,
        metavar="PROVIDER:MODEL=IN/OUT",
        help="judge prices per million input/output tokens, e.g. "
        "openai:gpt-4o-mini=0.15/0.60, several separated by spaces (ini citecheck_prices).",
    )
    group.addoption(
        "--citecheck-max-cost",
        dest="citecheck_max_cost",
        default=None,
        type=amount,
        metavar="AMOUNT",
        help="no claim starts recording that could take the spend past AMOUNT (at the "
        "prices set; ini citecheck_max_cost).",
    )
    group.addoption(
        "--citecheck-max-credits",
        dest="citecheck_max_credits",
        default=None,
        type=amount,
        metavar="N",
        help="no claim starts recording that could take the Crawling API credits past N "
        "(ini citecheck_max_credits).",
    )
    parser.addini("citecheck_price_credit", "price of one Crawling API credit", default=None)
    parser.addini(
        "citecheck_prices",
        "judge prices per million tokens: PROVIDER:MODEL=IN/OUT, several separated by "
        "spaces or lines",
        default=None,
    )
    parser.addini("citecheck_max_cost", "recording budget in money (at your prices)", default=None)
    parser.addini("citecheck_max_credits", "recording budget in Crawling API credits", default=None)


def _cost_settings(config: pytest.Config) -> dict[str, object]:
    """Prices and budget, resolved (flag > ini); bad ini values name the option."""
    from pytest_citecheck.core.prices import Prices

    def pick(name: str, parse: Any) -> Any:
        flag = getattr(config.option, name)
        if flag is not None:
            return flag
        raw = _getini(config, name)
        if raw in (None, ""):
            return None
        try:
            return parse(str(raw).strip())
        except argparse.ArgumentTypeError as exc:
            raise pytest.UsageError(f"ini option {name}: {exc}") from None

    return {
        "dry_run": bool(config.option.citecheck_dry_run),
        "prices": Prices(
            credit=pick("citecheck_price_credit", amount),
            judges=pick("citecheck_prices", judge_prices) or {},
        ),
        "max_cost": pick("citecheck_max_cost", amount),
        "max_credits": pick("citecheck_max_credits", amount),
    }


# -- end of the engine's options --------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("citecheck", "citation checking (pytest-citecheck)")
    group.addoption(
        "--citecheck",
        action="store_true",
        dest="citecheck",
        default=False,
        help="collect claim files (citecheck_*.yaml|yml|jsonl) and verify their citations.",
    )
    group.addoption(
        "--citecheck-record",
        dest="citecheck_record",
        default="none",
        choices=RECORD_MODES,
        help="VCR record mode for citecheck cassettes (default: none = replay only, no "
        "network). once/new_episodes/all/rewrite fetch pages and ask the judge with real "
        "tokens.",
    )
    group.addoption(
        "--citecheck-judge",
        dest="citecheck_judge",
        default=None,
        type=judge_spec,
        metavar="PROVIDER:MODEL",
        help=f"judge model (ini citecheck_judge; default {DEFAULT_JUDGE}); "
        f"{providers_help()} Recording also needs CRAWLBASE_TOKEN (and CRAWLBASE_JS_TOKEN "
        "for JavaScript pages); replay needs no key.",
    )
    group.addoption(
        "--citecheck-min-precision",
        dest="citecheck_min_precision",
        default=None,
        type=fraction,
        metavar="P",
        help="fail when citation precision is below P (ini citecheck_min_precision; "
        "default: no floor).",
    )
    group.addoption(
        "--citecheck-min-answer-support",
        dest="citecheck_min_answer_support",
        default=None,
        type=fraction,
        metavar="P",
        help="fail when answer support (supported claims over all claims of imported "
        "answers) is below P (ini citecheck_min_answer_support; default: no floor).",
    )
    group.addoption(
        "--citecheck-min-reachable-precision",
        dest="citecheck_min_reachable_precision",
        default=None,
        type=fraction,
        metavar="P",
        help="fail when reachable precision is below P (ini "
        "citecheck_min_reachable_precision; default: no floor).",
    )
    group.addoption(
        "--citecheck-allow-contradicted",
        dest="citecheck_allow_contradicted",
        action="store_true",
        default=None,
        help="do not fail the session on contradicted or fabricated citations (ini "
        "citecheck_allow_contradicted; default: false).",
    )
    group.addoption(
        "--citecheck-review-below",
        dest="citecheck_review_below",
        default=None,
        type=fraction,
        metavar="C",
        help=f"mark verdicts with confidence below C for review (ini "
        f"citecheck_review_below; default {DEFAULT_REVIEW_BELOW}).",
    )
    group.addoption(
        "--citecheck-strict-review",
        dest="citecheck_strict_review",
        action="store_true",
        default=None,
        help="fail claims and the session on verdicts marked for review (ini "
        "citecheck_strict_review; default: false).",
    )
    group.addoption(
        "--citecheck-baseline",
        dest="citecheck_baseline",
        default=None,
        type=Path,
        metavar="REPORT.json",
        help="compare precision with a saved --citecheck-report and fail on a drop larger "
        "than citecheck_max_drop.",
    )
    group.addoption(
        "--citecheck-max-drop",
        dest="citecheck_max_drop",
        default=None,
        type=fraction,
        metavar="D",
        help=f"largest allowed precision drop against the baseline (ini "
        f"citecheck_max_drop; default {DEFAULT_MAX_DROP}).",
    )
    group.addoption(
        "--citecheck-report",
        dest="citecheck_report",
        default=None,
        type=Path,
        metavar="PATH.json",
        help="write a JSON report (also the --citecheck-baseline format).",
    )
    group.addoption(
        "--citecheck-csv",
        dest="citecheck_csv",
        default=None,
        type=Path,
        metavar="PATH",
        help="write one CSV row per citation.",
    )
    group.addoption(
        "--citecheck-audit",
        dest="citecheck_audit",
        default=None,
        type=Path,
        metavar="PATH",
        help="append one row per citation to this SQLite audit index (read it with "
        "`citecheck audit list`).",
    )
    # -- readable reports (report_md, report_html) --
    group.addoption(
        "--citecheck-md",
        dest="citecheck_md",
        default=None,
        type=Path,
        metavar="PATH.md",
        help="write a markdown summary (also appended to $GITHUB_STEP_SUMMARY when that "
        "variable is set).",
    )
    group.addoption(
        "--citecheck-html",
        dest="citecheck_html",
        default=None,
        type=Path,
        metavar="PATH.html",
        help="write a self-contained HTML report (no network, opens from file://).",
    )
    group.addoption(
        "--citecheck-sarif",
        dest="citecheck_sarif",
        default=None,
        type=Path,
        metavar="PATH.sarif",
        help="write the failing and review claims as SARIF 2.1.0, for GitHub code "
        "scanning (github/codeql-action/upload-sarif); default: none.",
    )
    _add_engine_options(parser, group)
    _add_cost_options(parser, group)

    _add_quote_match_options(group, parser)
    _add_panel_options(group, parser)
    _add_recheck_options(group, parser)

    parser.addini(
        "citecheck_patterns", "glob patterns of claim files", type="args", default=DEFAULT_PATTERNS
    )
    parser.addini(
        "citecheck_judge", f"judge PROVIDER:MODEL (default {DEFAULT_JUDGE})", default=None
    )
    parser.addini(
        "citecheck_judge_base_url",
        "base URL for the openai-compatible judge (vLLM, llama.cpp, LM Studio)",
        default=None,
    )
    parser.addini(
        "citecheck_judge_temperature",
        "judge temperature: auto (0; not sent to OpenAI reasoning models), omit, or a "
        "number (default auto)",
        default=None,
    )
    parser.addini(
        "citecheck_judge_response_format",
        "OpenAI-wire response_format: auto (json_schema, json_object + schema for a "
        "server that asks for it), json_schema or json_object (default auto)",
        default=None,
    )
    parser.addini(
        "citecheck_min_precision",
        "citation precision floor (default: none)",
        type="float",
        default=None,
    )
    parser.addini(
        "citecheck_min_answer_support",
        "answer support floor: supported claims over all claims of imported answers "
        "(default: none)",
        type="float",
        default=None,
    )
    parser.addini(
        "citecheck_min_reachable_precision",
        "reachable precision floor (default: none)",
        type="float",
        default=None,
    )
    parser.addini(
        "citecheck_allow_contradicted",
        "do not fail on contradicted/fabricated citations",
        type="bool",
        default=False,
    )
    parser.addini(
        "citecheck_review_below",
        f"confidence below which a verdict needs review (default {DEFAULT_REVIEW_BELOW})",
        type="float",
        default=None,
    )
    parser.addini(
        "citecheck_strict_review", "fail on verdicts marked for review", type="bool", default=False
    )
    parser.addini(
        "citecheck_document_roots",
        "folders outside the rootdir that `document:` citations may read (paths relative "
        "to the ini file; default: only the rootdir)",
        type="paths",
        default=[],
    )
    parser.addini(
        "citecheck_max_drop",
        f"largest allowed precision drop vs the baseline (default {DEFAULT_MAX_DROP})",
        type="float",
        default=None,
    )

    # Retrieval: which ranker picks the passages when recording.
    group.addoption(
        "--citecheck-ranker",
        dest="citecheck_ranker",
        default=None,
        choices=RANKERS,
        help=f"passage ranker for recording (ini citecheck_ranker; default {DEFAULT_RANKER}). "
        "Replay reads the recorded choice.",
    )
    parser.addini(
        "citecheck_ranker",
        f"passage ranker for recording: {' | '.join(RANKERS)} (default {DEFAULT_RANKER})",
        default=None,
    )

    # Which cited URLs may be fetched (pytest_citecheck.stages.url_policy).
    group.addoption(
        "--citecheck-url-policy",
        dest="citecheck_url_policy",
        default=None,
        choices=URL_POLICIES,
        help="public: refuse cited URLs on internal addresses or local names, or with "
        "credentials, as url_refused without fetching them (ini citecheck_url_policy; "
        f"default {DEFAULT_URL_POLICY}).",
    )
    parser.addini(
        "citecheck_url_policy",
        f"which cited URLs may be fetched: {' | '.join(URL_POLICIES)} "
        f"(default {DEFAULT_URL_POLICY})",
        default=None,
    )


@dataclass(frozen=True)
class Settings:
    """Every citecheck setting, resolved (flag > ini > default) and validated."""

    enabled: bool
    record_mode: str
    judge: str | None  # None: the claim file's judge, else DEFAULT_JUDGE
    judge_base_url: str | None
    judge_temperature: Temperature
    judge_response_format: str
    patterns: tuple[str, ...]
    min_precision: float | None
    min_reachable_precision: float | None
    allow_contradicted: bool
    review_below: float
    strict_review: bool
    baseline: Path | None
    max_drop: float
    report: Path | None
    csv: Path | None
    # Where `document:` citations may resolve: the rootdir, then citecheck_document_roots.
    document_roots: tuple[Path, ...] = ()
    audit: Path | None = None
    min_answer_support: float | None = None
    # Where ``judge`` came from ("flag", "ini" or None), for messages.
    judge_origin: str | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float = DEFAULT_TIMEOUT
    max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES
    max_claim_chars: int = DEFAULT_MAX_CLAIM_CHARS
    cache_dir: Path | None = None
    markdown: Path | None = None
    html: Path | None = None
    sarif: Path | None = None
    quote_policy: QuotePolicy = EXACT
    ranker: str = DEFAULT_RANKER
    url_policy: str = DEFAULT_URL_POLICY
    dry_run: bool = False
    prices: Prices = field(default_factory=Prices)
    max_cost: float | None = None
    max_credits: float | None = None
    # A judge panel (engine/panel.py): members, samples per member, the rule, the floor.
    judges: tuple[str, ...] | None = None
    judge_samples: int = 1
    panel_rule: str = DEFAULT_PANEL_RULE
    min_agreement: float | None = None
    # --citecheck-recheck: compare the recordings with the live pages.
    recheck: bool = False
    recheck_fail_on: tuple[str, ...] = DEFAULT_RECHECK_FAIL_ON

    def judge_for(self, file_judge: str | None) -> str:
        return self.judge or file_judge or DEFAULT_JUDGE

    def is_claim_file(self, name: str) -> bool:
        """Whether a file of this name matches ``citecheck_patterns`` (asked once per
        collected file, so the patterns are one compiled expression)."""
        return _patterns_regex(self.patterns).match(os.path.normcase(name)) is not None


def _getini(config: pytest.Config, name: str) -> Any:
    """``config.getini`` whose errors name the option (pytest's own may not)."""
    try:
        return config.getini(name)
    except (pytest.UsageError, ValueError, TypeError) as exc:
        message = str(exc)
        if name not in message:
            message = f"ini option {name}: {message}"
        raise pytest.UsageError(message) from None


def _ini_fraction(config: pytest.Config, name: str) -> float | None:
    """A fraction from ini or TOML (``0.5`` native or ``"0.5"`` in an ini file)."""
    raw = _getini(config, name)
    if raw is None or raw == "":
        return None
    try:
        return fraction(str(raw))
    except argparse.ArgumentTypeError as exc:
        raise pytest.UsageError(f"ini option {name}: {exc}") from None


def _ini_temperature(config: pytest.Config) -> Temperature:
    raw = _getini(config, "citecheck_judge_temperature")
    if raw in (None, ""):
        return "auto"  # the judges (and httpx) are imported only when set
    from pytest_citecheck.stages.judges.compat import parse_temperature

    try:
        return parse_temperature(str(raw))
    except ValueError as exc:
        raise pytest.UsageError(f"ini option citecheck_judge_temperature: {exc}") from None


def _ini_response_format(config: pytest.Config) -> str:
    raw = str(_getini(config, "citecheck_judge_response_format") or "auto").strip().lower()
    if raw == "auto":
        return raw
    from pytest_citecheck.stages.judges.openai import RESPONSE_FORMATS

    if raw not in RESPONSE_FORMATS:
        raise pytest.UsageError(
            f"ini option citecheck_judge_response_format: {raw!r} is not one of "
            f"{', '.join(RESPONSE_FORMATS)}"
        )
    return raw


def settings_from_config(config: pytest.Config) -> Settings:
    """Resolve settings; raises ``pytest.UsageError`` on a bad ini value."""
    opt = config.option

    def pick_fraction(name: str) -> float | None:
        value: float | None = getattr(opt, name)
        return value if value is not None else _ini_fraction(config, name)

    def pick_bool(name: str) -> bool:
        value: bool | None = getattr(opt, name)
        return bool(value) if value is not None else bool(_getini(config, name))

    judge: str | None = opt.citecheck_judge
    judge_origin = "flag" if judge is not None else None
    if judge is None and _getini(config, "citecheck_judge"):
        judge_origin = "ini"
        try:
            judge = judge_spec(str(_getini(config, "citecheck_judge")))
        except argparse.ArgumentTypeError as exc:
            raise pytest.UsageError(f"ini option citecheck_judge: {exc}") from None
    review_below = pick_fraction("citecheck_review_below")
    max_drop = pick_fraction("citecheck_max_drop")
    return Settings(
        enabled=bool(opt.citecheck),
        record_mode=opt.citecheck_record,
        judge=judge,
        judge_base_url=_getini(config, "citecheck_judge_base_url") or None,
        judge_temperature=_ini_temperature(config),
        judge_response_format=_ini_response_format(config),
        patterns=tuple(_getini(config, "citecheck_patterns")),
        min_precision=pick_fraction("citecheck_min_precision"),
        min_reachable_precision=pick_fraction("citecheck_min_reachable_precision"),
        min_answer_support=pick_fraction("citecheck_min_answer_support"),
        allow_contradicted=pick_bool("citecheck_allow_contradicted"),
        review_below=DEFAULT_REVIEW_BELOW if review_below is None else review_below,
        strict_review=pick_bool("citecheck_strict_review"),
        baseline=opt.citecheck_baseline,
        max_drop=DEFAULT_MAX_DROP if max_drop is None else max_drop,
        report=opt.citecheck_report,
        audit=opt.citecheck_audit,
        csv=opt.citecheck_csv,
        markdown=opt.citecheck_md,
        html=opt.citecheck_html,
        sarif=opt.citecheck_sarif,
        quote_policy=_quote_policy(config),
        document_roots=(config.rootpath, *_getini(config, "citecheck_document_roots")),
        judge_origin=judge_origin,
        ranker=_ranker(config),
        url_policy=_url_policy(config),
        **_panel_settings(config),
        recheck=bool(opt.citecheck_recheck),
        recheck_fail_on=_recheck_fail_on(config),
        **_engine_settings(config),  # type: ignore[arg-type]
        **_cost_settings(config),  # type: ignore[arg-type]
    )


def check_paths(settings: Settings) -> Baseline | None:
    """Start-up checks of the files a run reads and writes: a usage error now
    instead of a lost summary at the end. Returns the baseline, read here once."""
    from pytest_citecheck.core.files import unwritable

    outputs = (
        ("--citecheck-report", settings.report),
        ("--citecheck-csv", settings.csv),
        ("--citecheck-md", settings.markdown),
        ("--citecheck-html", settings.html),
        ("--citecheck-sarif", settings.sarif),
    )
    for flag, path in outputs:
        if path is not None:
            problem = unwritable(path)
            if problem is not None:
                raise pytest.UsageError(f"{flag} {path}: {problem}")
    if settings.audit is not None:
        from pytest_citecheck.reports.audit import AuditError, AuditIndex

        try:
            AuditIndex(settings.audit).check()
        except AuditError as exc:
            raise pytest.UsageError(f"--citecheck-audit: {exc}") from None
    if settings.baseline is None:
        return None
    from pytest_citecheck.engine.gate import BaselineError, read_baseline
    from pytest_citecheck.plugin.terms import PLUGIN_TERMS

    try:
        return read_baseline(settings.baseline, PLUGIN_TERMS)
    except BaselineError as exc:
        raise pytest.UsageError(f"--citecheck-baseline: {exc}") from None


# -- citation rot: recheck against the live pages ------------------------------------


def _add_recheck_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    group.addoption(
        "--citecheck-recheck",
        dest="citecheck_recheck",
        action="store_true",
        default=False,
        help="fetch every recorded URL citation live again and fail the claims whose "
        "page or evidence is gone (needs CRAWLBASE_TOKEN; replays the recordings; "
        "default: off).",
    )
    group.addoption(
        "--citecheck-recheck-fail-on",
        dest="citecheck_recheck_fail_on",
        default=None,
        type=recheck_statuses,
        metavar="STATUS,...",
        help="recheck statuses that fail a claim (ini citecheck_recheck_fail_on; default "
        f"{','.join(DEFAULT_RECHECK_FAIL_ON)}; none: never).",
    )
    parser.addini(
        "citecheck_recheck_fail_on",
        f"recheck statuses that fail a claim (default {','.join(DEFAULT_RECHECK_FAIL_ON)})",
        default=None,
    )


def _recheck_fail_on(config: pytest.Config) -> tuple[str, ...]:
    given: tuple[str, ...] | None = config.option.citecheck_recheck_fail_on
    if given is not None:
        return given
    raw = _getini(config, "citecheck_recheck_fail_on")
    if raw in (None, ""):
        return DEFAULT_RECHECK_FAIL_ON
    try:
        return recheck_statuses(str(raw))
    except argparse.ArgumentTypeError as exc:
        raise pytest.UsageError(f"ini option citecheck_recheck_fail_on: {exc}") from None


# -- quote matching (the guard, stages/guard.py) -----------------------------------


def _add_quote_match_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    group.addoption(
        "--citecheck-quote-match",
        dest="citecheck_quote_match",
        default=None,
        choices=QUOTE_MATCH_MODES,
        help="how the guard matches a judge's quote against the passages: exact (a substring "
        "after normalising quotes and whitespace) or fuzzy (also a lightly edited quote; the "
        "verdict reports the page's own span) (ini citecheck_quote_match; default: exact).",
    )
    group.addoption(
        "--citecheck-quote-similarity",
        dest="citecheck_quote_similarity",
        default=None,
        type=fraction,
        metavar="S",
        help="the similarity a fuzzy quote match needs (ini citecheck_quote_similarity; "
        f"default {DEFAULT_QUOTE_SIMILARITY}).",
    )
    parser.addini(
        "citecheck_quote_match",
        "exact or fuzzy quote matching in the guard (default: exact)",
        default=None,
    )
    parser.addini(
        "citecheck_quote_similarity",
        f"similarity a fuzzy quote match needs (default {DEFAULT_QUOTE_SIMILARITY})",
        type="float",
        default=None,
    )


def _quote_policy(config: pytest.Config) -> QuotePolicy:
    mode: str | None = config.option.citecheck_quote_match
    if mode is None:
        mode = str(_getini(config, "citecheck_quote_match") or "exact").strip()
        if mode not in QUOTE_MATCH_MODES:
            raise pytest.UsageError(
                f"ini option citecheck_quote_match: {mode!r} is not one of "
                f"{', '.join(QUOTE_MATCH_MODES)}"
            )
    similarity: float | None = config.option.citecheck_quote_similarity
    if similarity is None:
        similarity = _ini_fraction(config, "citecheck_quote_similarity")
    return QuotePolicy(mode, DEFAULT_QUOTE_SIMILARITY if similarity is None else similarity)


def _ranker(config: pytest.Config) -> str:
    name: str = config.option.citecheck_ranker or str(_getini(config, "citecheck_ranker") or "")
    name = name.strip()
    if not name:
        return DEFAULT_RANKER
    if name not in RANKERS:
        raise pytest.UsageError(
            f"ini option citecheck_ranker: {name!r} is not one of {', '.join(RANKERS)}"
        )
    return name


def _url_policy(config: pytest.Config) -> str:
    name: str = config.option.citecheck_url_policy or str(
        _getini(config, "citecheck_url_policy") or ""
    )
    name = name.strip().lower()
    if not name:
        return DEFAULT_URL_POLICY
    if name not in URL_POLICIES:
        raise pytest.UsageError(
            f"ini option citecheck_url_policy: {name!r} is not one of {', '.join(URL_POLICIES)}"
        )
    return name


# -- a judge panel (engine/panel.py) ---------------------------------------------------


def judge_specs(text: str) -> tuple[str, ...]:
    """argparse ``type=``: ``PROVIDER:MODEL`` specs separated by commas (or lines)."""
    specs = tuple(s.strip() for s in text.replace("\n", ",").split(",") if s.strip())
    if not specs:
        raise argparse.ArgumentTypeError(
            f"{text!r} names no judge: list PROVIDER:MODEL specs separated by commas, e.g. "
            "openai:gpt-4o-mini,anthropic:claude-haiku-4-5"
        )
    for spec in specs:
        judge_spec(spec)
    return specs


def _add_panel_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    group.addoption(
        "--citecheck-judges",
        dest="citecheck_judges",
        default=None,
        type=judge_specs,
        metavar="P:M,P:M,...",
        help="a panel of judges, comma-separated (ini citecheck_judges, one per line or "
        "comma-separated; a claim file's judges:); each judges every citation and the "
        "panel rule decides. Recording costs one judge call per member.",
    )
    group.addoption(
        "--citecheck-judge-samples",
        dest="citecheck_judge_samples",
        default=None,
        type=positive_int,
        metavar="N",
        help="ask each judge N times (sampled at temperature 1 unless "
        "citecheck_judge_temperature is set); N > 1 makes a panel (ini "
        "citecheck_judge_samples; default 1).",
    )
    group.addoption(
        "--citecheck-panel-rule",
        dest="citecheck_panel_rule",
        default=None,
        choices=PANEL_RULES,
        help="how a panel decides: majority (more than half the members) or unanimous "
        "(ini citecheck_panel_rule; default majority).",
    )
    group.addoption(
        "--citecheck-min-agreement",
        dest="citecheck_min_agreement",
        default=None,
        type=fraction,
        metavar="A",
        help="fail when fewer than this share of the citations a panel judged were "
        "unanimous (ini citecheck_min_agreement; default: no floor).",
    )
    parser.addini("citecheck_judges", "a judge panel: PROVIDER:MODEL specs", default=None)
    parser.addini(
        "citecheck_judge_samples", "replies asked of each judge (default 1)", default=None
    )
    parser.addini("citecheck_panel_rule", "majority or unanimous (default majority)", default=None)
    parser.addini(
        "citecheck_min_agreement",
        "floor on the share of panel-judged citations that were unanimous (default: none)",
        default=None,
    )


def _panel_settings(config: pytest.Config) -> dict[str, Any]:
    """The panel options, resolved (flag > ini > default); bad ini values name the option."""
    opt = config.option

    def ini(name: str, parse: Any) -> Any:
        raw = _getini(config, name)
        if raw in (None, "", []):
            return None
        try:
            return parse(str(raw).strip())
        except argparse.ArgumentTypeError as exc:
            raise pytest.UsageError(f"ini option {name}: {exc}") from None

    def rule(text: str) -> str:
        if text not in PANEL_RULES:
            raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(PANEL_RULES)}")
        return text

    judges = opt.citecheck_judges
    listed = _getini(config, "citecheck_judges")
    if judges is None and listed:
        try:
            judges = judge_specs(",".join(listed) if isinstance(listed, list) else str(listed))
        except argparse.ArgumentTypeError as exc:
            raise pytest.UsageError(f"ini option citecheck_judges: {exc}") from None
    samples = opt.citecheck_judge_samples or ini("citecheck_judge_samples", positive_int) or 1
    min_agreement = opt.citecheck_min_agreement
    if min_agreement is None:
        min_agreement = _ini_fraction(config, "citecheck_min_agreement")
    return {
        "judges": judges,
        "judge_samples": samples,
        "panel_rule": opt.citecheck_panel_rule
        or ini("citecheck_panel_rule", rule)
        or DEFAULT_PANEL_RULE,
        "min_agreement": min_agreement,
    }


@functools.lru_cache(maxsize=8)
def _patterns_regex(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """The glob patterns as one expression (what :func:`fnmatch.fnmatch` matches)."""
    if not patterns:
        return re.compile(r"(?!)")
    return re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(p))})" for p in patterns))
