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

The reader is split by job under :mod:`pytest_citecheck.claims.reading`; this module
keeps the entry points and the file's top level.

``parse_claim`` (re-exported from :mod:`pytest_citecheck.claims.schema`) is the same
schema for everyone else: the fixture, the batch CLI, the service.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_citecheck.claims.models import EXPECTABLE_LABELS, Claim, kind
from pytest_citecheck.claims.reading.answers import AnswerReading
from pytest_citecheck.claims.reading.base import ClaimFileError, Problem, _Broken, _Invalid
from pytest_citecheck.claims.reading.jsonl import JsonlRecords
from pytest_citecheck.claims.reading.outlines import OutlineReading
from pytest_citecheck.claims.reading.yaml_nodes import YamlNodes, _line
from pytest_citecheck.claims.schema import (
    TOP_KEYS,
    ClaimValidationError,
    FieldProblem,
    parse_citation,
    parse_claim,
    unknown_key,
)
from pytest_citecheck.core.defaults import DEFAULT_MAX_CLAIM_CHARS
from pytest_citecheck.core.terms import NEUTRAL, Terms

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


class _Reader(AnswerReading, OutlineReading, JsonlRecords, YamlNodes):
    """Reads one claim file: YAML (its top level here; the values by ``YamlNodes``)
    or JSONL, every problem collected with its line."""

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
