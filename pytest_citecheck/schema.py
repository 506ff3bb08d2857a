"""Documented import path (docs/): re-exports :mod:`pytest_citecheck.claims.schema`."""

from pytest_citecheck.claims.schema import *  # noqa: F403
