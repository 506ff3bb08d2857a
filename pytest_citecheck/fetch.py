"""Documented import path (docs/): re-exports :mod:`pytest_citecheck.stages.fetch`."""

from pytest_citecheck.stages.fetch import *  # noqa: F403
