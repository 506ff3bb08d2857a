"""pytest-xdist coordination: what a worker tells the controller, and what it knows.

Every worker collects (and deselects) every item; each hands its counts to the
controller in ``workeroutput``, which keeps them once. A worker's claims to record
ahead are the ones the controller has already sent it. Light: pytest only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pytest_citecheck.plugin.options import SETTINGS_KEY
from pytest_citecheck.plugin.report_hooks import is_worker

# The key of an xdist worker's ``workeroutput`` that carries its deselected claim items.
DESELECTED_KEY = "citecheck_deselected"
# ... and the node ids of the claim items it selected (every worker collects them all).
SELECTED_KEY = "citecheck_selected"


class SelectionCounts:
    """The claim items deselected (-k, -m, --lf: the gate then judges a part of the
    claims) and the node ids of those selected (None: not known)."""

    def __init__(self) -> None:
        self.deselected = 0
        self.selected: set[str] | None = None

    def both(self) -> tuple[int, set[str] | None]:
        return self.deselected, self.selected

    def deselect(self, claims: int) -> None:
        self.deselected += claims

    def from_worker(self, node: Any) -> None:
        """A worker is done: its counts, kept once (every worker counts them all)."""
        output = getattr(node, "workeroutput", {})
        count = output.get(DESELECTED_KEY)
        if isinstance(count, int):
            self.deselected = max(self.deselected, count)
        selected = output.get(SELECTED_KEY)
        if isinstance(selected, list):
            self.selected = (self.selected or set()) | {str(n) for n in selected}

    def collected(self, config: pytest.Config, claims: Sequence[str]) -> None:
        """Collection is done (``claims``: the claim items' node ids): a worker hands
        its counts on; the controller (or a run without xdist) keeps the selected."""
        if is_worker(config):
            output: dict[str, Any] = config.workeroutput  # type: ignore[attr-defined]
            output[DESELECTED_KEY] = self.deselected
            if _enabled(config):
                output[SELECTED_KEY] = list(claims)
            return
        if _enabled(config) and not config.option.collectonly:
            self.selected = set(claims)


def _enabled(config: pytest.Config) -> bool:
    return bool(config.stash[SETTINGS_KEY].enabled)


def is_xdist_controller(config: pytest.Config) -> bool:
    return not is_worker(config) and bool(getattr(config.option, "numprocesses", None))


def worker_upcoming(item: pytest.Item) -> list[pytest.Item]:
    """This item and the ones the xdist controller has already sent this worker."""
    interactor = next(
        (
            p
            for p in item.config.pluginmanager.get_plugins()
            if type(p).__name__ == "WorkerInteractor" and hasattr(p, "torun")
        ),
        None,
    )
    if interactor is None:
        return [item]
    items = item.session.items
    try:
        with interactor.torun.lock() as queue:
            indices = [interactor.nextitem_index, *queue]
    except Exception:  # a newer xdist: fall back to one claim at a time
        return [item]
    return [item] + [items[i] for i in indices if isinstance(i, int) and 0 <= i < len(items)]
