"""PDF sources: what a PDF's text layer says, page by page (docs/verification.md, "PDF sources").

A cited PDF (a URL whose path ends in ``.pdf`` or whose reply is one, or a local
``document: report.pdf``) is read here and nowhere else:

- :func:`is_pdf_body` / :func:`is_pdf_content_type`: whether a reply *is* a PDF, whatever
  its URL says (a body starting ``%PDF-``, a ``Content-Type: application/pdf``);
- :func:`extract`: the text of every page with pypdf (chosen on bench/pdf.py: the same
  text as pdfminer.six on the sample files at about three times its speed, pure Python,
  BSD-licensed), within the caps (bytes, pages, seconds), normalised the way a reader
  copies it: ligatures (``ﬁ`` -> ``fi``) spelled out, a word hyphenated at a line end
  joined (``adip-\\niscing`` -> ``adipiscing``; a capital after the hyphen keeps it:
  ``Two-\\nColumn`` -> ``Two-Column``), control characters as spaces;
- a references or bibliography section (a heading line ``References``,
  ``Bibliography``, ``Literatur``... in the last two thirds of the text) is cut off:
  it is never evidence for a claim about the body (:attr:`PdfText.references`);
- :func:`quote_variants`: a quote as the text layer may hold it -- many PDFs lose
  their apostrophes (``Here's`` is ``Heres`` in the text layer) and a compound broken
  at a line end is joined -- so a quote a reader copied or retyped is found;
- :func:`page_passages`: passages cut page by page, each with its page (1-based), so a
  verdict names the page its evidence is on (reports link ``URL#page=12``:
  :func:`~pytest_citecheck.core.urls.page_link`).

What cannot be read is a :class:`PdfUnreadable` with its own reason -- ``pdf_encrypted``,
``pdf_no_text``, ``pdf_too_large``, ``pdf_malformed`` -- never a crash or a hang: every
exception of the parser (deep nesting, broken cross-reference tables, decompression
limits) is caught, the page count is read from the page tree before any page is
flattened, and the extraction stops at its time cap between pages.
"""

from __future__ import annotations

import io
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import Passage, Verdict
from pytest_citecheck.core.defaults import (
    DEFAULT_PDF_MAX_PAGES,
    DEFAULT_PDF_MAX_SECONDS,
)

if TYPE_CHECKING:
    from pypdf import PageObject

PDF_MAGIC = b"%PDF-"
# No page with at least this many non-whitespace characters: no text layer (a scan).
# The image-only sample's pages hold a layer name at most ("Background", 10 characters);
# a line of text is more (habibi.pdf's one line of Arabic and Latin is 18).
MIN_PAGE_TEXT_CHARS = 15

_LIGATURES = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
    }
)
# Control characters a text layer leaves for glyphs it cannot map (a minus sign as NUL).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A word hyphenated at a line end, the rest in lower case: one word (TeX's soft break).
_SOFT_HYPHEN_WRAP = re.compile(r"(?<=[^\W\d_])[-\u2010][ \t]*\n[ \t]*(?=[^\W\d_A-Z])")
# A soft hyphen (U+00AD) at a line end is a break inside one word, whatever follows.
_SHY_WRAP = re.compile(r"\u00ad[ \t]*\n[ \t]*")
_TRAILING_SPACE = re.compile(r"[ \t]+\n")
# A page number (1-3 digits: a year stays) alone on the first or last line of a page:
# never text a reader quotes, and in the way of a quote that runs on to the next page.
_PAGE_NUMBER_LINE = re.compile(r"\A[ \t]*\d{1,3}[ \t]*\n|\n[ \t]*\d{1,3}[ \t]*\Z")
# A references section's heading: a short line of its own, perhaps numbered.
_REFERENCES_HEADING = re.compile(
    r"(?im)^[ \t]*(?:[0-9IVX]+\.?[ \t]+)?"
    r"(?:references|bibliography|works[ \t]+cited|literature[ \t]+cited|cited[ \t]+works|"
    r"literatur(?:verzeichnis)?|quellen(?:verzeichnis)?|bibliographie|r[ée]f[ée]rences)"
    r"[ \t]*:?[ \t]*$"
)
# A heading in the first third of the text is a table of contents' entry or an
# introduction's mention, not the section at the end.
_REFERENCES_FROM = 1 / 3
# Between two letters, as a text layer without apostrophes drops it ("Here's" -> "Heres").
_INNER_APOSTROPHE = re.compile(r"(?<=[^\W\d_])['\u2019\u02bc](?=[^\W\d_])")
_INNER_HYPHEN = re.compile(r"(?<=[a-z])-(?=[a-z])")


class PdfUnreadable(Exception):
    """The PDF's text cannot be read: ``reason`` is one of the ``pdf_*`` reasons."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class PdfLimits:
    """The caps an extraction stays within (the byte cap is the page-size cap's)."""

    max_bytes: int | None = None
    max_pages: int = DEFAULT_PDF_MAX_PAGES
    max_seconds: float = DEFAULT_PDF_MAX_SECONDS


@dataclass(frozen=True)
class PdfText:
    """A PDF's text, page by page (index 0 is page 1), references cut off."""

    pages: tuple[str, ...]
    # The references section that was cut off ("" when there is none) and the page it
    # starts on (None: none).
    references: str = ""
    references_page: int | None = None

    @property
    def text(self) -> str:
        """The body's text, pages apart by a blank line."""
        return "\n\n".join(page for page in self.pages if page.strip())


def is_pdf_body(body: bytes) -> bool:
    """Whether ``body`` is a PDF file: it starts with ``%PDF-`` (after any whitespace or
    a byte-order mark, which some servers prepend)."""
    return body[:1024].lstrip(b" \t\r\n\x00\xef\xbb\xbf").startswith(PDF_MAGIC)


def is_pdf_content_type(value: str | None) -> bool:
    """Whether a ``Content-Type`` names a PDF (``application/pdf``, ``application/x-pdf``)."""
    if not value:
        return False
    kind = value.split(";", 1)[0].strip().lower()
    return kind in ("application/pdf", "application/x-pdf", "application/acrobat")


# Where a reply carries the origin's Content-Type: with ``get_headers=true`` the Crawling
# API is assumed to send the origin's headers prefixed ``original_`` (like
# ``original_status``; docs/verification.md, "PDF sources"); else the reply's own.
CONTENT_TYPE_HEADERS = ("original_content-type", "original-content-type", "content-type")


def pdf_reply(success: bool, body: bytes, headers: Mapping[str, str]) -> bytes | None:
    """A reply's body when it is a PDF (a body starting ``%PDF-``, or a successful reply
    whose Content-Type says ``application/pdf``: the rules call it malformed if it is
    not one), else None."""
    if not success:
        return None
    if is_pdf_body(body) or any(is_pdf_content_type(headers.get(h)) for h in CONTENT_TYPE_HEADERS):
        return body
    return None


def clean_page(text: str) -> str:
    """One page's extracted text as a reader copies it (see the module docstring)."""
    text = text.translate(_LIGATURES).replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub(" ", text)
    text = _TRAILING_SPACE.sub("\n", text.strip())
    text = _PAGE_NUMBER_LINE.sub("", text)
    return _SOFT_HYPHEN_WRAP.sub("", _SHY_WRAP.sub("", text)).strip()


def cut_references(pages: Sequence[str]) -> PdfText:
    """``pages`` with a references section at the end cut off (its last heading in the
    last two thirds of the text, to the end)."""
    total = sum(len(page) for page in pages)
    offset = 0
    found: tuple[int, int] | None = None  # (page index, where on it)
    for index, page in enumerate(pages):
        for match in _REFERENCES_HEADING.finditer(page):
            if offset + match.start() >= total * _REFERENCES_FROM:
                found = (index, match.start())
        offset += len(page)
    if found is None:
        return PdfText(pages=tuple(pages))
    index, at = found
    kept = [*pages[:index], pages[index][:at].rstrip()]
    cut = "\n\n".join([pages[index][at:], *pages[index + 1 :]]).strip()
    # Pages after the heading stay (empty), so page numbers keep their meaning.
    kept += [""] * (len(pages) - index - 1)
    return PdfText(pages=tuple(kept), references=cut, references_page=index + 1)


def extract(data: bytes, limits: PdfLimits | None = None) -> PdfText:
    """The text of the PDF ``data``, page by page; :class:`PdfUnreadable` when it cannot
    be read (encrypted, no text layer, over a cap, malformed)."""
    limits = limits or PdfLimits()
    if limits.max_bytes is not None and len(data) > limits.max_bytes:
        raise PdfUnreadable(
            Reason.PDF_TOO_LARGE,
            f"The PDF is {len(data)} bytes, over the cap of {limits.max_bytes} bytes.",
        )
    if not is_pdf_body(data):
        raise PdfUnreadable(Reason.PDF_MALFORMED, "The file does not start with %PDF-.")
    try:
        raw = _read_pages(data, limits)
    except PdfUnreadable:
        raise
    except RecursionError:
        raise PdfUnreadable(
            Reason.PDF_MALFORMED, "The PDF's objects are nested too deeply to read."
        ) from None
    except MemoryError:
        raise PdfUnreadable(Reason.PDF_TOO_LARGE, "The PDF needs too much memory.") from None
    except Exception as exc:  # the parser's own errors, whatever a hostile file raises
        from pypdf.errors import LimitReachedError

        if isinstance(exc, LimitReachedError):
            raise PdfUnreadable(
                Reason.PDF_TOO_LARGE, f"The PDF is over a parser limit: {exc}"
            ) from None
        raise PdfUnreadable(
            Reason.PDF_MALFORMED, f"The PDF cannot be parsed ({type(exc).__name__}: {exc})."
        ) from None
    pages = [clean_page(page) for page in raw]
    most = max((len("".join(page.split())) for page in pages), default=0)
    if most < MIN_PAGE_TEXT_CHARS:
        raise PdfUnreadable(
            Reason.PDF_NO_TEXT,
            f"The PDF has no text layer (at most {most} characters of text on any of its "
            f"{len(pages)} page(s)): it is probably scanned images; nothing in it can be "
            "quoted.",
        )
    return cut_references(pages)


def _read_pages(data: bytes, limits: PdfLimits) -> list[str]:
    from pypdf import PdfReader

    # pypdf warns through logging about every odd font; a user cannot act on that.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")  # an empty user password opens many PDFs
        except Exception as exc:  # an unsupported algorithm, a missing dependency
            raise PdfUnreadable(
                Reason.PDF_ENCRYPTED, f"The PDF is encrypted and cannot be opened ({exc})."
            ) from None
        if not opened:
            raise PdfUnreadable(
                Reason.PDF_ENCRYPTED, "The PDF is encrypted: a password is needed to read it."
            )
    declared = _declared_pages(reader)
    if declared > limits.max_pages:
        raise PdfUnreadable(
            Reason.PDF_TOO_LARGE,
            f"The PDF has {declared} pages, over the cap of {limits.max_pages}.",
        )
    started = time.monotonic()
    texts: list[str | None] = []
    for number, page in enumerate(reader.pages, start=1):
        if number > limits.max_pages:
            raise PdfUnreadable(
                Reason.PDF_TOO_LARGE,
                f"The PDF has more than {limits.max_pages} pages, the cap.",
            )
        texts.append(_page_text(page))
        if time.monotonic() - started > limits.max_seconds:
            raise PdfUnreadable(
                Reason.PDF_TOO_LARGE,
                f"Extracting the PDF's text took over {limits.max_seconds:g} s "
                f"(stopped at page {number}).",
            )
    if texts and all(text is None for text in texts):
        raise PdfUnreadable(Reason.PDF_MALFORMED, "No page of the PDF could be read.")
    return [text or "" for text in texts]


def _page_text(page: PageObject) -> str | None:
    """One page's text; None when the parser fails on this page alone (a broken font or
    content stream: the other pages are still read). A parser limit or a recursion
    limit is the whole file's problem and is raised."""
    from pypdf.errors import LimitReachedError

    try:
        return page.extract_text() or ""
    except (LimitReachedError, RecursionError, MemoryError):
        raise
    except Exception:
        return None


def _declared_pages(reader: object) -> int:
    """The page count the page tree's root declares (``/Count``), read without
    flattening the tree; 0 when it does not say."""
    try:
        count = reader.trailer["/Root"]["/Pages"]["/Count"]  # type: ignore[attr-defined]
        return int(count)
    except Exception:
        return 0


# -- quotes and passages --------------------------------------------------------


def quote_variants(quote: str) -> list[str]:
    """``quote`` and how a PDF's text layer may hold it, most faithful first: without
    its inner apostrophes (a text layer that lost them), with a compound's hyphen
    dropped (a line-end hyphen joined), both."""
    variants = [quote]
    for variant in (
        _INNER_APOSTROPHE.sub("", quote),
        _INNER_HYPHEN.sub("", quote),
        _INNER_HYPHEN.sub("", _INNER_APOSTROPHE.sub("", quote)),
    ):
        if variant not in variants:
            variants.append(variant)
    return variants


@dataclass(frozen=True)
class PagePassages:
    """A PDF's passages (cut page by page, never across a page) and the page of each."""

    texts: list[str]
    pages: list[int]  # pages[i]: the 1-based page of texts[i]

    def on_page(self, page: int) -> list[int]:
        """The indexes of the passages on ``page``."""
        return [i for i, p in enumerate(self.pages) if p == page]


def page_passages(pdf: PdfText) -> PagePassages:
    """``pdf``'s passages, each page split as a page's text is
    (:func:`~pytest_citecheck.stages.passages.split_passages`)."""
    from pytest_citecheck.stages.passages import split_passages

    texts: list[str] = []
    pages: list[int] = []
    for number, page in enumerate(pdf.pages, start=1):
        for passage in split_passages(page):
            texts.append(passage)
            pages.append(number)
    return PagePassages(texts=texts, pages=pages)


# -- a PDF source in the pipeline -------------------------------------------------------

# Finds the passages holding a quote among texts (the pipeline's own lookup), or None.
Holding = Callable[[str, list[str]], "list[Passage] | None"]


def holding_in_pdf(
    quote: str, passages: PagePassages, page: int | None, holding: Holding
) -> list[Passage] | None:
    """The passages of ``passages`` holding ``quote`` as the text layer may hold it
    (:func:`quote_variants`), looked for on ``page`` first when the citation names one
    (the other passages blanked, so the indexes stay the document's), then everywhere."""
    tries = [passages.texts]
    if page is not None and page in passages.pages:
        tries.insert(
            0, [t if p == page else "" for t, p in zip(passages.texts, passages.pages, strict=True)]
        )
    for texts in tries:
        for variant in quote_variants(quote):
            found = holding(variant, texts)
            if found is not None:
                return found
    return None


def references_verdict(base: Verdict, quote: str, pdf: PdfText) -> Verdict | None:
    """``not_found``, ``quote_in_references``, when ``quote`` (as the text layer may hold
    it) is in the cut-off references section: never evidence for the body. None if not."""
    from pytest_citecheck.core.text import truncate
    from pytest_citecheck.stages.text import normalise

    text = normalise(pdf.references) if pdf.references else ""
    if not text or not any(normalise(v) in text for v in quote_variants(quote)):
        return None
    return base.model_copy(
        update={
            "label": Label.NOT_FOUND,
            "reason": Reason.QUOTE_IN_REFERENCES,
            "evidence_quote": truncate(quote, 2000),
            "page": pdf.references_page,
            "detail": "the quote is in the PDF's references section, which is never "
            "evidence for a claim about the body",
        }
    )


def with_pages(verdict: Verdict, passages: PagePassages) -> Verdict:
    """``verdict`` with the page of each passage it shows and the page of its evidence
    (the first shown passage holding its quote; the only page shown when all are on one)."""
    from pytest_citecheck.stages.text import normalise

    def page_of(index: int) -> int | None:
        return passages.pages[index] if 0 <= index < len(passages.pages) else None

    shown = [p.model_copy(update={"page": page_of(p.index)}) for p in verdict.passages]
    page: int | None = None
    if verdict.evidence_quote:
        needle = normalise(verdict.evidence_quote)
        page = next((p.page for p in shown if needle and needle in normalise(p.text)), None)
    if page is None:
        pages = {p.page for p in shown if p.page is not None}
        page = pages.pop() if len(pages) == 1 else None
    return verdict.model_copy(update={"passages": shown, "page": page})
