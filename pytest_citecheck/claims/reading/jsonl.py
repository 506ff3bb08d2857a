"""JSONL batch records (``{"id", "claim", "urls"}`` a line), each checked as a claim."""

from __future__ import annotations

import json
from typing import Any

from pytest_citecheck.claims.models import Claim
from pytest_citecheck.claims.reading.base import Problem
from pytest_citecheck.claims.reading.claims import ClaimChecks
from pytest_citecheck.claims.schema import closest, validate_claim

JSONL_KEYS = ("id", "claim", "urls")


class JsonlRecords(ClaimChecks):
    """Read JSONL records; a bad record costs only itself."""

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
    return f"records look like {JsonlRecords._EXAMPLE}"


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
