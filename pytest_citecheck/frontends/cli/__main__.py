"""``python -m pytest_citecheck.frontends.cli``: the ``citecheck`` console script."""

from pytest_citecheck.frontends.cli import main

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
