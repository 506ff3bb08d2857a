"""A local ``document: report.pdf`` is read like a cited PDF: the quote a reader copied is
found on its page, the verdict names the page, and an unreadable file gets its reason."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.models import Citation
from tests.doubles import pdfs
from tests.unit.test_pipeline_documents import reply, verifier

pytestmark = pytest.mark.skipif(not pdfs.SAMPLES.is_dir(), reason="shared/data/pdf is absent")


def _cite(
    tmp_path: Path, sample: str, quote: str | None = None, page: int | None = None
) -> Citation:
    path = tmp_path / "sources" / sample
    path.parent.mkdir(exist_ok=True)
    shutil.copy(pdfs.SAMPLES / sample, path)
    return Citation(document=f"sources/{sample}", document_path=path, quote=quote, page=page)


def test_a_quote_copied_from_a_local_pdf_is_found_and_the_page_named(tmp_path: Path) -> None:
    quote = "There is no need for special content"
    v, judge = verifier(reply("supported", quote))
    verdict = v.verify_citation(
        "The text says it needs no special content.",
        _cite(tmp_path, "pdflatex-4-pages.pdf", quote=quote, page=2),
    )
    assert verdict.label is Label.SUPPORTED
    assert verdict.page == 2
    assert {p.page for p in verdict.passages} == {2}
    [(_, shown)] = judge.calls
    assert all(quote in " ".join(text.split()) for text in shown)


def test_a_lost_apostrophe_does_not_make_a_quote_fabricated(tmp_path: Path) -> None:
    v, _ = verifier(reply("supported", "Theyre not fond of rules."))
    verdict = v.verify_citation(
        "The crazy ones are not fond of rules.",
        _cite(tmp_path, "crazyones-pdfa.pdf", quote="They're not fond of rules."),
    )
    assert (verdict.label, verdict.page) == (Label.SUPPORTED, 1)


def test_a_quote_the_pdf_lacks_is_fabricated_without_the_judge(tmp_path: Path) -> None:
    v, judge = verifier()
    verdict = v.verify_citation(
        "The crazy ones love rules.",
        _cite(tmp_path, "crazyones-pdfa.pdf", quote="They love rules more than anyone."),
    )
    assert (verdict.label, verdict.reason) == (Label.FABRICATED, Reason.QUOTE_NOT_IN_DOCUMENT)
    assert judge.calls == []


@pytest.mark.parametrize(
    ("sample", "reason"),
    [
        ("libreoffice-writer-password.pdf", Reason.PDF_ENCRYPTED),
        ("imagemagick-images.pdf", Reason.PDF_NO_TEXT),
    ],
)
def test_an_unreadable_local_pdf_gets_its_reason(tmp_path: Path, sample: str, reason: str) -> None:
    v, judge = verifier()
    verdict = v.verify_citation("Anything.", _cite(tmp_path, sample, quote="anything at all"))
    assert (verdict.label, verdict.reason) == (Label.NOT_FOUND, reason)
    assert judge.calls == []


def test_a_quote_only_in_the_references_is_no_evidence(tmp_path: Path) -> None:
    path = tmp_path / "paper.pdf"
    body = [f"Line {i}: the bridge opened to traffic in 1932 after six years." for i in range(30)]
    path.write_bytes(
        pdfs.make_pdf([body, ["References", "[1] Smith, J. The bridge opened in 1931."]])
    )
    v, judge = verifier()
    verdict = v.verify_citation(
        "The bridge opened in 1931.",
        Citation(document="paper.pdf", document_path=path, quote="The bridge opened in 1931."),
    )
    assert (verdict.label, verdict.reason) == (Label.NOT_FOUND, Reason.QUOTE_IN_REFERENCES)
    assert verdict.page == 2 and judge.calls == []
