"""Documented import path (README): re-exports :mod:`pytest_citecheck.claims.schema`."""

from pytest_citecheck.claims.schema import *  # noqa: F403
