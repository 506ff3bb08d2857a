"""The engine: verifies many claims concurrently, with no pytest (docs/architecture.md).

``from pytest_citecheck.engine import Engine, EngineSettings`` is the documented API;
the implementation is in :mod:`pytest_citecheck.engine.core`.
"""

from pytest_citecheck.engine.core import Engine as Engine
from pytest_citecheck.engine.core import EngineSettings as EngineSettings
from pytest_citecheck.engine.core import StageHooks as StageHooks

__all__ = ["Engine", "EngineSettings", "StageHooks"]
