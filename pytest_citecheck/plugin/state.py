"""The :class:`~.session.CitecheckSession` of a pytest run, built on first use
(``--citecheck`` or the ``citecheck`` fixture) and found by every hook.

Light: the session module (pydantic, the engine) loads only when the session is
first built, so an idle run that imports this stays light.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

from pytest_citecheck.plugin.options import SETTINGS_KEY

if TYPE_CHECKING:
    from pytest_citecheck.plugin.session import CitecheckSession


def citecheck_session(config: pytest.Config) -> CitecheckSession:
    """The session object, built on first use (``--citecheck`` or the fixture)."""
    from pytest_citecheck.plugin.session import SESSION_KEY, CitecheckSession

    session = config.stash.get(SESSION_KEY, None)
    if session is None:
        from pytest_citecheck.core.secrets import install_log_scrubber

        install_log_scrubber()
        session = CitecheckSession(config, config.stash[SETTINGS_KEY])
        config.stash[SESSION_KEY] = session
    return session


def running_session(config: pytest.Config) -> CitecheckSession | None:
    """The session if one was built (never builds one: idle runs stay light)."""
    if "pytest_citecheck.plugin.session" not in sys.modules:
        return None
    from pytest_citecheck.plugin.session import SESSION_KEY

    return config.stash.get(SESSION_KEY, None)
