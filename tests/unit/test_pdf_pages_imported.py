"""A provider's page of a PDF citation becomes the citation's ``page`` (real responses:
Anthropic ``page_location``, Bedrock ``documentPage``), and a claim file's ``page:`` is
read and checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from pytest_citecheck.claims.importers import import_response
from pytest_citecheck.claims.models import Citation

NATIVE = Path(__file__).parent.parent / "data" / "native"


def _load(name: str) -> Any:
    (path,) = NATIVE.glob(f"*/{name}.json")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "name",
    ["ruby_llm__page_location_pdf", "ruby_llm__claude-haiku-4-5_documentPage_pdf_earlier"],
)
def test_a_providers_pdf_page_becomes_the_citations_page(name: str) -> None:
    answer = import_response(_load(name), answer_id="a")
    citations = [c for claim in answer.claim_list for c in claim.citations]
    assert citations and all(c.page == 1 for c in citations)


def test_a_text_documents_citation_has_no_page() -> None:
    answer = import_response(_load("ruby_llm__char_location_text_document"), answer_id="a")
    assert [c.page for claim in answer.claim_list for c in claim.citations] == [None]


def test_a_claim_files_page_is_a_whole_number_from_one() -> None:
    assert Citation(url="https://example.com/a.pdf", quote="q words here", page=3).page == 3
    with pytest.raises(ValidationError):
        Citation(url="https://example.com/a.pdf", page=0)
