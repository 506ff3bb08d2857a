"""Hook specifications for custom judges and fetchers (added with ``pytest_addhooks``).

Implement them in a ``conftest.py`` or a plugin::

    def pytest_citecheck_make_judge(config, spec):
        if spec.startswith("mycorp:"):
            return MyCorpJudge(spec)   # anything with .name and .judge(claim, passages)
        return None                    # let citecheck build the built-in providers

The first non-None result wins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_citecheck.stages.fetch_rules import Fetcher
    from pytest_citecheck.stages.judges.base import Judge
    from pytest_citecheck.stages.retrieval import Ranker


@pytest.hookspec(firstresult=True)
def pytest_citecheck_make_judge(config: pytest.Config, spec: str) -> Judge | None:
    """Return a judge for ``spec`` (``provider:model``), or None for the built-in ones."""


@pytest.hookspec(firstresult=True)
def pytest_citecheck_make_fetcher(config: pytest.Config) -> Fetcher | None:
    """Return the fetcher for URL citations, or None for the Crawling API fetcher."""


@pytest.hookspec(firstresult=True)
def pytest_citecheck_make_ranker(config: pytest.Config) -> Ranker | None:
    """Return the ranker used when recording, or None for all-MiniLM-L6-v2.

    Replay never calls it: retrieval's choices are read from the cassette.
    """
