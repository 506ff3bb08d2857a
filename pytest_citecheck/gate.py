"""The session gate (DESIGN §6): which bars a run must clear, and by how much it missed.

Pure: takes totals and settings, returns the failures as sentences. The plugin
sets the exit status and prints them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pytest_citecheck.aggregate import Totals
from pytest_citecheck.models import Label


@dataclass(frozen=True)
class GateSettings:
    min_precision: float | None = None
    min_reachable_precision: float | None = None
    allow_contradicted: bool = False
    strict_review: bool = False
    max_drop: float = 0.0


class BaselineError(Exception):
    """The baseline report cannot be read."""


def load_baseline_precision(path: Path) -> float | None:
    """Citation precision stored in a ``--citecheck-report`` JSON file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        value = data["totals"]["citation_precision"]
    except FileNotFoundError:
        raise BaselineError(f"baseline {path} does not exist") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise BaselineError(
            f"baseline {path} is not a citecheck JSON report ({type(exc).__name__}: {exc}); "
            "write one with --citecheck-report"
        ) from None
    return None if value is None else float(value)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def evaluate(
    totals: Totals, settings: GateSettings, baseline_precision: float | None = None
) -> list[str]:
    """Return one sentence per missed bar; empty when the run passes."""
    failures: list[str] = []
    precision = totals.citation_precision
    floor = settings.min_precision
    if floor is not None and precision is not None and precision < floor:
        failures.append(
            f"citation precision {precision:.4f} is below citecheck_min_precision "
            f"{floor:.4f} (short by {floor - precision:.4f})"
        )
    reachable = totals.reachable_precision
    if settings.min_reachable_precision is not None and totals.citations:
        if reachable is None:
            failures.append(
                "reachable precision is undefined (every citation is unreachable) and "
                f"citecheck_min_reachable_precision is {settings.min_reachable_precision:.4f}"
            )
        elif reachable < settings.min_reachable_precision:
            failures.append(
                f"reachable precision {reachable:.4f} is below "
                f"citecheck_min_reachable_precision {settings.min_reachable_precision:.4f} "
                f"(short by {settings.min_reachable_precision - reachable:.4f})"
            )
    bad = totals.count(Label.CONTRADICTED) + totals.count(Label.FABRICATED)
    if bad and not settings.allow_contradicted:
        failures.append(
            f"{_plural(totals.count(Label.CONTRADICTED), 'citation')} contradicted and "
            f"{totals.count(Label.FABRICATED)} fabricated (allow with "
            "citecheck_allow_contradicted)"
        )
    errors = totals.count(Label.ERROR)
    if errors:
        failures.append(
            f"{_plural(errors, 'citation')} could not be verified (error); an error never "
            "counts as verified"
        )
    if settings.strict_review and totals.review:
        failures.append(
            f"{_plural(totals.review, 'verdict')} below the confidence gate need review "
            "(--citecheck-strict-review)"
        )
    if baseline_precision is not None and precision is not None:
        drop = baseline_precision - precision
        if drop > settings.max_drop + 1e-12:
            failures.append(
                f"citation precision fell by {drop:.4f}, from the baseline "
                f"{baseline_precision:.4f} to {precision:.4f} (citecheck_max_drop "
                f"{settings.max_drop:.4f})"
            )
    return failures
