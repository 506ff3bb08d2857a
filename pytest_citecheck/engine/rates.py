"""The deep-research audit's three rates: link works, relevant, fact check.

*Cited but not verified* (arXiv 2605.06635) measures a deep-research report's citations
three ways, each a share of its citations: the link works (the cited page could be read),
the page is relevant (it is about the claim), the fact checks (the page supports the
claim). Here each is read off a citation's verdict, by one rule (:func:`rated`):

- **link works**: the page (or document) was fetched and read: not ``unreachable``
  (404, 410, DNS...), not a deep link redirected to the homepage, a soft 404, a bot
  wall, a paywall, an origin error, an empty page or a file that could not be read.
- **relevant**: the link works and the judge found text that decides the claim, either
  way: it answered ``supported`` or ``contradicted`` (even if the guard then refused its
  quote), or the citation carried a quote of a joint support. The judge's answer has no
  separate "relevant" field (adding one would change every judge request and so
  invalidate every recording): a page about the topic that neither supports nor
  contradicts the claim counts as *not* relevant, so this rate is a lower bound of the
  paper's "relevant content".
- **fact check**: the citation is ``supported`` (alone, or as part of a joint support,
  reason ``supported_jointly``).

A citation whose check failed (``error``: no recording, the judge down) or was never
made (the URL policy refused it, the budget ran out) says nothing about the report:
it is left out of every rate and counted apart (``not_rated``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import ClaimResult, Verdict
from pytest_citecheck.core.text import ratio

# The three rates, in the order every report shows them, with their names there.
RATES = ("link_works", "relevant", "fact_check")
RATE_NAMES = {"link_works": "link works", "relevant": "relevant", "fact_check": "fact check"}

# Reasons that say the page was not read, whatever its label.
_NOT_READ = frozenset(
    {
        Reason.REDIRECTED_TO_HOMEPAGE,
        Reason.SOFT_404,
        Reason.BLOCKED,
        Reason.ORIGIN_ERROR,
        Reason.EMPTY_PAGE,
        Reason.CRAWL_FAILED,
        Reason.PAGE_TOO_LARGE,
        Reason.PAYWALLED,
        # A cited PDF whose text could not be read (stages/pdf.py).
        Reason.PDF_NO_TEXT,
        Reason.PDF_ENCRYPTED,
        Reason.PDF_TOO_LARGE,
        Reason.PDF_MALFORMED,
    }
)
# Reasons for which nothing was checked: the citation is not rated.
_NOT_CHECKED = frozenset({Reason.URL_REFUSED, Reason.BUDGET_EXHAUSTED})
_DECIDING = frozenset({Label.SUPPORTED, Label.CONTRADICTED})


def rated(verdict: Verdict) -> tuple[bool, bool, bool] | None:
    """(link works, relevant, fact check) for one citation; None: not rated (its check
    failed or was never made)."""
    if verdict.label is Label.ERROR or verdict.reason in _NOT_CHECKED:
        return None
    works = verdict.label is not Label.UNREACHABLE and verdict.reason not in _NOT_READ
    supported = verdict.label is Label.SUPPORTED or verdict.reason == Reason.SUPPORTED_JOINTLY
    decided = (
        verdict.label in _DECIDING
        or verdict.judge_label in _DECIDING
        or any(vote.label in _DECIDING for vote in verdict.panel or ())
    )
    relevant = works and (decided or supported)
    return works, relevant, works and supported


class Rates(BaseModel):
    """The three rates over a set of citations, as counts (``rated`` is the denominator)."""

    rated: int = 0
    link_works: int = 0
    relevant: int = 0
    fact_check: int = 0
    # Citations left out: their check failed (error) or was never made.
    not_rated: int = 0
    # Unreachable citations the Wayback Machine was asked about (citecheck_wayback):
    # never archived (likely invented) and rotted (archived, now gone).
    never_archived: int = 0
    rotted: int = 0

    def add(self, verdict: Verdict) -> None:
        if verdict.archive is not None:
            self.never_archived += verdict.archive.status == "never_archived"
            self.rotted += verdict.archive.status == "rotted"
        counted = rated(verdict)
        if counted is None:
            self.not_rated += 1
            return
        works, relevant, supported = counted
        self.rated += 1
        self.link_works += works
        self.relevant += relevant
        self.fact_check += supported

    def count(self, rate: str) -> int:
        value: int = getattr(self, rate)
        return value

    def rate(self, rate: str) -> float | None:
        """One rate, ``link_works``, ``relevant`` or ``fact_check`` (None: nothing rated)."""
        return self.count(rate) / self.rated if self.rated else None

    def to_json(self) -> dict[str, float | int | None]:
        """``{"link_works": 0.9, "link_works_count": 9, ..., "rated": 10, "not_rated": 0}``."""
        out: dict[str, float | int | None] = {}
        for rate in RATES:
            out[rate] = self.rate(rate)
            out[f"{rate}_count"] = self.count(rate)
        out["rated"] = self.rated
        out["not_rated"] = self.not_rated
        if self.never_archived or self.rotted:
            out["never_archived"] = self.never_archived
            out["rotted"] = self.rotted
        return out


def from_json(data: Mapping[str, Any] | None) -> Rates | None:
    """The rates a JSON report holds (:meth:`Rates.to_json`); None: a report written
    before they existed."""
    if not data:
        return None
    counts = {rate: int(data.get(f"{rate}_count") or 0) for rate in RATES}
    return Rates(
        rated=int(data.get("rated") or 0),
        not_rated=int(data.get("not_rated") or 0),
        never_archived=int(data.get("never_archived") or 0),
        rotted=int(data.get("rotted") or 0),
        **counts,
    )


def rates(results: Iterable[ClaimResult]) -> Rates:
    """The three rates over every citation of ``results``."""
    found = Rates()
    for result in results:
        for verdict in result.verdicts:
            found.add(verdict)
    return found


def rates_text(found: Rates, mark: Callable[[str], str] = str) -> str:
    """``link works 0.9000 (9/10), relevant 0.8000 (8/10), fact check 0.5000 (5/10)``;
    ``mark`` dresses the figures (the markdown summary makes them bold)."""
    text = ", ".join(
        f"{RATE_NAMES[rate]} {mark(ratio(found.rate(rate)))} ({found.count(rate)}/{found.rated})"
        for rate in RATES
    )
    if found.not_rated:
        text += f"; {found.not_rated} not rated (error or not checked)"
    if found.never_archived or found.rotted:
        text += (
            f"; unreachable: {found.never_archived} never archived (likely invented), "
            f"{found.rotted} rotted (archived, now gone)"
        )
    return text


def rates_line(found: Rates, mark: Callable[[str], str] = str) -> str:
    """The summary line of a run's rates."""
    return f"deep-research rates: {rates_text(found, mark)}"
