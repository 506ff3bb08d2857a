"""Every engine, gate and output setting reaches the engine through each front end.

Each front end maps its options onto ``EngineSettings`` / ``GateSettings`` /
``Outputs`` in one function (plugin/adapters.py; frontends/cli/ for ``citecheck
batch``, ``recheck`` and ``serve``, whose ``ServiceConfig.engine_settings`` maps the
service's configuration). The cases are built from ``dataclasses.fields``: every
field must be either mapped (an option that sets a non-default value, and the value
the engine then gets) or deliberately not exposed, with the reason and the value the
engine always gets from that front end.

What a front end offers is read from the option table: a setting it spells is a
case that gives it a value of its kind and expects that value below; a setting it
hides is a case that expects the default. So a setting added to the table is tested
in every front end with no edit here; a field the table does not set (a run id, the
front end's words) is listed by hand, as is a front end that deliberately does
something else with what it is given.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest

from pytest_citecheck.core import argtypes as at
from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.core.terms import JUDGE_FROM_FLAG, Terms
from pytest_citecheck.engine.gate import GateSettings
from pytest_citecheck.engine.settings import EngineSettings
from pytest_citecheck.frontends import cli
from pytest_citecheck.frontends.service import SERVICE_TERMS, ServiceConfig
from pytest_citecheck.options.settings_map import COMPOSE
from pytest_citecheck.options.table import COMMANDS, OPTIONS, Flag, Target, cli_default
from pytest_citecheck.options.table import Option as Setting
from pytest_citecheck.plugin import adapters
from pytest_citecheck.plugin.options import settings_from_config
from pytest_citecheck.plugin.session import CitecheckSession
from pytest_citecheck.plugin.terms import PLUGIN_TERMS
from pytest_citecheck.reports.outputs import Outputs

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


# -- what the option table says each front end exposes ---------------------------------------

_JUDGE = "anthropic:claude-x"
_BASE_URL = "http://127.0.0.1:9/v1"
# Two values of each kind of setting (by how its text is parsed), as a user types them:
# a case takes the first that differs from the default of the setting it sets, so a
# setting whose default is one of them still gets a value it does not start with.
_SAMPLES: dict[Any, tuple[str, str]] = {
    None: (_BASE_URL, "http://127.0.0.1:8/v1"),
    Path: ("/tmp/sample", "/tmp/other-sample"),
    at.positive_int: ("3", "4"),
    at.claim_chars: ("7", "8"),
    at.fraction: ("0.5", "0.25"),
    at.positive_seconds: ("7", "8"),
    at.amount: ("5", "6"),
    at.temperature: ("0.3", "0.4"),
    at.judge_spec: (_JUDGE, "openai:gpt-x"),
    at.judge_specs: ("openai:a,openai:b", "openai:c,openai:d"),
    at.judge_prices: ("openai:a=1/2", "openai:b=3/4"),
    at.recheck_statuses: ("page_gone", "changed"),
    at.collector_url: ("http://127.0.0.1:4318", "http://127.0.0.1:4319/v1/logs"),
}


@dataclass(frozen=True)
class Spelling:
    """How one front end takes one setting: a flag (``--x VALUE`` or ``--x=VALUE``)
    or an ini key, the text it parses and the value it starts from."""

    word: str
    kind: str  # "flag": argparse words; "pytest": --flag=VALUE; "ini": an ini line
    parse: Any
    choices: tuple[str, ...] | None
    default: Any


def _sample(setting: Setting, spelling: Spelling) -> tuple[tuple[str, ...], str, Any]:
    """Words that give ``setting`` a value its front end does not start with, and that
    value as the settings below hold it."""
    if setting.action == "store_true":
        if spelling.kind == "ini":
            return (), f"{spelling.word} = true", True
        return (spelling.word,), "", True
    text, parsed = _sample_value(setting, spelling)
    if setting.convert is not None:
        parsed = setting.convert(parsed)
    if spelling.kind == "ini":
        return (), f"{spelling.word} = {text}", parsed
    if spelling.kind == "pytest":
        return (f"{spelling.word}={text}",), "", parsed
    return (spelling.word, text), "", parsed


def _sample_value(setting: Setting, spelling: Spelling) -> tuple[str, Any]:
    """The text a case types for ``setting`` (not a store_true flag) and the value it
    parses to: the first choice, or the first of ``_SAMPLES``' texts for the setting's
    kind, that is not the default the front end starts from."""
    if spelling.choices:
        choice = next(c for c in spelling.choices if c != spelling.default)
        return choice, choice
    for text in _SAMPLES[spelling.parse]:
        parsed = text if spelling.parse is None else spelling.parse(text)
        if not _is_default(text, parsed, spelling.default):
            return text, parsed
    raise AssertionError(
        f"{setting.name}: both samples of its kind equal its default {spelling.default!r}; "
        "add a third to _SAMPLES"
    )


def _is_default(text: str, parsed: Any, default: Any) -> bool:
    if default is None:
        return False
    if parsed == default or text == default:
        return True
    return isinstance(default, Path) and Path(text) == default


def _plugin_spelling(setting: Setting) -> Spelling | str:
    if isinstance(setting.pytest_flag, str):
        kind, word = "pytest", setting.pytest_flag
    elif isinstance(setting.ini, str):
        kind, word = "ini", setting.ini
    else:
        return setting.pytest_flag.why
    return Spelling(word, kind, setting.parse, setting.choices, setting.default)


def _command_spelling(command: str) -> Callable[[Setting], Spelling | str]:
    def spelling(setting: Setting) -> Spelling | str:
        flag = setting.flag_of(command)
        if isinstance(flag, Flag) and command == "serve" and not isinstance(setting.service, str):
            return setting.service.why
        if not isinstance(flag, Flag):
            return flag.why
        return Spelling(
            flag.flag,
            "flag",
            flag.parse or setting.parse,
            flag.choices or setting.choices,
            cli_default(setting, flag),
        )

    return spelling


def from_table(target: Target, spelling: Callable[[Setting], Spelling | str]) -> dict[str, Any]:
    """The cases the option table makes for one front end's ``target`` settings, by
    field: an :class:`Option` for a setting it spells, a :class:`NotExposed` (with the
    table's reason) for one it hides. A field several settings make up together is set
    by all of its parts at once."""
    cases: dict[str, Any] = {}
    parts: dict[str, list[tuple[Setting, tuple[str, ...], str, Any]]] = {}
    for setting in OPTIONS:
        if setting.target != target:
            continue
        how = spelling(setting)
        if isinstance(how, str):
            cases.setdefault(setting.target_field, NotExposed(how))
            continue
        parts.setdefault(setting.target_field, []).append((setting, *_sample(setting, how)))
    for name, given in parts.items():
        if name in COMPOSE:
            argv = tuple(word for _, words, _, _ in given for word in words)
            ini = "\n".join(line for _, _, line, _ in given if line)
            values = {setting.name: value for setting, _, _, value in given}
            cases[name] = Option(argv, COMPOSE[name](values), ini=ini)
        else:
            (_, argv, ini, value), *_ = given
            cases[name] = Option(argv, value, ini=ini)
    return cases


def _front(
    name: str,
    target: type,
    build: Build,
    table: dict[str, Any],
    own: dict[str, Option | NotExposed],
) -> FrontEnd:
    """``own``: the fields the table does not set, and where this front end
    deliberately does something else with what it is given."""
    cases = {**table, **own}
    return FrontEnd(
        name,
        target,
        build,
        mapped={k: v for k, v in cases.items() if isinstance(v, Option)},
        fixed={k: v for k, v in cases.items() if isinstance(v, NotExposed)},
    )


_TERMS = "not an option: the front end's own words for its options"
_RUN_ID = "not an option: pytest-xdist's run id, shared by its workers (session.py)"
_CRAWLS = "no option: the Crawling API's documented cap per token (core/limits.py)"
_JUDGE_CAP = "no option: each provider's default cap (core/limits.py)"
_NOT_SETTINGS = {
    "crawl_concurrency": NotExposed(_CRAWLS),
    "judge_concurrency": NotExposed(_JUDGE_CAP),
}
_CLI_ENGINE = {
    **_NOT_SETTINGS,
    "judge_origin": Option(("--judge", _JUDGE), JUDGE_FROM_FLAG),
    "run_id": NotExposed("one process: no other process shares its cassettes"),
    "terms": NotExposed(_TERMS, cli.batch_terms()),
}

PLUGIN_ENGINE = _front(
    "plugin",
    EngineSettings,
    _plugin_engine,
    from_table("engine", _plugin_spelling),
    {
        **_NOT_SETTINGS,
        "judge_origin": Option((f"--citecheck-judge={_JUDGE}",), JUDGE_FROM_FLAG),
        "run_id": NotExposed(_RUN_ID),
        "terms": NotExposed(_TERMS, PLUGIN_TERMS),
    },
)

BATCH_ENGINE = _front(
    "citecheck batch",
    EngineSettings,
    _batch_engine,
    from_table("engine", _command_spelling("batch")),
    _CLI_ENGINE,
)

RECHECK_ENGINE = _front(
    "citecheck recheck",
    EngineSettings,
    _recheck_engine,
    from_table("engine", _command_spelling("recheck")),
    _CLI_ENGINE,
)

SERVICE_ENGINE = _front(
    "citecheck serve",
    EngineSettings,
    _service_engine,
    from_table("engine", _command_spelling("serve")),
    {
        **_NOT_SETTINGS,
        "judge": NotExposed("--judge is the service's default, applied to each request"),
        "judge_origin": NotExposed("the judge is the request's (or the service's default)"),
        # Without --record (and --cassettes) the service is live ("all").
        "record_mode": Option(("--record", "once", "--cassettes", "cassettes"), RecordMode("once")),
        "run_id": NotExposed("one process"),
        "terms": NotExposed(_TERMS, SERVICE_TERMS),
    },
)

PLUGIN_GATE = _front(
    "plugin",
    GateSettings,
    _plugin_gate,
    from_table("gate", _plugin_spelling),
    {"terms": NotExposed(_TERMS, PLUGIN_TERMS)},
)

BATCH_GATE = _front(
    "citecheck batch",
    GateSettings,
    _batch_gate,
    from_table("gate", _command_spelling("batch")),
    {"terms": NotExposed(_TERMS, cli.batch_terms())},
)

PLUGIN_OUTPUTS = _front(
    "plugin",
    Outputs,
    _plugin_outputs,
    from_table("outputs", _plugin_spelling),
    {"step_summary": NotExposed("not an option: $GITHUB_STEP_SUMMARY (unset here)")},
)

BATCH_OUTPUTS = _front(
    "citecheck batch",
    Outputs,
    _batch_outputs,
    from_table("outputs", _command_spelling("batch")),
    {"step_summary": NotExposed("the batch prints its summary")},
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


def _spellings(setting: Setting) -> list[Spelling]:
    """Every front end's spelling of ``setting`` (the plugin's and each subcommand's)."""
    found = [_plugin_spelling(setting)] + [_command_spelling(c)(setting) for c in COMMANDS]
    return [s for s in found if isinstance(s, Spelling)]


def test_no_sample_equals_the_default_of_its_option() -> None:
    """A case sets a value its front end does not start with, whatever the default."""
    checked = []
    for setting in OPTIONS:
        if setting.target is None and not isinstance(setting.service, str):
            continue  # no case sets it: it reaches no settings this file maps
        for spelling in _spellings(setting):
            if setting.action == "store_true":
                continue
            text, value = _sample_value(setting, spelling)
            assert not _is_default(text, value, spelling.default), (
                f"{setting.name} ({spelling.word}): the sample {text!r} is its default"
            )
            checked.append(setting.name)
    assert len(set(checked)) > 40, "the table's settings were not all walked"


@pytest.mark.parametrize("parse", list(_SAMPLES), ids=lambda p: getattr(p, "__name__", "text"))
def test_a_setting_whose_default_is_a_sample_still_gets_another_value(parse: Any) -> None:
    """An integer setting with default 3 (the first integer sample) is set to 4, not 3."""
    first = _SAMPLES[parse][0]
    default = first if parse is None else parse(first)
    setting = Setting(name="new_setting", help="", default=default, parse=parse)
    spelling = Spelling("--new-setting", "flag", parse, None, default)
    argv, _, value = _sample(setting, spelling)
    assert value != default, f"{argv} sets the default {default!r}"
    assert argv == ("--new-setting", _SAMPLES[parse][1])


def _serve_args(pytester: pytest.Pytester, argv: tuple[str, ...]) -> ServiceConfig:
    return cli.service_config(_cli_args(pytester, "serve", argv), key=None)


# The service's own fields: its key and Host names, how long it waits for the audit
# index, and the caps on a Crawler delivery (the webhook's, no engine setting).
_SERVICE_OWN = {
    "api_key",
    "allowed_hosts",
    "audit_wait",
    "max_delivery_bytes",
    "max_delivery_page_bytes",
}


def test_the_service_config_has_one_field_per_setting_the_table_gives_the_service() -> None:
    table = {o.service for o in OPTIONS if isinstance(o.service, str)}
    names = {f.name for f in fields(ServiceConfig)}
    assert names == table | _SERVICE_OWN


def test_the_committed_service_fields_are_the_ones_the_table_makes(tmp_path: Path) -> None:
    from pytest_citecheck.frontends.service import config_fields_gen

    module = config_fields_gen.MODULE
    assert module.read_text(encoding="utf-8") == config_fields_gen.render(), (
        "frontends/service/config_fields.py is stale: run "
        "python -m pytest_citecheck.frontends.service.config_fields_gen"
    )
    # A field the table retypes, or a setting it adds, makes the committed block stale.
    stale = tmp_path / "config_fields.py"
    stale.write_text(config_fields_gen.render().replace("concurrency: int", "concurrency: str"))
    assert config_fields_gen.main([str(stale), "--check"]) == 1
    assert config_fields_gen.main([str(module), "--check"]) == 0


def test_a_service_setting_without_a_type_is_refused_naming_the_setting() -> None:
    from pytest_citecheck.frontends.service import config_fields_gen

    untyped = Setting("max_pages", "most pages", default=3, service="max_pages")
    with pytest.raises(ValueError, match=r"max_pages.*service_type"):
        config_fields_gen._field_line("max_pages", [untyped])


@pytest.mark.parametrize(
    "setting",
    [o for o in OPTIONS if isinstance(o.service, str) and isinstance(o.flag_of("serve"), Flag)],
    ids=lambda o: o.name,
)
def test_every_serve_flag_sets_its_service_config_field(
    pytester: pytest.Pytester, setting: Setting
) -> None:
    spelling = _command_spelling("serve")(setting)
    assert isinstance(spelling, Spelling)
    argv, _, value = _sample(setting, spelling)
    if setting.action == "append":
        value = (value,)
    if setting.name == "record_mode":
        argv = (*argv, "--cassettes", "cassettes")
    field_name = setting.service
    assert isinstance(field_name, str)
    if field_name in COMPOSE:
        value = COMPOSE[field_name]({setting.name: value})
    untouched = getattr(_serve_args(pytester, ()), field_name)
    got = getattr(_serve_args(pytester, argv), field_name)
    assert untouched != value, f"{argv} must set a value the service lacks"
    assert got == value, f"{argv} -> {got!r}"
    assert getattr(ServiceConfig(), field_name) == untouched
