"""Local documents as sources: quote lookup and sections.

A document citation points at a local file and usually carries the quote the
LLM gave. The quote is looked up in the whole document, normalised exactly as
the guard normalises (:func:`pytest_citecheck.stages.text.normalise`); the section
that encloses it is what the judge reads. Three layouts are understood:

- markdown: ``#`` (ATX) and underlined (setext) headings; ``ref`` is the
  heading text;
- RFC-style plain text: numbered sections at column 0 (``4.1.4.  "exp"
  (Expiration Time) Claim``) plus appendices and unnumbered headings such as
  ``Abstract``; ``ref`` is the number (``4.1.4``, ``A.1``, ``Appendix A``).
  Running page headers and footers are removed first and blank runs collapse
  to one blank line, so a quote that runs across a page break still matches;
- any other text: paragraphs, ``ref`` ``paragraph N``;
- a PDF (``.pdf``, or a file starting ``%PDF-``): its text extracted page by page
  (:mod:`pytest_citecheck.stages.pdf`), one section a page, ``ref`` ``page N``, the
  references section cut off; a quote is looked for as the text layer may hold it.
  One that cannot be read raises :class:`~pytest_citecheck.stages.pdf.PdfUnreadable`.

Text before the first heading is a section with ref ``preamble``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.stages.guard import ElisionRefused, QuoteIndex
from pytest_citecheck.stages.pdf import PdfText, is_pdf_body
from pytest_citecheck.stages.text import normalise

Kind = Literal["markdown", "rfc", "plain", "pdf"]

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd"})
PREAMBLE = "preamble"


@dataclass(frozen=True)
class Section:
    ref: str  # "4.1.4" for numbered sections, the heading text, or "paragraph 12"
    title: str
    text: str  # the heading line(s) and the body, as the judge reads them
    line: int  # 1-based line in the file where the section starts


# -- RFC page furniture --------------------------------------------------------

# "Jones, et al.                Standards Track                    [Page 3]"
_RFC_FOOTER = re.compile(r"^\S.*\S\s{2,}\[Page \d+\]$")
# "RFC 7519                  JSON Web Token (JWT)                  May 2015"
_RFC_HEADER = re.compile(r"^(?:RFC \d+|Internet-Draft)\s{2,}\S.*\s{2,}\S.*\d{4}$")

# -- RFC headings (column 0; body text in an RFC is indented) ------------------

_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+(\S.*)$")
# Two spaces after the number's dot: how RFCs set a heading (a list item in
# ordinary prose has one). Used only to recognise the layout.
_NUMBERED_STRICT = re.compile(r"^\d+(?:\.\d+)*\.\s{2,}\S")
# Each kind of numbered heading and how its ref is written: (pattern, ref format);
# the pattern's groups are the number and the title.
_RFC_HEADINGS = (
    (_NUMBERED, "{}"),
    (re.compile(r"^Appendix\s+([A-Z])\.?\s+(\S.*)$"), "Appendix {}"),
    (re.compile(r"^([A-Z](?:\.\d+)+)\.?\s+(\S.*)$"), "{}"),
)
_UNNUMBERED_MAX = 72

# -- markdown headings ---------------------------------------------------------

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_NOT_SETEXT_TEXT = re.compile(r"^\s{4,}|^ {0,3}(?:[>*+-]\s|\d+[.)]\s|#|```|~~~|\||<)")

# -- section references (``section: "Section 4.1.4."``) -----------------------

_REF_PREFIX = re.compile(r"^(?:\u00a7+|sections?|sect\.|sec\.|appendix|paragraph|para\.?|#+)\s*")
_LEADING_NUMBER = re.compile(r"^(\d+(?:\.\d+)*|[a-z](?:\.\d+)*)\.?(?:\s|$)")
_TOC_TITLES = frozenset({"table of contents", "contents"})


class Document:
    """A local source: its text (page furniture removed) and its sections."""

    path: Path
    text: str
    sections: list[Section]

    def __init__(self, path: Path, text: str, sections: list[Section], kind: Kind) -> None:
        self.path = path
        self.text = text
        self.sections = sections
        self.kind: Kind = kind
        # A PDF's text page by page (kind "pdf"), else None.
        self.pdf: PdfText | None = None
        # The normalised document, section after section: where a quote is.
        self._index = QuoteIndex([section.text for section in sections])

    # -- loading -------------------------------------------------------------

    @classmethod
    def load(cls, path: Path) -> Document:
        """Read and split ``path``; cached per resolved path and modification time.

        Raises :class:`ConfigurationError` when the file cannot be read.
        """
        resolved = Path(path).resolve()
        try:
            stat = resolved.stat()
            key = (resolved, stat.st_mtime_ns, stat.st_size)
            with _cache_lock:
                cached = _cache.get(key)
            if cached is not None:
                return cached
            raw = resolved.read_bytes()
        except OSError as exc:
            raise ConfigurationError(
                f"cannot read document {str(path)!r}: {exc.strerror or exc}"
            ) from exc
        document = cls.from_pdf(raw, resolved) if _is_pdf_file(resolved, raw) else None
        if document is None:
            document = cls.parse(_decode(raw), path=resolved)
        with _cache_lock:
            # One entry per file: an edited file replaces its stale version.
            for stale in [k for k in _cache if k[0] == resolved]:
                del _cache[stale]
            _cache[key] = document
        return document

    @classmethod
    def from_pdf(cls, data: bytes, path: Path) -> Document:
        """A PDF document: one section a page (``page N``); raises ``PdfUnreadable``."""
        from pytest_citecheck.stages.pdf import extract

        pdf = extract(data)
        sections = [
            Section(ref=f"page {number}", title="", text=text, line=number)
            for number, text in enumerate(pdf.pages, start=1)
            if text.strip()
        ]
        document = cls(path, pdf.text, sections, "pdf")
        document.pdf = pdf
        return document

    @classmethod
    def parse(cls, text: str, path: Path | None = None, kind: Kind | None = None) -> Document:
        """Split ``text``; the layout comes from ``kind``, the suffix of ``path``,
        or the text itself."""
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        path = path or Path("<text>")
        if kind is None:
            kind = _detect(lines, path)
        if kind == "markdown":
            return cls(path, "\n".join(lines), _markdown_sections(lines), kind)
        numbered = _strip_page_furniture(lines)
        body = "\n".join(line for _, line in numbered)
        if kind == "rfc":
            return cls(path, body, _rfc_sections(numbered), kind)
        return cls(path, body, _paragraph_sections(numbered), kind)

    # -- lookups -------------------------------------------------------------

    def find_quote(
        self, quote: str, near: str | None = None, provider: bool = False
    ) -> Section | None:
        """The section that encloses ``quote`` (normalised like the guard), or None.

        A quote found in several places resolves to the ``near`` section when
        given and it is one of them, else to its first occurrence outside a
        table of contents. A quote that runs from one section into the next
        gives a section spanning them (ref ``"4.1.3-4.1.4"``) so that the
        judge reads all of the quoted text.
        """
        from pytest_citecheck.stages.pdf import quote_variants

        occurrences: list[tuple[int, int]] = []
        for variant in quote_variants(quote) if self.kind == "pdf" else [quote]:
            occurrences = self._index.find(variant, provider)
            if occurrences:
                break
        if not occurrences:
            return None
        if near is not None:
            wanted = self.section(near)
            for first, last in occurrences:
                if first == last and self.sections[first] == wanted:
                    return wanted
        single = [first for first, last in occurrences if first == last]
        for index in single:
            if not _is_toc(self.sections[index]):
                return self.sections[index]
        if single:
            return self.sections[single[0]]
        first, last = occurrences[0]
        return _span(self.sections[first : last + 1])

    def elision_refusal(self, quote: str) -> ElisionRefused | None:
        """Why an elided ``quote`` is not found although the document has its pieces
        (:meth:`~pytest_citecheck.stages.guard.QuoteIndex.elision_refusal`)."""
        return self._index.elision_refusal(quote)

    def section(self, ref: str) -> Section | None:
        """The section ``ref`` names: ``"4.1.4"``, ``"Section 4.1.4"``,
        ``"4.1.4."``, ``"Appendix A"``, ``"paragraph 3"`` or a heading text
        (case-insensitive)."""
        key = _ref_key(ref)
        if not key:
            return None
        for section in self.sections:
            if _ref_key(section.ref) == key:
                return section
        wanted = normalise(ref).casefold()
        for section in self.sections:
            title = normalise(section.title).casefold()
            if title and title in (wanted, key):
                return section
        number = _LEADING_NUMBER.match(key)
        if number is not None:
            for section in self.sections:
                if _ref_key(section.ref) == number.group(1):
                    return section
        return None


_cache: dict[tuple[Path, int, int], Document] = {}
_cache_lock = threading.Lock()


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        # Old plain-text files (and some RFC mirrors) are Latin-1.
        return raw.decode("latin-1")


def _detect(lines: list[str], path: Path) -> Kind:
    if path.suffix.lower() in MARKDOWN_SUFFIXES:
        return "markdown"
    furniture = any(_is_page_furniture(line) for line in lines)
    strict = sum(1 for line in lines if _NUMBERED_STRICT.match(line))
    if strict >= 2 or (furniture and any(_NUMBERED.match(line) for line in lines)):
        return "rfc"
    if any(_ATX.match(lines[i]) for i, kind in _atx_headings(lines) if kind is not None):
        return "markdown"
    return "plain"


# -- RFC-style text ------------------------------------------------------------


def _is_page_furniture(line: str) -> bool:
    line = line.replace("\f", "").rstrip()
    return bool(_RFC_FOOTER.match(line) or _RFC_HEADER.match(line))


def _strip_page_furniture(lines: list[str]) -> list[tuple[int, str]]:
    """Lines without page headers/footers and with blank runs collapsed to one
    blank line, each with its 1-based line number in the file."""
    kept: list[tuple[int, str]] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.replace("\f", "").rstrip()
        if _is_page_furniture(line):
            continue
        if not line and (not kept or not kept[-1][1]):
            continue
        kept.append((number, line))
    while kept and not kept[-1][1]:
        kept.pop()
    return kept


def _rfc_heading(numbered: list[tuple[int, str]], i: int) -> tuple[str, str] | None:
    """(ref, title) when line ``i`` is a heading."""
    line = numbered[i][1]
    if not line or line[0].isspace():
        return None
    for pattern, ref_format in _RFC_HEADINGS:
        match = pattern.match(line)
        if match:
            return ref_format.format(match.group(1)), match.group(2).strip()
    # "Abstract", "Copyright Notice", "Acknowledgements": a short line alone
    # between blank lines. The front page's author block is not alone.
    before_blank = i == 0 or not numbered[i - 1][1]
    after_blank = i + 1 == len(numbered) or not numbered[i + 1][1]
    if before_blank and after_blank and len(line) <= _UNNUMBERED_MAX:
        return line.strip(), line.strip()
    return None


def _rfc_sections(numbered: list[tuple[int, str]]) -> list[Section]:
    starts: list[tuple[int, str, str]] = []  # (index in numbered, ref, title)
    for i in range(len(numbered)):
        heading = _rfc_heading(numbered, i)
        if heading is None:
            continue
        ref, title = heading
        # A long title wraps onto indented lines right below the heading.
        # RFCs put a blank line between a heading and its body, so indented
        # text right below a heading is the rest of the title.
        j = i + 1
        while j < len(numbered) and numbered[j][1][:1].isspace():
            title = f"{title} {numbered[j][1].strip()}"
            j += 1
        starts.append((i, ref, title))
    return _sections_from_starts(numbered, starts)


def _sections_from_starts(
    numbered: list[tuple[int, str]], starts: list[tuple[int, str, str]]
) -> list[Section]:
    sections: list[Section] = []
    first = starts[0][0] if starts else len(numbered)
    if any(line.strip() for _, line in numbered[:first]):
        sections.append(_make_section(PREAMBLE, "", numbered[:first]))
    for n, (i, ref, title) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(numbered)
        sections.append(_make_section(ref, title, numbered[i:end]))
    return sections


def _make_section(ref: str, title: str, chunk: list[tuple[int, str]]) -> Section:
    while chunk and not chunk[0][1].strip():
        chunk = chunk[1:]
    while chunk and not chunk[-1][1].strip():
        chunk = chunk[:-1]
    line = chunk[0][0] if chunk else 1
    return Section(ref=ref, title=title, text="\n".join(t for _, t in chunk), line=line)


# -- markdown ------------------------------------------------------------------


def _atx_headings(lines: list[str]) -> Iterator[tuple[int, str | None]]:
    """(index, what the line is) for each line: the ATX heading text, ``""``
    for ordinary text, None inside code fences and front matter."""
    fence: str | None = None
    front_matter = bool(lines) and lines[0].strip() == "---"
    for i, line in enumerate(lines):
        if front_matter:
            if i > 0 and line.strip() in ("---", "..."):
                front_matter = False
            yield i, None
            continue
        opener = _FENCE.match(line)
        if fence is not None:
            if opener and opener.group(1) == fence:
                fence = None
            yield i, None
        elif opener:
            fence = opener.group(1)
            yield i, None
        else:
            match = _ATX.match(line)
            yield i, (match.group(2) or "").strip() if match else ""


def _markdown_sections(lines: list[str]) -> list[Section]:
    kinds = dict(_atx_headings(lines))
    starts: list[tuple[int, str, str]] = []
    for i, line in enumerate(lines):
        kind = kinds[i]
        if kind is None:
            continue  # code or front matter
        if _ATX.match(line):
            starts.append((i, kind, kind))
        elif (
            # Setext: a text line after a blank line, underlined by === or ---.
            i + 1 < len(lines)
            and kinds[i + 1] is not None
            and line.strip()
            and _SETEXT_UNDERLINE.match(lines[i + 1])
            and not _NOT_SETEXT_TEXT.match(line)
            and (i == 0 or not lines[i - 1].strip())
        ):
            starts.append((i, line.strip(), line.strip()))
    return _sections_from_starts(list(enumerate(lines, start=1)), starts)


# -- plain text ----------------------------------------------------------------


def _paragraph_sections(numbered: list[tuple[int, str]]) -> list[Section]:
    sections: list[Section] = []
    chunk: list[tuple[int, str]] = []
    for item in [*numbered, (0, "")]:
        if item[1].strip():
            chunk.append(item)
            continue
        if chunk:
            first = chunk[0][1].strip()
            title = first if len(first) <= 80 else first[:77].rstrip() + "..."
            sections.append(_make_section(f"paragraph {len(sections) + 1}", title, chunk))
            chunk = []
    return sections


# -- references ----------------------------------------------------------------


def _ref_key(ref: str) -> str:
    key = normalise(ref).casefold()
    key = _REF_PREFIX.sub("", key).strip()
    return key.rstrip(".").strip()


def _is_toc(section: Section) -> bool:
    return normalise(section.title).casefold() in _TOC_TITLES


def _span(sections: list[Section]) -> Section:
    return Section(
        ref=f"{sections[0].ref}-{sections[-1].ref}",
        title=sections[0].title,
        text="\n\n".join(s.text for s in sections),
        line=sections[0].line,
    )


def _is_pdf_file(path: Path, raw: bytes) -> bool:
    return path.suffix.lower() == ".pdf" or is_pdf_body(raw)
