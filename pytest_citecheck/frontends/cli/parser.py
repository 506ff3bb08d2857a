"""``citecheck``'s argument parser: each subcommand's flags for the settings are
derived from the option table (options/table.py), ``import``'s and ``serve``'s own
flags too; the rest are positional (files, ``audit`` and ``jobs`` actions)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_citecheck import __version__
from pytest_citecheck.claims.labels import Label
from pytest_citecheck.core.argtypes import positive_int
from pytest_citecheck.core.providers import SERVICE_KEY_ENV
from pytest_citecheck.frontends.cli.common import BATCH_SUFFIXES, subcommands
from pytest_citecheck.options.table import OPTIONS, Flag, Hidden, add_flag

# -- argument types (validated at parse time) -------------------------------------------


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
        if isinstance(flag, Flag):
            add_flag(parser, option, flag)


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


class _Parser(argparse.ArgumentParser):
    """Says why a setting flag another subcommand takes is not this one's, instead of
    argparse's bare "unrecognized arguments"."""

    def parse_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = getattr(parsed, "command", None)
            why = None if command is None else elsewhere(command, extras)
            if why is not None:
                self._subparser(command).error(why)
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _subparser(self, command: str | None) -> argparse.ArgumentParser:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and command in action.choices:
                found: argparse.ArgumentParser = action.choices[command]
                return found
        return self


def elsewhere(command: str, extras: list[str]) -> str | None:
    """Why the first of ``extras`` that is another subcommand's setting flag is not
    ``command``'s, and where it is one (None: no such flag)."""
    for arg in extras:
        flag = arg.partition("=")[0]
        for option in OPTIONS:
            owners = [c for c, f in option.cli.items() if isinstance(f, Flag) and f.flag == flag]
            if not owners:
                continue
            hidden = option.flag_of(command)
            why = hidden.why if isinstance(hidden, Hidden) else "not a setting here"
            where = " and ".join(f"`citecheck {c}`" for c in owners)
            return f"{flag} is not a setting of `citecheck {command}` ({why}); it is one of {where}"
    return None


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = _Parser(
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
    commands = subcommands(parser, "command", "COMMAND")

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
        description="Check each claim file (citecheck_*.yaml|yml, or JSONL records "
        '{"id", "claim", "urls"}) against the claim schema, as pytest --citecheck does '
        "when it collects them, and print every problem with file:line and the fix. A "
        "folder is searched as pytest collects it (the ini's citecheck_patterns, "
        "norecursedirs); no PATH: the current folder (or the ini's testpaths). Nothing is "
        "fetched or judged. For pre-commit: see .pre-commit-hooks.yaml.",
        epilog="Exit codes: 0 every file is valid, 1 a file has a problem, 2 usage error.",
    )
    validate.add_argument(
        "files",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="claim files or folders (default: the current folder).",
    )
    _add_settings(validate, "validate")

    _add_recheck(commands)

    from pytest_citecheck.frontends.cli.jobs import add_jobs_parser

    add_jobs_parser(commands)

    audit = commands.add_parser(
        "audit",
        help="read the audit index, or re-read a stored page.",
        description="Read the SQLite audit index written by --audit / --citecheck-audit.",
    )
    audit_commands = subcommands(audit, "audit_command", "ACTION")
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
    page.add_argument(
        "--audit",
        type=Path,
        metavar="PATH",
        help="the audit file that says which token stored RID, asked first (default: "
        "$CITECHECK_AUDIT, else citecheck-audit.db).",
    )
    page.add_argument(
        "--crawled-with",
        choices=("normal", "javascript"),
        metavar="KIND",
        help="the token kind that crawled the page (normal or javascript), asked first; "
        "default: what the audit file says, else normal.",
    )

    importer = commands.add_parser(
        "import",
        help="turn saved LLM responses with native citations into a claim file.",
        description="Read saved responses (OpenAI Responses or Chat Completions, Anthropic "
        "Messages, Perplexity Sonar or Agent, Gemini (generateContent or Interactions), Cohere, "
        "Mistral, Bedrock Converse, xAI, "
        "or markdown; streams saved as their events; whole conversations; OTLP JSON trace "
        "exports of GenAI or OpenInference spans; Inspect AI eval logs, a sample an answer) "
        "and write a claim file: one claim per "
        "cited sentence, its citations the URLs or documents cited for it, uncited sentences "
        "as comments. RESPONSES are .json files (one response, a list, or one stream's "
        "events), .jsonl files (one a line), markdown files (.md, .markdown, .txt), Inspect "
        ".eval logs, or folders (with their subfolders) of .json, .jsonl, .md and .eval "
        "files. A response that "
        "cannot be imported is "
        "reported with where and why; the others are still written.",
        epilog="Exit codes: 0 written, 1 written without the responses that could not be "
        "imported, 2 usage error.",
    )
    importer.add_argument(
        "responses", nargs="+", type=Path, metavar="RESPONSES", help="saved responses."
    )
    _add_settings(importer, "import")

    serve = commands.add_parser(
        "serve",
        help="serve POST /verify and GET /health over HTTP (extra `service`).",
        description="Serve verification over HTTP with FastAPI and uvicorn: POST /verify "
        '{"claim", "urls", "judge"?}, GET /health, OpenAPI at /docs. Needs '
        "pip install 'pytest-citecheck[service]'. Every request is checked before "
        "anything is spent: Host header, service key, JSON body, caps, judge allow-list, "
        "URL policy. With --jobs-dir, also POST /crawler/deliveries: the webhook of "
        "Crawlbase's Crawler for large audits.",
        epilog=f"Off loopback a key is required: set {SERVICE_KEY_ENV} or --key-file. "
        "Clients send it as `Authorization: Bearer <key>` (the Crawler, which cannot send "
        "headers, as ?key=<key> in its webhook URL).",
    )
    _add_settings(serve, "serve")
    return parser
