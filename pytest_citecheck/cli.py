"""The ``citecheck`` console script (reserved: the batch command of DESIGN §8 comes later).

Until then it says so and points at the plugin, instead of pretending to work.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        from pytest_citecheck import __version__

        print(f"citecheck {__version__}")
        return 0
    print(
        "citecheck: the batch command is not available yet; run `pytest --citecheck` "
        "to verify claim files.",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
