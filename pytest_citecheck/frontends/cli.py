"""The ``citecheck`` console script: ``batch``, ``validate``, ``import``, ``recheck``,
``audit``, ``serve``.

A thin front end over :mod:`pytest_citecheck.engine.core`, like the plugin: it maps
its options onto :class:`~pytest_citecheck.engine.core.EngineSettings`, reads claim
files with the plugin's loader, and reports with the plugin's report and gate.

Exit codes: 0 the run passed, 1 the gate failed (or a record could not be
read, a claim file is invalid, or a stored page could not be found), 2 a usage
or configuration error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pytest_citecheck import __version__
from pytest_citecheck.claims.models import Claim, ClaimResult, Label
from pytest_citecheck.core.argtypes import positive_int
from pytest_citecheck.core.defaults import BATCH_LIVE, DEFAULT_JUDGE, DEFAULT_MAX_CLAIM_CHARS
from pytest_citecheck.core.option_table import (
    BY_NAME,
    COMMANDS,
    OPTIONS,
    Flag,
    cli_default,
    cli_help,
    cli_terms,
    fields_for,
)
from pytest_citecheck.core.record_mode import LIVE, RecordMode
from pytest_citecheck.core.terms import JUDGE_FROM_CLAIM, JUDGE_FROM_FLAG, Terms
from pytest_citecheck.core.text import plural as _plural
from pytest_citecheck.engine.gate import GateSettings
from pytest_citecheck.frontends import service_defaults as sd

if TYPE_CHECKING:
    from pytest_citecheck.claims.loader import ClaimFile
    from pytest_citecheck.core.prices import Prices
    from pytest_citecheck.engine.aggregate import Totals
    from pytest_citecheck.engine.core import Engine, EngineSettings
    from pytest_citecheck.frontends.service import ServiceConfig
    from pytest_citecheck.reports.finish import AuditRun
    from pytest_citecheck.reports.report import Outputs

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2
INTERRUPT_NOTICE = (
    "\ncitecheck: interrupted: no new claim starts; waiting for the claims in flight to finish"
)
# Ctrl-C: what finished was written, the claims not started cost nothing (128 + SIGINT).
EXIT_INTERRUPTED = 130
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
BATCH_SUFFIXES = (".jsonl", ".yaml", ".yml")


class UsageError(Exception):
    """Bad options or setup: printed as ``citecheck: ...``, exit code 2."""


# -- argument types (validated at parse time) -------------------------------------------


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not between 0 and 65535")
    return value


def claim_file(text: str) -> Path:
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    if path.suffix.lower() not in BATCH_SUFFIXES:
        raise argparse.ArgumentTypeError(
            f'{text}: not a claim file (JSONL records {{"id", "claim", "urls"}}, '
            "or a citecheck YAML file)"
        )
    return path


def label_name(text: str) -> str:
    names = [label.value for label in Label]
    if text not in names:
        raise argparse.ArgumentTypeError(f"{text!r} is not a label ({', '.join(names)})")
    return text


# -- the parser ---------------------------------------------------------------------------


def _add_settings(parser: argparse.ArgumentParser, command: str) -> None:
    """``citecheck COMMAND``'s flags for the settings of the option table."""
    for option in OPTIONS:
        flag = option.flag_of(command)
        if not isinstance(flag, Flag):
            continue
        help = cli_help(option, flag)
        if option.action == "store_true":
            parser.add_argument(flag.flag, action="store_true", help=help)
            continue
        kwargs: dict[str, Any] = {
            "action": option.action,
            "type": flag.parse or option.parse,
            "default": cli_default(option, flag),
            "help": help,
        }
        choices = flag.choices or option.choices
        if choices is not None:
            kwargs["choices"] = choices
        if option.metavar is not None:
            kwargs["metavar"] = option.metavar
        parser.add_argument(flag.flag, **kwargs)


def _values(args: argparse.Namespace) -> dict[str, Any]:
    """The settings ``args`` holds, by the option table's names (a subcommand's own
    flags only: a setting it lacks is left to the default of what it sets)."""
    values: dict[str, Any] = {}
    for option in OPTIONS:
        flag = option.flag_of(args.command)
        if isinstance(flag, Flag):
            value = getattr(args, flag.flag.lstrip("-").replace("-", "_"))
            if option.action == "append":
                value = tuple(value)
            elif value is not None and option.convert is not None:
                value = option.convert(value)
            values[option.name] = value
    return values


def _judge_variables() -> str:
    from pytest_citecheck.core.providers import provider_variables

    return ", ".join(provider_variables())


def _add_recheck(commands: Any) -> None:
    from pytest_citecheck.core.defaults import DEFAULT_RECHECK_FAIL_ON, RECHECK_STATUSES

    default_fail_on = ",".join(DEFAULT_RECHECK_FAIL_ON)
    recheck = commands.add_parser(
        "recheck",
        help="fetch recorded citations live again and report what changed (citation rot).",
        description="For every claim of FILE that has a recording, fetch each cited page "
        "live again (same Crawling API rules and JavaScript escalation) and compare it with "
        "the recording: " + ", ".join(RECHECK_STATUSES) + ". Where the "
        "recorded evidence quote is gone, the judge is asked again on the live page. What "
        "the recheck fetched is recorded in cassettes/<file stem>/recheck/<claim id>.yaml; "
        "the original cassettes are never changed without --update.",
        epilog=f"Exit codes: 0 passed, 1 a citation has a status of --fail-on (default "
        f"{default_fail_on}), 2 usage or configuration error (e.g. CRAWLBASE_TOKEN not set).",
    )
    recheck.add_argument("files", nargs="+", type=claim_file, metavar="FILE", help="claim file(s).")
    _add_settings(recheck, "recheck")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="citecheck",
        description="Verify that LLM citations support their claims (pytest-citecheck). "
        "`pytest --citecheck` gates a test suite; these commands verify a batch of "
        "outputs, read the audit index, and serve verification over HTTP.",
        epilog="Exit codes: 0 passed, 1 the gate failed, 2 usage or configuration error. "
        "Tokens and keys come from the environment: CRAWLBASE_TOKEN (and CRAWLBASE_JS_TOKEN "
        f"for JavaScript pages) for recording or live runs; the judge's, by provider: "
        f"{_judge_variables()}; CITECHECK_AUDIT: the audit file of `audit list` (default "
        "citecheck-audit.db).",
    )
    parser.add_argument("-V", "--version", action="version", version=f"citecheck {__version__}")
    parser.set_defaults(help_parser=parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    batch = commands.add_parser(
        "batch",
        help="verify a JSONL (or YAML) file of claims and their URLs; print precision.",
        description="Verify every claim-URL pair of FILE (JSONL records "
        '{"id", "claim", "urls"}, or citecheck YAML claim files) and print the label '
        "counts, citation_precision and reachable_precision. Records that cannot be read "
        "are reported with file:line and the fix; the others still run.",
        epilog="Exit codes: 0 passed, 1 the gate failed or a record could not be read, "
        "2 usage or configuration error (e.g. CRAWLBASE_TOKEN not set).",
    )
    batch.add_argument("files", nargs="+", type=claim_file, metavar="FILE", help="claim file(s).")
    _add_settings(batch, "batch")

    validate = commands.add_parser(
        "validate",
        help="check claim files against the schema (offline; no pytest run, no key).",
        description="Check each FILE (citecheck_*.yaml|yml claim files, or JSONL records "
        '{"id", "claim", "urls"}) against the claim schema, as pytest --citecheck does '
        "when it collects them, and print every problem with file:line and the fix. "
        "Nothing is fetched or judged. For pre-commit: see .pre-commit-hooks.yaml.",
        epilog="Exit codes: 0 every file is valid, 1 a file has a problem, 2 usage error.",
    )
    validate.add_argument("files", nargs="+", type=Path, metavar="FILE", help="claim file(s).")
    _add_settings(validate, "validate")

    _add_recheck(commands)

    audit = commands.add_parser(
        "audit",
        help="read the audit index, or re-read a stored page.",
        description="Read the SQLite audit index written by --audit / --citecheck-audit.",
    )
    audit.set_defaults(help_parser=audit)
    audit_commands = audit.add_subparsers(dest="audit_command", metavar="ACTION")
    listing = audit_commands.add_parser(
        "list",
        help="print the audit rows.",
        description="Print the audit rows, oldest first.",
    )
    listing.add_argument(
        "--audit",
        type=Path,
        metavar="PATH",
        help="the audit file (default: $CITECHECK_AUDIT, else citecheck-audit.db).",
    )
    listing.add_argument("--label", type=label_name, metavar="L", help="only rows with this label.")
    listing.add_argument("--run", metavar="ID", help="only rows of this run id.")
    listing.add_argument("--limit", type=positive_int, metavar="N", help="only the newest N rows.")
    page = audit_commands.add_parser(
        "page",
        help="print the page a verdict was based on (Crawlbase Storage API).",
        description="Re-read the page stored under RID through the Crawlbase Storage API "
        "(free; CRAWLBASE_TOKEN or CRAWLBASE_JS_TOKEN; pages are kept 30 days) and print "
        "it to stdout; where it came from goes to stderr.",
        epilog="Exit codes: 0 printed, 1 no page is stored under RID (expired or wrong), "
        "2 no token or the token was refused.",
    )
    page.add_argument("rid", metavar="RID", help="the rid from `citecheck audit list`.")

    importer = commands.add_parser(
        "import",
        help="turn saved LLM responses with native citations into a claim file.",
        description="Read saved responses (OpenAI Responses or Chat Completions, Anthropic "
        "Messages, Perplexity, Gemini, or markdown) and write a claim file: one claim per "
        "cited sentence, its citations the URLs or documents cited for it, uncited sentences "
        "as comments. RESPONSES are .json files (one response or a list), .jsonl files (one "
        "a line), markdown files (.md, .markdown, .txt), or folders of .json, .jsonl and .md "
        "files. A response that cannot be imported is "
        "reported with where and why; the others are still written.",
        epilog="Exit codes: 0 written, 1 written without the responses that could not be "
        "imported, 2 usage error.",
    )
    importer.add_argument(
        "responses", nargs="+", type=Path, metavar="RESPONSES", help="saved responses."
    )
    importer.add_argument(
        "--from",
        dest="source_format",
        default="auto",
        choices=("auto", *_formats()),
        metavar="FORMAT",
        help=f"the responses' format: auto (default, detected per response), "
        f"{', '.join(_formats())}.",
    )
    importer.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        metavar="citecheck_NAME.yaml",
        help="the claim file to write (pytest --citecheck collects citecheck_*.yaml).",
    )
    importer.add_argument(
        "--document",
        dest="documents",
        action="append",
        metavar="PATH",
        help="a document of the request, in order (Anthropic's document_index counts "
        "them); relative to the claim file. Repeat for each document.",
    )

    serve = commands.add_parser(
        "serve",
        help="serve POST /verify and GET /health over HTTP (extra `service`).",
        description="Serve verification over HTTP with FastAPI and uvicorn: POST /verify "
        '{"claim", "urls", "judge"?}, GET /health, OpenAPI at /docs. Needs '
        "pip install 'pytest-citecheck[service]'. Every request is checked before "
        "anything is spent: Host header, service key, JSON body, caps, judge allow-list, "
        "URL policy.",
        epilog=f"Off loopback a key is required: set {sd.SERVICE_KEY_ENV} or --key-file. "
        "Clients send it as `Authorization: Bearer <key>`.",
    )
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"address (default {DEFAULT_HOST}).")
    serve.add_argument(
        "--port", type=port_number, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})."
    )
    serve.add_argument(
        "--key-file",
        type=Path,
        metavar="PATH",
        help=f"read the service key from PATH (default: ${sd.SERVICE_KEY_ENV}); at least "
        f"{sd.MIN_KEY_CHARS} characters. Required unless --host is loopback.",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests whose Host header is NAME (repeatable; *.example.com "
        f"for a domain, * for any). Default: {', '.join(sd.LOOPBACK_HOSTS)} and --host.",
    )
    _add_settings(serve, "serve")
    return parser


# -- entry point --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    except SystemExit as exc:  # --help, --version, or a usage error (already printed)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        if args.command == "batch":
            return run_batch(args)
        if args.command == "validate":
            return run_validate(args)
        if args.command == "recheck":
            return run_recheck(args)
        if args.command == "audit" and args.audit_command == "list":
            return run_audit_list(args)
        if args.command == "audit" and args.audit_command == "page":
            return run_audit_page(args)
        if args.command == "serve":
            return run_serve(args)
        if args.command == "import":
            return run_import(args)
    except UsageError as exc:
        print(f"citecheck: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # a second Ctrl-C while the claims in flight finished
        print("citecheck: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    # No command (or `audit` with no action): the help of what was typed.
    args.help_parser.print_help(sys.stderr)
    return EXIT_USAGE


# -- validate -----------------------------------------------------------------------------


def run_validate(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Every problem of every file, worded as collection words it; exit 1 if any."""
    from pytest_citecheck.claims.loader import ClaimFileError, load_claim_file

    out = out or sys.stdout
    roots = [Path.cwd(), *args.document_root]
    bad = problems = claims = 0
    for path in args.files:
        try:
            claims += len(load_claim_file(path, roots=roots).claims)
        except ClaimFileError as exc:
            bad += 1
            problems += len(exc.problems)
            print(exc, file=out)
    files = len(args.files)
    if problems:
        print(
            f"citecheck validate: {_plural(problems, 'problem')} in {bad} of "
            f"{_plural(files, 'file')}",
            file=out,
        )
        return EXIT_GATE_FAILED
    print(
        f"citecheck validate: {_plural(files, 'file')}, {_plural(claims, 'claim')}, no problems",
        file=out,
    )
    return EXIT_OK


# -- batch --------------------------------------------------------------------------------


@dataclass
class BatchInput:
    """The claims of the batch's files, keyed like pytest node ids, and the bad records."""

    claims: dict[str, Claim] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    # Each YAML file's `judge:` (the loader's ClaimFile), checked once the engine exists.
    claim_files: list[ClaimFile] = field(default_factory=list)

    def drop_unknown_judges(self, engine: Engine, judge_flag: str | None) -> None:
        """A file whose ``judge:`` names a provider nobody builds is a bad file:
        reported with its line, its claims not run (unless --judge overrides it)."""
        from pytest_citecheck.claims.loader import unknown_judge

        if judge_flag is not None:
            return
        for claim_file in self.claim_files:
            error = unknown_judge(claim_file, engine.judge, batch_terms())
            if error is None:
                continue
            self.problems.append(str(error))
            for key in [k for k, path in self.files.items() if path == claim_file.path]:
                del self.claims[key], self.files[key]

    # The records (file, line) those problems are in: a record can have several.
    bad_records: set[tuple[Path, int | None]] = field(default_factory=set)


def read_batch(
    paths: Sequence[Path], root: Path, max_claim_chars: int = DEFAULT_MAX_CLAIM_CHARS
) -> BatchInput:
    """Read every file with the plugin's loader. A bad record (or YAML claim) is a
    problem with its ``file:line`` and fix; every good one still runs. Documents
    must resolve inside ``root``."""
    from pytest_citecheck.claims.loader import ClaimFileError, load_valid_claims

    batch = BatchInput()
    for path in paths:
        claim_file, error = load_valid_claims(
            path, roots=[root], terms=batch_terms(), max_claim_chars=max_claim_chars
        )
        if error is not None:
            # One entry per problem, each printed as the loader words it.
            batch.problems.extend(
                str(ClaimFileError(path, p.line, p.problem, p.fix)) for p in error.problems
            )
            batch.bad_records.update((path, p.line) for p in error.problems)
        batch.claim_files.append(claim_file)
        for claim in claim_file.claims:
            key = f"{path.name}::{claim.id}"
            batch.claims[key] = claim
            batch.files[key] = path
    return batch


def _prices(args: argparse.Namespace) -> Prices:
    from pytest_citecheck.engine.settings_map import prices

    return prices(_values(args))


# -- the flags onto the engine's, the gate's and the reports' settings --------------------
#
# The option table says which flag sets which field; engine/settings_map.py maps them.
# tests/integration/test_settings_mapping.py fails when an engine or gate setting is
# neither mapped nor listed there as deliberately not exposed.


def engine_settings(args: argparse.Namespace, terms: Terms) -> EngineSettings:
    """``citecheck batch``'s and ``citecheck recheck``'s flags as the engine's settings.

    With ``--record live`` the batch is live (and has no cassette); the recheck has no
    ``--record`` (it replays, then fetches live: engine/recheck.py chooses)."""
    from pytest_citecheck.engine.settings_map import engine_settings as mapped

    if getattr(args, "record", None) == BATCH_LIVE:
        args = argparse.Namespace(**{**vars(args), "record": None})
    values = _values(args)
    if "record_mode" in values and values["record_mode"] is None:
        values["record_mode"] = LIVE
    return mapped(values, judge_origin=JUDGE_FROM_FLAG if args.judge else None, terms=terms)


def gate_settings(args: argparse.Namespace) -> GateSettings:
    """``citecheck batch``'s bars."""
    from pytest_citecheck.engine.settings_map import gate_settings as mapped

    return mapped(_values(args), terms=batch_terms())


def outputs(args: argparse.Namespace) -> Outputs:
    """The files ``citecheck batch`` writes."""
    from pytest_citecheck.reports.report import Outputs

    return Outputs(**fields_for("outputs", _values(args)))


def service_config(args: argparse.Namespace, key: str | None) -> ServiceConfig:
    """``citecheck serve``'s flags as the service's configuration (``key``: the service
    key, read from ``--key-file`` or the environment)."""
    from pytest_citecheck.engine.settings_map import COMPOSE
    from pytest_citecheck.frontends.service import ServiceConfig

    values = _values(args)
    config: dict[str, Any] = {}
    for option in OPTIONS:
        if isinstance(option.service, str) and option.name in values:
            field_name = option.service
            composed = COMPOSE.get(field_name)
            config[field_name] = values[option.name] if composed is None else composed(values)
    return ServiceConfig(
        **config, api_key=key, allowed_hosts=allowed_hosts(args.host, args.allowed_host)
    )


def _engine(args: argparse.Namespace, terms: Terms) -> Engine:
    from pytest_citecheck.engine.core import Engine

    return Engine.from_settings(engine_settings(args, terms))


def run_batch(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    if args.record == BATCH_LIVE:
        if args.cassettes is not None:
            raise UsageError(
                f"--cassettes has no use with --record {BATCH_LIVE}: a live run neither "
                "replays nor records (record with --record once)"
            )
        args.record = None  # live from here on: no cassette
    _check_outputs(args)
    audit = _open_audit(args.audit, "batch")
    batch = read_batch(args.files, Path.cwd(), args.max_claim_chars)
    # --record live: the engine then fetches and judges for real, with no cassette.
    engine = _engine(args, batch_terms(batch.files, args.cassettes))
    batch.drop_unknown_judges(engine, args.judge)
    for problem in batch.problems:
        print(problem, file=sys.stderr)
    keys = list(batch.claims)
    claims = [batch.claims[k] for k in keys]
    key_of = {id(claim): key for key, claim in batch.claims.items()}

    def cassette_for(claim: Claim) -> Path | None:
        if args.record is None:
            return None
        path = batch.files[key_of[id(claim)]]
        root = args.cassettes if args.cassettes is not None else path.parent / "cassettes"
        return root / path.stem / f"{claim.id}.yaml"

    from pytest_citecheck.core.errors import ConfigurationError

    if args.dry_run:
        # --record live: every claim would be fetched and judged.
        with engine:
            plan = engine.plan(claims, cassette_for=cassette_for)
        terms = batch_terms(batch.files, args.cassettes)
        print(*plan.lines(_prices(args), terms), sep="\n", file=out)
        return EXIT_GATE_FAILED if batch.problems else EXIT_OK
    with engine:
        try:
            engine.preflight(claims, cassette_for=cassette_for)
        except (ConfigurationError, ValueError) as exc:
            raise UsageError(_problem_list(str(exc))) from None
        progress = _Progress(
            len(claims),
            enabled=not args.no_progress and sys.stderr.isatty(),
            services=engine.progress.services,
        )
        progress.step(0)
        audit_problems: list[str] = []
        on_result = _recorder(audit, progress, keys, audit_problems)
        from pytest_citecheck.engine.core import Interrupted

        try:
            results = engine.verify_claims_sync(
                claims,
                cassette_for=cassette_for,
                nodeid_for=lambda claim: key_of[id(claim)],
                on_result=on_result,
                on_interrupt=lambda: print(INTERRUPT_NOTICE, file=sys.stderr, flush=True),
            )
        except Interrupted as stopped:
            # Ctrl-C: no claim started since; the ones in flight finished and are written.
            progress.close()
            finished = {keys[i]: r for i, r in sorted(stopped.results.items())}
            return _finish_batch(
                args, finished, batch, audit, out, audit_problems, stopped.not_started
            )
        progress.close()
    by_key = dict(zip(keys, results, strict=True))
    return _finish_batch(args, by_key, batch, audit, out, audit_problems)


def _check_record_options(args: argparse.Namespace) -> None:
    if args.cassettes is not None and args.record is None:
        raise UsageError("--cassettes needs --record MODE (use --record none to replay)")


def _check_outputs(args: argparse.Namespace) -> None:
    """--out and --json checked before any work: a usage error, not a lost report."""
    from pytest_citecheck.core.files import unwritable

    for flag, path in (("--out", args.out), ("--json", args.json)):
        if path is not None:
            problem = unwritable(path)
            if problem is not None:
                raise UsageError(f"{flag} {path}: {problem}")


def _open_audit(path: Path | None, source: str) -> AuditRun | None:
    """This run's rows in the audit index (a new run id), the index checked before
    any work (a usage error if unusable)."""
    from pytest_citecheck.reports.audit import AuditError, AuditIndex
    from pytest_citecheck.reports.finish import AuditRun

    if path is None:
        return None
    index = AuditIndex(path)
    try:
        index.check()
    except AuditError as exc:
        raise UsageError(f"--audit: {exc}") from None
    return AuditRun(index, source)


# The batch's names for the options the engine's messages mention.
_BATCH_OPTIONS = cli_terms("batch")


def batch_terms(files: Mapping[str, Path] | None = None, cassettes: Path | None = None) -> Terms:
    """How the batch names its flags; ``files`` maps a claim's key to its file, for
    the command that records it (``citecheck batch FILE --record MODE``)."""
    import shlex

    known = dict(files or {})

    def record(key: str, mode: str) -> str:
        where = f" --cassettes {shlex.quote(str(cassettes))}" if cassettes is not None else ""
        target = known.get(key)
        what = shlex.quote(str(target)) if target is not None else "FILE"
        return f"citecheck batch {what} --record {mode}{where}"

    return Terms(
        options=_BATCH_OPTIONS,
        judge_origins={JUDGE_FROM_FLAG: "--judge", JUDGE_FROM_CLAIM: "a claim file's judge:"},
        record=record,
        replay="--record none",
    )


def _problem_list(message: str) -> str:
    """A list of problems starts on its own line, under a heading."""
    return "not configured:\n" + message if message.startswith("  - ") else message


def _recorder(
    audit: AuditRun | None,
    progress: _Progress,
    keys: Sequence[str],
    problems: list[str],
) -> Callable[[int, ClaimResult], None]:
    def on_result(index: int, result: ClaimResult) -> None:
        # Written as each claim finishes: an interrupted run keeps what it decided.
        # A write that fails costs its rows, never the other claims or the reports.
        problem = None if audit is None else audit.record({keys[index]: result})
        if problem is not None:
            problems.append(f"{keys[index]}: {problem}")
        progress.step()

    return on_result


def _finish_batch(
    args: argparse.Namespace,
    results: dict[str, ClaimResult],
    batch: BatchInput,
    audit: AuditRun | None,
    out: TextIO,
    audit_problems: Sequence[str] = (),
    not_started: int | None = None,
) -> int:
    """The run's end (:func:`~pytest_citecheck.reports.finish.finish_run`), printed;
    ``not_started`` (Ctrl-C) writes what finished and exits 130 without a gate
    verdict: a part of the claims decides nothing."""
    from pytest_citecheck.reports.finish import finish_run

    problems = []
    if batch.problems:
        records, count = len(batch.bad_records), len(batch.problems)
        counted = "" if count == records else f"{count} problems, "
        problems.append(
            f"{records} {'record' if records == 1 else 'records'} could not be read "
            f"({counted}shown above with file:line and the fix)"
        )
    if audit_problems:
        # The rows were written as each claim finished: the run's end writes none.
        problems.append(
            f"--audit: the rows of {len(audit_problems)} claim(s) could not be written "
            f"({audit_problems[0]})"
        )
    report = finish_run(
        results,
        gate_settings(args),
        outputs(args),
        not_started=not_started or 0,
        stopped_by="interrupted" if not_started else None,
        prices=_prices(args),
        problems=problems,
    )
    failures = report.gate_failures
    for line in report.lines():
        print(line.text, file=out)
    print(*precision_lines(report.totals), sep="\n", file=out)
    if audit is not None:
        print(f"audit: run {audit.run_id} in {audit.index.path}", file=out)
    if not_started is not None:
        stopped = report.not_started_line()
        if stopped is not None:
            print(stopped, file=out)
        return EXIT_INTERRUPTED
    for failure in failures:
        print(f"citecheck gate FAILED: {failure}", file=out)
    if not failures and report.output_errors:
        print(report.unwritten_line(), file=out)
    elif not failures:
        print("citecheck gate passed", file=out)
    return EXIT_GATE_FAILED if failures or report.output_errors else EXIT_OK


def precision_lines(totals: Totals) -> list[str]:
    """The two summary lines the batch prints, e.g. ``citation_precision=0.2222 (2/9)``."""

    def fmt(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.4f}"

    return [
        f"citation_precision={fmt(totals.citation_precision)} "
        f"({totals.supported}/{totals.citations})",
        f"reachable_precision={fmt(totals.reachable_precision)} "
        f"({totals.supported}/{totals.reachable})",
    ]


class _Progress:
    """A one-line progress bar on stderr, only when it is a terminal."""

    WIDTH = 30

    def __init__(self, total: int, enabled: bool, services: Callable[[], str] = lambda: "") -> None:
        self.total = total
        self.done = 0
        self.enabled = enabled and total > 0
        self.services = services

    def step(self, by: int = 1) -> None:
        self.done += by
        if self.enabled:
            filled = self.WIDTH * self.done // self.total
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            sys.stderr.write(
                f"\rcitecheck [{bar}] {self.done}/{self.total} claims{self.services()}\x1b[K"
            )
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.done:
            sys.stderr.write("\n")
            sys.stderr.flush()


# -- recheck --------------------------------------------------------------------------------


def run_recheck(args: argparse.Namespace, out: TextIO | None = None) -> int:
    import os
    from concurrent.futures import ThreadPoolExecutor

    from pytest_citecheck.core.defaults import RecheckStatus
    from pytest_citecheck.core.errors import ConfigurationError
    from pytest_citecheck.engine.recheck import ClaimRecheck, Rechecker
    from pytest_citecheck.reports.recheck import RecheckReport

    out = out or sys.stdout
    batch = read_batch(args.files, Path.cwd())
    for problem in batch.problems:
        print(problem, file=sys.stderr)
    settings = engine_settings(args, batch_terms(batch.files, args.cassettes))
    with Rechecker(settings, update=args.update) as rechecker:
        try:
            rechecker.preflight()
        except ConfigurationError as exc:
            raise UsageError(str(exc)) from None

        def recheck(key: str) -> ClaimRecheck:
            claim, path = batch.claims[key], batch.files[key]
            root = args.cassettes if args.cassettes is not None else path.parent / "cassettes"
            return rechecker.recheck(claim, root / path.stem / f"{claim.id}.yaml", key)

        with ThreadPoolExecutor(args.concurrency, thread_name_prefix="recheck") as pool:
            results = list(pool.map(recheck, batch.claims))  # in input order
    fail_on = [RecheckStatus(name) for name in args.fail_on]
    report = RecheckReport(claims=results, fail_on=fail_on, update=args.update)
    failures = [
        f"{n} {'citation' if n == 1 else 'citations'} {status.value}"
        for status, n in report.failing().items()
    ]
    if failures:
        names = ",".join(s.value for s in fail_on)
        failures = [f"{', '.join(failures)} (--fail-on {names})"]
    if batch.problems:
        failures.append(
            f"{len(batch.problems)} record(s) could not be read (shown above with file:line "
            "and the fix)"
        )
    report.gate_failures = failures
    if args.json is not None:
        report.write_json(args.json)
    if args.md is not None:
        report.write_markdown(args.md)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        report.write_markdown(Path(step_summary), append=True)
    if args.html is not None:
        report.write_html(args.html)
    for line in report.lines():
        print(line.text, file=out)
    for failure in failures:
        print(f"citecheck recheck FAILED: {failure}", file=out)
    if not failures:
        print("citecheck recheck passed", file=out)
    return EXIT_GATE_FAILED if failures else EXIT_OK


# -- audit ----------------------------------------------------------------------------------


def audit_path(given: Path | None) -> Path:
    import os

    from pytest_citecheck.reports.audit import AUDIT_ENV, DEFAULT_AUDIT_PATH

    if given is not None:
        return given
    return Path(os.environ[AUDIT_ENV]) if os.environ.get(AUDIT_ENV) else DEFAULT_AUDIT_PATH


AUDIT_LIST_COLUMNS = ("time", "run_id", "claim_id", "label", "reason", "confidence", "rid", "url")


def audit_terms() -> Terms:
    """How ``citecheck audit`` names what writes an audit file: every front end's flag
    for it, from the option table."""
    option = BY_NAME["audit"]
    writers = [
        f"`citecheck {command} {flag.flag} PATH`"
        for command in COMMANDS
        if isinstance(flag := option.flag_of(command), Flag)
    ]
    if isinstance(option.pytest_flag, str):
        writers.insert(1, f"`pytest --citecheck {option.pytest_flag}=PATH`")
    return Terms(options={"audit": f"{', '.join(writers[:-1])} or {writers[-1]}"})


def run_audit_list(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from pytest_citecheck.reports.audit import AuditError, AuditIndex

    out = out or sys.stdout
    try:
        rows = AuditIndex(audit_path(args.audit), terms=audit_terms()).rows(
            label=args.label, run_id=args.run, limit=args.limit
        )
    except AuditError as exc:
        raise UsageError(str(exc)) from None
    table = [list(AUDIT_LIST_COLUMNS)]
    for row in rows:
        conf = "" if row.confidence is None else f"{row.confidence:.2f}"
        table.append(
            [
                row.time,
                row.run_id,
                row.claim_id,
                row.label,
                row.reason or "-",
                conf,
                row.rid or "-",
                row.url,
            ]
        )
    # Every column padded but the last (the URL).
    widths = [max(len(r[c]) for r in table) for c in range(len(AUDIT_LIST_COLUMNS) - 1)]
    for cells in table:
        padded = [cell.ljust(width) for cell, width in zip(cells[:-1], widths, strict=True)]
        print("  ".join([*padded, cells[-1]]), file=out)
    print(f"{len(rows)} row(s)", file=sys.stderr)
    return EXIT_OK


def run_audit_page(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from pytest_citecheck.core.errors import ConfigurationError
    from pytest_citecheck.stages.storage import PageNotStored, StorageError, read_stored_page

    out = out or sys.stdout
    try:
        page = read_stored_page(args.rid)
    except ConfigurationError as exc:
        raise UsageError(str(exc)) from None
    except (PageNotStored, StorageError) as exc:
        print(f"citecheck: {exc}", file=sys.stderr)
        return EXIT_GATE_FAILED
    status = "" if page.original_status is None else f", original status {page.original_status}"
    print(
        f"rid {page.rid}: {page.url or '(url unknown)'}, stored {page.stored_at or '?'}{status}",
        file=sys.stderr,
    )
    out.write(page.body if page.body.endswith("\n") or not page.body else page.body + "\n")
    return EXIT_OK


# -- import -----------------------------------------------------------------------------------


def _formats() -> tuple[str, ...]:
    from pytest_citecheck.claims.importers import FORMATS

    return FORMATS


def run_import(args: argparse.Namespace, out: TextIO | None = None) -> int:
    import shlex

    from pytest_citecheck.claims.importers import ImportedAnswer, ResponseImportError
    from pytest_citecheck.claims.importers.files import (
        claim_file_text,
        expand,
        import_saved,
        read_saved,
    )

    out = out or sys.stdout
    output: Path = args.output
    if output.suffix.lower() not in (".yaml", ".yml"):
        raise UsageError(f"-o {output}: a claim file is written as YAML (citecheck_NAME.yaml)")
    if output.is_dir():
        raise UsageError(f"-o {output}: is a folder; give the claim file's name")
    missing = [str(p) for p in args.responses if not p.exists()]
    if missing:
        raise UsageError(f"no such file or folder: {', '.join(missing)}")
    files = expand(args.responses)
    if not files:
        raise UsageError("no saved responses found (.json, .jsonl, .md, .markdown)")
    answers: list[tuple[ImportedAnswer, str]] = []
    failures: list[ResponseImportError] = []
    seen: dict[str, str] = {}
    for path in files:
        for saved in read_saved(path):
            if isinstance(saved, ResponseImportError):
                failures.append(saved)
                continue
            folded = saved.answer_id.casefold()
            if folded in seen:
                failures.append(
                    ResponseImportError(
                        saved.name,
                        "",
                        f"answer id {saved.answer_id!r} is also the id of {seen[folded]}",
                        'rename one file, or name the answers: {"id": ..., "response": {...}}',
                    )
                )
                continue
            try:
                answer = import_saved(saved, format=args.source_format, documents=args.documents)
            except ResponseImportError as exc:
                failures.append(exc)
                continue
            seen[folded] = saved.name
            answers.append((answer, saved.name))
    command = "citecheck import " + shlex.join(
        ["--from", args.source_format, *map(str, args.responses), "-o", str(output)]
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(claim_file_text(answers, command), encoding="utf-8")
    for failure in failures:
        print(f"citecheck import: {failure}", file=sys.stderr)
    for answer, name in answers:
        uncited = len(answer.uncited)
        print(
            f"{answer.id}: {len(answer.claims)} claim(s), {uncited} uncited sentence(s)"
            f" ({answer.format}, {name})",
            file=out,
        )
        for note in answer.notes:
            print(f"  note: {note}", file=out)
    claims = sum(len(a.claims) for a, _ in answers)
    print(
        f"wrote {output}: {claims} claim(s) from {len(answers)} response(s)"
        + (f"; {len(failures)} could not be imported (shown above)" if failures else ""),
        file=out,
    )
    if not output.name.startswith("citecheck_"):
        print(
            f"note: pytest --citecheck collects citecheck_*.yaml; {output.name} is not collected "
            "unless citecheck_patterns lists it",
            file=out,
        )
    return EXIT_GATE_FAILED if failures else EXIT_OK


# -- serve ------------------------------------------------------------------------------------


def run_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from pytest_citecheck.frontends.service import create_app, uvicorn_config
    except ImportError as exc:
        raise UsageError(
            f"`citecheck serve` needs FastAPI and uvicorn ({exc}): "
            "pip install 'pytest-citecheck[service]'"
        ) from None
    from pytest_citecheck.core.providers import PROVIDERS

    key = service_key(args.key_file)
    problem = sd.binding_problem(args.host, key)
    if problem is not None:
        raise UsageError(problem)
    judges = [("--allow-judge", judge) for judge in args.allow_judge]
    for flag, judge in [("--judge", args.judge), *judges]:
        if judge is not None and judge.partition(":")[0].lower() not in PROVIDERS:
            raise UsageError(
                f"{flag} {judge}: no provider {judge.partition(':')[0]!r} "
                f"(one of {', '.join(PROVIDERS)})"
            )
    _check_record_options(args)
    if args.record is not None and args.cassettes is None:
        raise UsageError(
            "--record needs --cassettes DIR: the folder the service records requests into "
            "and replays them from"
        )
    if (
        args.record is not None
        and RecordMode(args.record).replay_only
        and not args.cassettes.is_dir()
    ):
        raise UsageError(
            f"--cassettes {args.cassettes}: no such folder, and --record none only replays; "
            "give the folder of the recordings (or record them with --record once)"
        )
    _open_audit(args.audit, "service")
    config = service_config(args, key)
    if config.max_cost is not None:
        spending = [args.judge or DEFAULT_JUDGE, *args.allow_judge]
        missing = config.prices.missing(1.0, spending, lambda option: _BATCH_OPTIONS[option])
        if missing:
            raise UsageError(f"--max-cost needs {' and '.join(missing)} to count the spend")
    access = "a key is required" if key else "no key (loopback only)"
    recording = (
        "" if args.record is None else f"; --record {args.record}, cassettes in {args.cassettes}"
    )
    print(
        f"citecheck serve: {access}; Host {', '.join(config.allowed_hosts)}; "
        f"URL policy {config.url_policy}{recording}",
        file=sys.stderr,
    )
    app = create_app(config)
    uvicorn.Server(uvicorn_config(app, config, host=args.host, port=args.port)).run()
    return EXIT_OK


def service_key(key_file: Path | None) -> str | None:
    """The service key: ``--key-file``, else the environment, else None (a usage error
    when it cannot be read or is too short)."""
    import os

    if key_file is not None:
        try:
            text = key_file.read_text(encoding="utf-8")
        except (OSError, UnicodeError) as exc:
            raise UsageError(f"--key-file {key_file}: cannot be read ({exc})") from None
        where = f"--key-file {key_file}"
    elif os.environ.get(sd.SERVICE_KEY_ENV, "").strip():
        text, where = os.environ[sd.SERVICE_KEY_ENV], sd.SERVICE_KEY_ENV
    else:
        return None
    try:
        return sd.check_key(text, where)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def allowed_hosts(host: str, extra: Sequence[str]) -> tuple[str, ...]:
    """The Host names served: loopback's, the address bound (unless a wildcard), ``extra``."""
    bound = [] if host in ("0.0.0.0", "::", "") else [host]
    names: list[str] = []
    for name in (*sd.LOOPBACK_HOSTS, *bound, *extra):
        if name.lower().strip("[]") not in names:
            names.append(name.lower().strip("[]"))
    return tuple(names)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
