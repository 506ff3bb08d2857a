"""What the session writes on pytest's terminal while it runs: the recording
progress line, the interrupt notice, the dry run's listing. (The summary at the
end is :mod:`.report_hooks`'.)"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import pytest


class Progress:
    """The terminal, for the recording progress line, with output capture suspended."""

    def __init__(self, config: pytest.Config, terminal: Any, nodeid: str) -> None:
        self._terminal = terminal
        self._nodeid = nodeid
        self._verbose = config.get_verbosity() > 0
        self._capture = config.pluginmanager.get_plugin("capturemanager")
        self.isatty = bool(getattr(terminal, "isatty", False))

    def _free(self) -> Any:
        if self._capture is None:
            return nullcontext()
        return self._capture.global_and_fixture_disabled()

    def start(self) -> None:
        """On a terminal the progress overwrites the item's line (``file.yaml ``), which
        :meth:`done` writes again below it; in a log it starts a line of its own."""
        if not self.isatty:
            with self._free():
                self._terminal.ensure_newline()

    def rewrite(self, line: str, erase: bool = False) -> None:
        with self._free():
            self._terminal.rewrite(line, erase=erase)

    def write(self, text: str) -> None:
        with self._free():
            self._terminal.write(text)

    def write_line(self, line: str) -> None:
        with self._free():
            self._terminal.write_line(line)

    def done(self) -> None:
        """Start the item's line again (``file.yaml ``, or its node id with ``-v``) below
        ours: the terminal reporter then writes it, beginning with a line break."""
        with self._free():
            if hasattr(self._terminal, "currentfspath"):
                self._terminal.currentfspath = None
            if not self._verbose and hasattr(self._terminal, "write_fspath_result"):
                self._terminal.write_fspath_result(self._nodeid, "")


def progress(config: pytest.Config, nodeid: str) -> Progress | None:
    """Where recording progress goes: the terminal, unless ``-q``."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None or config.get_verbosity() < 0:
        return None
    return Progress(config, terminal, nodeid)


def write_between_items(config: pytest.Config, message: str) -> None:
    """A line on the terminal outside any progress line (quiet, or between items),
    with output capture suspended; nothing without a terminal."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return
    free: AbstractContextManager[Any] = (
        capture.global_and_fixture_disabled() if capture is not None else nullcontext()
    )
    with free:
        reporter.ensure_newline()
        reporter.write_line(message)


def print_lines(config: pytest.Config, lines: Sequence[str]) -> None:
    """Lines on the terminal (stdout without one): the dry run's listing."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is not None:
        terminal.ensure_newline()
        for line in lines:
            terminal.write_line(line)
    else:
        print("\n".join(lines))
