"""The failure policy: what fails a claim, which bars a run must clear.

One place: :func:`claim_problems` (a claim's test item) and :func:`evaluate`
(the session) apply the same rules in the same words. Pure: takes results or
totals and settings, returns the failures as sentences. The plugin sets the exit
status and prints them.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_citecheck.claims.labels import BAD_LABELS, Label, Reason
from pytest_citecheck.claims.results import ClaimResult
from pytest_citecheck.core.defaults import DEFAULT_GATE_SCOPE, DEFAULT_MAX_DROP
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.core.text import plural
from pytest_citecheck.engine.aggregate import AnswerTotals, Totals
from pytest_citecheck.engine.rates import RATE_NAMES


@dataclass(frozen=True)
class GateSettings:
    min_precision: float | None = None
    min_reachable_precision: float | None = None
    allow_contradicted: bool = False
    strict_review: bool = False
    # A conversation's citation of a URL no tool result returned fails.
    fail_not_retrieved: bool = False
    max_drop: float = DEFAULT_MAX_DROP
    # Supported claims over all claims of imported answers (None: no floor).
    min_answer_support: float | None = None
    # ALCE citation recall of imported answers, the mean over answers (None: no floor).
    min_citation_recall: float | None = None
    # The deep-research audit's rates over the run's citations (engine/rates.py): the
    # link works, the page is relevant, the fact checks (None: no floor).
    min_link_works: float | None = None
    min_relevant: float | None = None
    min_fact_check: float | None = None
    # How the failures name the bars (the front end's words).
    terms: Terms = NEUTRAL
    # Floor on the share of panel-judged citations that were unanimous (engine/panel.py).
    min_agreement: float | None = None
    # A run of a part of the suite: "subset" shows the floors it misses without failing
    # on them (they are the whole suite's), "full" applies them.
    gate_scope: str = DEFAULT_GATE_SCOPE


class BaselineError(Exception):
    """The baseline report cannot be used; the message says why and how to fix it."""


@dataclass(frozen=True)
class Baseline:
    """What a run compares with: a saved JSON report's precision and claim labels."""

    precision: float
    # Claim labels by node id (records without both fields are skipped).
    labels: dict[str, str]
    # Each claim's citation labels by node id: the baseline's figures over any claims.
    verdicts: dict[str, list[str]] = field(default_factory=dict)

    def precision_over(self, nodeids: Iterable[str]) -> float | None:
        """The baseline's citation precision over the claims ``nodeids`` only: a partial
        run (``-k``, ``--lf``) is compared with the baseline over the same claims, not
        its whole run. None when the baseline has no verdicts for any of them."""
        labels = [label for nodeid in set(nodeids) for label in self.verdicts.get(nodeid, [])]
        if not labels:
            return None
        return sum(1 for label in labels if label == Label.SUPPORTED.value) / len(labels)


def load_baseline_precision(path: Path, terms: Terms = NEUTRAL) -> float:
    """Citation precision stored in a JSON report (:func:`read_baseline`)."""
    return read_baseline(path, terms).precision


def read_baseline(path: Path, terms: Terms = NEUTRAL) -> Baseline:
    """The one parser of a baseline report, validated.

    Checked at start-up (a bad baseline is a usage error, not a traceback after
    the run): a number in [0, 1]; NaN, null, text, lists and folders are refused.
    """
    write_baseline = f"write one with {terms.option('report')} from a run you trust"
    if path.is_dir():
        raise BaselineError(f"baseline {path} is a folder, not a JSON report; {write_baseline}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"baseline {path} does not exist; {write_baseline}") from None
    except OSError as exc:
        raise BaselineError(f"baseline {path} cannot be read: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, absurd nesting
        raise BaselineError(
            f"baseline {path} is not a citecheck JSON report ({type(exc).__name__}); "
            f"{write_baseline}"
        ) from None
    totals = data.get("totals") if isinstance(data, dict) else None
    if not isinstance(totals, dict) or "citation_precision" not in totals:
        raise BaselineError(
            f"baseline {path} is not a citecheck JSON report (no totals.citation_precision); "
            f"{write_baseline}"
        )
    value = totals["citation_precision"]
    if value is None:
        raise BaselineError(
            f"baseline {path} has no citation precision (null: that run verified no "
            f"citations), so there is nothing to compare with; {write_baseline}"
        )
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BaselineError(
            f"baseline {path}: totals.citation_precision is {json.dumps(value)[:40]}, not a "
            f"number; {write_baseline}"
        )
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise BaselineError(
            f"baseline {path}: totals.citation_precision is {value}, not a number between "
            f"0 and 1; {write_baseline}"
        )
    gate = data.get("gate")
    if isinstance(gate, dict) and gate.get("decided") is False:
        why = gate.get("stopped_by") or "the run stopped"
        n = gate.get("not_started")
        left = f"; {n} claims not started" if isinstance(n, int) else ""
        raise BaselineError(
            f"baseline {path} is from a run that stopped early ({why}{left}), so its "
            "precision covers only the claims that ran; write one with "
            f"{terms.option('report')} from a run that finished"
        )
    claims = data.get("claims", [])
    labels = {
        str(c["nodeid"]): str(c["label"])
        for c in (claims if isinstance(claims, list) else [])
        if isinstance(c, dict) and "nodeid" in c and "label" in c
    }
    verdicts = {
        str(c["nodeid"]): [
            str(v.get("label")) for v in c.get("verdicts") or [] if isinstance(v, dict)
        ]
        for c in (claims if isinstance(claims, list) else [])
        if isinstance(c, dict) and "nodeid" in c and isinstance(c.get("verdicts"), list)
    }
    return Baseline(float(value), labels, verdicts)


# -- the failure policy: what fails a claim and the session ------------------


def _failing_labels(settings: GateSettings) -> tuple[Label, ...]:
    """Labels that fail a claim and the session; ``error`` always (never verified)."""
    if settings.allow_contradicted:
        return (Label.ERROR,)
    return (Label.ERROR, *sorted(BAD_LABELS))


def claim_problems(result: ClaimResult, settings: GateSettings) -> list[str]:
    """Why this claim's test item fails; empty when it passes.

    The one failure policy for a claim: the session gate (:func:`evaluate`)
    applies the same rules to the totals, in the same words. An ``expect`` on
    the claim replaces the contradicted/fabricated rule (the test says what it
    expects); an error is never expected.
    """
    verdicts = result.verdicts
    counts = Counter(v.label for v in verdicts)
    out = _label_problems(counts, settings, per="claim" if result.expect is None else "expect")
    if result.expect is not None and result.label is not result.expect:
        out.append(f"claim label is {result.label.value}, expected {result.expect.value}")
    out += _flagged_problems(
        sum(v.review for v in verdicts), sum(v.url_not_retrieved for v in verdicts), settings
    )
    return out


def _label_problems(counts: Mapping[Label, int], settings: GateSettings, per: str) -> list[str]:
    """``per`` is "session", "claim", or "expect" (a claim whose test names its label)."""
    out = []
    contradicted = counts.get(Label.CONTRADICTED, 0)
    fabricated = counts.get(Label.FABRICATED, 0)
    judged_by_label = per != "expect" and Label.CONTRADICTED in _failing_labels(settings)
    if judged_by_label and (contradicted or fabricated):
        # Only the kinds found: a made-up quote alone is "1 citation fabricated".
        found = [
            (n, kind)
            for n, kind in ((contradicted, "contradicted"), (fabricated, "fabricated"))
            if n
        ]
        (n, kind), rest = found[0], found[1:]
        said = f"{plural(n, 'citation')} {kind}" + "".join(f" and {m} {k}" for m, k in rest)
        out.append(f"{said} (allow with {settings.terms.option('allow_contradicted')})")
    errors = counts.get(Label.ERROR, 0)
    if errors:
        out.append(
            f"{plural(errors, 'citation')} could not be verified (error); an error never "
            "counts as verified"
        )
    return out


def _flagged_problems(review: int, not_retrieved: int, settings: GateSettings) -> list[str]:
    """What the gate's flags fail: verdicts that need review (``strict_review``) and
    citations of a URL no tool result returned (``fail_not_retrieved``)."""
    out = []
    if settings.strict_review and review:
        out.append(
            f"{plural(review, 'verdict')} below the confidence gate need review "
            f"({settings.terms.option('strict_review')})"
        )
    if settings.fail_not_retrieved and not_retrieved:
        out.append(
            f"{plural(not_retrieved, 'citation')} cite a URL that no tool result of the "
            f"conversation returned ({Reason.URL_NOT_RETRIEVED}; "
            f"{settings.terms.option('fail_not_retrieved')})"
        )
    return out


def _below(what: str, value: float, bar: str, floor: float, detail: str = "") -> str:
    """``citation precision 0.5000 is below --x 0.8000 (short by 0.3000)``."""
    return f"{what} {value:.4f}{detail} is below {bar} {floor:.4f} (short by {floor - value:.4f})"


def evaluate(
    totals: Totals,
    settings: GateSettings,
    baseline_precision: float | None = None,
    answers: AnswerTotals | None = None,
    subset: bool = False,
) -> list[str]:
    """Return one sentence per missed bar; empty when the run passes. A ``subset``
    run (a part of the suite) is held to the suite's floors only as
    :func:`floors_apply` says (:func:`floors_shown` words the ones it misses).

    ``answers``: the imported answers' totals; a run without answers has no answer
    support and no citation recall, so their floors are not bars there.
    """
    failures = floor_failures(totals, settings, answers) if floors_apply(settings, subset) else []
    name = settings.terms.option
    precision = totals.citation_precision
    counts = {label: totals.count(label) for label in Label}
    failures += _label_problems(counts, settings, per="session")
    failures += _flagged_problems(totals.review, totals.url_not_retrieved, settings)
    if baseline_precision is not None and precision is not None:
        drop = baseline_precision - precision
        if drop > settings.max_drop + 1e-12:
            failures.append(
                f"citation precision fell by {drop:.4f}, from the baseline "
                f"{baseline_precision:.4f} to {precision:.4f} ({name('max_drop')} "
                f"{settings.max_drop:.4f})"
            )
    return failures


def floors_apply(settings: GateSettings, subset: bool) -> bool:
    """The suite's floors fail a run of the whole suite, and a run of a part of it
    only when ``gate_scope`` is full: a part may sit below the whole's figures."""
    return not subset or settings.gate_scope == "full"


def floors_shown(
    totals: Totals, settings: GateSettings, answers: AnswerTotals | None, subset: bool
) -> list[str]:
    """The floors a run of a part of the suite misses without failing on them."""
    if floors_apply(settings, subset):
        return []
    full = f"{settings.terms.option('gate_scope')}=full"
    return [
        f"{floor}: not applied to a part of the suite ({full} applies it)"
        for floor in floor_failures(totals, settings, answers)
    ]


def floor_failures(
    totals: Totals, settings: GateSettings, answers: AnswerTotals | None = None
) -> list[str]:
    """The suite-wide floors the run's figures are below, one sentence each."""
    failures: list[str] = []
    name = settings.terms.option
    precision = totals.citation_precision
    floor = settings.min_precision
    if floor is not None and precision is not None and precision < floor:
        failures.append(_below("citation precision", precision, name("min_precision"), floor))
    reachable = totals.reachable_precision
    if settings.min_reachable_precision is not None and totals.citations:
        if reachable is None:
            failures.append(
                "reachable precision is undefined (every citation is unreachable) and "
                f"{name('min_reachable_precision')} is {settings.min_reachable_precision:.4f}"
            )
        elif reachable < settings.min_reachable_precision:
            bar = name("min_reachable_precision")
            failures.append(
                _below("reachable precision", reachable, bar, settings.min_reachable_precision)
            )
    support = answers.support if answers is not None else None
    floor = settings.min_answer_support
    if floor is not None and answers is not None and support is not None and support < floor:
        answered = plural(answers.answers, "answer")
        of = f" ({answers.supported}/{answers.claims} claims of {answered})"
        failures.append(_below("answer support", support, name("min_answer_support"), floor, of))
    recall = answers.citation_recall if answers is not None else None
    floor = settings.min_citation_recall
    if floor is not None and answers is not None and recall is not None and recall < floor:
        of = f" (mean over {plural(answers.answers, 'answer')})"
        bar = name("min_citation_recall")
        failures.append(_below("ALCE citation recall", recall, bar, floor, of))
    failures += _rate_failures(totals, settings)
    agreement = totals.agreement
    floor_agreement = settings.min_agreement
    if floor_agreement is not None and agreement is not None and agreement < floor_agreement:
        failures.append(
            f"panel agreement {agreement:.4f} ({totals.unanimous}/{totals.panel_citations} "
            f"citations unanimous) is below {name('min_agreement')} {floor_agreement:.4f}"
        )
    return failures


def _rate_failures(totals: Totals, settings: GateSettings) -> list[str]:
    """The deep-research rates below their floors: ``link works rate 0.8000 (8/10
    citations) is below --x 0.9000 (short by 0.1000)``."""
    failures = []
    found = totals.rates
    for rate, floor in (
        ("link_works", settings.min_link_works),
        ("relevant", settings.min_relevant),
        ("fact_check", settings.min_fact_check),
    ):
        value = found.rate(rate)
        if floor is not None and value is not None and value < floor:
            of = f" ({found.count(rate)}/{found.rated} citations)"
            bar = settings.terms.option(f"min_{rate}")
            failures.append(_below(f"{RATE_NAMES[rate]} rate", value, bar, floor, of))
    return failures


def budget_failures(results: Iterable[ClaimResult], terms: Terms = NEUTRAL) -> list[str]:
    """The run stopped at its budget: how many claims were not recorded and how to."""
    stopped = [r for r in results if any(v.reason == Reason.BUDGET_EXHAUSTED for v in r.verdicts)]
    if not stopped:
        return []
    return [
        f"{plural(len(stopped), 'claim')} not recorded: the recording budget "
        f"({terms.option('max_cost')} / {terms.option('max_credits')}) ran out (reason "
        "budget_exhausted); raise it, or record the rest later: each claim's error names "
        "the command"
    ]


# -- the gate's verdict, in every report ------------------------------------------

GATE_PASSED = "passed"
GATE_FAILED = "FAILED"
GATE_NOT_DECIDED = "not decided"
# The terminal's last line, and the reports' note, when the gate is not decided.
NOT_DECIDED_WHY = "the run stopped early"


def gate_verdict(failures: Iterable[str], not_started: int | None) -> str:
    """FAILED on any failure (what did run can fail a run); ``not decided`` when
    claims were never started (Ctrl-C, ``-x``; None: some, not counted): a part of
    the claims passing does not pass the run; else passed."""
    if any(True for _ in failures):
        return GATE_FAILED
    return GATE_PASSED if not_started == 0 else GATE_NOT_DECIDED


def gate_title(gate: Mapping[str, object]) -> str:
    """The verdict of a report's ``gate`` block (a report from before ``decided``
    existed was decided)."""
    if gate.get("failures"):
        return GATE_FAILED
    return GATE_PASSED if gate.get("decided", True) else GATE_NOT_DECIDED


def stopped_text(gate: Mapping[str, object]) -> str:
    """``The run stopped early (interrupted): 6 claims were not started; nothing was
    billed for them.`` -- a report's note on a ``gate`` block with ``not_started``."""
    n = gate.get("not_started")
    why = gate.get("stopped_by") or "the run stopped"
    if n is None:
        return f"{NOT_DECIDED_WHY.capitalize()} ({why}): claims that never ran are not counted."
    claims = "claim was" if n == 1 else "claims were"
    return (
        f"{NOT_DECIDED_WHY.capitalize()} ({why}): {n} {claims} not started; "
        "nothing was billed for them."
    )
