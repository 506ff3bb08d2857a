"""Documented import path (README): ``pytest_citecheck.judges.base``; the judges live in
:mod:`pytest_citecheck.stages.judges`."""
