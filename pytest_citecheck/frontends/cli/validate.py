"""``citecheck validate``: claim files checked against the schema, offline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from pytest_citecheck.core.text import plural as _plural
from pytest_citecheck.frontends.cli.common import EXIT_GATE_FAILED, EXIT_OK


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
