"""Documented import path (docs/python.md): ``pytest_citecheck.judges.base``; the judges live in
:mod:`pytest_citecheck.stages.judges`."""
