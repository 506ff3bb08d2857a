"""One claim verified: its judges resolved once, its budget reserved, its cassette
opened, the pipeline (:class:`~pytest_citecheck.engine.pipeline.Verifier`) run.

A claim never raises: every failure becomes ``error`` verdicts with a reason
(``configuration_error``, ``corrupt_recording``, ``budget_exhausted``...).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Claim
from pytest_citecheck.claims.results import ClaimResult, Verdict
from pytest_citecheck.engine.budget import Budget
from pytest_citecheck.engine.cassettes import Cassettes, failed, will_record
from pytest_citecheck.engine.stage_builder import ClaimJudges, StageBuilder

if TYPE_CHECKING:
    from pytest_citecheck.engine.archived import Archived
    from pytest_citecheck.engine.pipeline import Verifier
    from pytest_citecheck.recording.recorder import Recording
    from pytest_citecheck.stages.judges.base import Judge
    from pytest_citecheck.stages.screenshot import PageShots


def error_result(claim: Claim, reason: str, detail: str) -> ClaimResult:
    """Every citation of ``claim`` is ``error`` for one reason."""
    verdicts = [
        Verdict(url=c.target, label=Label.ERROR, reason=reason, detail=detail)
        for c in claim.citations
    ] or [Verdict(url="", label=Label.ERROR, reason=reason, detail=detail)]
    return ClaimResult(
        id=claim.id,
        claim=claim.claim,
        label=Label.ERROR,
        verdicts=verdicts,
        expect=claim.expect,
        answer=claim.answer,
    )


class Verification:
    """Verifies claims one at a time, in the calling thread, with shared stages."""

    def __init__(self, stages: StageBuilder, budget: Budget, cassettes: Cassettes) -> None:
        self.settings = stages.settings
        self.stages = stages
        self.budget = budget
        self.cassettes = cassettes

    def verify(self, claim: Claim, cassette: Path | None, nodeid: str) -> ClaimResult:
        """``claim`` in its own cassette (None: live, unrecorded)."""
        judges = self.stages.resolve(claim)
        records = will_record(self.settings.record_mode, cassette)
        return self._within_budget(
            claim, judges, records, nodeid, lambda: self._in_own(claim, judges, cassette, nodeid)
        )

    def verify_in(self, recording: Recording, claim: Claim) -> ClaimResult:
        """``claim`` inside an open recording shared with other claims, within the
        budget as :meth:`verify` is (a claim the budget stops fails the recording:
        nothing of it is saved, so recording it again starts from an empty cassette)."""
        judges = self.stages.resolve(claim)
        records = not recording.replaying and not recording.write_protected
        result = self._within_budget(
            claim, judges, records, recording.nodeid, lambda: self._run(claim, judges, recording)
        )
        if failed(result):
            recording.ok = False
        return result

    def _within_budget(
        self,
        claim: Claim,
        judges: ClaimJudges,
        records: bool,
        nodeid: str,
        run: Callable[[], ClaimResult],
    ) -> ClaimResult:
        """``run()`` once the budget has room for the claim's worst case (its real
        spend is settled after); ``budget_exhausted`` when it never will. ``records``:
        the claim may go to the network (a replayed claim costs nothing)."""
        if not self.budget.limited or not claim.citations or not records:
            return run()
        from pytest_citecheck.engine.estimate import estimate_claim, spend

        reservation = self.budget.reserve(
            estimate_claim(
                claim,
                judges.name,
                confirm=not self.settings.no_confirm,
                batch=self.settings.judge_batch,
                pdf_fetch=self.settings.pdf_fetch,
                screenshots=self.settings.screenshots,
            )
        )
        if isinstance(reservation, str):
            return error_result(
                claim,
                Reason.BUDGET_EXHAUSTED,
                reservation + self.settings.terms.record_hint(nodeid, "once"),
            )
        cost = credits = 0.0
        try:
            result = run()
            credits, _, money = spend([result], self.settings.prices)
            cost = money or 0.0
            return result
        finally:
            self.budget.settle(reservation, cost, credits)

    def _in_own(
        self, claim: Claim, judges: ClaimJudges, cassette: Path | None, nodeid: str
    ) -> ClaimResult:
        """:meth:`verify` once the budget let the claim start."""
        from pytest_citecheck.recording.recorder import CorruptRecording, corrupt_detail

        if cassette is None or judges.error is not None:
            # A judge that cannot be built fails the claim before its cassette opens.
            return self._run(claim, judges, None)
        terms = self.settings.terms
        try:
            with self.cassettes.open(cassette, nodeid, judges.judge) as recording:
                return self._run(claim, judges, recording)
        except CorruptRecording as exc:
            return error_result(
                claim, Reason.CORRUPT_RECORDING, corrupt_detail(cassette, nodeid, exc.why, terms)
            )
        except OSError as exc:
            from pytest_citecheck.recording.recorder import shown_path

            where = shown_path(cassette, terms)
            return error_result(
                claim,
                Reason.CONFIGURATION,
                f"could not save the recording {where}: {exc.strerror or exc}",
            )

    def _run(self, claim: Claim, judges: ClaimJudges, recording: Recording | None) -> ClaimResult:
        """The pipeline over ``claim``, in ``recording`` (None: live, unrecorded); a
        failed claim fails its recording."""
        if judges.error is not None or judges.judge is None:
            return error_result(claim, Reason.CONFIGURATION, str(judges.error))
        result = self._pipeline(judges.judge, judges.panel, recording).verify_claim(claim)
        if recording is not None and recording.write_protected:
            result = result.model_copy(update={"replayed": True})
        if recording is not None and failed(result):
            recording.ok = False
            if not recording.write_protected:
                result = self._not_recorded(result, recording.nodeid)
        return result

    def _not_recorded(self, result: ClaimResult, nodeid: str) -> ClaimResult:
        """A panel that lacked votes while recording: its verdict says that nothing
        was saved and how to record it, so this run's error and the next replay's
        (no recording) are not a surprise."""
        from pytest_citecheck.engine.panel import NOT_RECORDED

        hint = self.settings.terms.record_hint(
            nodeid, "once", lead="rerun when every member answers"
        )
        verdicts = [
            v.model_copy(update={"detail": f"{v.detail}{NOT_RECORDED}{hint}"})
            if v.reason == Reason.PANEL_INCOMPLETE
            else v
            for v in result.verdicts
        ]
        return result.model_copy(update={"verdicts": verdicts})

    def _pipeline(
        self, judge: Judge, panel: tuple[Judge, ...], recording: Recording | None
    ) -> Verifier:
        from pytest_citecheck.engine.joint import joint_step
        from pytest_citecheck.engine.judging import Judging
        from pytest_citecheck.engine.pipeline import Verifier

        settings = self.settings
        stages = self.stages
        return Verifier(
            fetcher=stages.fetcher(),
            ranker=recording.ranker(stages.live_ranker) if recording else stages.live_ranker(),
            judging=Judging(
                judge=recording.judge(judge) if recording else judge,
                quote_policy=settings.quote_policy,
                panel=[recording.judge(m) if recording else m for m in panel],
                panel_rule=settings.panel_rule,
                panel_min_votes=settings.panel_min_votes,
                confirm=not settings.no_confirm,
                confirm_recorded=recording.confirmation_recorded() if recording else True,
            ),
            joint=joint_step(
                recording.judge(judge) if recording else judge,
                panel,
                enabled=not settings.no_joint,
                quote_policy=settings.quote_policy,
                review_below=settings.review_below,
                confirm=not settings.no_confirm,
                confirm_recorded=recording.confirmation_recorded() if recording else True,
                recorded=recording.joint_recorded() if recording else True,
                classify_error=recording.classify_error if recording else None,
            ),
            review_below=settings.review_below,
            classify_error=recording.classify_error if recording else None,
            max_page_bytes=settings.max_page_bytes,
            url_policy=settings.url_policy,
            terms=settings.terms,
            archive=self._archived(recording) if settings.looks_up_archive else None,
            screenshots=self._shots(recording) if settings.screenshots else None,
        )

    def _shots(self, recording: Recording | None) -> PageShots:
        """The cited page's picture, through the Crawling API on the engine's client."""
        from dataclasses import replace

        return replace(
            self.stages.screenshots(),
            classify_error=recording.classify_error if recording else None,
        )

    def _archived(self, recording: Recording | None) -> Archived:
        """The Wayback Machine lookup of gone pages (and the snapshot check), on the
        engine's recorded client."""
        from pytest_citecheck.engine.archived import Archived

        return Archived(
            lookup=self.stages.wayback(),
            verify_snapshots=self.settings.wayback_verify,
            classify_error=recording.classify_error if recording else None,
        )
