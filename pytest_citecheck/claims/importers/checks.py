"""What a whole saved response must be before a reader maps it: not too large, and
text a claim file can hold.

A response is refused, with the JSON path of the value and the fix, when it is larger
than :data:`MAX_RESPONSE_CHARS` (a file: that many bytes) or when the answer read from it
(its text, a cited URL, a quote, a title) holds a lone surrogate (an unpaired
``\\ud800`` escape, which no file can store) or a control character other than tab,
newline and carriage return (``\\u0000``, an escape sequence's ``\\u001b``): such text
is no answer a claim can quote, and the judge and the terminal must never receive it.
Strings the readers never use (a search query, a tool's log) may hold anything.
Markdown is checked whole, the place given as line and column. The scan is one pass
over the values, without recursion, so a hostile response costs time in proportion
to its size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from pytest_citecheck.claims.importers.answer import ResponseImportError
from pytest_citecheck.claims.importers.draft import Draft
from pytest_citecheck.claims.importers.text import line_column
from pytest_citecheck.core.text import text_problem

__all__ = ["MAX_RESPONSE_CHARS", "check_draft", "check_response", "too_large"]

# The largest response imported: 32 MiB (characters of a parsed response, bytes of a
# saved file). Real answers with thousands of citations are a few megabytes.
MAX_RESPONSE_CHARS = 32 * 1024 * 1024

# What text_problem refuses, found without a loop over every character in Python.
_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")

_SURROGATE_FIX = (
    "the text was cut inside a character (half of a surrogate pair): save the response "
    "again from the API, unedited"
)
_CONTROL_FIX = (
    "remove the character from the saved response (answer text never holds control "
    "characters; only tab, newline and carriage return are kept), or save it again "
    "from the API"
)


def too_large(response: str, unit: str, size: int | None = None) -> ResponseImportError:
    """The error for a response over the cap, measured in ``unit`` (characters, bytes)."""
    told = f"{size:,} {unit}" if size is not None else f"over {MAX_RESPONSE_CHARS:,} {unit}"
    return ResponseImportError(
        response,
        "",
        f"the response is {told}, more than the {MAX_RESPONSE_CHARS:,} an import reads",
        "save one response per file (a list of many responses is read in one go: "
        "split it), and import the answer's response body only",
    )


def _bad_text(response: str, where: str, value: str, *, markdown: bool = False) -> None:
    match = _BAD.search(value)
    if match is None:
        return
    problem = text_problem(value[: match.end()]) or "it holds an unusable character"
    if markdown:
        where = line_column(value, match.start())
        problem = problem.replace(f" at character {match.start() + 1}", "")
    surrogate = "\ud800" <= match.group() <= "\udfff"
    raise ResponseImportError(
        response,
        where,
        f"the text is not usable: {problem}",
        _SURROGATE_FIX if surrogate else _CONTROL_FIX,
    )


def check_response(data: object, response: str) -> list[tuple[str, str]]:
    """Raise :class:`ResponseImportError` for a response over the size cap, or markdown
    holding a character a claim file cannot hold; ``data`` is parsed JSON, or markdown
    text. Returns the strings of a JSON response that hold such a character, each with
    its path: what :func:`check_draft` names when one of them reaches the answer
    (a search query or a tool's log is never read, and may hold anything)."""
    if isinstance(data, str):
        if len(data) > MAX_RESPONSE_CHARS:
            raise too_large(response, "characters", len(data))
        _bad_text(response, "", data, markdown=True)
        return []
    bad: list[tuple[str, str]] = []
    size = 0
    stack: list[tuple[str, object]] = [("", data)]
    while stack:
        where, value = stack.pop()
        size += 1
        if isinstance(value, str):
            size += len(value)
            if _BAD.search(value):
                bad.append((where or "the response", value))
        elif isinstance(value, dict):
            children: list[tuple[str, object]] = []
            for key, item in value.items():
                name = str(key)
                if _BAD.search(name):
                    name = json.dumps(name)  # the path is printed: escaped
                size += len(name)
                children.append((f"{where}.{name}" if where else name, item))
            stack.extend(reversed(children))
        elif isinstance(value, list | tuple):
            stack.extend(reversed([(f"{where}[{n}]", item) for n, item in enumerate(value)]))
        if size > MAX_RESPONSE_CHARS:
            raise too_large(response, "characters")
    return bad


def _origin(found: str, at: int, bad: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """The response string (path, value) an answer string's bad character came from."""
    char = found[at]
    for width in (12, 4, 0):
        context = found[max(0, at - width) : at + width + 1]
        for where, value in bad:
            if context in value:
                return where, value
    return next(((w, v) for w, v in bad if char in v), None)


def check_draft(
    draft: Draft, response_id: str | None, bad: Sequence[tuple[str, str]], response: str
) -> None:
    """Raise :class:`ResponseImportError` when the answer read from a response (its
    text, its sources, the provider's id) holds a character a claim file cannot hold,
    naming the JSON path of the string it came from."""
    sources = [
        *(s for m in draft.markers for s in m.sources),
        *(s for m in draft.spans for s in m.sources),
        *draft.unattached,
    ]
    texts = [draft.text, *draft.notes, response_id or ""]
    for source in sources:
        texts += [
            v for v in (source.url, source.document, source.quote, source.title, source.note) if v
        ]
    for text in texts:
        match = _BAD.search(text)
        if match is None:
            continue
        origin = _origin(text, match.start(), bad)
        if origin is None:
            where = f"the answer, {line_column(text, match.start())}"
            _bad_text(response, where, text)
        else:
            _bad_text(response, *origin)
