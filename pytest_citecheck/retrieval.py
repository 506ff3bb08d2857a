"""Documented import path (docs/): re-exports :mod:`pytest_citecheck.stages.retrieval`."""

from pytest_citecheck.stages.retrieval import *  # noqa: F403
