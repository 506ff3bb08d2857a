"""Local documents: sections, quote lookup and section references."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.stages.documents import Document, Section

RFC7519 = Path(__file__).parents[1] / "data" / "rfc7519.txt"
NUMBERED = re.compile(r"\d+(\.\d+)*")


@pytest.fixture(scope="module")
def rfc() -> Document:
    return Document.load(RFC7519)


def test_rfc_layout(rfc: Document) -> None:
    assert rfc.kind == "rfc"
    numbered = [s.ref for s in rfc.sections if NUMBERED.fullmatch(s.ref)]
    assert len(numbered) == 45
    assert numbered[:3] == ["1", "1.1", "2"] and numbered[-1] == "13.2"
    others = [s.ref for s in rfc.sections if not NUMBERED.fullmatch(s.ref)]
    assert others == [
        "preamble", "Abstract", "Status of This Memo", "Copyright Notice",
        "Table of Contents", "Appendix A", "A.1", "A.2", "Appendix B", "Appendix C",
        "Acknowledgements", "Authors' Addresses",
    ]  # fmt: skip
    # shared/data/README.md counts 58,365 characters: the same text with the
    # blank line it keeps at each end (4 characters) that we strip.
    assert len(rfc.text) == 58_361
    assert "[Page" not in rfc.text and "RFC 7519   " not in rfc.text


def test_section_lines_point_into_the_original_file(rfc: Document) -> None:
    original = RFC7519.read_text().split("\n")
    for section in rfc.sections:
        if section.ref != "preamble":
            assert original[section.line - 1].startswith(section.text.split("\n")[0])
    exp = rfc.section("4.1.4")
    assert exp is not None and exp.line == 505
    assert exp.title == '"exp" (Expiration Time) Claim'


def test_wrapped_heading_title(rfc: Document) -> None:
    section = rfc.section("10.2")
    assert section is not None
    assert section.title == "Sub-Namespace Registration of urn:ietf:params:oauth:token-type:jwt"


@pytest.mark.parametrize(
    ("quote", "ref"),
    [
        ("Its value MUST be a number containing a NumericDate value.  Use of this", "4.1.4"),
        ("the JWT MUST NOT be accepted for processing", "4.1.4"),
        (
            "the current date/time\nMUST be before the expiration date/time listed in the "
            "\u201cexp\u201d claim.",
            "4.1.4",
        ),
        ("If the principal processing the claim does not identify itself", "4.1.3"),
        ('the "aud" value is an array of case-sensitive strings', "4.1.3"),
        ("This claim can be used to determine the age of the JWT.", "4.1.6"),
        ("The \u201cnbf\u201d (not before) claim identifies the time", "4.1.5"),
        ("Private Claim Names are subject to collision", "4.3"),
        ("JSON Web Token (JWT) is a compact, URL-safe means", "Abstract"),
        ("Relationship of JWTs to SAML Assertions", "Appendix B"),
        # a heading's text is also in the table of contents: the section wins
        ('"exp" (Expiration Time) Claim', "4.1.4"),
    ],
)
def test_quote_found_in_its_section(rfc: Document, quote: str, ref: str) -> None:
    section = rfc.find_quote(quote)
    assert section is not None and section.ref == ref


@pytest.mark.parametrize(
    ("quote", "ref"),
    [
        # across the page 9 / page 10 break, inside 4.1.4
        ('listed in the "exp" claim. Implementers MAY provide for some small leeway', "4.1.4"),
        # across the page 10 / page 11 break, mid-sentence, inside 4.3
        ("Unlike Public Claim Names, Private Claim Names are subject to collision", "4.3"),
    ],
)
def test_quote_across_a_page_break(rfc: Document, quote: str, ref: str) -> None:
    section = rfc.find_quote(quote)
    assert section is not None and section.ref == ref
    assert "Standards Track" not in section.text


@pytest.mark.parametrize(
    "quote",
    [
        "The exp claim MUST be ignored by all implementations.",
        "JWTs are always encrypted.",
        "the JWT MUST NOT be accepted  for  processing later",
        "the jwt must not be accepted for processing",  # case matters
        "",
        "  \n ",
    ],
)
def test_invented_quote_is_not_found(rfc: Document, quote: str) -> None:
    assert rfc.find_quote(quote) is None


def test_quote_running_into_the_next_section(rfc: Document) -> None:
    section = rfc.find_quote('Use of this claim is OPTIONAL. 4.1.5. "nbf" (Not Before) Claim')
    assert section is not None
    assert section.ref == "4.1.4-4.1.5"
    assert section.line == 505
    assert "clock skew" in section.text and "not-before date/time" in section.text


def test_repeated_quote_prefers_the_cited_section(rfc: Document) -> None:
    quote = "Use of this claim is OPTIONAL."
    first = rfc.find_quote(quote)
    assert first is not None and first.ref == "4.1.1"
    near = rfc.find_quote(quote, near="Section 4.1.6")
    assert near is not None and near.ref == "4.1.6"


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("4.1.4", "4.1.4"),
        ("Section 4.1.4", "4.1.4"),
        ("4.1.4.", "4.1.4"),
        ("section 4.1.4.", "4.1.4"),
        ("\u00a7 4.1.4", "4.1.4"),
        ("Section 4.1.4 of RFC 7519", "4.1.4"),
        ('4.1.4.  "exp" (Expiration Time) Claim', "4.1.4"),
        ('"exp" (expiration time) claim', "4.1.4"),
        ("\u201cexp\u201d (Expiration Time) Claim", "4.1.4"),
        ("4.1", "4.1"),
        ("13", "13"),
        ("Appendix A", "Appendix A"),
        ("appendix a.", "Appendix A"),
        ("A.1", "A.1"),
        ("abstract", "Abstract"),
        ("SECURITY CONSIDERATIONS", "11"),
        ("4.1.9", None),
        ("Section 99", None),
        ("", None),
        ("Nonexistent heading", None),
    ],
)
def test_section_lookup(rfc: Document, ref: str, expected: str | None) -> None:
    section = rfc.section(ref)
    assert (section.ref if section else None) == expected


def test_load_is_cached_per_path_and_mtime(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("First paragraph.\n\nSecond paragraph.\n")
    first = Document.load(path)
    assert Document.load(tmp_path / "." / "notes.txt") is first
    # A different size (and mtime): the key changes even on coarse-mtime filesystems.
    path.write_text("First paragraph.\n\nSecond paragraph, edited.\n")
    second = Document.load(path)
    assert second is not first
    assert second.find_quote("edited") is not None


def test_missing_document_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"cannot read document .*gone\.txt"):
        Document.load(tmp_path / "gone.txt")


MARKDOWN = """\
---
title: # not a heading
---
Intro before any heading.

# JWT notes

The "exp" claim is the expiration time.

## Expiry ##

Tokens expire.
```python
# a comment, not a heading
x = 1
```

Validation
==========

Check the \u201caud\u201d claim.

Edge cases
----------

Clock skew of a few minutes.
"""


def test_markdown_sections(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text(MARKDOWN)
    doc = Document.load(path)
    assert doc.kind == "markdown"
    assert [(s.ref, s.line) for s in doc.sections] == [
        ("preamble", 1),
        ("JWT notes", 6),
        ("Expiry", 10),
        ("Validation", 18),
        ("Edge cases", 23),
    ]
    expiry = doc.section("expiry")
    assert expiry is not None and "# a comment, not a heading" in expiry.text
    assert doc.section("## Expiry") == expiry
    found = doc.find_quote('Check the "aud" claim.')
    assert found is not None and found.ref == "Validation"
    found = doc.find_quote("x = 1")
    assert found is not None and found.ref == "Expiry"
    assert doc.find_quote("Clock skew of a few hours.") is None


def test_text_file_with_markdown_headings_is_markdown() -> None:
    doc = Document.parse("# One\n\nalpha\n\n# Two\n\nbeta\n", path=Path("notes.txt"))
    assert doc.kind == "markdown"
    assert [s.ref for s in doc.sections] == ["One", "Two"]


def test_plain_text_paragraphs(tmp_path: Path) -> None:
    path = tmp_path / "memo.txt"
    path.write_text(
        "The meeting is on Monday.\nIt starts at nine.\n\n\n"
        "Bring the \u2018draft\u2019 report.\n\n   \nNobody may be late.\n"
    )
    doc = Document.load(path)
    assert doc.kind == "plain"
    assert [(s.ref, s.line) for s in doc.sections] == [
        ("paragraph 1", 1),
        ("paragraph 2", 5),
        ("paragraph 3", 8),
    ]
    assert doc.sections[0] == Section(
        ref="paragraph 1",
        title="The meeting is on Monday.",
        text="The meeting is on Monday.\nIt starts at nine.",
        line=1,
    )
    found = doc.find_quote("Monday. It starts")
    assert found is not None and found.ref == "paragraph 1"
    found = doc.find_quote("Bring the 'draft' report.")
    assert found is not None and found.ref == "paragraph 2"
    assert doc.section("Paragraph 3") == doc.sections[2]
    assert doc.section("paragraph 4") is None


def test_numbered_list_in_prose_is_not_rfc() -> None:
    doc = Document.parse("Steps:\n\n1. Boil water.\n2. Add tea.\n", path=Path("tea.txt"))
    assert doc.kind == "plain"


def test_crlf_and_latin1(tmp_path: Path) -> None:
    path = tmp_path / "old.txt"
    path.write_bytes("Caf\u00e9 au lait.\r\n\r\nSecond.\r\n".encode("latin-1"))
    doc = Document.load(path)
    assert [s.ref for s in doc.sections] == ["paragraph 1", "paragraph 2"]
    assert doc.find_quote("Caf\u00e9 au lait.") is not None
