"""Documented import path (README): re-exports :mod:`pytest_citecheck.stages.fetch`."""

from pytest_citecheck.stages.fetch import *  # noqa: F403
