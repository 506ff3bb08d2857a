"""Perplexity Agent API (``POST /v1/agent``, alias ``/v1/responses``): Responses-like.

``output[]`` holds ``search_results`` items ({results[] {id, url, title, snippet, date},
queries}), ``fetch_url_results`` items ({contents[] {url, title, snippet}}) and
``message`` items whose ``output_text`` parts carry the answer and, optionally,
``annotations`` ({type, url, title, start_index, end_index}, every field optional).

The answer's ``[n]`` markers name a search result by its ``id``, not by its place in
the list (ids need not start at 1 or be in order). A marker whose id no result has is
an error, never a dropped citation. Annotations with a URL are placed as OpenAI's are
(the marker they cover, else the text they span); a ``[n]`` they already cover is not
counted twice. Results no marker names are kept as unattached.
"""

from __future__ import annotations

from typing import Any

from pytest_citecheck.claims.importers.answer import CitedSource, Reader
from pytest_citecheck.claims.importers.draft import (
    Draft,
    Marker,
    Paragraphs,
    clean_url,
    marker_extent,
)
from pytest_citecheck.claims.importers.openai_responses import output_texts, read_annotation
from pytest_citecheck.claims.importers.perplexity import CODE, MARKER, marker_number
from pytest_citecheck.claims.importers.text import line_column

FORMAT = "perplexity-agent"
# Output items only the Agent API has: what tells it from OpenAI Responses.
ITEM_TYPES = frozenset({"search_results", "fetch_url_results"})
# Models are named by provider on the Agent API ("perplexity/sonar", "openai/gpt-5").
MODEL_PREFIX = "perplexity/"


def read(data: Any, reader: Reader) -> tuple[Draft, str | None]:
    body = reader.mapping(data, "response")
    results: dict[int, CitedSource] = {}
    fetched: list[CitedSource] = []

    def sources(i: int, item: dict[str, Any], kind: Any) -> bool:
        """The sources of a ``search_results`` or ``fetch_url_results`` item."""
        if kind == "search_results":
            for k, value in enumerate(
                reader.optional_items(item.get("results"), f"output[{i}].results")
            ):
                where = f"output[{i}].results[{k}]"
                result = reader.mapping(value, where)
                ident = reader.index(result.get("id"), f"{where}.id")
                url = reader.optional_text(result.get("url"), f"{where}.url")
                if ident is None or not url or not url.strip():
                    continue
                title = result.get("title") if isinstance(result.get("title"), str) else None
                if ident in results:
                    raise reader.fail(
                        f"{where}.id",
                        f"two search results have the id {ident}",
                        "save the response unedited: [n] markers name results by id",
                    )
                results[ident] = CitedSource(url=clean_url(url), title=title, where=where)
            return True
        if kind == "fetch_url_results":
            contents = reader.optional_items(item.get("contents"), f"output[{i}].contents")
            for k, value in enumerate(contents):
                where = f"output[{i}].contents[{k}]"
                page = reader.mapping(value, where)
                url = page.get("url")
                if isinstance(url, str) and url.strip():
                    title = page.get("title") if isinstance(page.get("title"), str) else None
                    fetched.append(CitedSource(url=clean_url(url), title=title, where=where))
            return True
        return False

    texts = output_texts(reader, body, sources)
    draft = Draft(text="")
    joined = Paragraphs()
    marked: set[int] = set()
    for text, listed, where in texts:
        offset = joined.add(text)
        for k, annotation in enumerate(listed):
            if isinstance(annotation, dict) and not annotation.get("url"):
                continue  # every annotation field is optional: one without a URL cites nothing
            read_annotation(reader, draft, text, offset, annotation, f"{where}.annotations[{k}]")
        placed = [(m.start, m.end) for m in draft.markers]
        code = [(m.start(), m.end()) for m in CODE.finditer(text)]
        for match in MARKER.finditer(text):
            start, end = offset + match.start(), offset + match.end()
            if any(s <= match.start() < e for s, e in code) or any(
                s < end and start < e for s, e in placed
            ):
                continue
            n, shown = marker_number(match.group(1))
            if n not in results:
                raise reader.fail(
                    f"{where}.text, {line_column(text, match.start())}",
                    f"the marker [{shown}] names no search result: the response's results have "
                    f"the ids {', '.join(map(str, sorted(results))) or '(none)'}",
                    "save the response unedited ([n] names a search result by its id)",
                )
            lo, hi = marker_extent(text, match.start(), match.end(), wrapped=False)
            draft.markers.append(Marker(offset + lo, offset + hi, [results[n]]))
            marked.add(n)
    draft.text = joined.text
    cited_urls = {s.url for m in draft.markers for s in m.sources} | {
        s.url for sp in draft.spans for s in sp.sources
    }
    draft.unattached += [
        s for n, s in sorted(results.items()) if n not in marked and s.url not in cited_urls
    ]
    draft.fetched += [s.url for s in fetched if s.url and s.url not in cited_urls]
    if results and not draft.markers and not draft.spans:
        draft.notes.append(
            f"the response lists {len(results)} search result(s) but no [n] marker or "
            "annotation ties one to a sentence: every sentence is uncited"
        )
    response_id = body.get("id") if isinstance(body.get("id"), str) else None
    return draft, response_id
