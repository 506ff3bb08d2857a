"""Every citecheck setting, declared once: its value, default and help, what it sets,
and how each front end spells it (or why a front end does not offer it).

The pytest options and ini entries (``plugin/options.py``), each subcommand's
argparse arguments and mappings (``frontends/cli/``), the ``Terms`` every
message is worded with, and ``docs/options.md``
(``python -m pytest_citecheck.frontends.optionsdoc``) are derived from
:data:`OPTIONS`. Adding a setting to every front end is one :class:`Option` here
plus its use where it acts.

Plain data over ``core`` only: the installed plugin reads it at every pytest start.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_citecheck.core import argtypes as at
from pytest_citecheck.core import defaults as d
from pytest_citecheck.core.providers import SERVICE_KEY_ENV
from pytest_citecheck.core.record_mode import RecordMode

# The subcommands of ``citecheck`` that take the run's settings, and every subcommand
# with flags of the table (``import`` has only its own).
SETTING_COMMANDS = ("batch", "recheck", "serve", "validate")
COMMANDS = (*SETTING_COMMANDS, "import")
# Where a setting's value goes: a field of the engine's, the gate's or the reports' settings.
Target = Literal["engine", "gate", "outputs"]
# How the plugin's messages name a setting: its ini key, its flag, both, or
# "the ini option KEY".
PluginTerm = Literal["ini", "flag", "both", "ini option"]


@dataclass(frozen=True)
class Hidden:
    """A front end deliberately offers no way to set this, because ``why``."""

    why: str


@dataclass(frozen=True)
class Flag:
    """A ``citecheck SUBCOMMAND`` flag. ``help``/``default``/``parse``/``choices``
    override the setting's own where this subcommand differs."""

    flag: str
    help: str | None = None
    default: Any = None
    parse: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    # Whether ``default`` (even None) replaces the setting's default.
    own_default: bool = False
    # A one-letter spelling besides ``flag`` (``-o``), the argparse ``dest`` when it is
    # not the flag's name, and whether the subcommand needs the flag.
    short: str | None = None
    dest: str | None = None
    required: bool = False
    # Choices read when the parser is built, after ``choices``: a list too costly to
    # import with the table (the importers' formats). ``{late}`` in ``help`` is them.
    late_choices: Callable[[], tuple[str, ...]] | None = None

    @property
    def attr(self) -> str:
        """The parsed arguments' attribute that holds the flag's value."""
        return self.dest or self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Option:
    """One setting. ``name`` is its neutral name: the ``Terms`` key, the field of the
    plugin's ``Settings`` and, unless ``into`` says otherwise, of its ``target``."""

    name: str
    help: str
    default: Any = None
    # argparse ``type=`` (also parses an ini value); None: the text as given.
    parse: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    action: Literal["store", "store_true", "append"] = "store"
    # How help and docs show the default (None: the default itself).
    shown_default: str | None = None
    target: Target | None = None
    into: str | None = None
    # Turns the parsed value into the settings' type (e.g. a RecordMode).
    convert: Callable[[Any], Any] | None = None
    # The plugin.
    pytest_flag: str | Hidden = Hidden("not a pytest setting")
    # The section of ``pytest --help`` a pytest flag is listed in (a key of
    # plugin/options.py HELP_GROUPS, which gives each its title and their order).
    help_group: str | None = None
    ini: str | Hidden = Hidden("not a pytest setting")
    ini_type: Literal["string", "int", "float", "bool", "paths", "args"] = "string"
    ini_default: Any = None
    plugin_term: PluginTerm | None = None
    # ``citecheck SUBCOMMAND``: one entry per subcommand of COMMANDS (missing: Hidden(CLI_NA)).
    cli: Mapping[str, Flag | Hidden] = field(default_factory=dict)
    # ``citecheck serve``'s ServiceConfig field (the requests' engine gets it from there).
    service: str | Hidden = Hidden("not a service setting")
    # The type of that field, as ServiceConfig's annotation spells it (the typed field
    # block frontends/service/config_fields.py is generated from it).
    service_type: str | None = None
    # What docs/options.md says it does, with links (None: ``help``).
    doc: str | None = None

    @property
    def target_field(self) -> str:
        return self.into or self.name

    def default_text(self) -> str:
        if self.shown_default is not None:
            return self.shown_default
        if self.default is None:
            return "none"
        if isinstance(self.default, tuple):
            return ",".join(self.default)
        if isinstance(self.default, float):
            return f"{self.default:g}"
        return str(self.default)

    def flag_of(self, command: str) -> Flag | Hidden:
        return self.cli.get(command) or Hidden(_NOT_A_CLI_SETTING)


_NOT_A_CLI_SETTING = "not a setting of this subcommand"
_PLUGIN_ONLY = "a pytest-run setting"
_SERVE_ONLY = "a setting of the HTTP service"
_IN_A_RUN = "named per run on the command line, not kept in a config file"
_NO_PANEL = "no panel here: a claim file's judges: still makes one"
_ONE_JUDGE = "one judge per request (the request's, or --judge)"
_NO_BUDGET = "the recheck has no prices or budget"
_NOT_JUDGING = "validate reads claim files only: nothing is fetched or judged"
_AUTO_JUDGE = "each judge's automatic value; set it in the pytest ini file"
_PER_RUN_ONLY = "the ini file holds what every run shares; this is asked for per run"
_BATCH_ONLY = "a large audit's setting: `citecheck batch --judge-batch`"
_CALLER_WAITS = "a request is answered while its caller waits"
_IMPORT_ONLY = "a setting of `citecheck import`"
_LISTENING = "where the service listens and who may call it: set when it starts"


def _own_flag(name: str, help: str, command: str, flag: Flag, **fields: Any) -> Option:
    """A flag of ``citecheck COMMAND`` alone that sets no engine, gate, report or
    ServiceConfig field: the subcommand reads it itself."""
    only = _IMPORT_ONLY if command == "import" else _SERVE_ONLY
    return Option(
        name,
        help,
        pytest_flag=Hidden(only),
        ini=Hidden(only),
        cli={command: flag},
        service=Hidden(_LISTENING if command == "serve" else "not a service setting"),
        **fields,
    )


def _import_formats() -> tuple[str, ...]:
    from pytest_citecheck.claims.importers import FORMATS

    return FORMATS


def _serve_only(
    name: str,
    help: str,
    default: Any,
    parse: Callable[[str], Any] = at.positive_int,
    metavar: str = "N",
    *,
    action: Literal["store", "append"] = "store",
    shown_default: str | None = None,
    service: str | None = None,
    service_type: str = "int",
) -> Option:
    """A setting of ``citecheck serve`` alone: ``--NAME`` sets ServiceConfig's field."""
    return Option(
        name,
        help,
        default=default,
        parse=parse,
        metavar=metavar,
        action=action,
        shown_default=shown_default,
        pytest_flag=Hidden(_SERVE_ONLY),
        ini=Hidden(_SERVE_ONLY),
        cli={"serve": Flag("--" + name.replace("_", "-"))},
        service=service or name,
        service_type=service_type,
    )


def _crawler_job_setting(
    name: str, help: str, flag: str, *, recheck_help: str | None = None, **fields: Any
) -> Option:
    """A Crawler job's setting: ``citecheck batch`` and ``citecheck recheck`` only (a
    pytest run and a service request crawl synchronously)."""
    return Option(
        name,
        help,
        pytest_flag=Hidden("a pytest run crawls synchronously; large audits are a batch"),
        ini=Hidden(_PER_RUN_ONLY),
        cli={"batch": Flag(flag), "recheck": Flag(flag, recheck_help)},
        service=Hidden("a request is verified while its client waits"),
        **fields,
    )


def _pytest_panel_setting(name: str, help: str, **fields: Any) -> Option:
    """A judge panel's setting: the pytest flag ``--citecheck-NAME`` and ini
    ``citecheck_NAME`` set the engine's field; no subcommand or the service has a panel."""
    return Option(
        name,
        help,
        target="engine",
        pytest_flag="--citecheck-" + name.replace("_", "-"),
        ini="citecheck_" + name,
        cli={c: Hidden(_NO_PANEL) for c in SETTING_COMMANDS},
        service=Hidden(_ONE_JUDGE),
        **fields,
    )


def _judge_batch_seconds(
    name: str, help: str, default: float, shown_default: str | None = None
) -> Option:
    """A number of seconds of ``citecheck batch --judge-batch``: ``--NAME`` sets the
    engine's field; no other front end sends judge batches."""
    return Option(
        name,
        help,
        default=default,
        parse=at.positive_seconds,
        metavar="SECONDS",
        shown_default=shown_default,
        target="engine",
        pytest_flag=Hidden(_BATCH_ONLY),
        ini=Hidden(_BATCH_ONLY),
        cli={"batch": Flag("--" + name.replace("_", "-"))},
        service=Hidden(_CALLER_WAITS),
    )


OPTIONS: tuple[Option, ...] = (
    # -- the subcommands' own flags (the subcommand reads them; no engine setting) -------
    _own_flag(
        "source_format",
        "the saved responses' format: auto (detected per response) or an importer's name.",
        "import",
        Flag(
            "--from",
            help="the responses' format: auto (default, detected per response), {late}.",
            dest="source_format",
            choices=("auto",),
            late_choices=_import_formats,
        ),
        default="auto",
        metavar="FORMAT",
    ),
    _own_flag(
        "output",
        "the claim file to write (pytest --citecheck collects citecheck_*.yaml).",
        "import",
        Flag(
            "--output",
            help="the claim file to write (pytest --citecheck collects citecheck_*.yaml).",
            short="-o",
            required=True,
        ),
        parse=Path,
        metavar="citecheck_NAME.yaml",
        shown_default="required",
    ),
    _own_flag(
        "documents",
        "a document of the request, in order (Anthropic's document_index counts them), "
        "relative to the claim file; repeatable.",
        "import",
        Flag(
            "--document",
            help="a document of the request, in order (Anthropic's document_index counts "
            "them); relative to the claim file. Repeat for each document.",
            dest="documents",
            own_default=True,
        ),
        action="append",
        metavar="PATH",
    ),
    _own_flag(
        "force",
        "replace the output even when it is a file `citecheck import` did not write.",
        "import",
        Flag("--force", help="replace -o even when it is a file `citecheck import` did not write."),
        action="store_true",
        default=False,
        shown_default="false",
    ),
    _own_flag(
        "host",
        "the address the service listens on.",
        "serve",
        Flag("--host", help=f"address (default {d.DEFAULT_HOST})."),
        default=d.DEFAULT_HOST,
        metavar="HOST",
    ),
    _own_flag(
        "port",
        "the port the service listens on.",
        "serve",
        Flag("--port", help=f"port (default {d.DEFAULT_PORT})."),
        default=d.DEFAULT_PORT,
        parse=at.port_number,
        metavar="PORT",
    ),
    _own_flag(
        "key_file",
        f"the file the service key is read from (else ${SERVICE_KEY_ENV}); required unless "
        "the service listens on loopback.",
        "serve",
        Flag(
            "--key-file",
            help=f"read the service key from PATH (default: ${SERVICE_KEY_ENV}); at least "
            f"{d.MIN_KEY_CHARS} characters. Required unless --host is loopback.",
        ),
        parse=Path,
        metavar="PATH",
        shown_default=f"${SERVICE_KEY_ENV}",
    ),
    _own_flag(
        "allowed_host",
        "a further Host header name the service answers (repeatable; *.example.com for a "
        "domain, * for any).",
        "serve",
        Flag(
            "--allowed-host",
            help="also answer requests whose Host header is NAME (repeatable; *.example.com "
            f"for a domain, * for any). Default: {', '.join(d.LOOPBACK_HOSTS)} and --host.",
        ),
        action="append",
        default=(),
        metavar="NAME",
        shown_default=f"{', '.join(d.LOOPBACK_HOSTS)} and --host",
    ),
    # -- what runs ---------------------------------------------------------------------
    Option(
        "enabled",
        "collect claim files (citecheck_*.yaml|yml|jsonl) and verify their citations.",
        default=False,
        action="store_true",
        shown_default="off",
        pytest_flag="--citecheck",
        help_group="citecheck",
        ini=Hidden("pytest runs citecheck when asked to (a plain pytest run stays plain)"),
        cli={c: Hidden("the subcommand runs it") for c in SETTING_COMMANDS},
        service=Hidden("the service runs it"),
    ),
    Option(
        "patterns",
        "glob patterns of claim files",
        default=tuple(d.DEFAULT_PATTERNS),
        shown_default=" ".join(d.DEFAULT_PATTERNS),
        pytest_flag=Hidden("a project's file naming lives in its ini file"),
        ini="citecheck_patterns",
        ini_type="args",
        ini_default=list(d.DEFAULT_PATTERNS),
        cli={c: Hidden("the claim files are named on the command line") for c in SETTING_COMMANDS},
        service=Hidden("a request carries its claim"),
    ),
    Option(
        "record_mode",
        "VCR record mode for citecheck cassettes (default: none = replay only, no "
        "network). once/new_episodes/all/rewrite fetch pages and ask the judge with real "
        "tokens.",
        default="none",
        choices=d.RECORD_MODES,
        target="engine",
        convert=RecordMode,
        pytest_flag="--citecheck-record",
        help_group="citecheck",
        ini=Hidden("recording spends credits: it is asked for per run, never left on"),
        plugin_term="flag",
        cli={
            "batch": Flag(
                "--record",
                "record into / replay from cassettes, as --citecheck-record: "
                f"{', '.join(d.RECORD_MODES)} (default none: replay the recordings, as "
                f"pytest does), or {d.BATCH_LIVE} (run live, no cassette, nothing recorded).",
                default="none",
                choices=(*d.RECORD_MODES, d.BATCH_LIVE),
                own_default=True,
            ),
            "recheck": Hidden("the recheck replays the recordings, then fetches live"),
            "serve": Flag(
                "--record",
                "record into / replay from cassettes, as --citecheck-record: "
                f"{', '.join(d.RECORD_MODES)}. Without it the service runs live and records "
                "nothing.",
                own_default=True,
            ),
            "validate": Hidden(_NOT_JUDGING),
        },
        service="record_mode",
        service_type="RecordMode | None",
    ),
    Option(
        "cassettes",
        "cassette folder",
        parse=Path,
        metavar="DIR",
        pytest_flag=Hidden("cassettes/ beside each claim file, where they are committed"),
        ini=Hidden("cassettes/ beside each claim file, where they are committed"),
        cli={
            "batch": Flag(
                "--cassettes",
                "cassette folder for --record: DIR/<file stem>/<claim id>.yaml (default: "
                "cassettes/ beside each FILE, where the plugin keeps them).",
            ),
            "recheck": Flag(
                "--cassettes",
                "where the recordings are: DIR/<file stem>/<claim id>.yaml (default: "
                "cassettes/ beside each FILE).",
            ),
            "serve": Flag(
                "--cassettes",
                "cassette folder for --record: DIR/<the claim's first words>-<digest>.yaml, "
                "named by what a request verifies (the claim, its URLs, the judge), so the "
                "same request replays the same cassette; --record none replays with no "
                "token or key.",
            ),
            "validate": Hidden(_NOT_JUDGING),
        },
        service="cassettes",
        service_type="Path | None",
    ),
    # -- the judge -----------------------------------------------------------------------
    Option(
        "judge",
        "judge model",
        parse=at.judge_spec,
        metavar="PROVIDER:MODEL",
        shown_default=d.DEFAULT_JUDGE,
        target="engine",
        pytest_flag="--citecheck-judge",
        help_group="citecheck judge",
        ini="citecheck_judge",
        plugin_term="both",
        cli={
            "batch": Flag(
                "--judge",
                "judge model, as --citecheck-judge (default: a YAML file's judge:, else "
                f"{d.DEFAULT_JUDGE}).",
            ),
            "recheck": Flag(
                "--judge",
                "judge asked again where the evidence is gone (default: a YAML file's "
                f"judge:, else {d.DEFAULT_JUDGE}).",
            ),
            "serve": Flag(
                "--judge",
                "judge model, as --citecheck-judge (default: a request's judge, else "
                f"{d.DEFAULT_JUDGE}).",
            ),
            "validate": Hidden(_NOT_JUDGING),
        },
        service="judge",
        service_type="str | None",
        doc=(
            "the judge: `openai`, `anthropic`, `ollama` or `openai-compatible`, e.g. "
            "`anthropic:claude-sonnet-4-6`, `ollama:llama3.1`"
        ),
    ),
    Option(
        "judge_base_url",
        "base URL of the openai-compatible judge (vLLM, llama.cpp, LM Studio)",
        metavar="URL",
        shown_default="none",
        target="engine",
        pytest_flag="--citecheck-judge-base-url",
        help_group="citecheck judge",
        ini="citecheck_judge_base_url",
        plugin_term="ini option",
        cli={
            "batch": Flag("--judge-base-url"),
            "recheck": Flag("--judge-base-url"),
            "serve": Flag("--judge-base-url"),
            "validate": Hidden(_NOT_JUDGING),
        },
        service="judge_base_url",
        service_type="str | None",
        doc=(
            "base URL of the `openai-compatible` judge (vLLM, llama.cpp, LM Studio), e.g. "
            "`http://127.0.0.1:8000/v1`; wins over `CITECHECK_JUDGE_BASE_URL`. The hosted "
            "providers take theirs from the environment"
        ),
    ),
    Option(
        "judge_temperature",
        "judge temperature: auto (0; not sent to OpenAI reasoning models), omit, or a number",
        default="auto",
        parse=at.temperature,
        target="engine",
        pytest_flag=Hidden("a judge's quirk, kept with the project's judge in its ini file"),
        ini="citecheck_judge_temperature",
        plugin_term="ini",
        cli={c: Hidden(_AUTO_JUDGE) for c in SETTING_COMMANDS},
        service=Hidden(_AUTO_JUDGE),
        doc=(
            "`auto` (0; not sent to OpenAI reasoning models), `omit` (never sent) or a number; "
            "see [Judges](judges.md#which-model-needs-what)"
        ),
    ),
    Option(
        "judge_response_format",
        "OpenAI-wire response_format: auto (json_schema, json_object + schema for a server "
        "that asks for it), json_schema or json_object",
        default="auto",
        choices=d.RESPONSE_FORMATS,
        target="engine",
        pytest_flag=Hidden("a judge's quirk, kept with the project's judge in its ini file"),
        ini="citecheck_judge_response_format",
        plugin_term="ini",
        cli={c: Hidden(_AUTO_JUDGE) for c in SETTING_COMMANDS},
        service=Hidden(_AUTO_JUDGE),
        doc=(
            "`auto`, `json_schema` or `json_object` (the OpenAI wire); see "
            "[Judges](judges.md#which-model-needs-what)"
        ),
    ),
    Option(
        "judges",
        "a panel of judges, comma-separated (or one per line in the ini file; a claim "
        "file's judges:); each judges every citation and the panel rule decides. Recording "
        "costs one judge call per member.",
        parse=at.judge_specs,
        metavar="P:M,P:M,...",
        shown_default="none",
        target="engine",
        pytest_flag="--citecheck-judges",
        help_group="citecheck judge",
        ini="citecheck_judges",
        plugin_term="both",
        cli={c: Hidden(_NO_PANEL) for c in SETTING_COMMANDS},
        service=Hidden(_ONE_JUDGE),
        doc=(
            "a judge panel, comma-separated (in ini one a line or comma-separated; a claim file's"
            " `judges:`); see [Judge panels](judges.md#judge-panels-several-judges-recorded-once)"
        ),
    ),
    Option(
        "judge_samples",
        "ask each judge N times (sampled at temperature 1 unless citecheck_judge_temperature "
        "is set); N > 1 makes a panel",
        default=1,
        parse=at.positive_int,
        metavar="N",
        target="engine",
        pytest_flag="--citecheck-judge-samples",
        help_group="citecheck judge",
        ini="citecheck_judge_samples",
        ini_type="int",
        cli={c: Hidden(_NO_PANEL) for c in SETTING_COMMANDS},
        service=Hidden(_ONE_JUDGE),
    ),
    Option(
        "panel_rule",
        "how a panel decides: majority (more than half the members) or unanimous",
        default=d.DEFAULT_PANEL_RULE,
        choices=d.PANEL_RULES,
        target="engine",
        pytest_flag="--citecheck-panel-rule",
        help_group="citecheck judge",
        ini="citecheck_panel_rule",
        cli={c: Hidden(_NO_PANEL) for c in SETTING_COMMANDS},
        service=Hidden(_ONE_JUDGE),
    ),
    _pytest_panel_setting(
        "panel_min_votes",
        "the votes a panel needs (members that answered): a citation whose panel got fewer "
        "is error panel_incomplete; default: every member",
        parse=at.positive_int,
        metavar="N",
        shown_default="every member",
        ini_type="int",
        doc=(
            "the votes a panel needs: fewer (a member unreachable or failing) makes the "
            "citation `error` `panel_incomplete`; default every member; see "
            "[Judge panels](judges.md#judge-panels-several-judges-recorded-once)"
        ),
        help_group="citecheck judge",
    ),
    Option(
        "review_below",
        "mark verdicts with confidence below C for review",
        default=d.DEFAULT_REVIEW_BELOW,
        parse=at.fraction,
        metavar="C",
        target="engine",
        pytest_flag="--citecheck-review-below",
        help_group="citecheck judge",
        ini="citecheck_review_below",
        ini_type="float",
        cli={
            "batch": Flag("--review-below"),
            "recheck": Hidden("a judge asked again uses the default review threshold"),
            "serve": Flag("--review-below"),
            "validate": Hidden(_NOT_JUDGING),
        },
        service="review_below",
        service_type="float",
    ),
    Option(
        "no_confirm",
        "do not confirm supported/contradicted verdicts with a second judge call that reads "
        "only the sentence(s) holding the quote (saves that call: about one more judge call "
        "per supported or contradicted citation, with a prompt of one sentence)",
        default=False,
        action="store_true",
        shown_default="false",
        target="engine",
        pytest_flag="--citecheck-no-confirm",
        help_group="citecheck judge",
        ini="citecheck_no_confirm",
        ini_type="bool",
        ini_default=False,
        plugin_term="flag",
        cli={
            "batch": Flag("--no-confirm"),
            "recheck": Hidden("a judge asked again confirms its verdict as a run does"),
            "serve": Hidden("the service always confirms"),
            "validate": Hidden(_NOT_JUDGING),
        },
        service=Hidden("the service always confirms"),
        doc=(
            "turn off the [confirmation](verification.md#confirmation-a-verdict-on-its-quote"
            "-alone) of `supported`/`contradicted` verdicts, which costs one more judge call "
            "per such citation (its prompt holds the claim and one or two sentences, about half "
            "the first call's input tokens); without it a page's instruction to the judge is "
            "only flagged for review"
        ),
    ),
    Option(
        "no_joint",
        "do not judge a claim's sources together when it cites two or more and none "
        "supports it alone (saves that judge call and its confirmation: at most two more "
        "judge calls per such claim)",
        default=False,
        action="store_true",
        shown_default="false",
        target="engine",
        pytest_flag="--citecheck-no-joint",
        help_group="citecheck judge",
        ini="citecheck_no_joint",
        ini_type="bool",
        ini_default=False,
        plugin_term="flag",
        cli={
            "batch": Flag("--no-joint"),
            "recheck": Hidden("a judge asked again judges one citation"),
            "serve": Hidden("the service always judges a claim's sources together"),
            "validate": Hidden(_NOT_JUDGING),
        },
        service=Hidden("the service always judges a claim's sources together"),
        doc=(
            "turn off the [joint judgment](verification.md#claims-that-need-two-sources) of "
            "a claim that cites two or more sources none of which supports it alone: one "
            "more judge call reading the top passages of all of them (and its confirmation); "
            "without it such a claim stays `not_found`"
        ),
    ),
    Option(
        "wayback",
        "look an unreachable citation (404, 410, a failed crawl, a deep link redirected to "
        "the homepage, a soft 404) up in the Wayback Machine: never_archived (likely "
        "invented) or rotted (archived, now gone: the snapshot's date and link); one free "
        "request per such citation, recorded in its cassette",
        default=False,
        action="store_true",
        shown_default="false",
        target="engine",
        pytest_flag="--citecheck-wayback",
        help_group="citecheck verification",
        ini="citecheck_wayback",
        ini_type="bool",
        ini_default=False,
        plugin_term="flag",
        cli={
            "batch": Flag("--wayback"),
            "recheck": Hidden("a recheck compares live pages with the recorded ones"),
            "serve": Hidden("the service answers what the page says today"),
            "validate": Hidden(_NOT_JUDGING),
        },
        service=Hidden("the service answers what the page says today"),
        doc=(
            "ask the [Wayback Machine](deep-research.md#6-invented-or-rotted) whether an "
            "unreachable citation was ever archived: `never_archived` (likely invented) or "
            "`rotted` (with the snapshot's date and link); the request is free, recorded in "
            "the claim's cassette and replayed offline"
        ),
    ),
    Option(
        "wayback_verify",
        "also verify a rotted citation (archived, now gone) against its Wayback snapshot: "
        "one more crawl and judge call, its verdict labelled as the snapshot's and never "
        "counted with the live verdicts (implies wayback)",
        default=False,
        action="store_true",
        shown_default="false",
        target="engine",
        pytest_flag="--citecheck-wayback-verify",
        help_group="citecheck verification",
        ini="citecheck_wayback_verify",
        ini_type="bool",
        ini_default=False,
        plugin_term="flag",
        cli={
            "batch": Flag("--wayback-verify"),
            "recheck": Hidden("a recheck compares live pages with the recorded ones"),
            "serve": Hidden("the service answers what the page says today"),
            "validate": Hidden(_NOT_JUDGING),
        },
        service=Hidden("the service answers what the page says today"),
    ),
    Option(
        "screenshots",
        "take a picture of the cited page for the verdicts a person must look at "
        "(contradicted, fabricated, blocked, paywalled, review) through the Crawling API "
        "(screenshot=true with the JavaScript token: 2 credits each); kept beside the "
        "cassettes as a file named by its hash and shown in the HTML report",
        default=False,
        action="store_true",
        shown_default="false",
        target="engine",
        pytest_flag="--citecheck-screenshots",
        help_group="citecheck verification",
        ini="citecheck_screenshots",
        ini_type="bool",
        ini_default=False,
        plugin_term="flag",
        cli={
            "batch": Flag("--screenshots"),
            "recheck": Hidden("a recheck compares live pages with the recorded ones"),
            "serve": Hidden("the service answers JSON, not a report to look at"),
            "validate": Hidden(_NOT_JUDGING),
        },
        service=Hidden("the service answers JSON, not a report to look at"),
        doc=(
            "take a [picture of the cited page](reports.md#the-page-as-a-picture) for the "
            "verdicts a person must look at: one JavaScript-token crawl with "
            "`screenshot=true` (2 credits) and the download of its `screenshot_url`, both "
            "recorded; the picture is a file named by its SHA-256 in `shots/` beside the "
            "claim file's cassettes, never in the cassette's text, and a replay shows it "
            "offline; a picture that cannot be had never fails a run"
        ),
    ),
    Option(
        "ranker",
        "how passages are ranked against the claim when recording (replay reads the "
        "recorded choice)",
        default=d.DEFAULT_RANKER,
        choices=d.RANKERS,
        target="engine",
        pytest_flag="--citecheck-ranker",
        help_group="citecheck verification",
        ini="citecheck_ranker",
        cli={
            "batch": Flag("--ranker"),
            "recheck": Flag(
                "--ranker",
                "how the live page's passages are ranked for the judge (default: "
                f"{d.DEFAULT_RANKER}).",
            ),
            "serve": Flag("--ranker"),
            "validate": Hidden(_NOT_JUDGING),
        },
        service="ranker",
        service_type="str",
        doc=(
            "passage ranker when recording: `hybrid`, `bm25` or `minilm`; replay reads the "
            "recorded choice"
        ),
    ),
    Option(
        "quote_match",
        "how the guard matches a judge's quote against the passages: exact (a substring "
        "after normalising quotes and whitespace) or fuzzy (also a lightly edited quote; the "
        "verdict reports the page's own span)",
        default="exact",
        choices=d.QUOTE_MATCH_MODES,
        target="engine",
        into="quote_policy",
        pytest_flag="--citecheck-quote-match",
        help_group="citecheck verification",
        ini="citecheck_quote_match",
        cli={
            "batch": Flag("--quote-match"),
            "recheck": Flag(
                "--quote-match",
                "how a quote must match the page, as --citecheck-quote-match: the mode the "
                "claims were recorded with (default: exact).",
            ),
            "serve": Hidden("exact quote matching: a request cannot ask for a looser one"),
            "validate": Hidden(_NOT_JUDGING),
        },
        service=Hidden("exact quote matching: a request cannot ask for a looser one"),
        doc=(
            "how the guard checks a judge's quote: `exact` or `fuzzy` (see [Quote "
            "matching](verification.md#quote-matching-exact-or-fuzzy))"
        ),
    ),
    Option(
        "quote_similarity",
        "the similarity a fuzzy quote match needs",
        default=d.DEFAULT_QUOTE_SIMILARITY,
        parse=at.fraction,
        metavar="S",
        target="engine",
        into="quote_policy",
        pytest_flag="--citecheck-quote-similarity",
        help_group="citecheck verification",
        ini="citecheck_quote_similarity",
        ini_type="float",
        cli={
            "batch": Flag("--quote-similarity"),
            "recheck": Flag("--quote-similarity"),
            "serve": Hidden("exact quote matching: a request cannot ask for a looser one"),
            "validate": Hidden(_NOT_JUDGING),
        },
        service=Hidden("exact quote matching: a request cannot ask for a looser one"),
    ),
    Option(
        "judge_batch",
        "send the judge requests through the provider's batch API (OpenAI Batch API, "
        "Anthropic Message Batches; half the price, answered within 24 h) and wait for it; "
        "the recordings hold the replies as a synchronous run's do.",
        default=False,
        action="store_true",
        shown_default="off",
        target="engine",
        pytest_flag=Hidden(_BATCH_ONLY),
        ini=Hidden(_BATCH_ONLY),
        cli={
            "batch": Flag("--judge-batch"),
            "recheck": Hidden("a recheck asks the judge again for a few citations, at once"),
            "serve": Hidden(_CALLER_WAITS),
            "validate": Hidden(_NOT_JUDGING),
        },
        service=Hidden(_CALLER_WAITS),
        doc=(
            "judge through the provider's batch API (`openai` and `anthropic` judges), at its "
            "price (half the synchronous one); see [Judge batches](cli.md#judge-batches)"
        ),
    ),
    _judge_batch_seconds(
        "judge_batch_poll",
        "seconds between two looks at a judge batch's status",
        d.DEFAULT_JUDGE_BATCH_POLL,
    ),
    _judge_batch_seconds(
        "judge_batch_wait",
        "seconds to wait for a judge batch to end; then it is cancelled and the claims it "
        "held are error judge_batch_failed",
        d.DEFAULT_JUDGE_BATCH_WAIT,
        shown_default=f"{d.DEFAULT_JUDGE_BATCH_WAIT:g} (25 h)",
    ),
    # -- fetching ------------------------------------------------------------------------
    Option(
        "url_policy",
        "public: refuse cited URLs on internal addresses or local names, or with "
        "credentials, as url_refused without fetching them; off: refuse none",
        default=d.DEFAULT_URL_POLICY,
        choices=d.URL_POLICIES,
        target="engine",
        pytest_flag="--citecheck-url-policy",
        help_group="citecheck verification",
        ini="citecheck_url_policy",
        plugin_term="ini",
        cli={
            "batch": Flag("--url-policy"),
            "recheck": Hidden("the recheck fetches the URLs the recordings fetched"),
            "serve": Flag(
                "--url-policy",
                "public: refuse URLs on internal addresses, local names or names that resolve "
                "to loopback (nip.io, localtest.me...), or with credentials (422, nothing "
                "fetched), and a crawl that lands on such an address (url_refused, not shown). "
                "Names are not resolved: the Crawling API resolves them from its own network, "
                "where a lookup here could answer differently; off: refuse none (default "
                "public).",
                default="public",
                own_default=True,
            ),
            "validate": Hidden(_NOT_JUDGING),
        },
        service="url_policy",
        service_type="str",
        doc=(
            "`public`: cited URLs on internal addresses or local names, or with credentials, are "
            "`url_refused` and never fetched (see [Running the service "
            "safely](service.md#running-the-service-safely))"
        ),
    ),
    Option(
        "pdf_fetch",
        "how a cited .pdf URL is fetched: crawling-api (like any page: its proxies, its "
        "billing) or direct (downloaded from the origin, under the URL policy, no credits)",
        default=d.DEFAULT_PDF_FETCH,
        choices=d.PDF_FETCHES,
        target="engine",
        pytest_flag="--citecheck-pdf-fetch",
        help_group="citecheck verification",
        ini="citecheck_pdf_fetch",
        plugin_term="ini",
        cli={
            "batch": Flag("--pdf-fetch"),
            "recheck": Hidden("the recheck fetches the URLs the recordings fetched"),
            "serve": Hidden(
                "the service fetches through the Crawling API only: a direct download "
                "would reach the network from the operator's host"
            ),
            "validate": Hidden(_NOT_JUDGING),
        },
        service=Hidden(
            "the service fetches through the Crawling API only: a direct download would "
            "reach the network from the operator's host"
        ),
        doc=(
            "`direct`: a cited `.pdf` URL is downloaded from its origin (redirects checked "
            "against the URL policy, recorded in the cassette like any exchange) instead of "
            "through the Crawling API (see [PDF sources](verification.md#pdf-sources))"
        ),
    ),
    Option(
        "concurrency",
        "claims verified at once (replaying does not need it)",
        default=d.DEFAULT_CONCURRENCY,
        parse=at.positive_int,
        metavar="N",
        target="engine",
        pytest_flag="--citecheck-concurrency",
        help_group="citecheck verification",
        ini="citecheck_concurrency",
        ini_type="int",
        cli={
            "batch": Flag("--concurrency"),
            "recheck": Flag(
                "--concurrency",
                f"claims rechecked at once (default {d.DEFAULT_CONCURRENCY}).",
            ),
            "serve": Flag("--concurrency"),
            "validate": Hidden(_NOT_JUDGING),
        },
        service="concurrency",
        service_type="int",
    ),
    Option(
        "timeout",
        "seconds one HTTP request may take, retries included",
        default=d.DEFAULT_TIMEOUT,
        parse=at.positive_seconds,
        metavar="SECONDS",
        target="engine",
        pytest_flag="--citecheck-timeout",
        help_group="citecheck verification",
        ini="citecheck_timeout",
        ini_type="float",
        cli={c: Hidden("the engine's per-request deadline") for c in SETTING_COMMANDS},
        service=Hidden("the engine's per-request deadline"),
    ),
    Option(
        "max_page_bytes",
        "largest page (bytes of markdown) that is judged",
        default=d.DEFAULT_MAX_PAGE_BYTES,
        parse=at.positive_int,
        metavar="BYTES",
        target="engine",
        pytest_flag="--citecheck-max-page-bytes",
        help_group="citecheck verification",
        ini="citecheck_max_page_bytes",
        ini_type="int",
        cli={c: Hidden("the engine's page-size cap") for c in SETTING_COMMANDS},
        service=Hidden("the engine's page-size cap"),
    ),
    Option(
        "cache_dir",
        "where the embedding cache lives (default: pytest's cache directory, "
        ".pytest_cache/d/citecheck; none with -p no:cacheprovider)",
        parse=Path,
        metavar="DIR",
        shown_default="pytest's cache",
        target="engine",
        pytest_flag="--citecheck-cache-dir",
        help_group="citecheck verification",
        ini=Hidden("pytest's cache directory is already configurable (cache_dir)"),
        cli={c: Hidden("no embedding cache is kept across runs") for c in SETTING_COMMANDS},
        service=Hidden("no embedding cache is kept on disk"),
    ),
    # -- claim files ---------------------------------------------------------------------
    Option(
        "max_claim_chars",
        "longest claim text accepted; a longer one makes its claim file invalid (0: no cap)",
        default=d.DEFAULT_MAX_CLAIM_CHARS,
        parse=at.claim_chars,
        metavar="N",
        pytest_flag="--citecheck-max-claim-chars",
        help_group="citecheck verification",
        ini="citecheck_max_claim_chars",
        ini_type="int",
        plugin_term="both",
        cli={
            "batch": Flag(
                "--max-claim-chars",
                "longest claim text accepted; a longer record is reported with file:line "
                f"(default {d.DEFAULT_MAX_CLAIM_CHARS}; 0: no cap).",
            ),
            "recheck": Hidden("the recheck reads claims that were recorded"),
            "serve": Flag(
                "--max-claim-chars",
                f"longest claim one request may make (default {d.DEFAULT_MAX_CLAIM_CHARS}).",
                parse=at.positive_int,
            ),
            "validate": Hidden("validate checks the schema's own cap"),
        },
        service="max_claim_chars",
        service_type="int",
    ),
    Option(
        "document_roots",
        "a folder outside the rootdir that `document:` citations may read (repeatable; the "
        "ini option lists them relative to the ini file)",
        default=(),
        parse=Path,
        metavar="DIR",
        action="append",
        shown_default="only the rootdir",
        pytest_flag="--citecheck-document-root",
        help_group="citecheck verification",
        ini="citecheck_document_roots",
        ini_type="paths",
        ini_default=[],
        plugin_term="ini option",
        cli={
            "batch": Hidden("documents resolve inside the current folder"),
            "recheck": Hidden("documents resolve inside the current folder"),
            "serve": Hidden("a request cites URLs, never the server's files"),
            "validate": Flag(
                "--document-root",
                "a folder `document:` citations may read (repeatable; default: the current "
                "folder, like the rootdir of pytest run from there; citecheck_document_roots).",
            ),
        },
        service=Hidden("a request cites URLs, never the server's files"),
    ),
    # -- the gate ------------------------------------------------------------------------
    Option(
        "min_precision",
        "fail when citation precision is below P",
        parse=at.fraction,
        metavar="P",
        shown_default="no floor",
        target="gate",
        pytest_flag="--citecheck-min-precision",
        help_group="citecheck gate",
        ini="citecheck_min_precision",
        ini_type="float",
        plugin_term="ini",
        cli={"batch": Flag("--min-precision", "exit 1 when citation precision is below P.")},
        service=Hidden("the service answers verdicts; its callers decide"),
    ),
    Option(
        "min_reachable_precision",
        "fail when reachable precision is below P",
        parse=at.fraction,
        metavar="P",
        shown_default="no floor",
        target="gate",
        pytest_flag="--citecheck-min-reachable-precision",
        help_group="citecheck gate",
        ini="citecheck_min_reachable_precision",
        ini_type="float",
        plugin_term="ini",
        cli={
            "batch": Flag(
                "--min-reachable-precision", "exit 1 when reachable precision is below P."
            )
        },
        service=Hidden("the service answers verdicts; its callers decide"),
    ),
    Option(
        "min_answer_support",
        "fail when answer support (supported claims over all claims of imported answers) "
        "is below P",
        parse=at.fraction,
        metavar="P",
        shown_default="no floor",
        target="gate",
        pytest_flag="--citecheck-min-answer-support",
        help_group="citecheck gate",
        ini="citecheck_min_answer_support",
        ini_type="float",
        plugin_term="ini",
        cli={
            "batch": Flag(
                "--min-answer-support",
                "exit 1 when answer support (supported claims over all claims of the "
                "answers: in the claim files) is below P.",
            )
        },
        service=Hidden("the service answers verdicts; its callers decide"),
    ),
    Option(
        "min_citation_recall",
        "fail when ALCE citation recall of imported answers (per answer, sentences a "
        "citation supports over all sentences, an uncited one counting 0; the mean over "
        "answers) is below R",
        parse=at.fraction,
        metavar="R",
        shown_default="no floor",
        target="gate",
        pytest_flag="--citecheck-min-citation-recall",
        help_group="citecheck gate",
        ini="citecheck_min_citation_recall",
        ini_type="float",
        plugin_term="ini",
        cli={
            "batch": Flag(
                "--min-citation-recall",
                "exit 1 when ALCE citation recall of the answers: in the claim files (per "
                "answer, sentences a citation supports over all sentences, uncited ones "
                "counting 0; the mean over answers) is below R.",
            )
        },
        service=Hidden("the service answers verdicts; its callers decide"),
    ),
    Option(
        "min_link_works",
        "fail when the deep-research link-works rate (citations whose page or document "
        "was fetched and read, over the citations rated) is below L",
        parse=at.fraction,
        metavar="L",
        shown_default="no floor",
        target="gate",
        pytest_flag="--citecheck-min-link-works",
        help_group="citecheck gate",
        ini="citecheck_min_link_works",
        ini_type="float",
        plugin_term="ini",
        cli={
            "batch": Flag(
                "--min-link-works",
                "exit 1 when the deep-research link-works rate (citations whose page was "
                "fetched and read) is below L.",
            )
        },
        service=Hidden("the service answers verdicts; its callers decide"),
    ),
    Option(
        "min_relevant",
        "fail when the deep-research relevant rate (citations whose page has text that "
        "decides the claim, either way, over the citations rated) is below R",
        parse=at.fraction,
        metavar="R",
        shown_default="no floor",
        target="gate",
        pytest_flag="--citecheck-min-relevant",
        help_group="citecheck gate",
        ini="citecheck_min_relevant",
        ini_type="float",
        plugin_term="ini",
        cli={
            "batch": Flag(
                "--min-relevant",
                "exit 1 when the deep-research relevant rate (citations whose page has text "
                "that decides the claim, either way) is below R.",
            )
        },
        service=Hidden("the service answers verdicts; its callers decide"),
    ),
    Option(
        "min_fact_check",
        "fail when the deep-research fact-check rate (citations that support their claim, "
        "alone or jointly, over the citations rated) is below F",
        parse=at.fraction,
        metavar="F",
        shown_default="no floor",
        target="gate",
        pytest_flag="--citecheck-min-fact-check",
        help_group="citecheck gate",
        ini="citecheck_min_fact_check",
        ini_type="float",
        plugin_term="ini",
        cli={
            "batch": Flag(
                "--min-fact-check",
                "exit 1 when the deep-research fact-check rate (citations that support "
                "their claim) is below F.",
            )
        },
        service=Hidden("the service answers verdicts; its callers decide"),
    ),
    Option(
        "allow_contradicted",
        "do not fail on contradicted or fabricated citations",
        default=False,
        action="store_true",
        shown_default="false",
        target="gate",
        pytest_flag="--citecheck-allow-contradicted",
        help_group="citecheck gate",
        ini="citecheck_allow_contradicted",
        ini_type="bool",
        ini_default=False,
        plugin_term="ini",
        cli={"batch": Flag("--allow-contradicted")},
        service=Hidden("the service answers verdicts; its callers decide"),
    ),
    Option(
        "gate_scope",
        "how a run of a part of the suite (-k/-m/--lf, or claim files or node ids named "
        "instead of folders) is gated: subset reports the suite's floors (min precision, "
        "min reachable precision, min answer support, min agreement) without failing on "
        "them; full applies them to the part",
        default=d.DEFAULT_GATE_SCOPE,
        choices=d.GATE_SCOPES,
        target="gate",
        pytest_flag="--citecheck-gate",
        help_group="citecheck gate",
        ini="citecheck_gate",
        plugin_term="flag",
        cli={
            c: Hidden("the files given are the whole run: no suite to select from")
            for c in SETTING_COMMANDS
        },
        service=Hidden("the service answers verdicts; its callers decide"),
        doc=(
            "`subset` or `full`: what a run of a part of the suite fails on; see "
            "[Gate and CI](gate-ci.md#running-a-part-of-the-suite)"
        ),
    ),
    Option(
        "strict_review",
        "fail claims and the session on verdicts marked for review",
        default=False,
        action="store_true",
        shown_default="false",
        target="gate",
        pytest_flag="--citecheck-strict-review",
        help_group="citecheck gate",
        ini="citecheck_strict_review",
        ini_type="bool",
        ini_default=False,
        plugin_term="flag",
        cli={"batch": Hidden("a verdict marked for review counts normally")},
        service=Hidden("the service answers verdicts; its callers decide"),
    ),
    Option(
        "fail_not_retrieved",
        "fail claims and the session on a conversation's citation of a URL that no tool "
        "result of the conversation returned (url_not_retrieved)",
        default=False,
        action="store_true",
        shown_default="false",
        target="gate",
        pytest_flag="--citecheck-fail-not-retrieved",
        help_group="citecheck gate",
        ini="citecheck_fail_not_retrieved",
        ini_type="bool",
        ini_default=False,
        plugin_term="flag",
        cli={"batch": Flag("--fail-not-retrieved")},
        service=Hidden("the service answers verdicts; its callers decide"),
        doc=(
            "fail on `url_not_retrieved`: a conversation's cited URL that none of its tool "
            "results returned; see [Conversations](conversations.md#cited-but-never-retrieved)"
        ),
    ),
    Option(
        "baseline",
        "compare precision with a saved --citecheck-report and fail on a drop larger than "
        "citecheck_max_drop",
        parse=Path,
        metavar="REPORT.json",
        shown_default="none",
        pytest_flag="--citecheck-baseline",
        help_group="citecheck gate",
        ini=Hidden(_IN_A_RUN),
        cli={"batch": Hidden("no baseline in the batch")},
        service=Hidden(_PLUGIN_ONLY),
    ),
    Option(
        "max_drop",
        "largest allowed precision drop against the baseline",
        default=d.DEFAULT_MAX_DROP,
        parse=at.fraction,
        metavar="D",
        target="gate",
        pytest_flag="--citecheck-max-drop",
        help_group="citecheck gate",
        ini="citecheck_max_drop",
        ini_type="float",
        plugin_term="ini",
        cli={"batch": Hidden("no baseline in the batch")},
        service=Hidden(_PLUGIN_ONLY),
    ),
    Option(
        "min_agreement",
        "fail when fewer than this share of the citations a panel judged were unanimous",
        parse=at.fraction,
        metavar="A",
        shown_default="no floor",
        target="gate",
        pytest_flag="--citecheck-min-agreement",
        help_group="citecheck gate",
        ini="citecheck_min_agreement",
        ini_type="float",
        plugin_term="ini",
        cli={"batch": Hidden(_NO_PANEL)},
        service=Hidden(_ONE_JUDGE),
    ),
    # -- what a run writes ---------------------------------------------------------------
    Option(
        "report",
        "write a JSON report (also the --citecheck-baseline format).",
        parse=Path,
        metavar="PATH.json",
        shown_default="none",
        target="outputs",
        into="json",
        pytest_flag="--citecheck-report",
        help_group="citecheck reports",
        ini=Hidden(_IN_A_RUN),
        plugin_term="flag",
        cli={
            "batch": Flag(
                "--json", "write the JSON report (the plugin's --citecheck-report format)."
            ),
            "recheck": Flag("--json", "write the JSON report."),
        },
        service=Hidden("each response is the request's report"),
    ),
    Option(
        "csv",
        "write one CSV row per citation.",
        parse=Path,
        metavar="PATH",
        shown_default="none",
        target="outputs",
        pytest_flag="--citecheck-csv",
        help_group="citecheck reports",
        ini=Hidden(_IN_A_RUN),
        cli={"batch": Flag("--out", "write one CSV row per citation.")},
        service=Hidden("each response is the request's report"),
    ),
    Option(
        "markdown",
        "write a markdown summary (also appended to $GITHUB_STEP_SUMMARY when that variable "
        "is set).",
        parse=Path,
        metavar="PATH.md",
        shown_default="none",
        target="outputs",
        pytest_flag="--citecheck-md",
        help_group="citecheck reports",
        ini=Hidden(_IN_A_RUN),
        cli={
            "batch": Hidden("the batch prints its summary"),
            "recheck": Flag(
                "--md",
                "write the markdown summary (also appended to $GITHUB_STEP_SUMMARY when set).",
            ),
        },
        service=Hidden("each response is the request's report"),
        doc=(
            "write the markdown summary (also appended to `$GITHUB_STEP_SUMMARY` when set); see "
            "[Reports](reports.md#reports-html-markdown-and-the-verbose-listing)"
        ),
    ),
    Option(
        "html",
        "write a self-contained HTML report (no network, opens from file://).",
        parse=Path,
        metavar="PATH.html",
        shown_default="none",
        target="outputs",
        pytest_flag="--citecheck-html",
        help_group="citecheck reports",
        ini=Hidden(_IN_A_RUN),
        cli={
            "batch": Hidden("the batch prints its summary"),
            "recheck": Flag(
                "--html",
                "write an HTML page with the recorded and the live passage side by side.",
            ),
        },
        service=Hidden("each response is the request's report"),
        doc=(
            "write the self-contained HTML report; see "
            "[Reports](reports.md#reports-html-markdown-and-the-verbose-listing)"
        ),
    ),
    Option(
        "report_url",
        "the URL the HTML report will be served at: the step summary and the GitHub "
        "annotations link each claim there (default: $CITECHECK_REPORT_URL).",
        metavar="URL",
        shown_default="$CITECHECK_REPORT_URL, else none",
        target="outputs",
        pytest_flag="--citecheck-report-url",
        help_group="citecheck reports",
        ini=Hidden(_IN_A_RUN),
        plugin_term="flag",
        cli={
            "batch": Hidden("the batch writes no HTML report"),
            "recheck": Hidden("the recheck summary does not link its page"),
        },
        service=Hidden("each response is the request's report"),
        doc=(
            "where the `--citecheck-html` file will be served (e.g. your CI's artifact or "
            "pages URL): the step summary and the GitHub annotations link each claim to "
            "`URL#<claim id>`; see [Reports](reports.md#links-to-a-claim)"
        ),
    ),
    Option(
        "sarif",
        "write the failing and review claims as SARIF 2.1.0, for GitHub code scanning "
        "(github/codeql-action/upload-sarif).",
        parse=Path,
        metavar="PATH.sarif",
        shown_default="none",
        target="outputs",
        pytest_flag="--citecheck-sarif",
        help_group="citecheck reports",
        ini=Hidden(_IN_A_RUN),
        cli={"batch": Hidden("code scanning reads a pytest run's results")},
        service=Hidden("each response is the request's report"),
        doc=(
            "write the failing and review claims as SARIF 2.1.0 for GitHub code scanning; see "
            "[CI](gate-ci.md#github-actions)"
        ),
    ),
    Option(
        "otel_endpoint",
        "send one OpenTelemetry gen_ai.evaluation.result event per citation to this "
        "collector (OTLP/HTTP, e.g. http://localhost:4318; needs the otel extra).",
        parse=at.collector_url,
        metavar="URL",
        shown_default="none",
        target="outputs",
        pytest_flag="--citecheck-otel-endpoint",
        help_group="citecheck reports",
        ini=Hidden(_IN_A_RUN),
        plugin_term="flag",
        cli={
            "batch": Flag("--otel-endpoint"),
            "recheck": Hidden("a recheck sends no evaluation events"),
        },
        service=Hidden("each response is the request's report"),
        doc=(
            "send one `gen_ai.evaluation.result` event per citation to this OpenTelemetry "
            "collector (OTLP/HTTP; `/v1/logs` is added unless the URL names it; needs the "
            "`otel` extra); see [OpenTelemetry](opentelemetry.md)"
        ),
    ),
    Option(
        "otel_file",
        "write one OpenTelemetry gen_ai.evaluation.result event per citation to this OTLP "
        "JSON file (needs the otel extra).",
        parse=Path,
        metavar="PATH.json",
        shown_default="none",
        target="outputs",
        pytest_flag="--citecheck-otel-file",
        help_group="citecheck reports",
        ini=Hidden(_IN_A_RUN),
        plugin_term="flag",
        cli={
            "batch": Flag("--otel-file"),
            "recheck": Hidden("a recheck sends no evaluation events"),
        },
        service=Hidden("each response is the request's report"),
        doc=(
            "write one `gen_ai.evaluation.result` event per citation as an OTLP JSON file "
            "(a collector's `otlpjsonfile` receiver reads it; needs the `otel` extra); see "
            "[OpenTelemetry](opentelemetry.md)"
        ),
    ),
    Option(
        "audit",
        "append one row per citation to this SQLite audit index (read it with "
        "`citecheck audit list`).",
        parse=Path,
        metavar="PATH",
        shown_default="none",
        pytest_flag="--citecheck-audit",
        help_group="citecheck reports",
        ini=Hidden(_IN_A_RUN),
        cli={
            "batch": Flag("--audit", "append one row per citation to this SQLite audit index."),
            "serve": Flag("--audit", "append one row per citation to this SQLite audit index."),
        },
        service="audit",
        service_type="Path | None",
        doc=(
            "append one row per citation to a SQLite audit index (see [the audit "
            "index](cli.md#the-audit-index-and-citecheck-audit))"
        ),
    ),
    # -- what recording costs ------------------------------------------------------------
    Option(
        "dry_run",
        "list what recording would do (claims, crawls, judge calls, tokens, credits, cost) "
        "and stop before any request; needs no token or key.",
        default=False,
        action="store_true",
        shown_default="off",
        pytest_flag="--citecheck-dry-run",
        help_group="citecheck",
        ini=Hidden(_PER_RUN_ONLY),
        cli={
            "batch": Flag(
                "--dry-run",
                "list what the run would record (claims, crawls, judge calls, tokens, "
                "credits, cost) and stop before any request; needs no token or key.",
            )
        },
        service=Hidden("a service verifies what it is asked"),
    ),
    Option(
        "price_credit",
        "price of one Crawling API credit (reports then show the cost)",
        parse=at.amount,
        metavar="PRICE",
        shown_default="not set: credits only",
        target="engine",
        into="prices",
        pytest_flag="--citecheck-price-credit",
        help_group="citecheck budget",
        ini="citecheck_price_credit",
        ini_type="float",
        plugin_term="ini",
        cli={
            "batch": Flag("--price-credit"),
            "recheck": Hidden(_NO_BUDGET),
            "serve": Flag("--price-credit"),
        },
        service="prices",
        service_type="Prices",
    ),
    Option(
        "prices",
        "judge prices per million input/output tokens, e.g. openai:gpt-4o-mini=0.15/0.60 "
        "(several separated by spaces)",
        parse=at.judge_prices,
        metavar="PROVIDER:MODEL=IN/OUT",
        shown_default="none",
        target="engine",
        pytest_flag="--citecheck-prices",
        help_group="citecheck budget",
        ini="citecheck_prices",
        plugin_term="ini",
        cli={
            "batch": Flag("--prices"),
            "recheck": Hidden(_NO_BUDGET),
            "serve": Flag("--prices"),
        },
        service="prices",
        service_type="Prices",
    ),
    Option(
        "max_cost",
        "no claim starts recording that could take the spend past AMOUNT (at the prices set)",
        parse=at.amount,
        metavar="AMOUNT",
        shown_default="no cap",
        target="engine",
        pytest_flag="--citecheck-max-cost",
        help_group="citecheck budget",
        ini="citecheck_max_cost",
        ini_type="float",
        plugin_term="flag",
        cli={
            "batch": Flag(
                "--max-cost",
                "no claim starts that could take the spend past AMOUNT (needs the prices).",
            ),
            "recheck": Hidden(_NO_BUDGET),
            "serve": Flag(
                "--max-cost",
                "no request is verified (503 instead) that could take the spend past AMOUNT "
                "(needs the prices).",
            ),
        },
        service="max_cost",
        service_type="float | None",
    ),
    Option(
        "max_credits",
        "no claim starts recording that could take the Crawling API credits past N",
        parse=at.amount,
        metavar="N",
        shown_default="no cap",
        target="engine",
        pytest_flag="--citecheck-max-credits",
        help_group="citecheck budget",
        ini="citecheck_max_credits",
        ini_type="float",
        plugin_term="flag",
        cli={
            "batch": Flag(
                "--max-credits",
                "no claim starts that could take the Crawling API credits past N.",
            ),
            "recheck": Hidden(_NO_BUDGET),
            "serve": Flag(
                "--max-credits",
                "no request is verified (503 instead) that could take the Crawling API "
                "credits past N.",
            ),
        },
        service="max_credits",
        service_type="float | None",
    ),
    # -- citation rot --------------------------------------------------------------------
    Option(
        "recheck",
        "fetch every recorded URL citation live again and fail the claims whose page or "
        "evidence is gone (needs CRAWLBASE_TOKEN; replays the recordings).",
        default=False,
        action="store_true",
        shown_default="off",
        pytest_flag="--citecheck-recheck",
        help_group="citecheck",
        ini=Hidden(_PER_RUN_ONLY),
        cli={c: Hidden("`citecheck recheck` is its own subcommand") for c in SETTING_COMMANDS},
        service=Hidden(_PLUGIN_ONLY),
        doc=(
            "replay, and fetch every recorded URL citation live again; fail the claims whose "
            "evidence or page is gone (see [Citation "
            "rot](recheck.md#citation-rot-citecheck-recheck))"
        ),
    ),
    Option(
        "recheck_fail_on",
        "recheck statuses that fail a claim (none: never)",
        default=d.DEFAULT_RECHECK_FAIL_ON,
        parse=at.recheck_statuses,
        metavar="STATUS,...",
        pytest_flag="--citecheck-recheck-fail-on",
        help_group="citecheck",
        ini="citecheck_recheck_fail_on",
        cli={
            "recheck": Flag(
                "--fail-on",
                "exit 1 when a citation has one of these statuses (default "
                f"{','.join(d.DEFAULT_RECHECK_FAIL_ON)}; none: never).",
            )
        },
        service=Hidden(_PLUGIN_ONLY),
    ),
    Option(
        "update",
        "replace the cassette of every claim whose pages changed with the live recording "
        "(judged again where its question changed); the report lists them.",
        default=False,
        action="store_true",
        shown_default="off",
        pytest_flag=Hidden("a pytest recheck reports; `citecheck recheck --update` rewrites"),
        ini=Hidden(_PER_RUN_ONLY),
        cli={"recheck": Flag("--update")},
        service=Hidden(_PLUGIN_ONLY),
    ),
    Option(
        "no_progress",
        "no progress bar (it is shown only when stderr is a terminal).",
        default=False,
        action="store_true",
        shown_default="off",
        pytest_flag=Hidden("pytest's -q quietens it"),
        ini=Hidden("pytest's -q quietens it"),
        cli={"batch": Flag("--no-progress")},
        service=Hidden("a service prints no progress"),
    ),
    # -- large audits: Crawlbase's Crawler ------------------------------------------------
    _crawler_job_setting(
        "via_crawler",
        "fetch the pages through this Crawlbase Crawler (push, then verify each claim as "
        "its pages are delivered to `citecheck serve`'s webhook) instead of one Crawling "
        "API call each; the job is resumed by running the same command again.",
        "--via-crawler",
        recheck_help="fetch the live pages through this Crawlbase Crawler (push, then "
        "recheck each claim as its pages are delivered to `citecheck serve`'s webhook); "
        "the job is resumed by running the same command again.",
        parse=at.crawler_name,
        metavar="NAME",
        shown_default="none: the synchronous Crawling API",
        doc=(
            "push the citations to this Crawlbase Crawler and verify (or recheck) each claim "
            "as its pages arrive at the webhook; the batch needs `--record once` (or `all`/"
            "`rewrite`): each claim's cassette records its pages (see [Large "
            "audits](large-audits.md))"
        ),
    ),
    _crawler_job_setting(
        "js_crawler",
        "also push the pages that need JavaScript (thin or behind a browser check with "
        "the normal crawl) to this Crawlbase JavaScript Crawler, with the JavaScript token "
        "(CRAWLBASE_JS_TOKEN); needs --via-crawler.",
        "--js-crawler",
        parse=at.crawler_name,
        metavar="NAME",
        shown_default="none: such pages are configuration errors, counted in the job's status",
        doc=(
            "a Crawlbase JavaScript Crawler for the pages a `--via-crawler` job finds need "
            "JavaScript: each is pushed to it with `CRAWLBASE_JS_TOKEN` and its claim "
            "verified again when the rendered page arrives (see [Large "
            "audits](large-audits.md#javascript-pages))"
        ),
    ),
    Option(
        "jobs_dir",
        "the folder of the Crawler jobs' state (one folder per job).",
        default=Path(d.DEFAULT_JOBS_DIR),
        parse=Path,
        metavar="DIR",
        shown_default=d.DEFAULT_JOBS_DIR,
        pytest_flag=Hidden("a pytest run crawls synchronously; large audits are a batch"),
        ini=Hidden(_PER_RUN_ONLY),
        cli={
            "batch": Flag("--jobs-dir"),
            "recheck": Flag("--jobs-dir"),
            # The webhook keeps the deliveries of the jobs in this folder; a service
            # started without it refuses deliveries.
            "serve": Flag(
                "--jobs-dir",
                "accept Crawlbase Crawler deliveries at POST /crawler/deliveries for the "
                "jobs in this folder (DIR/<job>/job.sqlite; default: none, deliveries are "
                "refused).",
                default=None,
                own_default=True,
            ),
        },
        service="jobs_dir",
        service_type="Path | None",
        doc=(
            "the folder of the Crawler jobs' state; `citecheck serve --jobs-dir` accepts "
            "Crawlbase Crawler deliveries at `POST /crawler/deliveries` for the jobs in it "
            "(see [Large audits](large-audits.md))"
        ),
    ),
    _crawler_job_setting(
        "job",
        "the Crawler job's name (resume it by naming it again); default: the first "
        "claim file's name and a digest of the subcommand, the Crawler and the files.",
        "--job",
        parse=at.job_name,
        metavar="NAME",
        shown_default="derived from the command",
    ),
    _crawler_job_setting(
        "crawler_push_rate",
        "URLs pushed to the Crawler each second, by every push thread together (Crawlbase's "
        "default limit is 30 an account; raise it only when yours is higher: a push over the "
        "limit is refused with 429 and pushed again later).",
        "--crawler-push-rate",
        default=d.DEFAULT_CRAWLER_PUSH_RATE,
        parse=at.positive_rate,
        metavar="N",
        shown_default="30",
    ),
    _crawler_job_setting(
        "crawler_wait",
        "seconds a Crawler job waits with no page delivered before it stops (the pages "
        "still on their way are picked up by running the command again).",
        "--crawler-wait",
        default=d.DEFAULT_CRAWLER_WAIT,
        parse=at.positive_seconds,
        metavar="SECONDS",
    ),
    # -- the HTTP service ----------------------------------------------------------------
    _serve_only(
        "allow_judge",
        "a judge callers may name besides --judge (repeatable; default: only --judge).",
        (),
        at.judge_spec,
        "PROVIDER:MODEL",
        action="append",
        shown_default="only --judge",
        service="allowed_judges",
        service_type="tuple[str, ...]",
    ),
    _serve_only("max_urls", "most URLs one request may cite", d.DEFAULT_MAX_URLS),
    _serve_only(
        "max_body_bytes",
        "largest request body accepted",
        d.DEFAULT_MAX_BODY_BYTES,
        metavar="B",
    ),
    _serve_only(
        "queue_wait",
        "answer 503 with Retry-After when no verification slot frees up within S seconds",
        d.DEFAULT_QUEUE_WAIT,
        at.positive_seconds,
        "S",
        service_type="float",
    ),
    _serve_only(
        "read_timeout",
        "close connections whose request headers, or whose body, take longer than S seconds",
        d.DEFAULT_READ_TIMEOUT,
        at.positive_seconds,
        "S",
        service_type="float",
    ),
)

BY_NAME: Mapping[str, Option] = {option.name: option for option in OPTIONS}


def flag_choices(option: Option, flag: Flag) -> tuple[str, ...] | None:
    """The values ``flag`` takes (None: any)."""
    choices = flag.choices or option.choices
    if flag.late_choices is not None:
        return (*(choices or ()), *flag.late_choices())
    return choices


def cli_help(option: Option, flag: Flag) -> str:
    """A subcommand flag's help: its own, else the setting's with its default."""
    if flag.help is not None:
        if flag.late_choices is not None:
            return flag.help.replace("{late}", ", ".join(flag.late_choices()))
        return flag.help
    default = flag.default if flag.own_default else option.default_text()
    return f"{option.help} (default: {default})."


def cli_default(option: Option, flag: Flag) -> Any:
    if flag.own_default:
        return flag.default
    if option.action == "append":
        return []
    return option.default if option.action != "store_true" else False


def add_flag(parser: argparse.ArgumentParser, option: Option, flag: Flag) -> None:
    """``option``'s argparse argument as ``flag`` spells it, with the table's type,
    default, choices, metavar and help."""
    help = cli_help(option, flag)
    names = [flag.short, flag.flag] if flag.short else [flag.flag]
    kwargs: dict[str, Any] = {"help": help}
    if flag.dest is not None:
        kwargs["dest"] = flag.dest
    if flag.required:
        kwargs["required"] = True
    if option.action == "store_true":
        parser.add_argument(*names, action="store_true", **kwargs)
        return
    kwargs.update(action=option.action, type=flag.parse or option.parse)
    kwargs["default"] = cli_default(option, flag)
    choices = flag_choices(option, flag)
    if choices is not None:
        kwargs["choices"] = choices
    if option.metavar is not None:
        kwargs["metavar"] = option.metavar
    parser.add_argument(*names, **kwargs)


def option_named(name: str) -> Option:
    """The table's option called ``name`` (KeyError: no such setting)."""
    return _BY_NAME[name]


def plugin_term(option: Option) -> str | None:
    """How the plugin's messages name ``option``."""
    flag, ini = option.pytest_flag, option.ini
    style = option.plugin_term or ("ini" if isinstance(ini, str) else "flag")
    if style == "ini" and isinstance(ini, str):
        return ini
    if style == "ini option" and isinstance(ini, str):
        return f"the ini option {ini}"
    if style == "both" and isinstance(flag, str) and isinstance(ini, str):
        return f"{flag} or the ini option {ini}"
    return flag if isinstance(flag, str) else None


def cli_terms(command: str, prefix: str = "") -> dict[str, str]:
    """How ``citecheck COMMAND``'s messages name the settings it has flags for."""
    return {
        option.name: prefix + flag.flag
        for option in OPTIONS
        if isinstance(flag := option.flag_of(command), Flag)
    }


def composed_fields(target: Target) -> frozenset[str]:
    """The target's fields that several settings make up together (e.g. a quote policy
    from ``quote_match`` and ``quote_similarity``)."""
    seen: dict[str, int] = {}
    for option in OPTIONS:
        if option.target == target:
            seen[option.target_field] = seen.get(option.target_field, 0) + 1
    return frozenset(name for name, n in seen.items() if n > 1)


def fields_for(target: Target, values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``target`` fields these setting values (keyed by setting name) set one to
    one; a setting a front end does not expose is absent from ``values``."""
    composed = composed_fields(target)
    return {
        option.target_field: values[option.name]
        for option in OPTIONS
        if option.target == target and option.name in values and option.target_field not in composed
    }


_BY_NAME: dict[str, Option] = {}
for _option in OPTIONS:
    _BY_NAME.setdefault(_option.name, _option)
