"""Saved responses on disk, and the claim file written from them.

A saved response is a ``.json`` file (one response, a list of them, one stream's
list of events, or one conversation: a list of messages or items, each assistant turn
an answer ``<stem>-t<n>``), a ``.jsonl`` file (one response a line, or one event a line), or
text (``.md``, ``.markdown``, ``.txt``: markdown, or a stream's SSE text), or an Inspect
AI eval log (``.eval``, or a ``.json`` log: an answer per sample, named by its id). A
JSON value ``{"id": ..., "response": {...}}`` names its answer; otherwise the answer
id is the file's stem (``-2``, ``-3``... for the second and later responses of a file),
a name that stays when the response is regenerated and saved again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_citecheck.claims.importers import import_response
from pytest_citecheck.claims.importers.answer import (
    CitedSource,
    ImportedAnswer,
    ResponseImportError,
)
from pytest_citecheck.claims.importers.checks import MAX_RESPONSE_CHARS, too_large
from pytest_citecheck.claims.importers.conversation import import_conversation, is_conversation
from pytest_citecheck.claims.importers.draft import dedup_key
from pytest_citecheck.claims.importers.inspect_log import (
    EvalLogSamples,
    eval_log_samples,
    import_log_samples,
    is_eval_log_value,
    log_value_samples,
)
from pytest_citecheck.claims.importers.streams import stream_format
from pytest_citecheck.claims.models import Citation, Claim
from pytest_citecheck.core.text import shown, terminal_safe

__all__ = [
    "HEADER_START",
    "RESPONSE_SUFFIXES",
    "SavedResponse",
    "check_writable",
    "claim_file_text",
    "expand",
    "import_saved",
    "import_saved_answers",
    "missing_documents",
    "one_line_each",
    "read_saved",
    "written_by_import",
]

RESPONSE_SUFFIXES = (".json", ".jsonl", ".md", ".markdown", ".txt", ".eval")
# What a folder contributes (a .txt beside the responses is more often a licence or notes).
FOLDER_SUFFIXES = (".json", ".jsonl", ".md", ".markdown", ".eval")
_WRAPPER_KEYS = frozenset({"id", "response", "format", "documents"})


@dataclass(frozen=True)
class SavedResponse:
    name: str  # how messages name it: the path, with ":<line>" or "[<index>]"
    answer_id: str
    data: object


def expand(paths: Iterable[Path]) -> list[Path]:
    """Files as given; a folder's .json, .jsonl and markdown files, its subfolders' too
    (hidden ones skipped), by path."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and p.suffix.lower() in FOLDER_SUFFIXES
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        else:
            out.append(path)
    return out


def _unwrap(value: object, default_id: str, name: str) -> SavedResponse:
    if isinstance(value, dict) and "response" in value and set(value) <= _WRAPPER_KEYS:
        answer_id = value.get("id")
        if isinstance(answer_id, str | int) and not isinstance(answer_id, bool):
            return SavedResponse(name, str(answer_id), value["response"])
    return SavedResponse(name, default_id, value)


def read_saved(path: Path) -> list[SavedResponse | ResponseImportError]:
    """The responses saved in ``path``; a part that cannot be read is an error in the list."""
    suffix = path.suffix.lower()
    if suffix == ".eval":  # an Inspect AI eval log: a zip of its samples
        try:
            samples = eval_log_samples(path)
        except ResponseImportError as exc:
            return [exc]
        return [
            SavedResponse(shown(str(path), surrogates=False), path.stem, EvalLogSamples(samples))
        ]
    try:
        size = path.stat().st_size
        if size > MAX_RESPONSE_CHARS:
            return [too_large(str(path), "bytes", size)]
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        problem = (
            "the file is not UTF-8 text"
            if isinstance(exc, UnicodeDecodeError)
            else f"cannot read the file: {exc.strerror or exc}"
        )
        return [ResponseImportError(str(path), "", problem, "save the response as UTF-8 JSON")]
    stem = path.stem
    # How messages name the file: its control characters named, never printed.
    path_name = shown(str(path), surrogates=False)
    if suffix in (".md", ".markdown", ".txt"):
        return [SavedResponse(path_name, stem, text)]
    if suffix == ".jsonl":
        events = _events_by_line(text)
        if events is not None:
            return [SavedResponse(path_name, stem, events)]
        traces = _traces_by_line(text)
        if traces is not None:  # a collector's file exporter: one request a line
            return [SavedResponse(path_name, stem, traces)]
        out: list[SavedResponse | ResponseImportError] = []
        number = 0
        for line_no, raw in enumerate(text.split("\n"), start=1):
            if not raw.strip():
                continue
            number += 1
            name = f"{path_name}:{line_no}"
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError) as exc:
                out.append(
                    ResponseImportError(
                        name, "", f"invalid JSON: {exc}", "write one response body per line"
                    )
                )
                continue
            out.append(_unwrap(value, stem if number == 1 else f"{stem}-{number}", name))
        return out
    if suffix != ".json":
        return [
            ResponseImportError(
                path_name,
                "",
                f"not a saved response ({path.suffix or 'no extension'})",
                f"save responses as {', '.join(RESPONSE_SUFFIXES)}",
            )
        ]
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return [
            ResponseImportError(
                path_name,
                "",
                f"invalid JSON: {exc}",
                "save the response body exactly as the API returned it",
            )
        ]
    if is_eval_log_value(value):  # an Inspect AI eval log: an answer per sample
        try:
            samples = log_value_samples(value, path_name)
        except ResponseImportError as exc:
            return [exc]
        return [SavedResponse(path_name, stem, EvalLogSamples(samples))]
    if isinstance(value, list) and stream_format(value) is not None:
        return [SavedResponse(path_name, stem, value)]  # one stream: one response
    if isinstance(value, list) and is_conversation(value):
        return [SavedResponse(path_name, stem, value)]  # one conversation: its turns
    if isinstance(value, list):
        return [
            _unwrap(item, stem if i == 0 else f"{stem}-{i + 1}", f"{path_name}[{i}]")
            for i, item in enumerate(value)
        ]
    return [_unwrap(value, stem, path_name)]


def _events_by_line(text: str) -> list[object] | None:
    """A .jsonl file holding one stream's events, one a line; None when it is not one."""
    try:
        values = [json.loads(line) for line in text.split("\n") if line.strip()]
    except (ValueError, RecursionError):
        return None
    return values if values and stream_format(values) is not None else None


# How a response of a file with several is named: "<path>:<line>" or "<path>[<index>]".
_PART = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+)|\[(?P<index>\d+)\])$")


def one_line_each(failures: Sequence[ResponseImportError]) -> list[ResponseImportError]:
    """The failures as printed: the responses of one file that fail alike (the same
    problem, at the same place: the events of a stream no reader knows, saved one a
    line) are one failure with their count and lines, not one line per event."""
    groups: dict[tuple[str, str, str, str], list[tuple[str, ResponseImportError]]] = {}
    order: list[tuple[str, str, str, str] | ResponseImportError] = []
    for failure in failures:
        part = _PART.match(failure.response)
        if part is None:
            order.append(failure)
            continue
        key = (part["path"], failure.where, failure.problem, failure.fix)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append((part["line"] or f"[{part['index']}]", failure))
    out: list[ResponseImportError] = []
    for item in order:
        if isinstance(item, ResponseImportError):
            out.append(item)
            continue
        members = groups[item]
        if len(members) == 1:
            out.append(members[0][1])
            continue
        path, where, problem, fix = item
        places = [p for p, _ in members]
        lines = places[0].isdigit()
        shown = ", ".join(places[:3]) + (f" ... {places[-1]}" if len(places) > 3 else "")
        what = f"lines {shown}" if lines else f"items {shown}"
        out.append(
            ResponseImportError(
                path,
                where,
                f"{problem} (all {len(members)} responses of this file alike: {what}; "
                "if the file is one stream's events, it is no stream this tool reads)",
                fix,
            )
        )
    return out


def _traces_by_line(text: str) -> dict[str, Any] | None:
    """A JSONL file whose every line is an OTLP JSON trace export, as one export."""
    from pytest_citecheck.claims.importers.otlp import is_otlp_traces, merged

    requests: list[dict[str, Any]] = []
    for raw in text.split("\n"):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        if not is_otlp_traces(value):
            return None
        requests.append(value)
    return merged(requests) if requests else None


def import_saved(
    saved: SavedResponse, *, format: str = "auto", documents: Sequence[str] | None = None
) -> ImportedAnswer:
    return import_response(
        saved.data,
        format=format,
        answer_id=saved.answer_id,
        documents=documents,
        name=saved.name,
    )


def import_saved_answers(
    saved: SavedResponse, *, format: str = "auto", documents: Sequence[str] | None = None
) -> list[ImportedAnswer]:
    """The answers of one saved response: itself, or each assistant turn of a saved
    conversation (``<answer id>-t1``, ``-t2``...), or each sample of an Inspect eval log
    (its sample id)."""

    from pytest_citecheck.claims.importers.otlp import import_traces, is_otlp_traces

    if is_otlp_traces(saved.data):
        return import_traces(saved.data, name=saved.name, prefix=saved.answer_id)

    if isinstance(saved.data, EvalLogSamples):
        return import_log_samples(saved.data.samples, saved.name, documents=documents)
    if is_conversation(saved.data):
        return import_conversation(
            saved.data,
            format=format,
            conversation_id=saved.answer_id,
            documents=documents,
            name=saved.name,
        )
    return [import_saved(saved, format=format, documents=documents)]


def check_writable(answer: ImportedAnswer, name: str) -> None:
    """Raise :class:`ResponseImportError` when the claim file lines of ``answer`` cannot
    be stored as UTF-8 (a file name with undecodable bytes names it): that answer is
    left out, and the others are written."""
    try:
        claim_file_text([(answer, name)], "").encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ResponseImportError(
            terminal_safe(name),
            "",
            f"the answer cannot be written as UTF-8 (character {exc.start + 1} of its lines "
            f"is {exc.object[exc.start : exc.end]!r})",
            'rename the file to a UTF-8 name, or name the answer: {"id": ..., "response": {...}}',
        ) from None


# -- writing a claim file -------------------------------------------------------------------


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar: JSON's escapes, and every unprintable character
    (U+2028 included, which YAML would read as a line break) escaped too."""
    out = json.dumps(text, ensure_ascii=False)
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in out)


def _comment(text: str) -> str:
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def _citation_lines(citation: Citation, sources: Sequence[CitedSource]) -> list[str]:
    if citation.url is not None:
        head = f"      - url: {_quoted(citation.url)}"
        key = dedup_key(citation.url)
        same = [s for s in sources if s.url is not None and dedup_key(s.url) == key]
    else:
        head = f"      - document: {_quoted(citation.document or '')}"
        same = [s for s in sources if s.document == citation.document]
    lines = [head]
    if citation.quote is not None:
        lines.append(f"        quote: {_quoted(citation.quote)}")
    if citation.own_quote()[0] is not None and citation.quote_by != "user":
        # Who wrote the quote (its URL's text fragment too: who wrote the URL).
        lines.append(f"        quote_by: {citation.quote_by}")
    if citation.page is not None:
        lines.append(f"        page: {citation.page}")  # the provider's page of a PDF
    if citation.paywall is not None:
        # The provider met a paywall: the page is not crawled (remove it to crawl anyway).
        lines.append(f"        paywall: {_quoted(citation.paywall)}")
    if citation.retrieved is False:
        lines += [
            "        # no tool result of the conversation returned this URL: url_not_retrieved",
            "        retrieved: false",
        ]
    retrieved = next((s.retrieved_at for s in same if s.retrieved_at), None)
    if retrieved:
        lines.append(f"        # the provider fetched this page at {_comment(retrieved)}")
    for note in dict.fromkeys(s.note for s in same if s.note):
        lines.append(f"        # note: {_comment(note or '')}")
    return lines


# How the first line of every claim file `citecheck import` writes starts (the
# command that wrote it follows): how the importer knows its own files.
HEADER_START = "# Written by `citecheck import"


def written_by_import(path: Path) -> bool:
    """Whether ``path`` is a claim file this importer wrote (its header line)."""
    try:
        with path.open(encoding="utf-8-sig") as handle:
            first = handle.readline()
    except (OSError, UnicodeDecodeError):
        return False
    return first.startswith(HEADER_START)


def missing_documents(
    answers: Sequence[tuple[ImportedAnswer, str]], base: Path
) -> dict[str, list[str]]:
    """Claim id -> the documents it cites that are no file beside the claim file.

    A document citation names what the provider called the document (its title, a
    file id) unless the request's documents were given; a claim file citing a file
    that is not there does not load, so such claims are written as comments.
    """
    out: dict[str, list[str]] = {}
    for answer, _source in answers:
        for imported in answer.claims:
            absent = [
                c.document
                for c in imported.claim.citations
                if c.document is not None and not (base / c.document).is_file()
            ]
            if absent:
                out[imported.claim.id] = absent
    return out


def _held_lines(claim: Claim, sources: Sequence[CitedSource], absent: Sequence[str]) -> list[str]:
    names = ", ".join(_comment(json.dumps(a, ensure_ascii=False)) for a in absent)
    lines = [
        f"  # not checked: the claim cites document(s) {names}, which is no file here",
        "  # fix: import again with the request's documents in order "
        "(`--document PATH`, once each), or put the file(s) beside this claim file and "
        "import again",
        f"  # - id: {claim.id}",
        f"  #   claim: {_quoted(claim.claim)}",
        "  #   citations:",
    ]
    for citation in claim.citations:
        lines += ["  #" + line[1:] for line in _citation_lines(citation, sources)]
    return lines


def claim_file_text(
    answers: Sequence[tuple[ImportedAnswer, str]],
    command: str,
    held: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """A claim file for ``answers`` (each with where it came from); uncited sentences are
    comments, so a reader sees the whole answer. Claims in ``held`` (claim id -> the
    documents it cites that are missing) are written as comments with the fix, so the
    rest of the file loads and runs."""
    held = held or {}
    lines = [
        f"# Written by `{_comment(command)}`: regenerate it rather than editing it.",
        "# Uncited sentences are listed as comments; they are not claims.",
        "claims:",
    ]
    header = len(lines) - 1
    for answer, source in answers:
        turn = (
            f", turn {answer.turn} of conversation {_comment(answer.conversation or '')}"
            if answer.turn is not None
            else ""
        )
        lines.append(
            f"  # answer {answer.id} ({_comment(source)}, {answer.format}{turn}): "
            f"{len(answer.sentences)} sentence(s), {len(answer.claims)} cited"
        )
        for note in answer.notes:
            lines.append(f"  # note: {_comment(note)}")
        by_id = {c.claim.id: c for c in answer.claims}
        for sentence in answer.sentences:
            if sentence.claim_id is None:
                lines.append(f"  # uncited: {_comment(sentence.text)}")
                continue
            claim = by_id[sentence.claim_id].claim
            sources = by_id[sentence.claim_id].sources
            if claim.id in held:
                lines += _held_lines(claim, sources, held[claim.id])
                continue
            lines += [
                f"  - id: {claim.id}",
                f"    claim: {_quoted(claim.claim)}",
                "    citations:" if claim.citations else "    citations: []",
            ]
            for citation in claim.citations:
                lines += _citation_lines(citation, sources)
    if not any(line.startswith("  - id: ") for line in lines):
        lines[header] = "claims: []"
    if answers:
        lines += [
            "# Each answer's sentences in order, for the answer figures (answer support,",
            "# uncited sentences) and the HTML report's answer view.",
            "outlines:",
        ]
    for answer, _source in answers:
        lines += [f"  - answer: {_quoted(answer.id)}", f"    format: {_quoted(answer.format)}"]
        if answer.turn is not None:
            lines += [
                f"    conversation: {_quoted(answer.conversation or '')}",
                f"    turn: {answer.turn}",
            ]
        for key in ("response_id", "trace_id", "span_id"):
            value = getattr(answer, key)
            if value is not None:
                lines.append(f"    {key}: {_quoted(value)}")
        lines.append("    sentences:" if answer.sentences else "    sentences: []")
        claims = {c.claim.id: c.claim for c in answer.claims}
        for sentence in answer.sentences:
            if sentence.claim_id is None or sentence.claim_id in held:
                lines.append(f"      - text: {_quoted(sentence.text)}")
            elif sentence.text == claims[sentence.claim_id].claim:
                lines.append(f"      - claim: {sentence.claim_id}")
            else:
                lines.append(
                    f"      - {{claim: {sentence.claim_id}, text: {_quoted(sentence.text)}}}"
                )
    return "\n".join(lines) + "\n"
