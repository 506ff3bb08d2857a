"""A recording budget: no claim starts that could take the spend past it.

``--citecheck-max-cost`` (money, at the user's prices) and
``--citecheck-max-credits`` (Crawling API credits) bound one run. Before a claim
is recorded it reserves the most it could spend (the dry run's worst case,
:func:`pytest_citecheck.engine.estimate.estimate_claim`); when it ends, the
reservation becomes what it really spent. A claim that does not fit waits while
other claims are in flight (they usually spend less than they reserved); when
nothing is in flight and it still does not fit, the budget is exhausted: that
claim and every claim after it are not recorded (``budget_exhausted``), so the
spend never exceeds the budget.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from pytest_citecheck.core.prices import Prices, money


class ClaimEstimate(Protocol):
    """What the budget reads of a claim's estimate (engine/estimate.py's)."""

    @property
    def worst_credits(self) -> float: ...

    def cost(self, prices: Prices, worst: bool = True) -> float | None: ...


@dataclass(frozen=True)
class Reservation:
    cost: float
    credits: float


class Budget:
    """Thread-safe spend accounting against ``max_cost`` and ``max_credits``."""

    def __init__(self, prices: Prices, max_cost: float | None, max_credits: float | None) -> None:
        self.prices = prices
        self.max_cost = max_cost
        self.max_credits = max_credits
        self.spent_cost = 0.0
        self.spent_credits = 0.0
        self._reserved_cost = 0.0
        self._reserved_credits = 0.0
        self._in_flight = 0
        self.exhausted = False
        self._cond = threading.Condition()

    @property
    def limited(self) -> bool:
        return self.max_cost is not None or self.max_credits is not None

    def describe(self) -> str:
        parts = []
        if self.max_cost is not None:
            parts.append(f"max cost {money(self.max_cost)}")
        if self.max_credits is not None:
            parts.append(f"max credits {self.max_credits:g}")
        return ", ".join(parts)

    def _worst(self, estimate: ClaimEstimate) -> Reservation:
        cost = estimate.cost(self.prices, worst=True) if self.max_cost is not None else 0.0
        return Reservation(cost or 0.0, estimate.worst_credits)

    def _fits(self, need: Reservation) -> bool:
        cost = self.spent_cost + self._reserved_cost + need.cost
        if self.max_cost is not None and cost > self.max_cost + 1e-12:
            return False
        if self.max_credits is not None:
            total = self.spent_credits + self._reserved_credits + need.credits
            if total > self.max_credits + 1e-12:
                return False
        return True

    def reserve(self, estimate: ClaimEstimate) -> Reservation | str:
        """Reserve the claim's worst case, waiting for claims in flight if need be;
        or say why it cannot start."""
        need = self._worst(estimate)
        with self._cond:
            while not self.exhausted:
                if self._fits(need):
                    self._reserved_cost += need.cost
                    self._reserved_credits += need.credits
                    self._in_flight += 1
                    return need
                if self._in_flight == 0:
                    self.exhausted = True
                    break
                self._cond.wait()
            return self._why(need)

    def settle(self, reservation: Reservation, cost: float, credits: float) -> None:
        """The claim ended having spent ``cost`` and ``credits``."""
        with self._cond:
            self._reserved_cost -= reservation.cost
            self._reserved_credits -= reservation.credits
            self._in_flight -= 1
            self.spent_cost += cost
            self.spent_credits += credits
            self._cond.notify_all()

    def _why(self, need: Reservation) -> str:
        spent = []
        if self.max_cost is not None:
            spent.append(f"spent {money(self.spent_cost)} of {money(self.max_cost)}")
        if self.max_credits is not None:
            spent.append(f"{self.spent_credits:g} of {self.max_credits:g} credits")
        could = []
        if self.max_cost is not None:
            could.append(money(need.cost))
        if self.max_credits is not None:
            could.append(f"{need.credits:g} credits")
        return (
            f"not recorded: the recording budget ({self.describe()}) ran out "
            f"({', '.join(spent)}; this claim could need up to {' / '.join(could)})"
        )
