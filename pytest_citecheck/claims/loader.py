"""Claim files: read ``citecheck_*.yaml|yml`` and ``*.jsonl``.

What a claim or a citation may be is decided by the pydantic models
(:mod:`pytest_citecheck.claims.models`, with :mod:`pytest_citecheck.claims.schema` for the
messages); this module only reads text into plain data, remembers which line
every value came from, and reports each schema problem as ``file:line:
problem`` + ``fix``. Every problem of a file is reported at once; pytest shows
them as the one failing item of that file.

YAML is composed into nodes (not loaded into dicts) so every value keeps its
line. Scalars are taken as the user wrote them (``section: 4.10`` stays
``"4.10"``, ``id: 007`` stays ``"007"``). ``yaml`` is imported only when a YAML
file is read.

``parse_claim`` (re-exported from :mod:`pytest_citecheck.claims.schema`) is the same
schema for everyone else: the fixture, the batch CLI, the service.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_citecheck.claims.models import (
    EXPECTABLE_LABELS,
    AnswerOutline,
    Citation,
    Claim,
    OutlineSentence,
    check_judge,
    kind,
)
from pytest_citecheck.claims.schema import (
    ANSWER_KEYS,
    OUTLINE_KEYS,
    OUTLINE_SENTENCE_KEYS,
    TOP_KEYS,
    ClaimValidationError,
    FieldProblem,
    Loc,
    closest,
    parse_citation,
    parse_claim,
    unknown_key,
    validate_claim,
)
from pytest_citecheck.core.defaults import DEFAULT_MAX_CLAIM_CHARS
from pytest_citecheck.core.errors import CitecheckError
from pytest_citecheck.core.terms import NEUTRAL, Terms

if TYPE_CHECKING:
    import yaml

__all__ = [
    "EXPECTABLE_LABELS",
    "ClaimFile",
    "ClaimFileError",
    "ClaimValidationError",
    "FieldProblem",
    "Problem",
    "load_claim_file",
    "load_valid_claims",
    "parse_citation",
    "parse_claim",
]

JSONL_KEYS = ("id", "claim", "urls")
# Deeper than any claim file needs; far below what would exhaust the stack.
MAX_DEPTH = 50
MAX_VALUES = 200_000

_NULL_TAG = "tag:yaml.org,2002:null"
_MERGE_TAG = "tag:yaml.org,2002:merge"
# Tags YAML gives plain values by itself; any other tag (`!!binary`, `!custom`,
# `!!python/...`) is refused rather than silently dropped.
_PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "timestamp", "seq", "map", "merge")
)

# --- errors ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a claim file, where it is and how to fix it."""

    line: int | None
    problem: str
    fix: str


class ClaimFileError(CitecheckError):
    """A claim file cannot be used; ``str()`` lists every problem with its fix.

    ``line``/``problem``/``fix`` are the first problem; ``problems`` all of them.
    """

    def __init__(
        self,
        path: Path,
        line: int | None,
        problem: str,
        fix: str,
        more: Sequence[Problem] = (),
    ) -> None:
        # Everything goes to Exception.args so the error pickles (pytest-xdist workers).
        super().__init__(path, line, problem, fix, tuple(more))
        self.path = path
        self.line = line
        self.problem = problem
        self.fix = fix
        self.problems = [Problem(line, problem, fix), *more]

    def __str__(self) -> str:
        out = []
        for p in self.problems:
            where = f"{self.path}:{p.line}" if p.line is not None else f"{self.path}"
            out.append(f"{where}: {p.problem}\n  fix: {p.fix}")
        return "\n".join(out)


# --- claim files -----------------------------------------------------------------------


@dataclass
class ClaimFile:
    """The claims of one file, in file order, with the file-level judge."""

    path: Path
    judge: str | None = None
    claims: list[Claim] = field(default_factory=list)
    # The line of ``judge:`` (for a front end that finds its provider unknown).
    judge_line: int | None = None
    # Saved answers that could not be imported, by answer id, when read with
    # ``answers_apart``: each fails alone while the file's other claims run.
    failed_answers: list[tuple[str, ClaimFileError]] = field(default_factory=list)


def unknown_judge(
    claim_file: ClaimFile, build: Callable[[str], object], terms: Terms = NEUTRAL
) -> ClaimFileError | None:
    """The file's ``judge:`` as an invalid claim file when ``build`` (the front end's
    judge factory) refuses it as unknown (``ValueError``); ``terms`` names the
    option that would replace it. Other failures (a missing key) are not the file's."""
    if claim_file.judge is None:
        return None
    try:
        build(claim_file.judge)
    except ValueError as exc:
        problem, _, known = str(exc).rstrip(".").partition(": use ")
        return ClaimFileError(
            claim_file.path,
            claim_file.judge_line,
            problem,
            (f"use {known}" if known else "name a provider citecheck knows")
            + f", or override it with {terms.option('judge')}",
        )
    except Exception:
        return None
    return None


class _Broken:
    """Stands for a value already reported (a refused tag, a bad merge): no cascade."""


_BROKEN = _Broken()


def _has_broken(data: Any) -> bool:
    if isinstance(data, _Broken):
        return True
    if isinstance(data, dict):
        return any(_has_broken(v) for v in data.values())
    if isinstance(data, list):
        return any(_has_broken(v) for v in data)
    return False


class _Invalid(Exception):
    """Stops reading a file whose structure gives nothing more to check."""


def load_claim_file(
    path: Path,
    roots: Sequence[Path] | None = None,
    terms: Terms = NEUTRAL,
    *,
    max_claim_chars: int = DEFAULT_MAX_CLAIM_CHARS,
    answers_apart: bool = False,
) -> ClaimFile:
    """Read and validate a claim file; raise :class:`ClaimFileError` with every problem.

    Documents must resolve inside ``roots`` (the plugin passes the rootdir and
    its document-roots option); ``None`` means no restriction. ``terms`` names
    that option in the fix. A claim text longer than ``max_claim_chars`` is a
    problem (0: no cap). With ``answers_apart``, the problems of one saved answer
    (``answers:``) are not the file's: they go to :attr:`ClaimFile.failed_answers`.
    """
    reader = _Reader(path, roots, terms, max_claim_chars)
    reader.answers_apart = answers_apart
    return reader.read()


def load_valid_claims(
    path: Path,
    roots: Sequence[Path] | None = None,
    terms: Terms = NEUTRAL,
    *,
    max_claim_chars: int = DEFAULT_MAX_CLAIM_CHARS,
) -> tuple[ClaimFile, ClaimFileError | None]:
    """For a batch: the claims of ``path`` that are valid, and the
    :class:`ClaimFileError` listing every problem of the others (None if none).

    A bad record costs only itself; the batch still runs every good one.
    """
    reader = _Reader(path, roots, terms, max_claim_chars)
    result = reader.read_valid()
    return result, reader.error()


class _Reader:
    def __init__(
        self,
        path: Path,
        roots: Sequence[Path] | None,
        terms: Terms,
        max_claim_chars: int = DEFAULT_MAX_CLAIM_CHARS,
    ) -> None:
        self.path = path
        self.roots = roots
        self.terms = terms
        self.max_claim_chars = max_claim_chars
        self.problems: list[Problem] = []
        # Line of each value, by location (key line for mapping values).
        self.lines: dict[Loc, int] = {}
        # Case-folded id -> (id as written, line): duplicates and case-only clashes.
        self._ids: dict[str, tuple[str, int]] = {}
        # The file-level judge panel (``judges:``), given to every claim of the file.
        self._file_judges: tuple[str, ...] | None = None
        self.answers_apart = False
        self.failed_answers: list[tuple[str, ClaimFileError]] = []

    def add(self, line: int | None, problem: str, fix: str) -> None:
        self.problems.append(Problem(line, problem, fix))

    def stop(self, line: int | None, problem: str, fix: str) -> _Invalid:
        self.add(line, problem, fix)
        return _Invalid()

    def line_of(self, loc: Loc) -> int | None:
        while loc not in self.lines and loc:
            loc = loc[:-1]
        return self.lines.get(loc)

    def read(self) -> ClaimFile:
        result = self.read_valid()
        error = self.error()
        if error is not None:
            raise error
        return result

    def error(self) -> ClaimFileError | None:
        if not self.problems:
            return None
        first, *more = self.problems
        return ClaimFileError(self.path, first.line, first.problem, first.fix, more)

    def read_valid(self) -> ClaimFile:
        """The claims that validated; the problems stay in :attr:`problems`."""
        suffix = self.path.suffix.lower()
        result = ClaimFile(self.path)
        try:
            if suffix not in (".yaml", ".yml", ".jsonl"):
                raise self.stop(
                    None,
                    f"unsupported claim file type {self.path.suffix or '(no extension)'!r}",
                    "name claim files *.yaml or *.yml, or *.jsonl for batch records",
                )
            text = self._text()
            if suffix == ".jsonl":
                result.claims = self._jsonl(text)
            else:
                result.judge, result.claims = self._yaml(text)
                result.judge_line = self.lines.get(("judge",))
        except _Invalid:
            pass
        result.failed_answers = self.failed_answers
        return result

    def _text(self) -> str:
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise self.stop(
                None,
                f"cannot read the file: {exc.strerror or exc}",
                "check the path and its permissions",
            ) from None
        try:
            # utf-8-sig: tolerate the BOM some Windows editors write.
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise self.stop(
                line, f"the file is not valid UTF-8 (byte {exc.start})", "save the file as UTF-8"
            ) from None

    # -- one claim, from plain data --------------------------------------------------

    def _validate(self, data: dict[str, Any]) -> tuple[Claim | None, list[FieldProblem]]:
        return validate_claim(data, max_claim_chars=self.max_claim_chars, terms=self.terms)

    def claim(self, data: Any, loc: Loc, judge: str | None) -> Claim | None:
        """Validate one claim; problems go to the file's list with their lines."""
        start = self.lines.get(loc)
        if _has_broken(data):
            return None
        if not isinstance(data, dict):
            self.add(
                start,
                f"a claim must be a mapping with id, claim and citations, not {kind(data)}",
                "write the claim as `- id: ...` with `claim:` and `citations:` indented under it",
            )
            return None
        claim, problems = validate_claim(
            data, max_claim_chars=self.max_claim_chars, terms=self.terms
        )
        # The id and the documents are checked even when the claim has other problems:
        # every problem of a file is listed at once, in file order.
        id_line = self.lines.get((*loc, "id"), start or 0)
        raw_id = data.get("id")
        unique = not isinstance(raw_id, str | int) or self._unique_id(str(raw_id).strip(), id_line)
        for p in problems:
            self.add(self.line_of((*loc, *p.loc)), p.problem, p.fix)
        citations = []
        for i, citation in (
            enumerate(claim.citations)
            if claim is not None
            else _valid_citations(data.get("citations"))
        ):
            if citation.document is not None:
                citation = self._document(citation, (*loc, "citations", i, "document"))
            citations.append(citation)
        if claim is None or not unique:
            return None
        update: dict[str, Any] = {"citations": citations, "judge": judge, "line": start}
        if self._file_judges is not None:
            update["judges"] = self._file_judges
        return claim.model_copy(update=update)

    def _unique_id(self, claim_id: str, line: int) -> bool:
        """False (and a problem) when an earlier claim of the file has this id."""
        if not claim_id:
            return True
        folded = claim_id.casefold()
        if folded not in self._ids:
            self._ids[folded] = (claim_id, line)
            return True
        first, first_line = self._ids[folded]
        if first == claim_id:
            self.add(
                line,
                f"duplicate claim id {claim_id!r} (first used on line {first_line})",
                "ids must be unique within a file: rename one of them",
            )
        else:
            self.add(
                line,
                f"claim id {claim_id!r} differs from {first!r} (line {first_line}) only in "
                "letter case; their cassette files would collide on macOS and Windows",
                "rename one of them",
            )
        return False

    def _document(self, citation: Citation, loc: Loc) -> Citation:
        from pytest_citecheck.claims.documents import DocumentPathError, resolve_document

        assert citation.document is not None
        try:
            resolved = resolve_document(
                citation.document, self.path.resolve().parent, self.roots, self.terms
            )
        except DocumentPathError as exc:
            self.add(self.line_of(loc), exc.problem, exc.fix)
            return citation
        return citation.model_copy(update={"document_path": resolved})

    # -- YAML ----------------------------------------------------------------------

    def _yaml(self, text: str) -> tuple[str | None, list[Claim]]:
        import yaml

        root = self._compose(text)
        if root is None:
            raise self.stop(
                None,
                "the file is empty",
                "add a `claims:` list (see the claim file format in docs/claim-files.md)",
            )
        data = self._plain(root, (), 0)
        if isinstance(data, _Broken):
            raise _Invalid()
        if isinstance(root, yaml.SequenceNode):
            raise self.stop(
                _line(root),
                "the top level is a list; claims go under a `claims:` key",
                "write `claims:` on the first line and indent the list under it",
            )
        if not isinstance(data, dict):
            raise self.stop(
                _line(root),
                "the top level is not a mapping with a `claims:` list",
                "start the file with `claims:` followed by a list of claims",
            )
        for key in data:
            if key not in TOP_KEYS:
                self.add(self.lines[(key,)], *unknown_key(key, "top level", TOP_KEYS))
        judge = data.get("judge")
        if isinstance(judge, _Broken):
            judge = None
        if judge is not None:
            judge = self._judge(judge)
        judges = data.get("judges")
        if judges is not None and not isinstance(judges, _Broken):
            self._file_judges = self._judges(judges)
        answers = self._answers(data["answers"], judge) if "answers" in data else []
        if "claims" not in data:
            if "answers" in data:
                return judge, answers
            raise self.stop(
                _line(root),
                "the file has no `claims:` key",
                "add `claims:` with a list of claims (each with id, claim and citations), "
                "or `answers:` with saved LLM responses",
            )
        claims = data["claims"]
        if isinstance(claims, _Broken):
            raise _Invalid()
        if claims is None:
            raise self.stop(
                self.lines[("claims",)],
                "`claims:` has no value",
                "list the claims under it, or write `claims: []` for a file with none yet",
            )
        if not isinstance(claims, list):
            raise self.stop(
                self._value_line,
                f"`claims:` must be a list, not {kind(claims)}",
                "write each claim as a list item starting with `- id: ...`",
            )
        out = [self.claim(item, ("claims", i), judge) for i, item in enumerate(claims)]
        found = [c for c in out if c is not None]
        if "outlines" in data:
            found = self._outlines(data["outlines"], found, len(out))
        return judge, found + answers

    # -- outlines: the answers a written claim file came from ---------------------------

    _OUTLINE_EXAMPLE = "- {answer: water, format: markdown, sentences: [{claim: ID}, {text: ...}]}"

    def _outlines(self, value: Any, claims: list[Claim], listed: int) -> list[Claim]:
        """Attach each outline to the claims its sentences name (the answer figures)."""
        if isinstance(value, _Broken) or _has_broken(value):
            return claims
        if not isinstance(value, list):
            self.add(
                self.lines[("outlines",)],
                f"`outlines:` must be a list, not {kind(value)}",
                f"regenerate the file with `citecheck import`, or write {self._OUTLINE_EXAMPLE}",
            )
            return claims
        by_id = {c.id: c for c in claims}
        owner: dict[str, AnswerOutline] = {}
        first_line: dict[str, int | None] = {}
        for i, item in enumerate(value):
            outline = self._outline(item, ("outlines", i), by_id, listed == len(claims))
            if outline is None:
                continue
            if outline.id in first_line:
                self.add(
                    self.lines.get(("outlines", i, "answer")),
                    f"duplicate answer {outline.id!r} in `outlines:` (first on line "
                    f"{first_line[outline.id]})",
                    "each answer is outlined once: regenerate the file with `citecheck import`",
                )
                continue
            first_line[outline.id] = self.lines.get(("outlines", i, "answer"))
            for n, sentence in enumerate(outline.sentences):
                if sentence.claim_id is None:
                    continue
                if sentence.claim_id in owner:
                    self.add(
                        self.line_of(("outlines", i, "sentences", n)),
                        f"claim {sentence.claim_id!r} is a sentence of two outlined answers",
                        "a claim comes from one answer: regenerate the file with "
                        "`citecheck import`",
                    )
                    continue
                owner[sentence.claim_id] = outline
        return [
            c.model_copy(update={"answer": owner[c.id]}) if c.id in owner else c for c in claims
        ]

    def _outline(
        self, item: Any, loc: Loc, by_id: dict[str, Claim], claims_valid: bool
    ) -> AnswerOutline | None:
        line = self.lines.get(loc)
        fix = f"regenerate the file with `citecheck import`, or write {self._OUTLINE_EXAMPLE}"
        if not isinstance(item, dict):
            self.add(line, f"an outline must be a mapping, not {kind(item)}", fix)
            return None
        problems = len(self.problems)
        for key in item:
            if key not in OUTLINE_KEYS:
                self.add(
                    self.lines[(*loc, key)], *unknown_key(key, "written outline", OUTLINE_KEYS)
                )
        answer = item.get("answer")
        if not isinstance(answer, str) or not answer.strip():
            self.add(
                self.lines.get((*loc, "answer"), line),
                f"an outline's `answer` must be non-empty text, not {kind(answer)}",
                fix,
            )
        fmt = item.get("format")
        if fmt is not None and not isinstance(fmt, str):
            self.add(self.lines[(*loc, "format")], f"`format` must be text, not {kind(fmt)}", fix)
        sentences = item.get("sentences")
        if not isinstance(sentences, list):
            self.add(
                self.lines.get((*loc, "sentences"), line),
                f"an outline's `sentences` must be a list, not {kind(sentences)}",
                fix,
            )
            return None
        out: list[OutlineSentence] = []
        for n, sentence in enumerate(sentences):
            where = (*loc, "sentences", n)
            if not isinstance(sentence, dict) or not sentence:
                self.add(
                    self.line_of(where),
                    f"a sentence must be `{{claim: ID}}` or `{{text: ...}}`, not {kind(sentence)}",
                    fix,
                )
                continue
            for key in sentence:
                if key not in OUTLINE_SENTENCE_KEYS:
                    self.add(
                        self.lines[(*where, key)],
                        *unknown_key(key, "sentence of an outline", OUTLINE_SENTENCE_KEYS),
                    )
            claim_id, text = sentence.get("claim"), sentence.get("text")
            if claim_id is not None and not isinstance(claim_id, str):
                self.add(self.lines[(*where, "claim")], "`claim` must be a claim id", fix)
                continue
            if text is not None and not isinstance(text, str):
                self.add(self.lines[(*where, "text")], "`text` must be text", fix)
                continue
            if claim_id is None:
                if not text:
                    self.add(self.line_of(where), "an uncited sentence needs its `text`", fix)
                    continue
                out.append(OutlineSentence(text=text))
                continue
            claim = by_id.get(claim_id)
            if claim is None:
                # A claim that failed its own checks is reported there, not twice.
                if claims_valid:
                    self.add(
                        self.lines[(*where, "claim")],
                        f"the outline names claim {claim_id!r}, which is not in `claims:`",
                        "regenerate the file with `citecheck import` (or remove the sentence)",
                    )
                continue
            out.append(OutlineSentence(text=text or claim.claim, claim_id=claim_id))
        if len(self.problems) > problems or not isinstance(answer, str):
            return None
        return AnswerOutline(
            id=answer.strip(),
            format=fmt if isinstance(fmt, str) else None,
            origin=str(self.path),
            sentences=out,
        )

    # -- answers: saved responses, expanded into claims ----------------------------------

    _ANSWER_EXAMPLE = "- {id: ruby-version, response: responses/ruby.json, format: auto}"

    def _answers(self, value: Any, judge: str | None) -> list[Claim]:
        if isinstance(value, _Broken):
            return []
        if not isinstance(value, list):
            self.add(
                self.lines[("answers",)],
                f"`answers:` must be a list, not {kind(value)}",
                f"list each saved response as an item: {self._ANSWER_EXAMPLE}",
            )
            return []
        claims: list[Claim] = []
        seen: dict[str, int | None] = {}
        for i, item in enumerate(value):
            answer_id = item.get("id") if isinstance(item, dict) else None
            if isinstance(answer_id, str) and answer_id.strip().casefold() in seen:
                first = seen[answer_id.strip().casefold()]
                self.add(
                    self.lines.get(("answers", i, "id")),
                    f"duplicate answer id {answer_id.strip()!r} (first used on line {first})",
                    "answer ids must be unique within a file: they prefix the claim ids",
                )
                continue
            if isinstance(answer_id, str):
                seen[answer_id.strip().casefold()] = self.lines.get(("answers", i, "id"))
            before = len(self.problems)
            claims += self._answer(item, ("answers", i), judge)
            self._set_apart(answer_id, i, before)
        return claims

    def _set_apart(self, answer_id: object, index: int, before: int) -> None:
        """With ``answers_apart``, the problems one answer added are its own."""
        if not self.answers_apart or len(self.problems) == before:
            return
        first, *more = self.problems[before:]
        del self.problems[before:]
        name = answer_id.strip() if isinstance(answer_id, str) and answer_id.strip() else ""
        self.failed_answers.append(
            (
                name or f"answers[{index}]",
                ClaimFileError(self.path, first.line, first.problem, first.fix, more),
            )
        )

    def _answer(self, item: Any, loc: Loc, judge: str | None) -> list[Claim]:
        """One saved response: read, imported, and each cited sentence a claim."""
        import warnings

        from pytest_citecheck.claims.importers import FORMATS, ResponseImportError
        from pytest_citecheck.claims.importers.answer import UncitedSourcesWarning
        from pytest_citecheck.claims.importers.files import SavedResponse, import_saved, read_saved

        line = self.lines.get(loc)
        if _has_broken(item):
            return []
        if not isinstance(item, dict):
            self.add(
                line,
                f"an answer must be a mapping with id and response, not {kind(item)}",
                f"write it as {self._ANSWER_EXAMPLE}",
            )
            return []
        problems = len(self.problems)
        for key in item:
            if key not in ANSWER_KEYS:
                self.add(self.lines[(*loc, key)], *unknown_key(key, "saved answer", ANSWER_KEYS))
        for key in ("id", "response"):
            if key not in item:
                self.add(line, f"answer has no {key!r}", f"write it as {self._ANSWER_EXAMPLE}")
            elif not isinstance(item[key], str) or not item[key].strip():
                self.add(
                    self.lines[(*loc, key)],
                    f"answer {key!r} must be non-empty text, not {kind(item[key])}",
                    f"write it as {self._ANSWER_EXAMPLE}",
                )
        fmt = item.get("format", "auto")
        if not isinstance(fmt, str) or fmt not in ("auto", *FORMATS):
            near = closest(str(fmt), ("auto", *FORMATS)) if isinstance(fmt, str) else None
            hint = f"; did you mean {near!r}?" if near else ""
            self.add(
                self.lines[(*loc, "format")],
                f"format {fmt if isinstance(fmt, str) else kind(fmt)!r} is not a response "
                f"format{hint}",
                f"use one of: auto, {', '.join(FORMATS)}",
            )
        documents = item.get("documents")
        if documents is not None and (
            not isinstance(documents, list) or not all(isinstance(d, str) for d in documents)
        ):
            self.add(
                self.lines[(*loc, "documents")],
                "`documents` must be a list of paths",
                "list the request's documents in order, relative to this claim file",
            )
        if len(self.problems) > problems:
            return []
        where = self.lines.get((*loc, "response"), line)
        path = self._response_path(item["response"].strip(), where)
        if path is None:
            return []
        saved = read_saved(path)
        if len(saved) != 1:
            self.add(
                where,
                f"{item['response']} holds {len(saved)} responses; an answer is one response",
                "save each response in its own .json file (or use `citecheck import`)",
            )
            return []
        one = saved[0]
        if isinstance(one, ResponseImportError):
            self.add(where, f"{item['response']}: {one.problem}", one.fix)
            return []
        try:
            answer = import_saved(
                SavedResponse(item["response"].strip(), item["id"].strip(), one.data),
                format=fmt,
                documents=documents,
            )
        except ResponseImportError as exc:
            place = f" at {exc.where}" if exc.where else ""
            self.add(where, f"{exc.response}{place}: {exc.problem}", exc.fix)
            return []
        for warning in answer.warnings:
            # Shown where the answer is listed (pytest's warnings summary), never silent.
            warnings.warn_explicit(
                UncitedSourcesWarning(f"{item['response'].strip()}: {warning}"),
                UncitedSourcesWarning,
                str(self.path),
                where or 0,
                module="pytest_citecheck",
            )
        out = []
        outline = answer.outline(origin=str(self.path))
        for imported in answer.claims:
            data = {
                "id": imported.claim.id,
                "claim": imported.claim.claim,
                "citations": [
                    c.model_dump(exclude_none=True, include={"url", "document", "quote"})
                    for c in imported.claim.citations
                ],
            }
            claim = self.claim(data, loc, judge)
            if claim is not None:
                out.append(claim.model_copy(update={"answer": outline}))
        return out

    def _response_path(self, response: str, line: int | None) -> Path | None:
        """A saved response follows the document rule: inside the roots, a regular file."""
        from pytest_citecheck.claims.documents import DocumentPathError, resolve_document

        try:
            return resolve_document(
                response, self.path.resolve().parent, self.roots, self.terms, what="response"
            )
        except DocumentPathError as exc:
            self.add(line, exc.problem, exc.fix)
            return None

    def _judges(self, judges: Any) -> tuple[str, ...] | None:
        """A file-level judge panel: a list of ``provider:model`` specs."""
        line = self.lines[("judges",)]
        fix = "write `judges: [openai:gpt-4o-mini, anthropic:claude-haiku-4-5]`"
        if not isinstance(judges, list) or not judges:
            what = "an empty list" if judges == [] else kind(judges)
            self.add(line, f"'judges' must be a list of provider:model specs, not {what}", fix)
            return None
        specs = []
        for item in judges:
            if not isinstance(item, str):
                self.add(line, f"each of 'judges' must be text, not {kind(item)}", fix)
                return None
            try:
                specs.append(check_judge(item))
            except ValueError as exc:  # PydanticCustomError
                ctx = getattr(exc, "context", None) or {}
                self.add(line, str(ctx.get("problem", exc)), str(ctx.get("fix", fix)))
                return None
        return tuple(specs)

    def _judge(self, judge: Any) -> str | None:
        line = self.lines[("judge",)]
        if not isinstance(judge, str):
            self.add(
                line, f"'judge' must be text, not {kind(judge)}", "write `judge: provider:model`"
            )
            return None
        try:
            return check_judge(judge)
        except ValueError as exc:  # PydanticCustomError
            ctx = getattr(exc, "context", None) or {}
            self.add(line, str(ctx.get("problem", exc)), str(ctx.get("fix", "")))
            return None

    def _compose(self, text: str) -> yaml.Node | None:
        import yaml

        # libyaml's messages are terser ("found character that cannot start any
        # token"); the pure-Python parser names the character, so errors are
        # re-parsed with it (rare; costs nothing that matters).
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        for attempt in (loader, yaml.SafeLoader):
            try:
                return yaml.compose(text, Loader=attempt)
            except RecursionError:
                raise self.stop(
                    None,
                    f"the file nests lists or mappings too deeply (more than {MAX_DEPTH} levels)",
                    "a claim file is at most a few levels deep: claims > citations > fields",
                ) from None
            except yaml.YAMLError as exc:
                if attempt is yaml.SafeLoader:
                    raise self._syntax_error(exc, text) from None
        return None  # pragma: no cover -- the loop returns or raises

    def _syntax_error(self, exc: yaml.YAMLError, text: str) -> _Invalid:
        import yaml

        if isinstance(exc, yaml.reader.ReaderError):
            # A NUL, ESC or other control character (YAML forbids them raw).
            char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else "a byte"
            return self.stop(
                text[: exc.position].count("\n") + 1,
                f"invalid YAML: the control character {char} is not allowed in a YAML file",
                'remove it, or write it escaped inside a double-quoted string (e.g. "\\x1b")',
            )
        if not isinstance(exc, yaml.MarkedYAMLError):
            return self.stop(None, f"invalid YAML: {exc}", "check the file's syntax")
        problem = exc.problem or "invalid YAML"
        mark = exc.problem_mark
        # An unclosed quote or bracket is reported where the file ends; the place to
        # fix is where it was opened. (libyaml: "end of stream"; Python: "<stream end>".)
        unclosed = "end of stream" in problem or "<stream end>" in problem
        if unclosed and exc.context_mark is not None:
            mark = exc.context_mark
        line: int | None = mark.line + 1 if mark is not None else None
        if unclosed:
            line = _unclosed_bracket_line(text) or line
        lines = text.splitlines()
        source_line = lines[mark.line] if mark is not None and mark.line < len(lines) else ""
        context = f" ({exc.context})" if exc.context else ""
        indent = source_line[: len(source_line) - len(source_line.lstrip())]
        if "\t" in indent or "'\\t'" in problem:
            fix = "indent with spaces; YAML does not allow tabs for indentation"
        elif "mapping values are not allowed" in problem:
            fix = _quote_value_fix(source_line)
        elif "another document" in problem:
            fix = "a claim file holds one YAML document: remove the extra '---' or split the file"
        elif "undefined alias" in problem:
            fix = (
                "define the anchor (&name) before using the alias (*name), "
                "or quote a value that starts with '*'"
            )
        elif unclosed:
            fix = "close the quote or bracket opened on this line"
        else:
            fix = "check the indentation and quoting on this line and the one before it"
        return self.stop(line, f"invalid YAML: {problem}{context}", fix)

    def _plain(self, node: yaml.Node, loc: Loc, depth: int) -> Any:
        """The node as str/list/dict/None, lines recorded; problems collected."""
        import yaml

        self.lines.setdefault(loc, _line(node))
        self._nodes += 1
        if self._nodes > MAX_VALUES:
            # Aliases can expand a small file exponentially ("billion laughs").
            raise self.stop(
                _line(node),
                f"the file expands to more than {MAX_VALUES} values (through aliases)",
                "use fewer anchors and aliases, or split the file",
            )
        if depth > MAX_DEPTH:
            raise self.stop(
                _line(node),
                f"the file nests lists or mappings too deeply (more than {MAX_DEPTH} levels)",
                "a claim file is at most a few levels deep: claims > citations > fields",
            )
        if node.tag not in _PLAIN_TAGS:
            self.add(
                _line(node),
                f"the tag {node.tag!r} is not allowed in a claim file",
                "remove the tag: claim files hold plain text, lists and mappings",
            )
            return _BROKEN
        if isinstance(node, yaml.ScalarNode):
            return None if node.tag == _NULL_TAG else str(node.value)
        if isinstance(node, yaml.SequenceNode):
            return [self._plain(item, (*loc, i), depth + 1) for i, item in enumerate(node.value)]
        assert isinstance(node, yaml.MappingNode)
        return self._mapping(node, loc, depth)

    def _mapping(self, node: yaml.MappingNode, loc: Loc, depth: int) -> dict[str, Any]:
        import yaml

        pairs = node.value
        if any(key.tag == _MERGE_TAG for key, _ in pairs):
            # `<<: *defaults`: let PyYAML expand merges into a copy, explicit keys win.
            from yaml.constructor import ConstructorError, SafeConstructor

            explicit = [(k, v) for k, v in pairs if k.tag != _MERGE_TAG]
            self._duplicates(explicit)
            merged = yaml.MappingNode(node.tag, list(pairs), node.start_mark, node.end_mark)
            try:
                SafeConstructor().flatten_mapping(merged)
            except ConstructorError as exc:
                mark = exc.problem_mark or node.start_mark
                self.add(
                    mark.line + 1,
                    f"invalid merge key: {exc.problem}",
                    "`<<:` merges a mapping into this one: point it at one, e.g. `<<: *defaults`",
                )
                return _BROKEN  # type: ignore[return-value]
            # Later keys win in flatten_mapping's output: explicit keys come last.
            pairs = merged.value
        else:
            self._duplicates(pairs)
        out: dict[str, Any] = {}
        for key, value in pairs:
            if not isinstance(key, yaml.ScalarNode) or key.tag == _NULL_TAG:
                self.add(_line(key), "a key is not text", "write keys as plain words, e.g. `id:`")
                continue
            self.lines[(*loc, key.value)] = _line(key)
            if loc == () and key.value == "claims":
                self._value_line = _line(value)
            out[key.value] = self._plain(value, (*loc, key.value), depth + 1)
        return out

    _value_line: int | None = None
    _nodes = 0

    def _duplicates(self, pairs: Sequence[tuple[yaml.Node, yaml.Node]]) -> None:
        seen: dict[str, int] = {}
        for key, _ in pairs:
            name = getattr(key, "value", None)
            if not isinstance(name, str):
                continue
            if name in seen:
                self.add(
                    _line(key),
                    f"duplicate key {name!r} (first on line {seen[name]})",
                    f"keep one {name!r}; YAML would silently drop the first value",
                )
            seen.setdefault(name, _line(key))

    # -- JSONL (batch records) ---------------------------------------------------------

    _EXAMPLE = '{"id": "q1", "claim": "...", "urls": ["https://..."]}'

    def _jsonl(self, text: str) -> list[Claim]:
        claims: list[Claim] = []
        # Split on "\n" only: str.splitlines() would also split on U+2028, which
        # json.dumps(ensure_ascii=False) leaves raw inside strings.
        for number, raw in enumerate(text.split("\n"), start=1):
            if raw.strip():
                claim = self._record(raw, number)
                if claim is not None:
                    claims.append(claim)
        return claims

    def _record(self, raw: str, line: int) -> Claim | None:
        try:
            record = json.loads(raw, object_pairs_hook=_no_duplicate_keys)
        except _DuplicateKey as exc:
            self.add(
                line,
                f"duplicate key {exc.key!r} in a record",
                f"keep one {exc.key!r}; JSON parsers would silently drop one of the values",
            )
            return None
        except json.JSONDecodeError as exc:
            self.add(
                line,
                f"invalid JSON: {exc.msg} (column {exc.colno})",
                f"each line must be one complete JSON object, e.g. {self._EXAMPLE}",
            )
            return None
        except (ValueError, RecursionError) as exc:  # 5,000-digit numbers, deep nesting
            problem = (
                "a value is nested too deeply"
                if isinstance(exc, RecursionError)
                else f"a number is too long ({str(exc).split(';')[0]})"
            )
            self.add(
                line,
                f"invalid JSON record: {problem}",
                f"records are flat: {self._EXAMPLE}; write ids as short strings",
            )
            return None
        if not isinstance(record, dict):
            self.add(
                line,
                f"a record must be a JSON object, not {_json_kind(record)}",
                f"write one object per line, e.g. {self._EXAMPLE}",
            )
            return None
        # Extra fields are ignored: batch outputs usually carry more (answer, model...).
        # Every problem of the record is reported, not only the first.
        broken = False
        for required in JSONL_KEYS:
            if required not in record:
                broken = True
                near = closest(required, [k for k in record if k not in JSONL_KEYS])
                if near is not None:
                    self.add(
                        line,
                        f"record has no {required!r} field; did you mean {near!r}?",
                        f"rename {near!r} to {required!r} (records are {self._EXAMPLE})",
                    )
                else:
                    self.add(
                        line,
                        f"record has no {required!r} field",
                        f"records look like {self._EXAMPLE}",
                    )
        urls = record.get("urls", [])
        if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
            broken = True
            bad = (
                urls
                if not isinstance(urls, list)
                else next(u for u in urls if not isinstance(u, str))
            )
            self.add(
                line,
                f"`urls` must be a list of strings; found {_json_kind(bad)}",
                'write e.g. "urls": ["https://example.com/a", "https://example.com/b"] '
                "(or [] if nothing was cited)",
            )
            urls = [u for u in urls if isinstance(u, str)] if isinstance(urls, list) else []
        self.lines[(line,)] = line
        data = {
            **{key: record[key] for key in ("id", "claim") if key in record},
            "citations": urls,
        }
        before = len(self.problems)
        claim: Claim | None = None
        if broken:
            # The fields that are there are still checked (a missing one was said above).
            _, problems = validate_claim(
                data, max_claim_chars=self.max_claim_chars, terms=self.terms
            )
            for p in problems:
                if not (p.loc and p.loc[0] in ("id", "claim") and p.loc[0] not in record):
                    self.add(line, p.problem, p.fix)
        else:
            claim = self.claim(data, (line,), None)
        # The schema's fixes show YAML (`claim: ...`); a record is fixed in JSON.
        self.problems[before:] = [
            Problem(p.line, p.problem, _record_fix(p.fix)) for p in self.problems[before:]
        ]
        return claim


def _valid_citations(items: Any) -> list[tuple[int, Citation]]:
    """The citations of an invalid claim that are valid by themselves, with their index."""
    from contextlib import suppress

    from pydantic import ValidationError

    out: list[tuple[int, Citation]] = []
    for i, item in enumerate(items if isinstance(items, list) else []):
        with suppress(ValidationError, ValueError, TypeError):  # reported with the claim
            out.append((i, Citation.model_validate(item)))
    return out


def _record_fix(fix: str) -> str:
    """A fix worded for a claim file, reworded for a JSONL record: keys are JSON
    strings, ``urls`` holds the citations, and there are no documents."""
    if "`" not in fix and "quote it" not in fix:
        return fix
    for key, example in (
        ("id", 'give "id" a short unique text value, e.g. "id": "q1"'),
        ("claim", 'write "claim" as one text value, e.g. "claim": "Water boils at 100 °C."'),
        ("citation", 'write e.g. "urls": ["https://example.com/a"] (or [] if nothing was cited)'),
        ("document", 'write e.g. "urls": ["https://example.com/a"] (records cite URLs only)'),
    ):
        if f"`{key}" in fix or f"'{key}'" in fix:
            return example
    return f"records look like {_Reader._EXAMPLE}"


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _unclosed_bracket_line(text: str) -> int | None:
    """The line of the outermost ``[`` or ``{`` never closed (quotes and comments skipped)."""
    stack: list[int] = []
    quote = ""
    line = 1
    previous = "\n"
    chars = iter(text)
    for ch in chars:
        if ch == "\n":
            line += 1
        elif quote:
            if ch == "\\" and quote == '"':
                next(chars, "")
            elif ch == quote:
                quote = ""
        elif ch in "'\"" and (previous in " \t\n[{,:" or stack):
            quote = ch
        elif ch == "#" and previous in " \t\n":
            for ch in chars:
                if ch == "\n":
                    line += 1
                    break
        elif ch in "[{":
            stack.append(line)
        elif ch in "]}" and stack:
            stack.pop()
        previous = ch
    return stack[0] if stack else None


def _quote_value_fix(source_line: str) -> str:
    """Show the offending line with its value quoted: the usual cause is ': ' in text."""
    match = re.match(r"\s*(?:-\s+)?([\w.-]+):\s+(.*\S)", source_line)
    if match is None:
        return "a value containing ': ' must be quoted (or check the indentation of this line)"
    key, value = match.groups()
    quoted = value.replace("\\", "\\\\").replace('"', '\\"')
    return f"a value containing ': ' must be quoted: {key}: \"{quoted}\""


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _json_kind(value: object) -> str:
    names = {
        dict: "an object",
        list: "a list",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }
    if value is None:
        return "null"
    try:
        shown = json.dumps(value)[:40]
    except ValueError:
        shown = "..."
    return names.get(type(value), f"a {type(value).__name__}") + f" ({shown})"
