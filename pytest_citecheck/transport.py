"""Documented import path (README): re-exports :mod:`pytest_citecheck.recording.transport`."""

from pytest_citecheck.recording.transport import *  # noqa: F403
