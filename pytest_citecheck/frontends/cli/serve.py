"""``citecheck serve``: the service's flags checked, then FastAPI served by uvicorn."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_citecheck.core.defaults import DEFAULT_JUDGE, LOOPBACK_HOSTS
from pytest_citecheck.core.providers import SERVICE_KEY_ENV
from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.frontends.cli.common import (
    _BATCH_OPTIONS,
    EXIT_OK,
    UsageError,
    _check_record_options,
    _open_audit,
    _values,
)
from pytest_citecheck.frontends.service import defaults as sd

if TYPE_CHECKING:
    from pytest_citecheck.frontends.service.config import ServiceConfig


def service_config(args: argparse.Namespace, key: str | None) -> ServiceConfig:
    """``citecheck serve``'s flags as the service's configuration (``key``: the service
    key, read from ``--key-file`` or the environment)."""
    from pytest_citecheck.frontends.service.config import ServiceConfig

    return ServiceConfig.from_values(
        _values(args), api_key=key, allowed_hosts=allowed_hosts(args.host, args.allowed_host)
    )


def run_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from pytest_citecheck.frontends.service.app import create_app
        from pytest_citecheck.frontends.service.server import uvicorn_config
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
    if args.record is not None and not RecordMode(args.record).replay_only:
        _check_cassette_folder(args.cassettes)
    if args.jobs_dir is not None and not args.jobs_dir.is_dir():
        raise UsageError(
            f"--jobs-dir {args.jobs_dir}: no such folder; give the folder the audit's jobs "
            "are kept in (the one `citecheck batch --via-crawler` writes)"
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
    if args.jobs_dir is not None:
        recording += f"; Crawler deliveries for the jobs in {args.jobs_dir}"
    print(
        f"citecheck serve: {access}; Host {', '.join(config.allowed_hosts)}; "
        f"URL policy {config.url_policy}{recording}",
        file=sys.stderr,
    )
    app = create_app(config)
    uvicorn.Server(uvicorn_config(app, config, host=args.host, port=args.port)).run()
    return EXIT_OK


def _check_cassette_folder(folder: Path) -> None:
    """A recording service refuses to start with a cassette folder it could not save
    into (each request checks it again before anything is fetched: the disk may fill)."""
    from pytest_citecheck.core.terms import Terms
    from pytest_citecheck.engine.preflight import cassette_folder_problems
    from pytest_citecheck.options.table import cli_terms

    terms = Terms(options=cli_terms("serve"), replay="--record none")
    problems = cassette_folder_problems([folder], terms)
    if problems:
        raise UsageError(f"--cassettes {folder}: {'; '.join(problems)}")


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
    elif os.environ.get(SERVICE_KEY_ENV, "").strip():
        text, where = os.environ[SERVICE_KEY_ENV], SERVICE_KEY_ENV
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
    for name in (*LOOPBACK_HOSTS, *bound, *extra):
        if name.lower().strip("[]") not in names:
            names.append(name.lower().strip("[]"))
    return tuple(names)
