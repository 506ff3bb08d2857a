"""The run loop's sources of a known set of claims
(:meth:`~pytest_citecheck.engine.run_loop.RunLoop.run`): all at once (:class:`ClaimSet`:
pytest, ``citecheck batch``, the service, a recheck's set) and in judge-batch rounds
(:class:`BatchRounds`). A Crawler job's deliveries are the large-audit wing's source
(:class:`~pytest_citecheck.large_audit.job_source.DeliverySource`).

Each claim is an input index; its result is kept by index and told to ``on_result``
in the loop's thread as it finishes (in input order among the claims that finished
together). A claim the stop kept from starting is counted in ``not_started``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Generic, TypeVar

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.core.errors import JudgeDeferred

if TYPE_CHECKING:
    from pytest_citecheck.claims.models import Claim
    from pytest_citecheck.claims.results import ClaimResult
    from pytest_citecheck.engine.judge_batch import JudgeBatch
    from pytest_citecheck.engine.progress import Progress

R = TypeVar("R")

# How often a wait for claims wakes up (Ctrl-C is seen at the latest then).
WAIT_TICK = 0.2


class ClaimSet(Generic[R]):
    """``work(index)`` of every claim ``names`` names, all ready at the first look."""

    poll = WAIT_TICK
    idle_timeout = float("inf")

    def __init__(
        self,
        work: Callable[[int], R],
        names: Sequence[str],
        on_result: Callable[[int, R], None] | None = None,
        on_interrupt: Callable[[], None] | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.work = work
        self.names = names
        self.on_result = on_result
        self.on_interrupt = on_interrupt
        self.progress = progress
        self.results: dict[int, R] = {}
        self.not_started = 0
        self._looked = False

    def clock(self) -> float:
        return time.monotonic()

    def waiting(self) -> bool:
        return not self._looked

    def look(self) -> tuple[object, list[int]]:
        if self._looked:
            return None, []
        self._looked = True
        if self.progress is not None:
            self.progress.add(len(self.names))
        return None, list(range(len(self.names)))

    def name(self, item: int) -> str:
        return self.names[item]

    def run(self, item: int) -> R:
        return self.work(item)

    def settle(self, item: int, future: Future[R]) -> list[int]:
        self.finished(item, future.result())
        return []

    def finished(self, item: int, result: R) -> None:
        self.results[item] = result
        if self.on_result is not None:
            self.on_result(item, result)

    def skipped(self, item: int) -> None:
        self.not_started += 1
        if self.progress is not None:
            self.progress.skipped()

    def tick(self, running: bool) -> list[int]:
        return []

    def busy(self) -> bool:
        return False

    def interrupted(self) -> None:
        if self.on_interrupt is not None:
            self.on_interrupt()

    def end(self, interrupted: bool) -> list[R] | None:
        """Every result in input order; None when the run stopped before every claim
        finished (``results`` holds those that did)."""
        if interrupted or self.not_started or len(self.results) < len(self.names):
            return None
        return [self.results[i] for i in range(len(self.names))]


class BatchRounds(ClaimSet["ClaimResult"]):
    """A judge batch run (``judge_batch``): every claim runs until it asks the judge
    something the batch has not answered (JudgeDeferred); once none runs, one batch
    answers what they asked and the claims that stopped run again; until none stops,
    or ``rounds`` rounds ran (the claims still asking are then an error)."""

    def __init__(
        self,
        claims: Sequence[Claim],
        work: Callable[[int], ClaimResult],
        names: Sequence[str],
        batch: JudgeBatch,
        rounds: int,
        on_result: Callable[[int, ClaimResult], None] | None = None,
        on_interrupt: Callable[[], None] | None = None,
        progress: Progress | None = None,
    ) -> None:
        super().__init__(work, names, on_result, on_interrupt, progress)
        self.claims = claims
        self.batch = batch
        self.rounds = rounds
        self.round = 0
        # Claims that stopped to wait for this round's batch.
        self.deferred: set[int] = set()

    def look(self) -> tuple[object, list[int]]:
        if not self._looked:
            self.batch.start_round()
        return super().look()

    def settle(self, item: int, future: Future[ClaimResult]) -> list[int]:
        try:
            result = future.result()
        except JudgeDeferred:
            self.deferred.add(item)
            return []
        self.finished(item, result)
        return []

    def finished(self, item: int, result: ClaimResult) -> None:
        self.batch.forget(self.names[item])
        super().finished(item, result)

    def tick(self, running: bool) -> list[int]:
        if running or not self.deferred or self.round == self.rounds - 1:
            return []
        self.batch.send_pending()
        todo, self.deferred = sorted(self.deferred), set()
        self.round += 1
        self.batch.start_round()
        return todo

    def end(self, interrupted: bool) -> list[ClaimResult] | None:
        if interrupted or self.not_started:
            return None
        from pytest_citecheck.engine.verification import error_result

        for index in sorted(self.deferred):
            # Still asking after every round: an error, never an endless run.
            result = error_result(
                self.claims[index],
                Reason.JUDGE_BATCH_FAILED,
                f"the judge was still asking new questions after {self.rounds} batch rounds",
            )
            self.finished(index, result)
        self.deferred = set()
        return super().end(interrupted)
