"""Documented import path (docs/): re-exports :mod:`pytest_citecheck.claims.models`."""

from pytest_citecheck.claims.models import *  # noqa: F403
