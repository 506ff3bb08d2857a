"""Fixed rules that turn citation labels into claim labels and session figures.

No model is involved here: the claim-level label and the precision figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from pytest_citecheck.claims.models import BAD_LABELS, ClaimResult, Label


def claim_label(labels: Sequence[Label]) -> Label:
    """Any contradicted (or fabricated) -> contradicted; else any supported ->
    supported; else unreachable if every citation is; else not_found.

    An ``error`` citation makes the claim ``error`` unless a contradiction or a
    support was established anyway: a failed run must never read as
    ``not_found`` (or ``unreachable``) by omission.
    """
    if any(label in BAD_LABELS for label in labels):
        return Label.CONTRADICTED
    if Label.SUPPORTED in labels:
        return Label.SUPPORTED
    if Label.ERROR in labels:
        return Label.ERROR
    if labels and all(label is Label.UNREACHABLE for label in labels):
        return Label.UNREACHABLE
    return Label.NOT_FOUND


class Totals(BaseModel):
    """Citation counts over a set of claims, and the precision figures."""

    claims: int = 0
    citations: int = 0
    by_label: dict[str, int] = {}
    review: int = 0
    credits: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    # Citations a judge panel decided, and how many of them it decided unanimously.
    panel_citations: int = 0
    unanimous: int = 0

    @property
    def agreement(self) -> float | None:
        """Share of the panel-judged citations where every member voted alike."""
        return self.unanimous / self.panel_citations if self.panel_citations else None

    @property
    def supported(self) -> int:
        return self.by_label.get(Label.SUPPORTED.value, 0)

    @property
    def reachable(self) -> int:
        return self.citations - self.by_label.get(Label.UNREACHABLE.value, 0)

    @property
    def citation_precision(self) -> float | None:
        """Supported citations over all citations (None when there are none)."""
        return self.supported / self.citations if self.citations else None

    @property
    def reachable_precision(self) -> float | None:
        """Supported over citations that are not unreachable (None when none is)."""
        return self.supported / self.reachable if self.reachable else None

    def count(self, label: Label) -> int:
        return self.by_label.get(label.value, 0)


def totals(results: Iterable[ClaimResult]) -> Totals:
    """Sum the verdicts of ``results``."""
    by_label: Counter[str] = Counter()
    t = Totals()
    for result in results:
        t.claims += 1
        for verdict in result.verdicts:
            t.citations += 1
            by_label[verdict.label.value] += 1
            t.review += verdict.review
            t.credits += verdict.credits
            if verdict.usage is not None:
                t.input_tokens += verdict.usage.input_tokens
                t.output_tokens += verdict.usage.output_tokens
            if verdict.panel and len(verdict.panel) > 1:
                t.panel_citations += 1
                t.unanimous += len({vote.label for vote in verdict.panel}) == 1
    t.by_label = {label.value: by_label.get(label.value, 0) for label in Label}
    return t
