"""The dry run's totals are its planned claims' estimates summed: per judge, in the
order the judges first come, the confirmation's tokens kept apart and then added."""

from __future__ import annotations

from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.engine.estimate import ClaimEstimate, Plan

A, B = "openai:gpt-4o-mini", "anthropic:claude-sonnet-4-6"


def test_the_totals_are_the_planned_claims_summed_per_judge() -> None:
    plan = Plan(RecordMode.ONCE)
    plan.add(ClaimEstimate(judge=B, crawls=1, worst_crawls=4, credits=1.0, worst_credits=4.0))
    plan.add(
        ClaimEstimate(
            judge=A,
            crawls=2,
            worst_crawls=8,
            judge_calls=2,
            input_tokens=100,
            output_tokens=10,
            credits=2.0,
            worst_credits=8.0,
            confirm_calls=1,
            confirm_input_tokens=30,
            confirm_output_tokens=3,
        ),
        "c2",
    )
    plan.add(ClaimEstimate(judge=B, judge_calls=1, input_tokens=50, output_tokens=5))
    plan.add(ClaimEstimate(judge=A, judge_calls=1, input_tokens=7, output_tokens=1))
    assert (plan.to_record, plan.crawls, plan.worst_crawls) == (4, 3, 12)
    assert (plan.credits, plan.worst_credits) == (3.0, 12.0)
    # B's first claim asks no judge: A is the first judge asked.
    assert list(plan.judge_calls.items()) == [(A, 3), (B, 1)]
    assert plan.tokens == {A: (107, 11), B: (50, 5)}
    assert (plan.confirm_calls, plan.confirm_tokens) == (1, {A: (30, 3)})
    assert plan.all_tokens() == {A: (137, 14), B: (50, 5)}
    assert plan.total_judge_calls == 4
    assert [name for name, _ in plan.planned] == ["", "c2", "", ""]
