"""Local documents as sources: quote lookup and sections (DESIGN §3, documents).

INTERFACE ONLY -- the implementation is being written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Section:
    ref: str  # "4.1.4" for numbered sections, the heading text, or "paragraph 12"
    title: str
    text: str
    line: int  # 1-based line in the file where the section starts


class Document:
    path: Path
    text: str
    sections: list[Section]

    @classmethod
    def load(cls, path: Path) -> Document:
        raise NotImplementedError

    def find_quote(self, quote: str) -> Section | None:
        raise NotImplementedError

    def section(self, ref: str) -> Section | None:
        raise NotImplementedError
