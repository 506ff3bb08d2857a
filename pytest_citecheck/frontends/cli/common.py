"""What the subcommands share: exit codes, the usage error, the flags' values by the
option table's names, how the batch names its flags, the claim files read for
``batch`` and ``recheck``, and the checks made before any work."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_citecheck.claims.models import Claim
from pytest_citecheck.core.defaults import BATCH_LIVE, DEFAULT_MAX_CLAIM_CHARS
from pytest_citecheck.core.record_mode import LIVE
from pytest_citecheck.core.terms import JUDGE_FROM_CLAIM, JUDGE_FROM_FLAG, Terms
from pytest_citecheck.options.table import OPTIONS, Flag, cli_terms

if TYPE_CHECKING:
    from pytest_citecheck.claims.loader import ClaimFile
    from pytest_citecheck.engine.core import Engine
    from pytest_citecheck.engine.settings import EngineSettings
    from pytest_citecheck.reports.finish import AuditRun


EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2
INTERRUPT_NOTICE = (
    "\ncitecheck: interrupted: no new claim starts; waiting for the claims in flight to finish"
)
# Ctrl-C: what finished was written, the claims not started cost nothing (128 + SIGINT).
EXIT_INTERRUPTED = 130


BATCH_SUFFIXES = (".jsonl", ".yaml", ".yml")


class UsageError(Exception):
    """Bad options or setup: printed as ``citecheck: ...``, exit code 2."""


def subcommands(
    parser: argparse.ArgumentParser, dest: str, metavar: str
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """``parser``'s sub-commands, named in ``dest``; a command line that names none
    prints ``parser``'s own help (its ``help_parser``)."""
    parser.set_defaults(help_parser=parser)
    return parser.add_subparsers(dest=dest, metavar=metavar)


def _values(args: argparse.Namespace) -> dict[str, Any]:
    """The settings ``args`` holds, by the option table's names (a subcommand's own
    flags only: a setting it lacks is left to the default of what it sets)."""
    values: dict[str, Any] = {}
    for option in OPTIONS:
        flag = option.flag_of(args.command)
        if isinstance(flag, Flag):
            value = getattr(args, flag.attr)
            if option.action == "append":
                value = tuple(value)
            elif value is not None and option.convert is not None:
                value = option.convert(value)
            values[option.name] = value
    return values


# -- the claim files of `batch` and `recheck` ---------------------------------------


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


# -- the flags onto the engine's, the gate's and the reports' settings --------------------
#
# The option table says which flag sets which field; options/settings_map.py maps them.
# tests/integration/test_settings_mapping.py fails when an engine or gate setting is
# neither mapped nor listed there as deliberately not exposed.


def engine_settings(args: argparse.Namespace, terms: Terms) -> EngineSettings:
    """``citecheck batch``'s and ``citecheck recheck``'s flags as the engine's settings.

    With ``--record live`` the batch is live (and has no cassette); the recheck has no
    ``--record`` (it replays, then fetches live: engine/recheck.py chooses)."""
    from pytest_citecheck.options.settings_map import engine_settings as mapped

    if getattr(args, "record", None) == BATCH_LIVE:
        args = argparse.Namespace(**{**vars(args), "record": None})
    values = _values(args)
    if "record_mode" in values and values["record_mode"] is None:
        values["record_mode"] = LIVE
    return mapped(values, judge_origin=JUDGE_FROM_FLAG if args.judge else None, terms=terms)


# -- checks made before any work, and the batch's words for its flags ------------------


def _check_record_options(args: argparse.Namespace) -> None:
    if args.cassettes is not None and args.record is None:
        raise UsageError("--cassettes needs --record MODE (use --record none to replay)")


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
