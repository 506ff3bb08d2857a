"""Perplexity Sonar (``POST /chat/completions``): ``[n]`` markers into ``citations``.

``[n]`` is 1-based into the top-level ``citations`` list (``search_results`` when a
response has no ``citations``; it gives titles either way). Markers follow the
sentence's punctuation, stack (``.[2][3]``) or stick to a word (``four[3]``); each cites
the sentence it is in or follows. A marker past the end of the list is an error, never
a dropped citation. Sources no marker points at are kept as unattached: an answer with
sources and no markers has uncited sentences, not sentences cited by everything.
``sonar-reasoning`` answers start with ``<think>...</think>``, which is not answer.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_citecheck.claims.importers.answer import CitedSource, Reader
from pytest_citecheck.claims.importers.draft import (
    Draft,
    Marker,
    clean_url,
    dedup_key,
    marker_extent,
)
from pytest_citecheck.claims.importers.openai_chat import message
from pytest_citecheck.claims.importers.text import line_column

FORMAT = "perplexity"
# Any number of digits: a marker too large to point anywhere is refused, never left in
# the claim text the judge reads.
MARKER = re.compile(r"\[(\d+)\]")
_LONGEST = 9  # digits of a marker read as a number; longer ones point at nothing


def marker_number(digits: str) -> tuple[int, str]:
    """A marker's number (0, which points at nothing, when it is longer than any list)
    and how a message shows it."""
    if len(digits) <= _LONGEST:
        return int(digits), digits
    return 0, f"{digits[:_LONGEST]}... ({len(digits)} digits)"


_THINK = re.compile(r"\s*<think>.*?</think>\s*", re.DOTALL)
CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)


def read(data: Any, reader: Reader) -> tuple[Draft, str | None]:
    body = reader.mapping(data, "response")
    _, content = message(reader, body)
    where = "choices[0].message.content"
    draft = Draft(text=content)
    think = _THINK.match(content)
    if think is not None:
        draft.removals.append((think.start(), think.end()))
    elif content.lstrip().startswith("<think>"):
        raise reader.fail(
            where,
            "the answer is all reasoning: <think> is never closed",
            "import the complete response (a stream cut off mid-reasoning has no answer)",
        )
    titles: dict[str, str] = {}
    results: list[str] = []
    raw_results = body.get("search_results")
    if raw_results is not None:
        for k, result in enumerate(reader.items(raw_results, "search_results")):
            result = reader.mapping(result, f"search_results[{k}]")
            url = result.get("url")
            if isinstance(url, str) and url.strip():
                results.append(url)
                if isinstance(result.get("title"), str):
                    titles[dedup_key(url)] = result["title"]
    if body.get("citations") is not None:
        urls = [
            reader.text(u, f"citations[{k}]")
            for k, u in enumerate(reader.items(body["citations"], "citations"))
        ]
        listed = "citations"
    else:
        urls, listed = results, "search_results"
    code = [(m.start(), m.end()) for m in CODE.finditer(content)]
    skipped_before = think.end() if think is not None else 0
    marked: set[int] = set()
    for match in MARKER.finditer(content):
        if match.start() < skipped_before or any(s <= match.start() < e for s, e in code):
            continue
        n, shown = marker_number(match.group(1))
        if not 1 <= n <= len(urls):
            raise reader.fail(
                f"{where}, {line_column(content, match.start())}",
                f"the marker [{shown}] points at no source: the response lists {len(urls)} "
                f"in `{listed}`",
                "save the response unedited (markers count from [1] into the list); "
                "if the provider sent it like this, remove the marker",
            )
        url = urls[n - 1]
        source = CitedSource(
            url=clean_url(url), title=titles.get(dedup_key(url)), where=f"{listed}[{n - 1}]"
        )
        draft.markers.append(
            Marker(*marker_extent(content, *match.span(), wrapped=False), [source])
        )
        marked.add(n - 1)
    for k, url in enumerate(urls):
        if k not in marked and url.strip():
            draft.unattached.append(
                CitedSource(
                    url=clean_url(url), title=titles.get(dedup_key(url)), where=f"{listed}[{k}]"
                )
            )
    if not marked and urls:
        draft.notes.append(
            f"the response lists {len(urls)} source(s) but no [n] marker: every sentence is uncited"
        )
    response_id = body.get("id") if isinstance(body.get("id"), str) else None
    return draft, response_id
