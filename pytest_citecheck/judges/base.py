"""Documented import path (docs/): re-exports :mod:`pytest_citecheck.stages.judges.base`."""

from pytest_citecheck.stages.judges.base import *  # noqa: F403
