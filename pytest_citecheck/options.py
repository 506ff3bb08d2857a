"""Command-line flags and ini options, all in one group, validated at parse time.

Precedence, for every setting that has both: the CLI flag wins over the ini
option, which wins over a claim file's own default (``judge:``), which wins
over the built-in default.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_citecheck.providers import providers_help
from pytest_citecheck.quote_policy import (
    DEFAULT_QUOTE_SIMILARITY,
    EXACT,
    QUOTE_MATCH_MODES,
    QuotePolicy,
)
from pytest_citecheck.recording import RECORD_MODES

if TYPE_CHECKING:
    from pytest_citecheck.judges.compat import Temperature

DEFAULT_JUDGE = "openai:gpt-4o-mini"
DEFAULT_PATTERNS = ["citecheck_*.yaml", "citecheck_*.yml", "citecheck_*.jsonl"]
DEFAULT_REVIEW_BELOW = 0.8
DEFAULT_MAX_DROP = 0.0


def fraction(text: str) -> float:
    """argparse ``type=``: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number between 0 and 1") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not between 0 and 1")
    return value


def judge_spec(text: str) -> str:
    """argparse ``type=``: ``provider:model``."""
    provider, sep, model = text.partition(":")
    if not sep or not provider or not model:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not PROVIDER:MODEL (e.g. openai:gpt-4o-mini, "
            "anthropic:claude-sonnet-4-6, ollama:llama3.1, openai-compatible:my-model)"
        )
    return text


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

    _add_quote_match_options(group, parser)

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
        "citecheck_min_precision", "citation precision floor (default: none)", default=None
    )
    parser.addini(
        "citecheck_min_reachable_precision",
        "reachable precision floor (default: none)",
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
        default=None,
    )
    parser.addini(
        "citecheck_strict_review", "fail on verdicts marked for review", type="bool", default=False
    )
    parser.addini(
        "citecheck_max_drop",
        f"largest allowed precision drop vs the baseline (default {DEFAULT_MAX_DROP})",
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
    markdown: Path | None = None
    html: Path | None = None
    quote_policy: QuotePolicy = EXACT

    def judge_for(self, file_judge: str | None) -> str:
        return self.judge or file_judge or DEFAULT_JUDGE


def _ini_fraction(config: pytest.Config, name: str) -> float | None:
    raw = config.getini(name)
    if raw in (None, ""):
        return None
    try:
        return fraction(str(raw))
    except argparse.ArgumentTypeError as exc:
        raise pytest.UsageError(f"ini option {name}: {exc}") from None


def _ini_temperature(config: pytest.Config) -> Temperature:
    raw = config.getini("citecheck_judge_temperature")
    if raw in (None, ""):
        return "auto"  # the judges (and httpx) are imported only when set
    from pytest_citecheck.judges.compat import parse_temperature

    try:
        return parse_temperature(str(raw))
    except ValueError as exc:
        raise pytest.UsageError(f"ini option citecheck_judge_temperature: {exc}") from None


def _ini_response_format(config: pytest.Config) -> str:
    raw = str(config.getini("citecheck_judge_response_format") or "auto").strip().lower()
    if raw == "auto":
        return raw
    from pytest_citecheck.judges.openai import RESPONSE_FORMATS

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
        return bool(value) if value is not None else bool(config.getini(name))

    judge: str | None = opt.citecheck_judge
    if judge is None and config.getini("citecheck_judge"):
        try:
            judge = judge_spec(str(config.getini("citecheck_judge")))
        except argparse.ArgumentTypeError as exc:
            raise pytest.UsageError(f"ini option citecheck_judge: {exc}") from None
    review_below = pick_fraction("citecheck_review_below")
    max_drop = pick_fraction("citecheck_max_drop")
    return Settings(
        enabled=bool(opt.citecheck),
        record_mode=opt.citecheck_record,
        judge=judge,
        judge_base_url=config.getini("citecheck_judge_base_url") or None,
        judge_temperature=_ini_temperature(config),
        judge_response_format=_ini_response_format(config),
        patterns=tuple(config.getini("citecheck_patterns")),
        min_precision=pick_fraction("citecheck_min_precision"),
        min_reachable_precision=pick_fraction("citecheck_min_reachable_precision"),
        allow_contradicted=pick_bool("citecheck_allow_contradicted"),
        review_below=DEFAULT_REVIEW_BELOW if review_below is None else review_below,
        strict_review=pick_bool("citecheck_strict_review"),
        baseline=opt.citecheck_baseline,
        max_drop=DEFAULT_MAX_DROP if max_drop is None else max_drop,
        report=opt.citecheck_report,
        csv=opt.citecheck_csv,
        markdown=opt.citecheck_md,
        html=opt.citecheck_html,
        quote_policy=_quote_policy(config),
    )


# -- quote matching (the guard, DESIGN §3.11) ---------------------------------------


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
        default=None,
    )


def _quote_policy(config: pytest.Config) -> QuotePolicy:
    mode: str | None = config.option.citecheck_quote_match
    if mode is None:
        mode = str(config.getini("citecheck_quote_match") or "exact").strip()
        if mode not in QUOTE_MATCH_MODES:
            raise pytest.UsageError(
                f"ini option citecheck_quote_match: {mode!r} is not one of "
                f"{', '.join(QUOTE_MATCH_MODES)}"
            )
    similarity: float | None = config.option.citecheck_quote_similarity
    if similarity is None:
        similarity = _ini_fraction(config, "citecheck_quote_similarity")
    return QuotePolicy(mode, DEFAULT_QUOTE_SIMILARITY if similarity is None else similarity)
