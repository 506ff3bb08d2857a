"""``citecheck audit list`` and ``citecheck audit page``: read the audit index."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from pytest_citecheck.core.providers import TokenKind, token_kind
from pytest_citecheck.core.terms import Terms
from pytest_citecheck.frontends.cli.common import EXIT_GATE_FAILED, EXIT_OK, UsageError
from pytest_citecheck.options.table import BY_NAME, COMMANDS, Flag


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


def crawled_with(args: argparse.Namespace) -> TokenKind | None:
    """The token kind to ask Storage with first: ``--crawled-with``, else the one the
    audit index recorded for the rid (storage may be kept per token)."""
    from pytest_citecheck.reports.audit import AuditError, AuditIndex

    given = token_kind(args.crawled_with)
    if given is not None:
        return given
    try:
        return AuditIndex(audit_path(args.audit), terms=audit_terms()).stored_with(args.rid)
    except AuditError as exc:
        raise UsageError(str(exc)) from None


def run_audit_page(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from pytest_citecheck.core.errors import ConfigurationError
    from pytest_citecheck.stages.storage import PageNotStored, StorageError, read_stored_page

    out = out or sys.stdout
    try:
        page = read_stored_page(args.rid, crawled_with=crawled_with(args))
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
