"""``answers:``: saved LLM responses listed in a claim file, expanded into claims."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_citecheck.claims.models import Claim, kind
from pytest_citecheck.claims.reading.base import ClaimFileError, _Broken, _has_broken
from pytest_citecheck.claims.reading.claims import ClaimChecks
from pytest_citecheck.claims.schema import ANSWER_KEYS, CITATION_KEYS, Loc, closest, unknown_key

if TYPE_CHECKING:
    from pytest_citecheck.claims.importers.answer import ImportedAnswer


class AnswerReading(ClaimChecks):
    """Read ``answers:``: each saved response imported, each cited sentence a claim."""

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
        from pytest_citecheck.claims.importers.files import (
            SavedResponse,
            import_saved_answers,
            read_saved,
        )

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
            answers = import_saved_answers(
                SavedResponse(item["response"].strip(), item["id"].strip(), one.data),
                format=fmt,
                documents=documents,
            )
        except ResponseImportError as exc:
            place = f" at {exc.where}" if exc.where else ""
            self.add(where, f"{exc.response}{place}: {exc.problem}", exc.fix)
            return []
        out = []
        for answer in answers:  # one, or each assistant turn of a conversation
            for warning in answer.warnings:
                # Shown where the answer is listed (pytest's warnings summary), never silent.
                warnings.warn_explicit(
                    UncitedSourcesWarning(f"{item['response'].strip()}: {warning}"),
                    UncitedSourcesWarning,
                    str(self.path),
                    where or 0,
                    module="pytest_citecheck",
                )
            out += self._claims_of(answer, loc, judge)
        return out

    def _claims_of(self, answer: ImportedAnswer, loc: Loc, judge: str | None) -> list[Claim]:
        out = []
        outline = answer.outline(origin=str(self.path))
        for imported in answer.claims:
            data = {
                "id": imported.claim.id,
                "claim": imported.claim.claim,
                "citations": [
                    c.model_dump(exclude_none=True, include=set(CITATION_KEYS))
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
