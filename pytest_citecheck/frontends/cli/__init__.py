"""The ``citecheck`` console script: ``batch``, ``validate``, ``import``, ``recheck``,
``audit``, ``jobs``, ``serve``.

A thin front end over :mod:`pytest_citecheck.engine.core`, like the plugin: it maps
its options onto :class:`~pytest_citecheck.engine.settings.EngineSettings`, reads claim
files with the plugin's loader, and reports with the plugin's report and gate.

Exit codes: 0 the run passed, 1 the gate failed (or a record could not be
read, a claim file is invalid, or a stored page could not be found), 2 a usage
or configuration error.

One module per subcommand (``batch``, ``validate``, ``imports``, ``recheck``,
``audit``, ``serve``); ``parser`` builds the parser from the option table;
``common`` holds what they share (exit codes, :class:`UsageError`, the batch's terms).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pytest_citecheck.frontends.cli.audit import run_audit_list, run_audit_page
from pytest_citecheck.frontends.cli.batch import gate_settings, outputs, run_batch
from pytest_citecheck.frontends.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    UsageError,
    batch_terms,
    engine_settings,
)
from pytest_citecheck.frontends.cli.imports import run_import
from pytest_citecheck.frontends.cli.jobs import run_jobs_status
from pytest_citecheck.frontends.cli.parser import build_parser
from pytest_citecheck.frontends.cli.recheck import run_recheck
from pytest_citecheck.frontends.cli.serve import (
    allowed_hosts,
    run_serve,
    service_config,
    service_key,
)
from pytest_citecheck.frontends.cli.validate import run_validate

# What tests and docs reach through the package: the entry point, the parser, and the
# flags mapped onto each front end's settings.
__all__ = [
    "allowed_hosts",
    "batch_terms",
    "build_parser",
    "engine_settings",
    "gate_settings",
    "main",
    "outputs",
    "service_config",
    "service_key",
]


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
        if args.command == "jobs" and args.jobs_command == "status":
            return run_jobs_status(args)
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
