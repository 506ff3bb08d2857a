"""The pytest options and ini entries, derived from the option table, and resolved.

Every flag and ini option comes from :data:`~pytest_citecheck.options.table.OPTIONS`.
Precedence, for every setting that has both: the CLI flag wins over the ini
option, which wins over a claim file's own default (``judge:``), which wins
over the built-in default. A bad ini value is a usage error naming the option.
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_citecheck.core.defaults import (
    DEFAULT_JUDGE,
    DEFAULT_MAX_CLAIM_CHARS,
    DEFAULT_RECHECK_FAIL_ON,
)
from pytest_citecheck.core.providers import providers_help
from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.options.table import OPTIONS, Option

if TYPE_CHECKING:
    from pytest_citecheck.core.prices import Prices
    from pytest_citecheck.engine.gate import Baseline
    from pytest_citecheck.stages.quote_policy import QuotePolicy

SETTINGS_KEY = pytest.StashKey["Settings"]()
# What the judge flag's help adds: the providers and the tokens recording needs.
_JUDGE_HELP = (
    " Recording also needs CRAWLBASE_TOKEN (and CRAWLBASE_JS_TOKEN for JavaScript pages); "
    "replay needs no key."
)


def flag_dest(flag: str) -> str:
    """``--citecheck-max-drop`` -> ``citecheck_max_drop``."""
    return flag.lstrip("-").replace("-", "_")


def _flag_help(option: Option) -> str:
    text = option.help.rstrip(".")
    if option.name == "judge":
        text += f"; {providers_help()}"
    notes = [f"ini {option.ini}"] if isinstance(option.ini, str) else []
    if "(default" not in text:
        notes.append(f"default: {option.default_text()}")
    help = f"{text} ({'; '.join(notes)})." if notes else f"{text}."
    return help + _JUDGE_HELP if option.name == "judge" else help


# ``pytest --help`` lists the flags in these groups, in this order, with these titles (the
# first is the plugin's own: turning it on and what a run does). Each option names its
# group in the option table (``Option.help_group``); one that names none is in the first.
HELP_GROUPS: dict[str, str] = {
    "citecheck": "citation checking (pytest-citecheck)",
    "citecheck judge": "citecheck: the judge, a judge panel, confirmation",
    "citecheck verification": "citecheck: fetching, ranking and quote matching",
    "citecheck gate": "citecheck: the gate (floors, contradictions, the baseline)",
    "citecheck reports": "citecheck: report files",
    "citecheck budget": "citecheck: prices and the recording budget",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    groups = {name: parser.getgroup(name, title) for name, title in HELP_GROUPS.items()}
    for option in OPTIONS:
        if isinstance(option.pytest_flag, str):
            group = groups[option.help_group or "citecheck"]
            kwargs: dict[str, Any] = {"dest": flag_dest(option.pytest_flag)}
            if option.action == "store_true":
                # None: not given, so the ini option (if any) decides.
                kwargs.update(action="store_true", default=None if option.ini else False)
            else:
                kwargs.update(action=option.action, default=None)
                kwargs.update(type=option.parse, choices=option.choices, metavar=option.metavar)
                if option.choices is not None:
                    del kwargs["metavar"]
            group.addoption(option.pytest_flag, help=_flag_help(option), **kwargs)
        if isinstance(option.ini, str):
            parser.addini(
                option.ini,
                f"{option.help.rstrip('.')} (default: {option.default_text()})",
                type=option.ini_type,
                default=option.ini_default,
            )


def _getini(config: pytest.Config, name: str) -> Any:
    """``config.getini`` whose errors name the option (pytest's own may not)."""
    try:
        return config.getini(name)
    except (pytest.UsageError, ValueError, TypeError) as exc:
        message = str(exc)
        if name not in message:
            message = f"ini option {name}: {message}"
        raise pytest.UsageError(message) from None


def _from_ini(config: pytest.Config, option: Option, ini: str) -> Any:
    """The ini option's value, parsed like the flag's; None when it is not set."""
    raw = _getini(config, ini)
    if option.ini_type in ("bool", "paths", "args"):
        return raw
    if raw is None or raw == "" or raw == []:
        return None
    text = ",".join(raw) if isinstance(raw, list) else str(raw).strip()
    try:
        if option.choices is not None:
            text = text.lower()
            if text not in option.choices:
                raise argparse.ArgumentTypeError(
                    f"{text!r} is not one of {', '.join(option.choices)}"
                )
            return text
        return text if option.parse is None else option.parse(text)
    except argparse.ArgumentTypeError as exc:
        raise pytest.UsageError(f"ini option {ini}: {exc}") from None


def resolve(config: pytest.Config, option: Option) -> tuple[Any, str | None]:
    """A setting's value (flag > ini > default) and where it came from: "flag", "ini"
    or None (the default)."""
    if isinstance(option.pytest_flag, str):
        given = getattr(config.option, flag_dest(option.pytest_flag))
        if given is not None and given != []:
            return _converted(option, given), "flag"
    if isinstance(option.ini, str):
        value = _from_ini(config, option, option.ini)
        if option.ini_type == "bool":
            return bool(value), "ini" if value else None
        if value is not None:
            return _converted(option, value), "ini"
    return _converted(option, option.default), None


def _converted(option: Option, value: Any) -> Any:
    if option.action == "append" or option.ini_type in ("paths", "args"):
        value = tuple(value)
    return value if option.convert is None else option.convert(value)


@dataclass(frozen=True)
class Settings:
    """Every citecheck setting, resolved (flag > ini > default) and validated.

    ``values`` holds them all by the option table's name, for the mappings onto the
    engine's, the gate's and the reports' settings; the fields are the ones the
    plugin reads itself, typed."""

    enabled: bool
    record_mode: RecordMode
    judge: str | None  # None: the claim file's judge, else DEFAULT_JUDGE
    patterns: tuple[str, ...]
    baseline: Path | None
    # Where `document:` citations may resolve: the rootdir, then citecheck_document_roots.
    document_roots: tuple[Path, ...] = ()
    audit: Path | None = None
    # Where ``judge`` came from ("flag", "ini" or None), for messages.
    judge_origin: str | None = None
    max_claim_chars: int = DEFAULT_MAX_CLAIM_CHARS
    cache_dir: Path | None = None
    dry_run: bool = False
    # A judge panel's members (engine/panel.py).
    judges: tuple[str, ...] | None = None
    # --citecheck-recheck: compare the recordings with the live pages.
    recheck: bool = False
    recheck_fail_on: tuple[str, ...] = DEFAULT_RECHECK_FAIL_ON
    # Every setting the plugin exposes, by the option table's name.
    values: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def quote_policy(self) -> QuotePolicy:
        # Composed when a run needs it: the engine is not imported by an idle plugin.
        from pytest_citecheck.options.settings_map import quote_policy

        return quote_policy(self.values)

    @property
    def prices(self) -> Prices:
        from pytest_citecheck.options.settings_map import prices

        return prices(self.values)

    def judge_for(self, file_judge: str | None) -> str:
        return self.judge or file_judge or DEFAULT_JUDGE

    def is_claim_file(self, name: str) -> bool:
        """Whether a file of this name matches ``citecheck_patterns`` (asked once per
        collected file, so the patterns are one compiled expression)."""
        return _patterns_regex(self.patterns).match(os.path.normcase(name)) is not None


def _exposed(option: Option) -> bool:
    return isinstance(option.pytest_flag, str) or isinstance(option.ini, str)


def settings_from_config(config: pytest.Config) -> Settings:
    """Resolve settings; raises ``pytest.UsageError`` on a bad ini value."""
    values: dict[str, Any] = {}
    judge_origin: str | None = None
    for option in OPTIONS:
        if _exposed(option):
            values[option.name], origin = resolve(config, option)
            if option.name == "judge":
                judge_origin = origin
    values["document_roots"] = (config.rootpath, *values["document_roots"])
    own = {name: value for name, value in values.items() if name in _SETTINGS_FIELDS}
    return Settings(**own, judge_origin=judge_origin, values=values)


def check_paths(settings: Settings) -> Baseline | None:
    """Start-up checks of the files a run reads and writes: a usage error now
    instead of a lost summary at the end. Returns the baseline, read here once."""
    from pytest_citecheck.core.files import unwritable

    for option in OPTIONS:
        path = settings.values.get(option.name)
        if option.target == "outputs" and isinstance(path, Path):
            problem = unwritable(path)
            if problem is not None:
                raise pytest.UsageError(f"{option.pytest_flag} {path}: {problem}")
    if settings.values.get("otel_endpoint") or settings.values.get("otel_file"):
        from pytest_citecheck.reports.otel import missing_sdk

        missing = missing_sdk()
        if missing is not None:
            raise pytest.UsageError(missing)
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


@functools.lru_cache(maxsize=8)
def _patterns_regex(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """The glob patterns as one expression (what :func:`fnmatch.fnmatch` matches)."""
    if not patterns:
        return re.compile(r"(?!)")
    return re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(p))})" for p in patterns))


# Settings fields the table's values fill one to one (the others are composed).
_SETTINGS_FIELDS = frozenset(f.name for f in fields(Settings)) - {"values", "judge_origin"}
