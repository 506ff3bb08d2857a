"""One claim from plain data, checked against the schema: its problems by line, a
unique id, its documents inside the roots; and the file-level ``judge:``/``judges:``."""

from __future__ import annotations

from typing import Any

from pytest_citecheck.claims.models import Citation, Claim, check_judge, kind
from pytest_citecheck.claims.reading.base import ReaderCore, _has_broken
from pytest_citecheck.claims.schema import FieldProblem, Loc, validate_claim


class ClaimChecks(ReaderCore):
    """Validate one claim (or a file-level judge); problems go to the file's list."""

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


def _valid_citations(items: Any) -> list[tuple[int, Citation]]:
    """The citations of an invalid claim that are valid by themselves, with their index."""
    from contextlib import suppress

    from pydantic import ValidationError

    out: list[tuple[int, Citation]] = []
    for i, item in enumerate(items if isinstance(items, list) else []):
        with suppress(ValidationError, ValueError, TypeError):  # reported with the claim
            out.append((i, Citation.model_validate(item)))
    return out
