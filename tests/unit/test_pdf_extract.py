"""PDF text extraction (stages/pdf.py) on the real sample files and on hostile PDFs made
here: what a reader copies is what the text holds, and what cannot be read gets its reason
in bounded time, never a crash."""

from __future__ import annotations

import time

import pytest

from pytest_citecheck.claims.labels import Reason
from pytest_citecheck.core.urls import page_link
from pytest_citecheck.stages import pdf
from pytest_citecheck.stages.guard import QuoteIndex
from pytest_citecheck.stages.quote_policy import EXACT
from pytest_citecheck.stages.text import normalise
from tests.doubles import pdfs

pytestmark = pytest.mark.skipif(not pdfs.SAMPLES.is_dir(), reason="shared/data/pdf is absent")


def _found(quote: str, texts: list[str]) -> bool:
    index = QuoteIndex(texts)
    return any(index.locate(variant, EXACT, False) for variant in pdf.quote_variants(quote))


def test_ligatures_are_spelled_out_and_a_copied_quote_is_found() -> None:
    text = pdf.extract(pdfs.sample("crazyones-pdfa.pdf"))
    assert "\ufb01" not in text.text and "misfits" in text.text
    assert "things differently" in text.text
    passages = pdf.page_passages(text)
    # The text layer lost its apostrophes ("Heres"): the quote a reader types is found.
    assert _found("Here's to the crazy ones. The misfits.", passages.texts)
    assert _found("They're not fond of rules.", passages.texts)
    assert not _found("They are fond of rules.", passages.texts)


def test_a_word_hyphenated_at_a_line_end_is_one_word_again() -> None:
    text = pdf.extract(pdfs.sample("minimal-document.pdf")).text
    assert "no sea takimata sanctus" in " ".join(text.split())
    two_columns = " ".join(pdf.extract(pdfs.sample("multicolumn.pdf")).text.split())
    assert "consectetuer adipiscing elit" in two_columns
    # A capital after the hyphen keeps it: a compound, not a soft break.
    assert normalise(pdf.clean_page("Two-\nColumn")) == "Two-Column"


def test_soft_hyphens_and_lone_page_numbers_are_not_text() -> None:
    assert pdf.clean_page("infor\u00ad\nmation") == "information"
    assert pdf.clean_page("co\u2010\noperation") == "cooperation"
    # A page number alone on a line at a page's end or start; a number in a sentence stays.
    assert pdf.clean_page("12\nThe bridge opened.\n13") == "The bridge opened."
    assert pdf.clean_page("It opened in\n1932") == "It opened in\n1932"
    text = pdf.extract(pdfs.sample("minimal-document.pdf")).pages[0]
    assert text.endswith("sit\namet.") or text.endswith("sit amet.")


def test_passages_carry_their_page() -> None:
    text = pdf.extract(pdfs.sample("pdflatex-4-pages.pdf"))
    passages = pdf.page_passages(text)
    assert set(passages.pages) == {1, 2, 3, 4}
    assert passages.pages == sorted(passages.pages)
    last = passages.on_page(4)
    assert last and all(passages.pages[i] == 4 for i in last)
    assert page_link("https://example.com/a.pdf#x", 4) == "https://example.com/a.pdf#page=4"
    assert page_link("https://example.com/a", None) == "https://example.com/a"


def test_a_long_real_document_is_read_page_by_page() -> None:
    text = pdf.extract(pdfs.sample("GeoTopo-komprimiert.pdf"))
    assert len(text.pages) == 117
    assert "Geometrie und Topologie" in text.pages[0]


def test_the_encrypted_file_is_pdf_encrypted() -> None:
    with pytest.raises(pdf.PdfUnreadable) as caught:
        pdf.extract(pdfs.sample("libreoffice-writer-password.pdf"))
    assert caught.value.reason == Reason.PDF_ENCRYPTED


def test_the_image_only_file_is_pdf_no_text() -> None:
    with pytest.raises(pdf.PdfUnreadable) as caught:
        pdf.extract(pdfs.sample("imagemagick-images.pdf"))
    assert caught.value.reason == Reason.PDF_NO_TEXT


def test_one_short_line_of_text_is_text() -> None:
    # One line of Arabic and Latin: little text, but a text layer.
    assert "habibi" in pdf.extract(pdfs.sample("habibi.pdf")).text


def test_a_references_section_is_cut_off() -> None:
    body = [f"Line {i} of the body says the bridge opened in 1932." for i in range(30)]
    made = pdfs.make_pdf(
        [body, ["The study found a 12 percent rise.", "References", "[1] Smith, J. Bridges."]]
    )
    text = pdf.extract(made)
    assert "12 percent rise" in text.pages[1]
    assert "Smith" not in text.text and "Smith" in text.references
    assert text.references_page == 2


def test_a_references_entry_in_the_table_of_contents_cuts_nothing() -> None:
    made = pdfs.make_pdf([["Contents", "References"], ["Body text " * 40] * 3])
    text = pdf.extract(made)
    assert text.references == "" and "Body text" in text.text


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (pdfs.many_pages, Reason.PDF_TOO_LARGE),
        (pdfs.decompression_bomb, Reason.PDF_TOO_LARGE),
        (pdfs.deep_nesting, Reason.PDF_MALFORMED),
        (pdfs.truncated, Reason.PDF_MALFORMED),
        (lambda: b"<html>not a pdf</html>", Reason.PDF_MALFORMED),
    ],
    ids=["50000-pages", "decompression-bomb", "deep-nesting", "truncated", "not-a-pdf"],
)
def test_hostile_pdfs_get_a_reason_quickly(make: object, reason: str) -> None:
    data = make()  # type: ignore[operator]
    assert len(data) < 1_000_000  # small on disk
    started = time.monotonic()
    with pytest.raises(pdf.PdfUnreadable) as caught:
        pdf.extract(data)
    assert caught.value.reason == reason
    assert time.monotonic() - started < 20


def test_a_page_that_cannot_be_decoded_leaves_the_others_readable() -> None:
    made = pdfs.make_pdf(
        [["Page one reads well and has enough words."], ["Page two is broken."]], broken={1}
    )
    assert pdf.extract(made).pages == ("Page one reads well and has enough words.", "")
    with pytest.raises(pdf.PdfUnreadable) as caught:
        pdf.extract(pdfs.make_pdf([["Only page, broken."]], broken={0}))
    assert caught.value.reason == Reason.PDF_MALFORMED


def test_a_broken_xref_table_is_recovered() -> None:
    assert pdf.extract(pdfs.broken_xref()).pages == ("Broken cross references, intact objects.",)


def test_the_caps_hold() -> None:
    made = pdfs.make_pdf([["Page one has enough words to count as text."]] * 3)
    with pytest.raises(pdf.PdfUnreadable) as caught:
        pdf.extract(made, pdf.PdfLimits(max_pages=2))
    assert caught.value.reason == Reason.PDF_TOO_LARGE
    with pytest.raises(pdf.PdfUnreadable) as caught:
        pdf.extract(made, pdf.PdfLimits(max_bytes=100))
    assert caught.value.reason == Reason.PDF_TOO_LARGE
    with pytest.raises(pdf.PdfUnreadable) as caught:
        pdf.extract(pdfs.sample("GeoTopo-komprimiert.pdf"), pdf.PdfLimits(max_seconds=0.01))
    assert caught.value.reason == Reason.PDF_TOO_LARGE
    assert "stopped at page" in caught.value.detail


def test_a_reply_says_it_is_a_pdf() -> None:
    assert pdf.is_pdf_body(b"%PDF-1.7\n...")
    assert pdf.is_pdf_body(b"\n\n%PDF-1.4")
    assert not pdf.is_pdf_body(b"<!doctype html>%PDF-")
    assert pdf.is_pdf_content_type("application/pdf; qs=0.001")
    assert not pdf.is_pdf_content_type("text/html; charset=utf-8")
    assert not pdf.is_pdf_content_type(None)
