"""The pytest entry point: each hook hands its work to the object that does it.

Collection is :mod:`.items`', the session's hooks :class:`.session_hooks.SessionHooks`
(the start-up checks, the claims' run, xdist, the end), the terminal summary
:class:`.report_hooks.ReportHooks`, the recheck :class:`.recheck.RecheckHooks`;
all citecheck state is one :class:`.session.CitecheckSession`.

Merely installed, the plugin costs next to nothing (``bench/idle.py``): this
module imports only pytest and the option definitions. pydantic, the session,
the loader (yaml), the recorder, the judges and the embedding model load when
``--citecheck`` is given or the ``citecheck`` fixture is first used;
``bench/idle.py`` measures it.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_citecheck.plugin import items as _items
from pytest_citecheck.plugin import lifecycle
from pytest_citecheck.plugin.options import SETTINGS_KEY
from pytest_citecheck.plugin.options import pytest_addoption as pytest_addoption
from pytest_citecheck.plugin.results import carry_results

if TYPE_CHECKING:
    from pytest_citecheck.plugin.fixture import CitecheckFixture


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_citecheck.plugin import newhooks

    pluginmanager.add_hookspecs(newhooks)


def pytest_configure(config: pytest.Config) -> None:
    lifecycle.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    lifecycle.unconfigure()


@pytest.fixture
def citecheck(request: pytest.FixtureRequest) -> Iterator[CitecheckFixture]:
    """Verify claims and their citations; results join the citecheck session gate."""
    from pytest_citecheck.plugin.fixture import provide

    yield from provide(request)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    return _items.collect_file(file_path, parent)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Broken claim-file links become invalid items; first, so ``-k`` applies to them."""
    if config.stash[SETTINGS_KEY].enabled:
        _items.add_broken_links(session, config, items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "call" and "pytest_citecheck.plugin.session" in sys.modules:
        carry_results(item, call, report)  # a session exists: something of ours ran
    return report
