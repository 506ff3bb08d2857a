"""A judge panel's vote: several guarded verdicts for one citation become one.

Each member's reply has already passed the guard on its own
(:func:`pytest_citecheck.stages.guard.guard`): a member whose quote is not in
the source votes ``not_found`` with its reason kept. A member that failed (a
refusal, invalid JSON, an unreachable API) votes ``error``: it is counted
like every other vote, never dropped, so it cannot tip a majority by its
absence. Then the rule (:data:`RULES`) decides:

- ``majority`` (the default): the label more than half the members voted.
  Without one (a tie, or votes spread thin), the citation is ``not_found``,
  reason ``panel_no_majority`` -- or ``error`` when a member failed, since the
  missing vote might have decided it.
- ``unanimous``: the label every member voted. Otherwise ``not_found``,
  reason ``panel_not_unanimous`` -- or ``error`` when a member failed.

A panel needs votes: a member that failed gave none. When fewer members answered
than ``min_votes`` (``citecheck_panel_min_votes``; default every member), the
citation is ``error``, reason ``panel_incomplete``, naming each failed member and
why -- a majority of the members that happened to answer is not the panel's.
With enough votes, the rule decides as above, the failed member still counted.

A citation is marked for review when the panel did not agree (unless it is
``error``, which fails the run anyway): no majority, not unanimous, a member
voted ``error``, or members voted both ``supported`` and ``contradicted``
(then reason ``panel_supported_and_contradicted`` unless the label is decided
otherwise). The verdict's confidence is the panel's
agreement: the share of members that voted the label it reports (each
member's own confidence stays in :attr:`~pytest_citecheck.claims.results.Verdict.panel`),
so the confidence gate (``citecheck_review_below``) also sends a 2-of-3
majority to review at the default 0.8.

Pure and deterministic: a replayed panel decides what the recorded one did.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import PanelVote
from pytest_citecheck.core.defaults import DEFAULT_PANEL_RULE as DEFAULT_RULE
from pytest_citecheck.core.defaults import PANEL_RULES as RULES
from pytest_citecheck.core.text import plural, truncate

_DECISIVE = (Label.SUPPORTED, Label.CONTRADICTED)
# Ends the detail of a ``panel_incomplete`` verdict that was not saved to its cassette.
NOT_RECORDED = "; not recorded"


@dataclass(frozen=True)
class Decision:
    """What the panel decided for one citation."""

    label: Label
    confidence: float  # share of members that voted ``label``
    review: bool
    reason: str | None  # the panel's own reason, or the first deciding member's
    evidence_quote: str | None
    detail: str


def member_names(names: Sequence[str]) -> list[str]:
    """Each member's name as every listing shows it: a judge asked more than once
    (samples) is numbered, ``smollm2#1``, ``smollm2#2``; a judge asked once keeps
    its name."""
    counts = Counter(names)
    seen: Counter[str] = Counter()
    out = []
    for name in names:
        seen[name] += 1
        out.append(f"{name}#{seen[name]}" if counts[name] > 1 else name)
    return out


def judge_of(member: str) -> str:
    """The judge a member name (:func:`member_names`) belongs to: ``smollm2#2`` -> ``smollm2``."""
    name, sep, number = member.rpartition("#")
    return name if sep and number.isdigit() else member


def failures(votes: Sequence[PanelVote]) -> str:
    """The members that failed and why: ``c failed (judge_unavailable: could not reach ...)``."""
    return "; ".join(
        f"{v.judge} failed ({v.reason}: {v.detail})"
        if v.detail
        else f"{v.judge} failed ({v.reason})"
        for v in votes
        if v.label is Label.ERROR
    )


def decide(
    votes: Sequence[PanelVote], rule: str = DEFAULT_RULE, min_votes: int | None = None
) -> Decision:
    """Apply ``rule`` to ``votes`` (one per member, in panel order); ``min_votes``:
    the members that must have answered (None: all)."""
    if rule not in RULES:
        raise ValueError(f"panel rule {rule!r}: use one of {', '.join(RULES)}")
    if not votes:
        raise ValueError("a panel needs at least one vote")
    counts = Counter(v.label for v in votes)
    n = len(votes)
    failed = counts[Label.ERROR] > 0
    needed = n if min_votes is None else min(min_votes, n)
    answered = n - counts[Label.ERROR]
    if answered < needed:
        return Decision(
            label=Label.ERROR,
            confidence=round(counts[Label.ERROR] / n, 4),
            review=False,
            reason=Reason.PANEL_INCOMPLETE,
            evidence_quote=None,
            detail=f"the panel got {answered} of the {needed} votes it needs: {failures(votes)}",
        )
    split = all(counts[label] for label in _DECISIVE)
    top, top_count = counts.most_common(1)[0]
    if rule == "unanimous":
        agreed: Label | None = top if top_count == n else None
        fallback_reason = Reason.PANEL_NOT_UNANIMOUS
    else:
        agreed = top if top_count * 2 > n else None
        fallback_reason = Reason.PANEL_NO_MAJORITY
    if agreed is not None:
        label = agreed
        deciding = [v for v in votes if v.label is label]
        reason = next((v.reason for v in deciding if v.reason), None)
        quote = next((v.evidence_quote for v in deciding if v.evidence_quote), None)
    else:
        label = Label.ERROR if failed else Label.NOT_FOUND
        reason = (
            next(v.reason for v in votes if v.label is Label.ERROR)
            if failed
            else (Reason.PANEL_SPLIT if split else fallback_reason)
        )
        quote = None
    if split and agreed is not None and label in _DECISIVE:
        reason = reason or Reason.PANEL_SPLIT
    # An error fails the run anyway; review is for what a human should decide.
    review = label is not Label.ERROR and (agreed is None or failed or split or counts[label] < n)
    return Decision(
        label=label,
        confidence=round(counts[label] / n, 4),
        review=review,
        reason=reason,
        evidence_quote=quote,
        detail=describe(votes, rule, label),
    )


def describe(votes: Sequence[PanelVote], rule: str, label: Label) -> str:
    """One line for humans: the tally and each member's vote."""
    counts = Counter(v.label for v in votes)
    parts = []
    for vote in votes:
        part = f"{vote.judge} {vote.label.value}"
        if vote.reason:
            part += f" ({vote.reason})"
        parts.append(part)
    return f"panel ({rule}) {counts[label]}/{len(votes)} {label.value}: " + "; ".join(parts)


# -- agreement figures for a run -----------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """How much a run's panels agreed."""

    citations: int  # citations a panel judged
    unanimous: int  # of those, where every member voted the same label
    # Per pair of members (by position in the panel, named by their judges): the
    # share of the citations both judged on which they voted the same label.
    pairwise: dict[str, float]

    @property
    def unanimous_share(self) -> float | None:
        return self.unanimous / self.citations if self.citations else None


def agreement(panels: Sequence[Sequence[PanelVote]]) -> Agreement:
    """The agreement figures over the panels of a run (one list of votes per citation)."""
    judged = [p for p in panels if len(p) > 1]
    unanimous = sum(1 for p in judged if len({v.label for v in p}) == 1)
    same: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for panel in judged:
        for (i, a), (j, b) in combinations(enumerate(panel), 2):
            key = f"{i + 1}:{a.judge} ~ {j + 1}:{b.judge}"
            seen[key] += 1
            same[key] += a.label is b.label
    pairwise = {key: round(same[key] / seen[key], 4) for key in seen}
    return Agreement(len(judged), unanimous, pairwise)


def member_failures(panels: Sequence[Sequence[PanelVote]]) -> list[dict[str, Any]]:
    """Each panel member that failed, in panel order: its name, on how many citations,
    and each reason with the first detail given for it."""
    found: dict[str, dict[str, Any]] = {}
    for votes in panels:
        for vote in votes:
            if vote.label is not Label.ERROR:
                continue
            entry = found.setdefault(
                vote.judge, {"judge": vote.judge, "citations": 0, "reasons": {}}
            )
            entry["citations"] += 1
            entry["reasons"].setdefault(vote.reason or "error", vote.detail or "")
    return list(found.values())


def failure_text(failure: dict[str, Any]) -> str:
    """``panel member c failed on 2 citations: judge_unavailable (could not reach ...)``."""
    reasons = "; ".join(
        f"{reason} ({truncate(detail, 300, flatten=True)})" if detail else reason
        for reason, detail in failure["reasons"].items()
    )
    return (
        f"panel member {failure['judge']} failed on "
        f"{plural(failure['citations'], 'citation')}: {reasons}"
    )
