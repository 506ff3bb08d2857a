"""The engine: verifies many claims concurrently, with no pytest (docs/architecture.md).

The engine is :mod:`pytest_citecheck.engine.core` (``Engine``) with its settings in
:mod:`pytest_citecheck.engine.settings`; scripts reach both through the public face,
:mod:`pytest_citecheck.api`.
"""
