"""A scripted world for the batch CLI and service tests: nine citations, every label.

:data:`PAGES` go into a :class:`~tests.doubles.crawlbase.CrawlbaseDouble`;
:func:`judge_by_page` is the :class:`~tests.doubles.llm.LLMDouble` responder
that gives each (claim, page) pair its verdict, whatever order the concurrent
engine asks in. :data:`RECORDS` are the batch's JSONL records:

=================  ===============================  ==================================
claim              citation                         label (reason)
=================  ===============================  ==================================
boiling            /articles/boiling                supported
boiling            /old-report                      unreachable (http_404)
boiling            /science/deep/link               not_found (redirected_to_homepage)
eiffel             /landmarks/eiffel                supported
eiffel             /gone                            unreachable (http_410)
eiffel             /landmarks/eiffel-report.pdf     not_found (pdf_no_text: a scan)
boiling-90         /articles/sea-level              contradicted
boiling-90         /missing                         unreachable (http_404)
boiling-90         /articles/unrelated              not_found (the judge found nothing)
=================  ===============================  ==================================

2 supported of 9 (0.2222), 2 of the 6 reachable (0.3333).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.doubles.crawlbase import CrawlbaseDouble, Page
from tests.doubles.llm import JudgeCall, LLMDouble, Scripted, verdict
from tests.doubles.pdfs import make_pdf

SITE = "https://example.com"
FILLER = (
    " The article goes on to describe the history of the measurement, the instruments"
    " used by early experimenters and the way the result is taught in schools today."
)

BOILING = (
    "Water boils at 100 degrees Celsius at sea level, where the air pressure is one atmosphere."
)
EIFFEL = "The Eiffel Tower stands on the Champ de Mars in Paris and was completed in 1889."
SEA_LEVEL = "At sea level pure water boils at 100 degrees Celsius, never at 90 degrees."
UNRELATED = "Kettles made of copper were common in European kitchens in the nineteenth century."

PAGES: dict[str, Page] = {
    f"{SITE}/articles/boiling": Page(markdown=f"# Boiling\n\n{BOILING}{FILLER}\n"),
    f"{SITE}/old-report": Page(markdown="Not Found", original_status=404),
    f"{SITE}/science/deep/link": Page(
        markdown=f"# Home\n\n{UNRELATED}{FILLER}\n", final_url=f"{SITE}/"
    ),
    f"{SITE}/landmarks/eiffel": Page(markdown=f"# The tower\n\n{EIFFEL}{FILLER}\n"),
    f"{SITE}/gone": Page(markdown="Gone", original_status=410),
    f"{SITE}/articles/sea-level": Page(markdown=f"# Sea level\n\n{SEA_LEVEL}{FILLER}\n"),
    f"{SITE}/missing": Page(markdown="Not Found", original_status=404),
    f"{SITE}/articles/unrelated": Page(markdown=f"# Kettles\n\n{UNRELATED}{FILLER}\n"),
    # Two pages of images and no text layer.
    f"{SITE}/landmarks/eiffel-report.pdf": Page(pdf=make_pdf([[], []])),
}

RECORDS = [
    {
        "id": "boiling",
        "claim": "Water boils at 100 degrees Celsius at sea level.",
        "urls": [f"{SITE}/articles/boiling", f"{SITE}/old-report", f"{SITE}/science/deep/link"],
    },
    {
        "id": "eiffel",
        "claim": "The Eiffel Tower is in Paris.",
        "urls": [f"{SITE}/landmarks/eiffel", f"{SITE}/gone", f"{SITE}/landmarks/eiffel-report.pdf"],
    },
    {
        "id": "boiling-90",
        "claim": "Water boils at 90 degrees Celsius at sea level.",
        "urls": [f"{SITE}/articles/sea-level", f"{SITE}/missing", f"{SITE}/articles/unrelated"],
    },
]

# (words of the claim, sentence on the page) -> the judge's label.
_VERDICTS = [
    ("100 degrees", BOILING, "supported"),
    ("Eiffel", EIFFEL, "supported"),
    ("90 degrees", SEA_LEVEL, "contradicted"),
]


def judge_by_page(call: JudgeCall) -> Scripted:
    """Supported/contradicted with the page's sentence as the quote, else not_found."""
    claim = call.claim or ""
    text = "\n".join(call.passages)
    for words, sentence, label in _VERDICTS:
        if words in claim and sentence in text:
            return verdict(label, sentence, 0.95)
    return verdict("not_found", None, 0.9)


class FirstPassages:
    """A ranker with no model: the first k passages, in page order (the pages
    here have one passage each)."""

    name = "first-passages"
    version = "1"

    def rank(self, claim: str, passages: Sequence[str], k: int) -> list[tuple[int, float]]:
        return [(i, 1.0) for i in range(min(k, len(passages)))]


def add_pages(api: CrawlbaseDouble) -> None:
    for url, page in PAGES.items():
        api.add(url, page)


def write_records(path: Path, records: list[dict[str, object]] | None = None) -> Path:
    lines = [json.dumps(r) for r in (RECORDS if records is None else records)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def use_doubles(
    monkeypatch: pytest.MonkeyPatch, api: CrawlbaseDouble, llm: LLMDouble, openai_key: str
) -> None:
    """The batch's world on loopback, configured through the environment as a user
    would: :data:`PAGES` in the Crawling API double, an OpenAI judge on the LLM double,
    and a ranker with no model."""
    from pytest_citecheck.stages import retrieval

    # No embedding model in these tests: the engine builds its ranker through this.
    monkeypatch.setattr(
        retrieval, "make_ranker", lambda name, cache_dir=None: FirstPassages(), raising=False
    )
    add_pages(api)
    monkeypatch.setenv("CRAWLBASE_TOKEN", api.tokens["normal"])
    monkeypatch.setenv("CRAWLBASE_JS_TOKEN", api.tokens["javascript"])
    monkeypatch.setenv("CITECHECK_CRAWLBASE_URL", api.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", openai_key)
    monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url("openai"))
