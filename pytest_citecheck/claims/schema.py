"""The claim schema's user-facing side: mappings in, a :class:`Claim` or every problem out.

The rules live in the pydantic models (:mod:`pytest_citecheck.claims.models`); this
module turns their ``ValidationError`` into one :class:`FieldProblem` per field
(the field path, the problem, the fix). The claim file loader adds line numbers;
the fixture, the batch CLI and the service call :func:`parse_claim` as is.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from pytest_citecheck.claims.models import (
    INTERNAL_FIELDS,
    MAX_CLAIM_CHARS,
    TERMS,
    Citation,
    Claim,
    kind,
)
from pytest_citecheck.core.defaults import DEFAULT_MAX_CLAIM_CHARS
from pytest_citecheck.core.errors import CitecheckError
from pytest_citecheck.core.terms import NEUTRAL, Terms

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

__all__ = ["ClaimValidationError", "FieldProblem", "parse_citation", "parse_claim"]

Loc = tuple[str | int, ...]

TOP_KEYS = ("judge", "claims", "answers", "judges", "outlines")
# An item of `outlines:` (written by `citecheck import`): an answer's sentences in order,
# each naming the claim made from it (cited) or holding its own text (uncited).
OUTLINE_KEYS = (
    "answer",
    "format",
    "sentences",
    "conversation",
    "turn",
    "response_id",
    "trace_id",
    "span_id",
)
OUTLINE_SENTENCE_KEYS = ("claim", "text")
# An item of `answers:`: a saved response, expanded into claims when the file is read.
ANSWER_KEYS = ("id", "response", "format", "documents")
CLAIM_KEYS = ("id", "claim", "citations", "expect")
CITATION_KEYS = (
    "url",
    "document",
    "quote",
    "quote_by",
    "section",
    "page",
    "paywall",
    "retrieved",
)

# A key written at the wrong level: say where it belongs instead of "unknown".
_BELONGS_IN_CLAIM = "belongs to a claim: put it in an item of the `claims:` list"
_BELONGS_IN_CITATION = "belongs to a citation: put it in an item of the claim's `citations:` list"
_MISPLACED: dict[str, dict[str, str]] = {
    "top level": {
        **{key: _BELONGS_IN_CLAIM for key in CLAIM_KEYS},
        **{key: _BELONGS_IN_CITATION for key in CITATION_KEYS},
    },
    "claim": {
        **{key: _BELONGS_IN_CITATION for key in CITATION_KEYS},
        "judge": "is a file-level setting: move it to the top of the file, "
        "next to `claims:` (the CLI and ini override it)",
        "judges": "is a file-level setting: move it to the top of the file, "
        "next to `claims:` (the CLI and ini override it)",
    },
    "citation": {
        **{key: _BELONGS_IN_CLAIM for key in ("id", "claim", "citations")},
        "expect": "is set per claim, not per citation: move it to the claim, next to `citations:`",
    },
}
_MISSING_FIX = {
    "id": "add `id: water-boiling-point` (unique in this file; it becomes the test id)",
    "claim": "add `claim: <the sentence the LLM wrote>`",
    "citations": "add `citations:` with a list of URLs or documents "
    "(`citations: []` if the LLM cited nothing)",
}


@dataclass(frozen=True)
class FieldProblem:
    """One schema violation, located by field path (``citations[1].url``)."""

    loc: Loc
    problem: str
    fix: str

    @property
    def field(self) -> str:
        out = ""
        for part in self.loc:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
        return out


class ClaimValidationError(CitecheckError, ValueError):
    """A claim (as a mapping: fixture call, HTTP body) breaks the schema."""

    def __init__(self, problems: Sequence[FieldProblem]) -> None:
        super().__init__(tuple(problems))
        self.problems = list(problems)

    def __str__(self) -> str:
        return "\n".join(
            f"{p.field or 'claim'}: {p.problem}\n  fix: {p.fix}" for p in self.problems
        )


# --- the schema API for everyone (fixture, batch CLI, service) ----------------------------


def parse_claim(
    data: Mapping[str, Any],
    *,
    max_claim_chars: int = DEFAULT_MAX_CLAIM_CHARS,
    terms: Terms = NEUTRAL,
) -> Claim:
    """Validate a claim given as a mapping (``id``, ``claim``, ``citations``, ``expect``).

    Raises :class:`ClaimValidationError` listing every problem with its fix. A claim
    text longer than ``max_claim_chars`` is one (0: no cap; ``terms`` names the option).
    Document citations are checked as text only; resolving them against the
    file system is the caller's (see :func:`documents.resolve_document`).
    """
    if not isinstance(data, Mapping):
        raise ClaimValidationError(
            [FieldProblem((), f"a claim must be a mapping, not {kind(data)}", _CLAIM_EXAMPLE)]
        )
    claim, problems = validate_claim(dict(data), max_claim_chars=max_claim_chars, terms=terms)
    if claim is None:
        raise ClaimValidationError(problems)
    return claim


def parse_citation(data: str | Mapping[str, Any]) -> Citation:
    """Validate one citation: a URL string, or a mapping like a claim file's."""
    try:
        cleaned, problems = _strip_internal(data, "citation", ())
        citation = Citation.model_validate(cleaned)
    except ValidationError as exc:
        problems += [_problem(err, ()) for err in exc.errors()]
        raise ClaimValidationError(problems) from None
    if problems:
        raise ClaimValidationError(problems)
    return citation


_CLAIM_EXAMPLE = (
    'write e.g. {"id": "q1", "claim": "Water boils at 100 °C.", '
    '"citations": ["https://example.com/water"]}'
)


def validate_claim(
    data: dict[str, Any],
    *,
    max_claim_chars: int = DEFAULT_MAX_CLAIM_CHARS,
    terms: Terms = NEUTRAL,
) -> tuple[Claim | None, list[FieldProblem]]:
    cleaned, problems = _strip_internal(data, "claim", ())
    citations = cleaned.get("citations")
    if isinstance(citations, list):
        items = []
        for i, item in enumerate(citations):
            item, found = _strip_internal(item, "citation", ("citations", i))
            items.append(item)
            problems += found
        cleaned["citations"] = items
    try:
        context = {MAX_CLAIM_CHARS: max_claim_chars, TERMS: terms}
        claim = Claim.model_validate(cleaned, context=context)
    except ValidationError as exc:
        errors = exc.errors()
        # Unknown keys first; a typo of a required key (`citatons:`) is reported as
        # the typo, not also as the key that is missing.
        typos = {
            (tuple(err["loc"][:-1]), closest(str(err["loc"][-1]), CLAIM_KEYS))
            for err in errors
            if err["type"] == "extra_forbidden"
        }
        errors.sort(key=lambda err: err["type"] != "extra_forbidden")
        for err in errors:
            loc = tuple(err["loc"])
            if err["type"] == "missing" and (loc[:-1], loc[-1]) in typos:
                continue
            problems.append(_problem(err, loc))
        problems += _behind_bad_urls(cleaned.get("citations"), problems)
        return None, problems
    return (None if problems else claim), problems


# Stands in for a URL that failed validation, to see what else is wrong with its citation.
_SOME_URL = "https://example.com/"


def _behind_bad_urls(citations: Any, found: Sequence[FieldProblem]) -> list[FieldProblem]:
    """What a citation's bad URL hides: pydantic checks the rest of a citation only
    against a valid URL (``quote`` on a URL citation, both ``url`` and ``document``).
    Every problem of a file is listed at once, not after the URL is fixed."""
    if not isinstance(citations, list):
        return []
    bad = {p.loc[:2] for p in found if len(p.loc) == 3 and p.loc[2] == "url"}
    out: list[FieldProblem] = []
    for i, item in enumerate(citations):
        if ("citations", i) not in bad or not isinstance(item, Mapping):
            continue
        try:
            Citation.model_validate({**item, "url": _SOME_URL})
        except ValidationError as exc:
            for err in exc.errors():
                loc = ("citations", i, *err["loc"])
                if "url" not in err["loc"] and all(p.loc != loc for p in found):
                    out.append(_problem(err, loc))
    return out


def _strip_internal(data: Any, where: str, loc: Loc) -> tuple[Any, list[FieldProblem]]:
    """Refuse the fields only the loader may set (``line``, ``document_path``...)."""
    if not isinstance(data, Mapping):
        return data, []
    data = dict(data)
    problems = []
    allowed = CLAIM_KEYS if where == "claim" else CITATION_KEYS
    for name in INTERNAL_FIELDS[where]:
        if name in data:
            del data[name]
            problems.append(FieldProblem((*loc, name), *unknown_key(name, where, allowed)))
    return data, problems


def _problem(err: ErrorDetails, loc: Loc) -> FieldProblem:
    """A pydantic error as a sentence and a fix (the validators' own, or by type)."""
    kind_ = err["type"]
    ctx: dict[str, Any] = dict(err.get("ctx") or {})
    if kind_ == "citecheck":
        return FieldProblem(loc, str(ctx["problem"]), str(ctx["fix"]))
    names = [part for part in loc if isinstance(part, str)]
    name = names[-1] if names else "claim"
    where = "citation" if len(loc) >= 3 and loc[0] == "citations" else "claim"
    allowed = CITATION_KEYS if where == "citation" else CLAIM_KEYS
    value = err.get("input")
    if kind_ == "extra_forbidden":
        return FieldProblem(loc, *unknown_key(name, where, allowed))
    if kind_ == "missing":
        return FieldProblem(loc, f"claim has no {name!r}", _MISSING_FIX.get(name, "add it"))
    if kind_ in ("model_type", "model_attributes_type", "dict_type"):
        return FieldProblem(
            loc,
            f"a claim must be a mapping with id, claim and citations, not {kind(value)}",
            "write the claim as `- id: ...` with `claim:` and `citations:` indented under it",
        )
    if kind_ == "list_type":
        return FieldProblem(
            loc,
            f"`{name}:` must be a list, not {kind(value)}",
            "write each citation as a list item: `- https://...` or `- document: <path>`",
        )
    if kind_.startswith("string") or kind_ == "enum":
        return FieldProblem(
            loc,
            f"{name!r} must be text, not {kind(value)}",
            f"write {name!r} as one text value, not a list or mapping "
            "(quote it if it contains ': ' or ' #')",
        )
    return FieldProblem(loc, f"{name!r}: {err['msg']}", "see the claim file format")


def unknown_key(key: str, where: str, allowed: tuple[str, ...]) -> tuple[str, str]:
    """The problem and fix for a key that is not allowed: a typo, or a misplaced key."""
    place = "at the top level" if where == "top level" else f"in a {where}"
    listed = ", ".join(allowed)
    near = closest(key, allowed)
    # A near-certain typo (`claim:` for `claims:`) beats "this key belongs elsewhere".
    near_typo = near is not None and _similarity(key, near) >= 0.85
    misplaced = _MISPLACED.get(where, {}).get(key)
    if misplaced is not None and not near_typo:
        return f"{key!r} is not allowed {place}", f"{key!r} {misplaced}"
    if near is not None:
        return (
            f"unknown key {key!r} {place}; did you mean {near!r}?",
            f"rename {key!r} to {near!r} (allowed {place}: {listed})",
        )
    return f"unknown key {key!r} {place}", f"remove {key!r}; allowed {place}: {listed}"


def closest(word: str, allowed: Iterable[str]) -> str | None:
    lowered = {c.lower(): c for c in allowed}
    match = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()
