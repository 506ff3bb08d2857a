"""The Crawler job's work for ``citecheck recheck --via-crawler``: each recorded claim
rechecked (:class:`~pytest_citecheck.engine.recheck.Rechecker`) once its pages arrive."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pytest_citecheck.core.defaults import RecheckStatus
from pytest_citecheck.core.urls import fetch_url
from pytest_citecheck.engine.recheck import ClaimRecheck, Rechecker, error_check, url_citations
from pytest_citecheck.large_audit.crawler_job import JobClaim, fetched_citations

if TYPE_CHECKING:
    from pytest_citecheck.engine.judge_batch import JudgeBatch


class RecheckWork:
    """A Crawler job's work for ``citecheck recheck --via-crawler``: each claim with a
    recording is rechecked once its pages are delivered (the live fetch answered from
    the deliveries, recorded in the recheck's own cassette as a synchronous one is).
    The ``rechecker`` must be built with the job's delivery transport as its live
    transport."""

    def __init__(self, rechecker: Rechecker) -> None:
        self.rechecker = rechecker

    def pushed_citations(self, jc: JobClaim) -> list[tuple[str, str]]:
        """The cited URLs the recheck fetches live: none without a recording."""
        if not jc.cassette.is_file():
            return []
        return fetched_citations(jc)

    def run(self, jc: JobClaim) -> ClaimRecheck:
        return self.rechecker.recheck(jc.claim, jc.cassette, jc.key)

    def unpushed(self, jc: JobClaim, refused: Mapping[str, str]) -> ClaimRecheck:
        """A page the Crawler never received: nothing could be compared for it."""
        out = ClaimRecheck(
            nodeid=jc.key, id=jc.claim.id, claim=jc.claim.claim, cassette=str(jc.cassette)
        )
        why = {c.target: refused.get(fetch_url(c.target)) for c in url_citations(jc.claim)}
        out.citations = [
            error_check(c.target, f"the Crawler never received this page: {why[c.target]}")
            if why[c.target] is not None
            else error_check(
                c.target, "not rechecked: another page of the claim never reached the Crawler"
            )
            for c in url_citations(jc.claim)
        ]
        return out

    def finished_before(self, jc: JobClaim) -> ClaimRecheck | None:
        return None  # rechecked again on the pages the job keeps (no push)

    def judge_batch(self) -> JudgeBatch | None:
        return None  # a recheck asks the judge again for a few citations, at once

    def outcomes(self, jc: JobClaim, result: ClaimRecheck) -> dict[int, tuple[bool, str]]:
        by_url = {check.url: check for check in result.citations}
        out: dict[int, tuple[bool, str]] = {}
        for position, citation in enumerate(jc.claim.citations, 1):
            check = by_url.get(citation.url or "")
            if check is None:
                continue
            if check.status is RecheckStatus.ERROR:
                out[position] = (False, f"recheck error: {check.detail}")
            else:
                out[position] = (True, check.status.value)
        return out
