"""All citecheck state of one pytest session, in one object (stored in ``config.stash``).

Hooks in ``plugin`` stay thin and call into this. It builds the fetcher, the
judges and the ranker once, lazily, opens a cassette per claim, collects
results (from this process or from xdist workers' reports) and evaluates the
gate on the controller.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_citecheck.gate import GateSettings, evaluate, load_baseline_precision
from pytest_citecheck.models import Claim, ClaimResult, Label, Reason, Verdict
from pytest_citecheck.options import Settings
from pytest_citecheck.report import Report

if TYPE_CHECKING:
    # Only types: the stages (httpx, the judges) load when the first claim runs.
    from pytest_citecheck.fetch import Fetcher
    from pytest_citecheck.judges.base import Judge
    from pytest_citecheck.recording import Recording
    from pytest_citecheck.retrieval import Ranker
    from pytest_citecheck.retry import RetryPolicy

SESSION_KEY = pytest.StashKey["CitecheckSession"]()
RESULTS_KEY = pytest.StashKey[list[ClaimResult]]()


def _no_sleep(seconds: float) -> None:
    """Replay plays a recorded 429-then-200 back at once: the wait already happened."""


class CitecheckSession:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.results: dict[str, ClaimResult] = {}
        self.report: Report | None = None
        self._fetcher: Fetcher | None = None
        self._judges: dict[str, Judge] = {}
        self._ranker: Ranker | None = None

    @property
    def replaying(self) -> bool:
        return self.settings.record_mode == "none"

    def _retry(self) -> RetryPolicy:
        from pytest_citecheck.retry import RetryPolicy

        return RetryPolicy(sleep=_no_sleep) if self.replaying else RetryPolicy()

    # -- pipeline parts, built once ----------------------------------------------

    def fetcher(self) -> Fetcher:
        if self._fetcher is None:
            custom = self.config.hook.pytest_citecheck_make_fetcher(config=self.config)
            if custom is not None:
                self._fetcher = custom
            else:
                from pytest_citecheck.fetch import CrawlbaseFetcher

                self._fetcher = CrawlbaseFetcher.from_env(
                    require_tokens=not self.replaying, retry=self._retry()
                )
        return self._fetcher

    def judge(self, spec: str) -> Judge:
        if spec not in self._judges:
            custom = self.config.hook.pytest_citecheck_make_judge(config=self.config, spec=spec)
            if custom is not None:
                self._judges[spec] = custom
            else:
                from pytest_citecheck.judges import make_judge

                # The ini base URL is for the openai-compatible provider; the
                # hosted providers take theirs from the environment.
                compatible = spec.startswith("openai-compatible:")
                self._judges[spec] = make_judge(
                    spec,
                    base_url=self.settings.judge_base_url if compatible else None,
                    require_key=not self.replaying,
                    retry=self._retry(),
                    temperature=self.settings.judge_temperature,
                    response_format=self.settings.judge_response_format,
                )
        return self._judges[spec]

    def live_ranker(self) -> Ranker:
        if self._ranker is None:
            custom = self.config.hook.pytest_citecheck_make_ranker(config=self.config)
            if custom is not None:
                self._ranker = custom
            else:
                from pytest_citecheck.retrieval import MiniLMRanker

                self._ranker = MiniLMRanker()
        return self._ranker

    def close(self) -> None:
        """Close the HTTP clients the fetcher and the judges opened."""
        for part in [self._fetcher, *self._judges.values()]:
            close = getattr(part, "close", None)
            if callable(close):
                close()
        self._fetcher = None
        self._judges.clear()

    def tokens(self) -> dict[str, str | None]:
        return {
            "normal": os.environ.get("CRAWLBASE_TOKEN"),
            "javascript": os.environ.get("CRAWLBASE_JS_TOKEN"),
        }

    # -- verification ------------------------------------------------------------

    @contextmanager
    def recording(self, cassette: Path, nodeid: str, judge: Judge) -> Iterator[Recording]:
        from pytest_citecheck.recording import open_recording

        with open_recording(
            cassette,
            self.settings.record_mode,
            nodeid,
            self.tokens(),
            prompt_version=getattr(judge, "prompt_version", None),
            quote_policy=self.settings.quote_policy.metadata(),
        ) as recording:
            yield recording

    def verify(self, claim: Claim, recording: Recording, judge: Judge) -> ClaimResult:
        from pytest_citecheck.pipeline import Verifier

        verifier = Verifier(
            fetcher=self.fetcher(),
            ranker=recording.ranker(self.live_ranker),
            judge=recording.judge(judge),
            review_below=self.settings.review_below,
            classify_error=recording.classify_error,
            quote_policy=self.settings.quote_policy,
        )
        return verifier.verify_claim(claim)

    def verify_claim(self, claim: Claim, cassette: Path, nodeid: str) -> ClaimResult:
        """Verify one claim inside its own cassette."""
        judge = self.judge(self.settings.judge_for(claim.judge))
        with self.recording(cassette, nodeid, judge) as recording:
            return self.verify(claim, recording, judge)

    def problems(self, result: ClaimResult) -> list[str]:
        """Why this claim's test item fails (DESIGN §3, §6); empty when it passes."""
        out: list[str] = []
        errors = [v for v in result.verdicts if v.label is Label.ERROR]
        if errors:
            out.append(f"{len(errors)} citation(s) could not be verified (error)")
        if result.expect is not None:
            if result.label is not result.expect:
                out.append(f"claim label is {result.label.value}, expected {result.expect.value}")
        elif not self.settings.allow_contradicted:
            bad = [v for v in result.verdicts if v.label in (Label.CONTRADICTED, Label.FABRICATED)]
            if bad:
                out.append(
                    f"{len(bad)} citation(s) {' and '.join(sorted({v.label.value for v in bad}))}"
                )
        if self.settings.strict_review and any(v.review for v in result.verdicts):
            out.append("verdicts below the confidence gate need review (--citecheck-strict-review)")
        return out

    # -- results from reports (this process or xdist workers) -------------------

    def add_report_results(self, nodeid: str, payload: str) -> None:
        results = [ClaimResult.model_validate(r) for r in json.loads(payload)]
        for i, result in enumerate(results):
            key = nodeid if len(results) == 1 else f"{nodeid}[{i}]"
            self.results[key] = result

    def add_crashed(self, nodeid: str) -> None:
        """A worker died running ``nodeid``: its citations count as errors."""
        if nodeid in self.results:
            return
        self.results[nodeid] = crashed_result(nodeid, self.config.rootpath)

    # -- the gate ------------------------------------------------------------------

    def finish(self) -> Report | None:
        if not self.results:
            return None
        s = self.settings
        baseline = None
        failures: list[str] = []
        if s.baseline is not None:
            from pytest_citecheck.gate import BaselineError

            try:
                baseline = load_baseline_precision(s.baseline)
            except BaselineError as exc:
                failures.append(str(exc))
        report = Report(
            results=self.results, baseline_precision=baseline, run=s.quote_policy.metadata()
        )
        failures += evaluate(
            report.totals,
            GateSettings(
                min_precision=s.min_precision,
                min_reachable_precision=s.min_reachable_precision,
                allow_contradicted=s.allow_contradicted,
                strict_review=s.strict_review,
                max_drop=s.max_drop,
            ),
            baseline,
        )
        report.gate_failures = failures
        self.report = report
        return report


def error_result(claim: Claim, reason: str, detail: str) -> ClaimResult:
    verdicts = [
        Verdict(url=c.target, label=Label.ERROR, reason=reason, detail=detail)
        for c in claim.citations
    ] or [Verdict(url="", label=Label.ERROR, reason=reason, detail=detail)]
    return ClaimResult(
        id=claim.id, claim=claim.claim, label=Label.ERROR, verdicts=verdicts, expect=claim.expect
    )


def crashed_result(nodeid: str, rootpath: Path) -> ClaimResult:
    """Error verdicts for every citation of the claim a dead worker was running."""
    path_part, _, claim_id = nodeid.partition("::")
    detail = f"the worker running {nodeid} crashed"
    try:
        from pytest_citecheck.loader import load_claim_file

        claims = {c.id: c for c in load_claim_file(rootpath / path_part).claims}
        claim: Any = claims.get(claim_id)
    except Exception:
        claim = None
    if claim is None:
        claim = Claim(id=claim_id or nodeid, claim="", citations=[])
    return error_result(claim, Reason.WORKER_CRASHED, detail)
