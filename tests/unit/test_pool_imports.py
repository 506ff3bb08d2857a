"""The modules the claim pool imports before its threads start exist, and none of
them pulls in the embedding stack (replay must stay light)."""

from __future__ import annotations

import importlib
import sys

from pytest_citecheck.engine.pool import USED_WHILE_VERIFYING


def test_every_module_imported_before_the_pool_starts_exists_and_is_light() -> None:
    for name in USED_WHILE_VERIFYING:
        importlib.import_module(name)
    assert "torch" not in sys.modules
    assert "sentence_transformers" not in sys.modules
