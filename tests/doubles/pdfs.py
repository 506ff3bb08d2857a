"""PDF files made in a test: small, real (pypdf reads them like any PDF), and hostile ones.

:func:`make_pdf` writes pages of text lines in Helvetica with a correct cross-reference
table; the hostile makers keep the file small on disk while the parser faces deep
nesting, a decompression bomb, a broken xref or 50,000 pages. The real sample files
are in ``SAMPLES`` (shared/data/pdf, CC-BY-SA-4.0, py-pdf/sample-files).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "data" / "pdf"


def sample(name: str) -> bytes:
    """The bytes of one of the shared sample PDFs."""
    return (SAMPLES / name).read_bytes()


def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content(lines: Sequence[str]) -> bytes:
    ops = ["BT", "/F1 11 Tf", "14 TL", "72 760 Td"]
    for line in lines:
        ops.append(f"({_escape(line)}) Tj T*")
    ops.append("ET")
    return "\n".join(ops).encode("latin-1")


def _assemble(objects: list[bytes], root: int = 1, extra_trailer: str = "") -> bytes:
    """A PDF of ``objects`` (object i+1 is objects[i]) with a correct xref table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root {root} 0 R {extra_trailer}>>\n"
        f"startxref\n{xref}\n%%EOF\n"
    ).encode()
    return bytes(out)


def _stream(data: bytes, compress: bool = False) -> bytes:
    if compress:
        data = zlib.compress(data)
        return (
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + (b"\nendstream")
        )
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def make_pdf(pages: Sequence[Sequence[str]], broken: frozenset[int] = frozenset()) -> bytes:
    """A PDF whose page i shows the lines ``pages[i]``; the content stream of each page
    index in ``broken`` names a filter no reader has (that page cannot be decoded)."""
    # 1 catalog, 2 pages, 3 font, then (page, content) per page.
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for i, lines in enumerate(pages):
        objects.append(
            (
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>"
            ).encode()
        )
        stream = _stream(_content(lines))
        if i in broken:
            stream = stream.replace(b"<< /Length", b"<< /Filter /NoSuchDecode /Length", 1)
        objects.append(stream)
    return _assemble(objects)


def many_pages(count: int = 50_000) -> bytes:
    """A page tree declaring ``count`` pages, all one shared page object (a few KB per
    thousand pages on disk)."""
    kids = " ".join(["4 0 R"] * count)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
        _stream(_content(["One line on every page."])),
    ]
    return _assemble(objects)


def decompression_bomb(megabytes: int = 200) -> bytes:
    """One page whose content stream inflates to ``megabytes`` MB of spaces (about
    ``megabytes`` KB on disk)."""
    inflated = b" " * (megabytes * 1024 * 1024)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
        _stream(inflated, compress=True),
    ]
    return _assemble(objects)


def deep_nesting(depth: int = 100_000) -> bytes:
    """A page whose resources hold an array nested ``depth`` deep."""
    nested = b"[" * depth + b"]" * depth
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Deep "
        + nested
        + b" /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
        _stream(_content(["A page under a very deep array."])),
    ]
    return _assemble(objects)


def broken_xref() -> bytes:
    """A text PDF whose cross-reference table points at the wrong offsets and whose
    ``startxref`` points nowhere (the objects themselves are intact)."""
    good = make_pdf([["Broken cross references, intact objects."]])
    cut = good.index(b"xref")
    table = b"xref\n0 6\n0000000000 65535 f \n" + b"0000099999 00000 n \n" * 5
    return good[:cut] + table + b"trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n123456\n%%EOF\n"


def truncated() -> bytes:
    """A PDF cut off in the middle of its first object: nothing can be recovered."""
    return make_pdf([["Never seen."]])[:40]
