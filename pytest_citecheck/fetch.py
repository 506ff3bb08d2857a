"""Fetching a URL citation through the Crawlbase Crawling API (DESIGN §3 steps 1-7).

INTERFACE ONLY -- the implementation is being written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from pytest_citecheck.models import Fetch, Label


@dataclass
class FetchResult:
    """What fetching one URL gave.

    Either ``text`` holds the readable markdown to cut into passages (and
    ``label`` is None), or ``label``/``reason`` say why the page cannot be
    judged (unreachable, not_found, error) and ``text`` is None.
    """

    url: str
    text: str | None = None
    label: Label | None = None
    reason: str | None = None
    detail: str | None = None
    final_url: str | None = None
    original_status: int | None = None
    rid: str | None = None
    fetches: list[Fetch] = field(default_factory=list)

    @property
    def credits(self) -> float:
        return sum(f.credits for f in self.fetches)


class Fetcher(Protocol):
    """Anything that turns a URL into a :class:`FetchResult`."""

    def fetch(self, url: str) -> FetchResult: ...
