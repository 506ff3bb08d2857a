"""Markdown answers: inline links, ``[n]`` and ``[^n]`` markers with their definitions.

- ``[text](https://...)``: the link text stays in the sentence, which cites the URL.
  A link whose text is only a marker (``[1]``, ``[source]``, the URL's domain) is
  removed like the markers below.
- ``[text][label]``: a reference link, cited through ``[label]: https://...``.
- ``[n]`` and ``[^n]``: markers into definitions ``[n]: https://...`` (or
  ``[^n]: Title, https://...``), or into a numbered list of sources under a
  "Sources"/"References" heading (``1. Title - https://...``, ``[1] Title: https://...``).
  A marker without a definition, or with one that holds no URL (a sources-list entry
  with a title only), is an error naming its line and column.
- HTML anchors, as a report exported from HTML has them: ``<a href="https://...">text</a>``
  is an inline link (``<a href="...">1</a>`` a marker, ``<sup>`` around it dropped);
  ``<a href="#fn1">1</a>`` a footnote into the element with ``id="fn1"`` (its line is
  the definition, as ``[^1]: ...`` is).

Every URL here was written by the model, and so is the quote its ``#:~:text=``
fragment holds (it can be ``fabricated``). Definitions and the sources list are not
answer text. Code (fenced or inline) is
left alone: ``a[0]`` in code is no marker.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from pytest_citecheck.claims.importers.answer import CitedSource, Reader
from pytest_citecheck.claims.importers.draft import (
    LINK,
    Draft,
    Marker,
    Span,
    clean_url,
    link_url,
    marker_extent,
)
from pytest_citecheck.claims.importers.text import line_column

FORMAT = "markdown"
_CODE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]*`", re.DOTALL)
_DEFINITION = re.compile(r"^ {0,3}\[(?P<label>\^?[^\]\n]+)\]:[ \t]*(?P<rest>.*)$", re.MULTILINE)
_SOURCES_HEADING = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]+)?(?:\*\*|__)?(?:sources|references|citations|footnotes|notes)"
    r"(?:\*\*|__)?:?(?:\*\*|__)?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_NUMBERED = re.compile(r"^[ \t]*(?:\[(?P<a>\d{1,4})\]|(?P<b>\d{1,4})[.)])[ \t]+(?P<rest>.*)$")
_URL = re.compile(r"<?(https?://[^\s<>]+)>?")
_REFERENCE = re.compile(r"\[(?P<text>[^\[\]\n]+)\]\[(?P<label>[^\[\]\n]*)\]")
_MARKER = re.compile(r"\[\^(?P<fn>[^\]\s]+)\]|\[(?P<n>\d{1,4})\](?![(:])")
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_AUTOLINK = re.compile(r"<(https?://[^<>\s]+)>")
_ANCHOR = re.compile(
    r"<a\b[^>]*?\bhref\s*=\s*(?P<q>[\"'])(?P<url>[^\"'<>]*)(?P=q)[^>]*>(?P<text>.*?)</a\s*>",
    re.IGNORECASE | re.DOTALL,
)
_SUP_OPEN = re.compile(r"<sup\b[^<>]*>", re.IGNORECASE)
_SUP_CLOSE = re.compile(r"</sup\s*>", re.IGNORECASE)
_TAG = re.compile(r"<[^<>\n]*>")
_HTML_ID = re.compile(r"\bid\s*=\s*[\"'](?P<id>[^\"'<>\s]+)[\"']", re.IGNORECASE)
_TAGS_ONLY = re.compile(r"^[ \t]*(?:</?[A-Za-z][^<>\n]*>[ \t]*)+$", re.MULTILINE)
# Links that are no page: refused, as their reference-style form is (never dropped quietly).
_REFUSED_SCHEMES = frozenset({"javascript", "data", "file", "vbscript"})
_MARKER_WORDS = frozenset({"source", "sources", "link", "here", "ref", "cite", "citation"})


def _first_url(text: str) -> str | None:
    link = LINK.search(text)
    if link is not None and link_url(link).lower().startswith(("http://", "https://")):
        return link_url(link)
    match = _URL.search(text)
    return _trim(match.group(1)) if match else None


def _trim(url: str) -> str:
    """A URL found in prose, without the punctuation that ends the sentence around it."""
    while url:
        if url[-1] in ".,;:]\"'!?" or (url[-1] == ")" and url.count(")") > url.count("(")):
            url = url[:-1]
        else:
            break
    return url


def read(data: Any, reader: Reader) -> tuple[Draft, str | None]:
    text = reader.text(data, "text")
    draft = Draft(text=text)
    code = _Taken(len(text))
    for match in _CODE.finditer(text):
        code.append((match.start(), match.end()))
    taken = _Taken(len(text))
    taken.marks[:] = code.marks
    for comment in _COMMENT.finditer(text):
        if code.free(comment.start(), comment.start() + 1):
            draft.removals.append((comment.start(), comment.end()))
            taken.append((comment.start(), comment.end()))
    free = taken.free

    # label -> (url or None, where the definition is)
    definitions: dict[str, tuple[str | None, str]] = {}
    for match in _DEFINITION.finditer(text):
        if not free(match.start(), match.end()):
            continue
        label = match.group("label").strip().lower()
        definitions.setdefault(
            label, (_first_url(match.group("rest")), line_column(text, match.start()))
        )
        _remove_line(draft, taken, text, match.start(), match.end())
    for heading in _SOURCES_HEADING.finditer(text):
        if not free(heading.start(), heading.end()):
            continue
        line_start = heading.end() + 1
        found = False
        while line_start < len(text):
            line_end = text.find("\n", line_start)
            line_end = len(text) if line_end < 0 else line_end
            line = text[line_start:line_end]
            numbered = _NUMBERED.match(line)
            if numbered is None and line.strip():
                break
            if numbered is not None:
                label = numbered.group("a") or numbered.group("b")
                url = _first_url(numbered.group("rest"))
                # An entry with a title only is still the definition of its number: a
                # marker into it is told that it holds no URL, not that it has none.
                definitions.setdefault(label, (url, line_column(text, line_start)))
                if url is not None:
                    _remove_line(draft, taken, text, line_start, line_end)
                    found = True
            line_start = line_end + 1
        if found:
            _remove_line(draft, taken, text, heading.start(), heading.end())
    used: set[str] = set()

    def source(label: str, at: int) -> CitedSource:
        where = line_column(text, at)
        if label not in definitions:
            raise reader.fail(
                where,
                f"the marker [{label}] has no definition, so it points at no source",
                f"add `[{label}]: https://...` below the answer, or remove the marker",
            )
        url, defined = definitions[label]
        if url is None:
            raise reader.fail(
                defined,
                f"the definition of [{label}] holds no http(s) URL (the marker at {where} "
                "cites it): a source named without a link cannot be checked",
                f"give it its URL (`[{label}]: https://...`, or the URL in its entry of the "
                f"sources list), or remove the marker [{label}] (a note without a URL cites "
                "nothing)",
            )
        used.add(label)
        return CitedSource(
            url=clean_url(url), url_by="model", where=f"{where} ([{label}] defined at {defined})"
        )

    _read_anchors(text, draft, taken, definitions, source, reader)
    for match in _REFERENCE.finditer(text):
        if not free(match.start(), match.end()) or _MARKER.fullmatch(f"[{match.group('text')}]"):
            continue  # taken, or stacked markers: [1][2]
        label = (match.group("label") or match.group("text")).strip().lower()
        cited = source(label, match.start())
        _keep_text(
            draft, taken, match.start(), match.start("text"), match.end("text"), match.end(), cited
        )
    for match in LINK.finditer(text):
        if not free(match.start(), match.end()):
            continue
        url = link_url(match)
        label = match.group("text").strip()
        if not url.lower().startswith(("http://", "https://")):
            scheme = url.split(":", 1)[0].strip().lower() if ":" in url else ""
            if scheme in _REFUSED_SCHEMES:
                raise reader.fail(
                    line_column(text, match.start()),
                    f"the link [{label[:40]}]({url[:40]}) is a {scheme}: link, not a page: "
                    "it cites nothing that can be checked",
                    "cite the page by its http(s) URL (a local file as a document in a "
                    "claim file), or remove the link",
                )
            taken.append((match.start(), match.end()))  # a relative or mail link: no citation
            continue
        cited = CitedSource(
            url=clean_url(url), url_by="model", where=line_column(text, match.start())
        )
        if _is_marker(label, url):
            start, end = marker_extent(text, match.start(), match.end())
            draft.markers.append(Marker(start, end, [cited]))
            taken.append((start, end))
        else:
            _keep_text(
                draft,
                taken,
                match.start(),
                match.start("text"),
                match.end("text"),
                match.end(),
                cited,
            )
    for match in _AUTOLINK.finditer(text):
        if free(match.start(), match.end()):
            cited = CitedSource(
                url=clean_url(match.group(1)),
                url_by="model",
                where=line_column(text, match.start()),
            )
            draft.markers.append(Marker(*marker_extent(text, match.start(), match.end()), [cited]))
            taken.append((match.start(), match.end()))
    for match in _MARKER.finditer(text):
        if not free(match.start(), match.end()):
            continue
        label = f"^{match.group('fn').lower()}" if match.group("fn") else match.group("n")
        start, end = marker_extent(text, match.start(), match.end(), wrapped=False)
        draft.markers.append(Marker(start, end, [source(label, match.start())]))
    for label, (url, defined) in definitions.items():
        if label not in used and url is not None:
            draft.unattached.append(
                CitedSource(
                    url=clean_url(url), url_by="model", where=f"[{label}] defined at {defined}"
                )
            )
    return draft, None


def _read_anchors(
    text: str,
    draft: Draft,
    taken: _Taken,
    definitions: dict[str, tuple[str | None, str]],
    source: Callable[[str, int], CitedSource],
    reader: Reader,
) -> None:
    """HTML anchors: a page link is read as a markdown link is; ``href="#id"`` is a
    footnote into the element with that id, whose line is its definition."""
    free = taken.free
    anchors = [m for m in _ANCHOR.finditer(text) if free(m.start(), m.end())]
    if not anchors:
        return
    targets = {m.group("url")[1:] for m in anchors if m.group("url").startswith("#")}
    for found in _HTML_ID.finditer(text):
        name = found.group("id")
        if name not in targets or not free(found.start(), found.end()):
            continue
        line_start = text.rfind("\n", 0, found.start()) + 1
        line_end = text.find("\n", found.end())
        line_end = len(text) if line_end < 0 else line_end
        definitions.setdefault(
            f"#{name.lower()}",
            (_first_url(text[found.end() : line_end]), line_column(text, line_start)),
        )
        _remove_line(draft, taken, text, line_start, line_end)
    for match in anchors:
        if not free(match.start(), match.end()):
            continue  # inside a definition line just read
        url = match.group("url").strip()
        label = _TAG.sub("", match.group("text")).strip()
        start, end = match.start(), match.end()
        if url.startswith("#"):
            if f"#{url[1:].lower()}" not in definitions:
                raise reader.fail(
                    line_column(text, start),
                    f'the anchor <a href="{url[:40]}"> points at no element with '
                    f'id="{url[1:40]}" in the answer, so at no source',
                    f'add the note with id="{url[1:40]}" and its https:// URL, or remove '
                    "the anchor",
                )
            start, end = _unwrapped(text, start, end)
            draft.markers.append(Marker(start, end, [source(f"#{url[1:].lower()}", start)]))
            taken.append((start, end))
            continue
        if not url.lower().startswith(("http://", "https://")):
            scheme = url.split(":", 1)[0].strip().lower() if ":" in url else ""
            if scheme in _REFUSED_SCHEMES:
                raise reader.fail(
                    line_column(text, start),
                    f'the anchor <a href="{url[:40]}"> is a {scheme}: link, not a page: '
                    "it cites nothing that can be checked",
                    "cite the page by its http(s) URL, or remove the anchor",
                )
            _keep_text(draft, taken, start, match.start("text"), match.end("text"), end, None)
            continue
        cited = CitedSource(url=clean_url(url), url_by="model", where=line_column(text, start))
        if _is_marker(label, url):
            start, end = marker_extent(text, *_unwrapped(text, start, end))
            draft.markers.append(Marker(start, end, [cited]))
            taken.append((start, end))
        else:
            _keep_text(draft, taken, start, match.start("text"), match.end("text"), end, cited)
    for wrapper in _TAGS_ONLY.finditer(text):  # <ol>, </section>: no answer text
        if free(wrapper.start(), wrapper.end()):
            _remove_line(draft, taken, text, wrapper.start(), wrapper.end())


def _unwrapped(text: str, start: int, end: int) -> tuple[int, int]:
    """An anchor with the ``<sup>...</sup>`` around it, as a marker spans them."""
    opening = text.rfind("<", 0, start)
    closing = _SUP_CLOSE.match(text, end)
    if opening >= 0 and closing is not None and _SUP_OPEN.fullmatch(text, opening, start):
        return opening, closing.end()
    return start, end


class _Taken:
    """Which characters of the text are taken (code, comments, links already read): one
    flag a character, so each look-up costs the length of what it asks about."""

    def __init__(self, length: int) -> None:
        self.marks = bytearray(length + 1)

    def append(self, span: tuple[int, int]) -> None:
        start, end = span
        if end > start:
            self.marks[start:end] = b"\x01" * (end - start)

    def free(self, start: int, end: int) -> bool:
        return 1 not in self.marks[start:end]


def _is_marker(label: str, url: str) -> bool:
    """Link text that only points (``[1]``, ``source``, ``example.com``), not words of a claim."""
    bare = label.strip("[]() ").lower()
    if not bare or bare.isdigit() or bare in _MARKER_WORDS:
        return True
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        host = ""
    host = host.removeprefix("www.")
    return bool(host) and bare.removeprefix("www.") in (host, url.lower())


def _keep_text(
    draft: Draft,
    taken: _Taken,
    start: int,
    text_start: int,
    text_end: int,
    end: int,
    cited: CitedSource | None,
) -> None:
    """A link whose text is part of the sentence: drop the syntax, the text cites
    (``cited`` None: a link to no page, whose text stays plain)."""
    draft.removals += [(start, text_start), (text_end, end)]
    if cited is not None:
        draft.spans.append(Span(text_start, text_end, [cited]))
    taken.append((start, end))


def _remove_line(draft: Draft, taken: _Taken, text: str, start: int, end: int) -> None:
    end = end + 1 if end < len(text) and text[end] == "\n" else end
    draft.removals.append((start, end))
    taken.append((start, end))
