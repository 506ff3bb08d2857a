"""Inspect AI: ``from pytest_citecheck.inspect import citecheck_scorer`` (docs/inspect.md).

A scorer for Inspect tasks that verifies the citations on each sample's output with
citecheck's engine, one cassette per sample under ``cassettes``, replayed offline unless
``record`` (or ``CITECHECK_RECORD``) says to record. It needs the ``inspect`` extra
(``pip install 'pytest-citecheck[inspect]'``). Package code never imports this module: it
is a door for users, as ``pytest_citecheck.api`` is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

try:
    from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
    from inspect_ai.solver import TaskState
except ImportError as exc:  # the extra is not installed
    raise ImportError(
        "pytest_citecheck.inspect needs Inspect AI: pip install 'pytest-citecheck[inspect]'"
    ) from exc

from pytest_citecheck.frontends.inspect_scorer import FIGURES, CitecheckScoring

__all__ = ["citecheck_scorer"]


@scorer(metrics={figure: [mean()] for figure in FIGURES})
def citecheck_scorer(
    cassettes: str | Path = "cassettes/inspect",
    record: str | None = None,
    **settings: Any,
) -> Scorer:
    """Verify the citations of each sample's output: one cassette per sample under
    ``cassettes``; ``record`` is a record mode (none, once, new_episodes, all, rewrite;
    default: ``CITECHECK_RECORD``, else none); ``settings`` are citecheck's settings by
    name (``judge="openai:gpt-4o-mini"``, ``ranker="bm25"``, ``fail_not_retrieved=True``...).
    """
    import anyio

    scoring = CitecheckScoring(cassettes, record, settings)

    async def score(state: TaskState, target: Target) -> Score:
        sample = {
            "id": state.sample_id,
            "epoch": state.epoch,
            "messages": [m.model_dump(mode="json", exclude_none=True) for m in state.messages],
            "output": state.output.model_dump(mode="json", exclude_none=True),
        }
        fields = await anyio.to_thread.run_sync(scoring.score, sample)
        return Score(**fields)

    return score
