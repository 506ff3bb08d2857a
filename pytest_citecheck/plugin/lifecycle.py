"""The plugin's start and end: the settings read and the hook plugins registered
at configure time (the session, when ``--citecheck`` is given); the log scrubber
removed at unconfigure.

Light (pytest and the options only): an idle run imports it with the hooks.
"""

from __future__ import annotations

import sys

import pytest

from pytest_citecheck.plugin.options import SETTINGS_KEY, settings_from_config
from pytest_citecheck.plugin.report_hooks import ReportHooks
from pytest_citecheck.plugin.state import citecheck_session


def configure(config: pytest.Config) -> None:
    """Read the settings and register the session, report and recheck hooks."""
    from pytest_citecheck.plugin.session_hooks import SessionHooks

    settings = settings_from_config(config)
    config.stash[SETTINGS_KEY] = settings
    config.pluginmanager.register(SessionHooks(config), "citecheck-session")
    config.pluginmanager.register(ReportHooks(config, settings), "citecheck-reports")
    if settings.enabled:
        citecheck_session(config)
        if settings.recheck:
            from pytest_citecheck.plugin.recheck import RecheckHooks

            config.pluginmanager.register(RecheckHooks(config, settings), "citecheck-recheck")


def unconfigure() -> None:
    """The log scrubber goes, if a session installed it."""
    if "pytest_citecheck.core.secrets" in sys.modules:
        from pytest_citecheck.core.secrets import uninstall_log_scrubber

        uninstall_log_scrubber()
