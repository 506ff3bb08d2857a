"""The start-up checks: before anything runs, a run that cannot record stops
with one usage error (a judge nobody builds, a missing key or token, a recheck
folder that cannot be written), instead of a failure per claim; and the dry run,
which lists what recording would do and runs nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_citecheck.plugin.items import claim_files, claim_items
from pytest_citecheck.plugin.options import SETTINGS_KEY, check_paths
from pytest_citecheck.plugin.report_hooks import is_worker
from pytest_citecheck.plugin.state import citecheck_session
from pytest_citecheck.plugin.terminal import print_lines
from pytest_citecheck.plugin.xdist import is_xdist_controller

if TYPE_CHECKING:
    from pytest_citecheck.claims.models import Claim
    from pytest_citecheck.plugin.session import CitecheckSession


def check_at_start(config: pytest.Config) -> None:
    """A judge named on the command line or in ini is built up front, so a typo
    is a usage error, not a failure per claim (keys: :func:`check_collected`);
    the baseline and the output paths are checked before anything runs."""
    settings = config.stash[SETTINGS_KEY]
    if not settings.enabled or is_worker(config):
        return
    baseline = check_paths(settings)
    citecheck = citecheck_session(config)
    citecheck.baseline = baseline
    if settings.judge:
        from pytest_citecheck.core.errors import ConfigurationError

        try:
            citecheck.judge(settings.judge)
        except (ValueError, ConfigurationError) as exc:
            where = (
                "ini option citecheck_judge"
                if settings.judge_origin == "ini"
                else ("--citecheck-judge")
            )
            raise pytest.UsageError(f"{where} {settings.judge}: {exc}") from None
    for member in settings.judges or ():
        from pytest_citecheck.core.errors import ConfigurationError

        try:
            citecheck.judge(member)
        except (ValueError, ConfigurationError) as exc:
            raise pytest.UsageError(f"judge panel member {member}: {exc}") from None
    if settings.dry_run and is_xdist_controller(config):
        raise pytest.UsageError(
            "--citecheck-dry-run lists the whole run in one process: drop -n/--numprocesses"
        )
    if settings.dry_run:
        return  # no request is made: no key or token is needed
    if not settings.record_mode.replay_only and is_xdist_controller(config):
        # Workers cannot stop the session cleanly: check keys before they start.
        preflight_files(citecheck)


def check_collected(session: pytest.Session) -> None:
    """Every key and token the selected claims need is checked once, here: one
    usage error naming the variables, instead of a failure per claim."""
    config = session.config
    settings = config.stash[SETTINGS_KEY]
    if not settings.enabled or config.option.collectonly or is_worker(config):
        return
    items = claim_items(session.items)
    if items and not settings.dry_run:
        preflight(citecheck_session(config), items)


def dry_run(session: pytest.Session) -> bool | None:
    """``--citecheck-dry-run``: print what recording would do; run nothing (True)."""
    config = session.config
    settings = config.stash[SETTINGS_KEY]
    if not settings.enabled or not settings.dry_run or is_worker(config):
        return None
    print_lines(config, dry_run_lines(citecheck_session(config), claim_items(session.items)))
    return True


def preflight(citecheck: CitecheckSession, items: Sequence[Any]) -> None:
    """Every key and token the selected claims need, checked once;
    raises ``pytest.UsageError`` naming the variables."""
    from pytest_citecheck.core.errors import ConfigurationError

    claims = {id(i.claim): i for i in items}
    try:
        citecheck.engine().preflight(
            [i.claim for i in items], cassette_for=lambda c: claims[id(c)].cassette
        )
    except ConfigurationError as exc:
        raise pytest.UsageError(f"citecheck cannot record:\n{exc}") from None
    if citecheck.settings.recheck:
        # The recheck records the live pages beside each cassette it replays.
        from pytest_citecheck.engine.recheck import recheck_folder_problems
        from pytest_citecheck.plugin.terms import PLUGIN_TERMS

        problems = recheck_folder_problems([i.cassette for i in items], PLUGIN_TERMS)
        if problems:
            listed = "\n".join(f"  - {p}" for p in problems)
            raise pytest.UsageError(f"--citecheck-recheck cannot save:\n{listed}")


def preflight_claim(citecheck: CitecheckSession, claim: Claim, cassette: Path) -> None:
    """The check of :func:`preflight` for one claim of the ``citecheck`` fixture
    (known only when its test runs): a missing key stops the session with the
    same usage error, before any request is made."""
    from pytest_citecheck.core.errors import ConfigurationError

    if citecheck.replaying:
        return
    try:
        citecheck.engine().preflight([claim], cassette_for=lambda _: cassette)
    except ConfigurationError as exc:
        message = f"citecheck cannot record:\n{exc}"
    else:
        return
    if is_worker(citecheck.config):
        # An xdist worker cannot end the session: the test fails with the message.
        pytest.fail(message, pytrace=False)
    pytest.exit(message, returncode=pytest.ExitCode.USAGE_ERROR)


class _Found:
    """A claim read by the xdist controller, with its cassette (as an item has)."""

    def __init__(self, claim: Claim, cassette: Path) -> None:
        self.claim, self.cassette = claim, cassette


def preflight_files(citecheck: CitecheckSession) -> None:
    """The xdist controller collects nothing, so it reads the claim files under
    the run's paths itself; workers then skip the check."""
    from pytest_citecheck.claims.loader import ClaimFileError, load_claim_file
    from pytest_citecheck.recording.recorder import cassette_path

    items = []
    for path in claim_files(citecheck.config, citecheck.settings.patterns):
        try:
            claims = load_claim_file(
                path, max_claim_chars=citecheck.settings.max_claim_chars, answers_apart=True
            ).claims
        except (ClaimFileError, OSError, RecursionError):
            continue  # reported as an invalid claim file by the worker
        items += [_Found(c, cassette_path(path, c.id)) for c in claims]
    if items:
        preflight(citecheck, items)


def dry_run_lines(citecheck: CitecheckSession, items: Sequence[Any]) -> list[str]:
    """What recording ``items``' claims would do (``--citecheck-dry-run``); no request."""
    claims = {id(i.claim): i for i in items}
    plan = citecheck.engine().plan(
        [i.claim for i in items],
        cassette_for=lambda c: claims[id(c)].cassette,
        name_for=lambda c: claims[id(c)].nodeid,
    )
    from pytest_citecheck.engine.estimate import LISTED
    from pytest_citecheck.plugin.terms import PLUGIN_TERMS

    verbose = citecheck.config.get_verbosity() > 0
    return plan.lines(
        citecheck.settings.prices, PLUGIN_TERMS, listed=None if verbose else LISTED, list_all="-v"
    )
