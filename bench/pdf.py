"""PDF text extraction: pypdf against pdfminer.six on the sample PDFs, and a page's cost.

    python bench/pdf.py [--repeat N]

For each sample file in ``shared/data/pdf`` (beside the repository) and each candidate
extractor, one table row: pages, seconds, pages per second, and how many of the file's
reader quotes (below: sentences a person copies or retypes from the PDF, apostrophes
included where the text layer lost them) are found after the project's normalisation
(``stages/pdf.py``: ligatures, line-end hyphens, quote variants, the guard's
``QuoteIndex``). Then the extraction cost per citation (extract + cut into passages),
beside a web page's (its markdown cut into passages: what a page citation costs after
the Crawling API has turned its HTML into markdown), both measured in this run on this
machine. Unreadable files (encrypted, image-only) are timed to their reason.

pdfminer.six is a dev dependency; without it its rows are skipped.
"""

from __future__ import annotations

import argparse
import io
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_citecheck.stages import pdf  # noqa: E402
from pytest_citecheck.stages.guard import QuoteIndex  # noqa: E402
from pytest_citecheck.stages.passages import split_passages  # noqa: E402
from pytest_citecheck.stages.quote_policy import EXACT  # noqa: E402

SAMPLES = ROOT.parent / "shared" / "data" / "pdf"
PAGE = ROOT / "example_suite" / "pages" / "wice-dev00956-nytimes-charlie-russell.md"

# What a reader copies from each file (checked by eye against the rendered PDF).
QUOTES: dict[str, list[str]] = {
    "crazyones-pdfa.pdf": [
        "Here's to the crazy ones. The misfits. The rebels.",
        "They're not fond of rules.",
        "The ones who see things differently.",
        "About the only thing you can't do is ignore them.",
    ],
    "minimal-document.pdf": ["no sea takimata sanctus est Lorem ipsum dolor sit amet"],
    "002-trivial-libre-office-writer.pdf": ["Stet clita kasd gubergren, no sea takimata"],
    "multicolumn.pdf": [
        "This is a sample document with two columns filled with Lorem Ipsum text.",
        "Lorem ipsum dolor sit amet, consectetuer adipiscing elit.",
    ],
    "pdflatex-4-pages.pdf": [
        "There is no need for special content, but the length of words should match the language."
    ],
    "pdflatex-outline.pdf": ["This text should contain all letters of the alphabet"],
    "google-doc-document.pdf": [
        "Beautiful is better than ugly.",
        "Explicit is better than implicit.",
    ],
    "habibi.pdf": ["habibi"],
    "GeoTopo-komprimiert.pdf": ["Geometrie und Topologie"],
    "libreoffice-writer-password.pdf": [],
    "imagemagick-images.pdf": [],
}

Extractor = Callable[[bytes], list[str]]


def with_pypdf(data: bytes) -> list[str]:
    """The package's own path: pypdf through ``stages/pdf.extract`` (caps, reasons)."""
    return list(pdf.extract(data).pages)


def with_pdfminer(data: bytes) -> list[str]:
    """pdfminer.six's page layout, its text boxes in order, cleaned the same way."""
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer

    pages = []
    for layout in extract_pages(io.BytesIO(data)):
        text = "".join(el.get_text() for el in layout if isinstance(el, LTTextContainer))
        pages.append(pdf.clean_page(text))
    return list(pdf.cut_references(pages).pages)


def found(quotes: list[str], pages: list[str]) -> int:
    texts = [p for page in pages for p in split_passages(page)]
    index = QuoteIndex(texts)
    return sum(
        any(index.locate(v, EXACT, False) for v in pdf.quote_variants(quote)) for quote in quotes
    )


def timed(function: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        try:
            result = function()
        except Exception as exc:  # an unreadable file: timed to its reason
            result = exc
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell (median)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # both libraries log every odd font
    if not SAMPLES.is_dir():
        sys.exit(f"no sample PDFs at {SAMPLES}")
    candidates: list[tuple[str, Extractor]] = [("pypdf", with_pypdf)]
    try:
        import pdfminer  # noqa: F401

        candidates.append(("pdfminer.six", with_pdfminer))
    except ImportError:
        print("pdfminer.six is not installed: its rows are skipped")
    header = f"{'file':<36} {'extractor':<13} {'pages':>5} {'s':>8} {'pages/s':>8} {'quotes':>7}"
    print(header)
    print("-" * len(header))
    totals: dict[str, list[float]] = {name: [0, 0.0, 0, 0] for name, _ in candidates}
    for path in sorted(SAMPLES.glob("*.pdf")):
        data = path.read_bytes()
        quotes = QUOTES.get(path.name, [])
        for name, extract in candidates:
            seconds, result = timed(lambda e=extract, d=data: e(d), args.repeat)  # type: ignore[misc]
            if isinstance(result, Exception):
                reason = getattr(result, "reason", type(result).__name__)
                print(f"{path.name:<36} {name:<13} {'-':>5} {seconds:>8.3f} {'-':>8} {reason}")
                continue
            pages = list(result)  # type: ignore[call-overload]
            hits = found(quotes, pages)
            rate = len(pages) / seconds if seconds else float("inf")
            print(
                f"{path.name:<36} {name:<13} {len(pages):>5} {seconds:>8.3f} {rate:>8.1f} "
                f"{hits:>3}/{len(quotes):<3}"
            )
            if not quotes:
                continue  # an image-only file: not in the totals
            total = totals[name]
            total[0] += len(pages)
            total[1] += seconds
            total[2] += hits
            total[3] += len(quotes)
    print("-" * len(header))
    for name, (pages, seconds, hits, asked) in totals.items():
        print(
            f"{'files with text (totals)':<36} {name:<13} {int(pages):>5} {seconds:>8.3f} "
            f"{pages / seconds:>8.1f} {int(hits):>3}/{int(asked):<3}"
        )

    # Extraction cost per citation: the whole file to passages, beside a web page's.
    print()
    print(f"{'per citation (median of ' + str(args.repeat) + ')':<44} {'ms':>9} {'x page':>8}")
    markdown = PAGE.read_text(encoding="utf-8")
    # A new text each run: split_passages remembers the pages it split.
    runs = iter(range(10**9))
    page_s, _ = timed(lambda: split_passages(f"{markdown}\n{next(runs)}"), max(args.repeat, 50))
    label = f"a web page: markdown -> passages ({PAGE.stat().st_size // 1024} KB)"
    print(f"{label:<44} {page_s * 1e3:>9.3f} {1:>8.0f}")
    for sample in ("crazyones-pdfa.pdf", "pdflatex-4-pages.pdf", "GeoTopo-komprimiert.pdf"):
        data = (SAMPLES / sample).read_bytes()
        for name, extract in candidates:
            seconds, _ = timed(
                lambda e=extract, d=data: [split_passages(p) for p in e(d)],  # type: ignore[misc]
                args.repeat,
            )
            label = f"{sample[:24]} with {name}"
            print(f"{label:<44} {seconds * 1e3:>9.1f} {seconds / page_s:>8.0f}")


if __name__ == "__main__":
    main()
