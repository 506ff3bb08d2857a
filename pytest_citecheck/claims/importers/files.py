"""Saved responses on disk, and the claim file written from them.

A saved response is a ``.json`` file (one response, or a list of them), a ``.jsonl``
file (one response a line), or markdown text (``.md``, ``.markdown``, ``.txt``). A
JSON value ``{"id": ..., "response": {...}}`` names its answer; otherwise the answer
id is the file's stem (``-2``, ``-3``... for the second and later responses of a file),
a name that stays when the response is regenerated and saved again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_citecheck.claims.importers import import_response
from pytest_citecheck.claims.importers.answer import ImportedAnswer, ResponseImportError
from pytest_citecheck.claims.models import Citation

__all__ = [
    "RESPONSE_SUFFIXES",
    "SavedResponse",
    "claim_file_text",
    "expand",
    "import_saved",
    "read_saved",
]

RESPONSE_SUFFIXES = (".json", ".jsonl", ".md", ".markdown", ".txt")
# What a folder contributes (a .txt beside the responses is more often a licence or notes).
FOLDER_SUFFIXES = (".json", ".jsonl", ".md", ".markdown")
_WRAPPER_KEYS = frozenset({"id", "response", "format", "documents"})


@dataclass(frozen=True)
class SavedResponse:
    name: str  # how messages name it: the path, with ":<line>" or "[<index>]"
    answer_id: str
    data: object


def expand(paths: Iterable[Path]) -> list[Path]:
    """Files as given; a folder's .json, .jsonl and markdown files (not recursive), by name."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(
                p for p in path.iterdir() if p.is_file() and p.suffix.lower() in FOLDER_SUFFIXES
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
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        problem = (
            "the file is not UTF-8 text"
            if isinstance(exc, UnicodeDecodeError)
            else f"cannot read the file: {exc.strerror or exc}"
        )
        return [ResponseImportError(str(path), "", problem, "save the response as UTF-8 JSON")]
    stem = path.stem
    if suffix in (".md", ".markdown", ".txt"):
        return [SavedResponse(str(path), stem, text)]
    if suffix == ".jsonl":
        out: list[SavedResponse | ResponseImportError] = []
        number = 0
        for line_no, raw in enumerate(text.split("\n"), start=1):
            if not raw.strip():
                continue
            number += 1
            name = f"{path}:{line_no}"
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
                str(path),
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
                str(path),
                "",
                f"invalid JSON: {exc}",
                "save the response body exactly as the API returned it",
            )
        ]
    if isinstance(value, list):
        return [
            _unwrap(item, stem if i == 0 else f"{stem}-{i + 1}", f"{path}[{i}]")
            for i, item in enumerate(value)
        ]
    return [_unwrap(value, stem, str(path))]


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


def _citation_lines(citation: Citation) -> list[str]:
    if citation.url is not None:
        head = f"      - url: {_quoted(citation.url)}"
    else:
        head = f"      - document: {_quoted(citation.document or '')}"
    lines = [head]
    if citation.quote is not None:
        lines.append(f"        quote: {_quoted(citation.quote)}")
        if citation.quote_by != "user":
            lines.append(f"        quote_by: {citation.quote_by}")
    return lines


def claim_file_text(answers: Sequence[tuple[ImportedAnswer, str]], command: str) -> str:
    """A claim file for ``answers`` (each with where it came from); uncited sentences are
    comments, so a reader sees the whole answer."""
    lines = [
        f"# Written by `{_comment(command)}`: regenerate it rather than editing it.",
        "# Uncited sentences are listed as comments; they are not claims.",
        "claims:",
    ]
    header = len(lines) - 1
    for answer, source in answers:
        lines.append(
            f"  # answer {answer.id} ({_comment(source)}, {answer.format}): "
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
            lines += [
                f"  - id: {claim.id}",
                f"    claim: {_quoted(claim.claim)}",
                "    citations:" if claim.citations else "    citations: []",
            ]
            for citation in claim.citations:
                lines += _citation_lines(citation)
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
        lines.append("    sentences:" if answer.sentences else "    sentences: []")
        claims = {c.claim.id: c.claim for c in answer.claims}
        for sentence in answer.sentences:
            if sentence.claim_id is None:
                lines.append(f"      - text: {_quoted(sentence.text)}")
            elif sentence.text == claims[sentence.claim_id].claim:
                lines.append(f"      - claim: {sentence.claim_id}")
            else:
                lines.append(
                    f"      - {{claim: {sentence.claim_id}, text: {_quoted(sentence.text)}}}"
                )
    return "\n".join(lines) + "\n"
