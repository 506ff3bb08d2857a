"""The modules the claim pool imports before its threads start exist (a renamed one
would fail every run), and none pulls in the embedding stack: this directory's
autouse fixture fails a unit test that loads torch or sentence-transformers."""

from __future__ import annotations

import importlib

from pytest_citecheck.engine.run_loop import USED_WHILE_VERIFYING


def test_every_module_imported_before_the_pool_starts_exists() -> None:
    for name in USED_WHILE_VERIFYING:
        assert importlib.import_module(name).__name__ == name
