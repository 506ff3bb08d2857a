"""docs/python.md's custom fetcher runs as written and its pages go through the rules."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_citecheck.api import FetchResult, Label
from pytest_citecheck.stages.fetch_rules import fetch_page

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def fetcher_snippet() -> dict[str, Any]:
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)\n```", text, re.S)
    (snippet,) = [b for b in blocks if "class ArchiveFetcher" in b]
    namespace: dict[str, Any] = {}
    exec(compile(snippet, str(DOC), "exec"), namespace)
    return namespace


def test_the_documented_custom_fetcher_runs_and_the_rules_read_its_pages() -> None:
    namespace = fetcher_snippet()
    fetcher = namespace["pytest_citecheck_make_fetcher"](config=None)
    page = fetch_page(fetcher, "https://example.com/boiling", None)
    assert isinstance(page, FetchResult) and page.label is None
    assert page.text is not None and "100 degrees" in page.text
    gone = fetch_page(fetcher, "https://example.com/nowhere", None)
    assert gone.label is Label.UNREACHABLE
