"""An unreachable citation looked up in the Wayback Machine, and (optionally) verified on
its snapshot: the Verifier's collaborator for ``citecheck_wayback`` and
``citecheck_wayback_verify`` (docs/deep-research.md, "Invented or rotted").

The lookup (:mod:`pytest_citecheck.stages.wayback`) goes through the engine's HTTP client,
so it is recorded in the claim's cassette. A rotted citation's snapshot is verified by the
Verifier itself, as any URL citation is (the same fetch, URL policy, passages, judge,
guard and confirmation, all recorded); its verdict is kept in the citation's ``archive``,
labelled as the snapshot's, never in the citation's own label or the run's figures. Its
crawl credits are the citation's (``credits``, ``fetches``), its judge tokens in the
snapshot verdict's ``usage``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pytest_citecheck.claims.models import Citation
from pytest_citecheck.claims.results import Archive, SnapshotVerdict, Verdict
from pytest_citecheck.core.secrets import without_credentials
from pytest_citecheck.engine.judging import MAX_DETAIL_CHARS, cap
from pytest_citecheck.stages.wayback import WaybackLookup, looks_up

# What a snapshot's verdict keeps of a Verdict (every field of SnapshotVerdict but the
# confirmation's tokens, which the Verdict holds in its confirmation).
_FROM_VERDICT = tuple(name for name in SnapshotVerdict.model_fields if name != "confirmation_usage")


class Verifies(Protocol):
    """What verifies the snapshot: the Verifier (engine/pipeline.py)."""

    def verify_citation(self, claim: str, citation: Citation, archived: bool = True) -> Verdict:
        """One citation's verdict; ``archived`` False: never looked up in the archive."""
        ...


# Maps an exception to (reason, detail): the recording's "no reply for this request".
ErrorClassifier = Callable[[BaseException], "tuple[str, str] | None"]


@dataclass
class Archived:
    """Adds what the Wayback Machine says to the verdict of a gone page."""

    lookup: WaybackLookup
    # A rotted citation is also verified against its snapshot (citecheck_wayback_verify).
    verify_snapshots: bool = False
    classify_error: ErrorClassifier | None = None

    def add(self, verifier: Verifies, claim: str, url: str, verdict: Verdict) -> Verdict:
        """``verdict`` with its ``archive`` when its page is gone; else unchanged."""
        if not looks_up(verdict):
            return verdict
        archive = self._asked(url)
        if not (self.verify_snapshots and archive.status == "rotted" and archive.snapshot_url):
            return verdict.model_copy(update={"archive": archive})
        # The snapshot is verified like any URL, but never looked up in the archive itself.
        snapshot = verifier.verify_citation(
            claim, Citation(url=archive.snapshot_url), archived=False
        )
        confirmation = snapshot.confirmation.usage if snapshot.confirmation else None
        # The snapshot's verdict as a SnapshotVerdict holds it: its fields of the
        # verdict's, and the confirmation's tokens.
        on_snapshot = SnapshotVerdict(
            **{name: getattr(snapshot, name) for name in _FROM_VERDICT},
            confirmation_usage=confirmation,
        )
        return verdict.model_copy(
            update={
                "archive": archive.model_copy(update={"verdict": on_snapshot}),
                "credits": verdict.credits + snapshot.credits,
                "fetches": [*verdict.fetches, *snapshot.fetches],
            }
        )

    def _asked(self, url: str) -> Archive:
        """What the archive says of ``url``; a lookup that cannot be made (no recording
        of it, a failure) is ``unknown`` with why, never the citation's error."""
        try:
            return self.lookup.lookup(without_credentials(url))
        except Exception as exc:
            classified = self.classify_error(exc) if self.classify_error else None
            detail = classified[1] if classified else f"{type(exc).__name__}: {exc}"
            return Archive(status="unknown", detail=cap(detail, MAX_DETAIL_CHARS))
