"""Documented import path (docs/): re-exports :mod:`pytest_citecheck.recording.transport`."""

from pytest_citecheck.recording.transport import *  # noqa: F403
