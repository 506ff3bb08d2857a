"""Claim files: read ``citecheck_*.yaml|yml`` (DESIGN §2) and ``*.jsonl`` (DESIGN §8).

A bad file becomes one :class:`ClaimFileError` that names the file, the line and
the fix; pytest shows it as the collection error for that file. The first
problem in a file is reported, precisely, rather than every problem vaguely.

YAML is composed into nodes (not loaded into dicts) so every value keeps the
line it came from. Scalars are taken as the user wrote them (``section: 4.10``
stays ``"4.10"``, ``id: 007`` stays ``"007"``) instead of going through YAML's
type guessing. ``yaml`` is imported only when a YAML file is read.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from pytest_citecheck.errors import CitecheckError
from pytest_citecheck.models import Citation, Claim, Label

if TYPE_CHECKING:
    import yaml

__all__ = ["EXPECTABLE_LABELS", "ClaimFile", "ClaimFileError", "load_claim_file"]

TOP_KEYS = ("judge", "claims")
CLAIM_KEYS = ("id", "claim", "citations", "expect")
CITATION_KEYS = ("url", "document", "quote", "section")
JSONL_KEYS = ("id", "claim", "urls")

# `error` is what a broken run gets; no test case can sensibly expect it.
# What a claim as a whole can be: a fabricated citation makes its claim
# contradicted (DESIGN §3), and `error` is never an expected outcome.
EXPECTABLE_LABELS = tuple(
    label.value for label in Label if label not in (Label.ERROR, Label.FABRICATED)
)

ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
ID_MAX_LENGTH = 100
# Windows refuses these as file names whatever the extension (con.yaml included).
_WINDOWS_DEVICE_NAMES = frozenset(
    ["con", "prn", "aux", "nul"]
    + [f"com{i}" for i in range(1, 10)]
    + [f"lpt{i}" for i in range(1, 10)]
)
JUDGE_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]*:\S+")

_NULL_TAG = "tag:yaml.org,2002:null"
_MERGE_TAG = "tag:yaml.org,2002:merge"

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
    },
    "citation": {
        **{key: _BELONGS_IN_CLAIM for key in ("id", "claim", "citations")},
        "expect": "is set per claim, not per citation: move it to the claim, next to `citations:`",
    },
}


class ClaimFileError(CitecheckError):
    """A claim file cannot be used; ``str()`` tells the user where and how to fix it."""

    def __init__(self, path: Path, line: int | None, problem: str, fix: str) -> None:
        # All four go to Exception.args so the error pickles (pytest-xdist workers).
        super().__init__(path, line, problem, fix)
        self.path = path
        self.line = line
        self.problem = problem
        self.fix = fix

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else f"{self.path}"
        return f"{where}: {self.problem}\n  fix: {self.fix}"


@dataclass
class ClaimFile:
    """The claims of one file, in file order, with the file-level judge."""

    path: Path
    judge: str | None = None
    claims: list[Claim] = field(default_factory=list)


def load_claim_file(path: Path) -> ClaimFile:
    """Read and validate a claim file; raise :class:`ClaimFileError` on the first problem."""
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".jsonl"):
        raise ClaimFileError(
            path,
            None,
            f"unsupported claim file type {path.suffix or '(no extension)'!r}",
            "name claim files *.yaml or *.yml (DESIGN §2), or *.jsonl for batch records",
        )
    text = _read_text(path)
    if suffix == ".jsonl":
        return _JsonlReader(path).read(text)
    return _YamlReader(path).read(text)


# --- shared checks ---------------------------------------------------------------------


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        # Case-folded id -> (id as written, line): duplicates and case-only clashes.
        self._ids: dict[str, tuple[str, int]] = {}

    def fail(self, line: int | None, problem: str, fix: str) -> NoReturn:
        raise ClaimFileError(self.path, line, problem, fix)

    def check_id(self, claim_id: str, line: int) -> None:
        if not claim_id:
            self.fail(
                line,
                "claim id is empty",
                "give the claim a short unique id, e.g. `id: water-boiling-point`",
            )
        if len(claim_id) > ID_MAX_LENGTH:
            self.fail(
                line,
                f"claim id is {len(claim_id)} characters long (at most {ID_MAX_LENGTH})",
                f"shorten it, e.g. {claim_id[:40].rstrip('._-')!r}; ids become cassette "
                "file names and test ids",
            )
        if not ID_PATTERN.fullmatch(claim_id):
            self.fail(
                line,
                f"claim id {claim_id!r} cannot be used as a file name or test id",
                f"use letters, digits, '.', '_' and '-', starting with a letter or digit, "
                f"e.g. {_suggest_id(claim_id)!r}",
            )
        if claim_id.split(".", 1)[0].lower() in _WINDOWS_DEVICE_NAMES:
            self.fail(
                line,
                f"claim id {claim_id!r} is a reserved file name on Windows "
                "(its cassette could not be written there)",
                f"rename it, e.g. {claim_id + '-claim'!r}",
            )
        folded = claim_id.casefold()
        if folded in self._ids:
            first, first_line = self._ids[folded]
            if first == claim_id:
                self.fail(
                    line,
                    f"duplicate claim id {claim_id!r} (first used on line {first_line})",
                    "ids must be unique within a file: rename one of them",
                )
            self.fail(
                line,
                f"claim id {claim_id!r} differs from {first!r} (line {first_line}) only in "
                "letter case; their cassette files would collide on macOS and Windows",
                "rename one of them",
            )
        self._ids[folded] = (claim_id, line)

    def check_claim_text(self, text: str | None, line: int) -> str:
        if text is None or not text.strip():
            self.fail(
                line,
                "claim text is empty",
                "write the sentence the LLM claimed, e.g. `claim: Water boils at 100 °C.`",
            )
        return text.strip()

    def check_url(self, url: str, line: int) -> str:
        url = url.strip()
        problem = _url_problem(url)
        if problem is not None:
            self.fail(line, f"{url!r} is not a usable URL: {problem}", _url_fix(url))
        return url


def _url_problem(url: str) -> str | None:
    if not url:
        return "it is empty"
    if any(ch.isspace() for ch in url):
        return "it contains whitespace"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a malformed port
    except ValueError as exc:
        return str(exc)
    if parts.scheme.lower() not in ("http", "https"):
        if not parts.scheme:
            return "it has no scheme (http:// or https://)"
        return f"only http and https URLs can be fetched, not {parts.scheme}:"
    if not parts.hostname:
        return "it has no host"
    return None


def _url_fix(url: str) -> str:
    parts = urlsplit(url) if not any(ch.isspace() for ch in url) else None
    if parts is not None and parts.scheme.lower() == "file":
        return "cite a local file with `document: <path relative to this claim file>` instead"
    if parts is not None and not parts.scheme and url and "." in url.split("/", 1)[0]:
        return f"write the full URL, e.g. 'https://{url}'"
    if any(ch.isspace() for ch in url):
        return "remove the spaces, or percent-encode them as %20"
    return "cite an http(s) URL with a host, e.g. https://example.com/page"


def _suggest_id(claim_id: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", claim_id).strip("-._")
    return slug[:ID_MAX_LENGTH] or "claim-1"


def _closest(word: str, allowed: Iterable[str]) -> str | None:
    choices = list(allowed)
    lowered = {c.lower(): c for c in choices}
    match = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None


def _unknown_key_error(
    reader: _Reader, line: int, key: str, where: str, allowed: tuple[str, ...]
) -> NoReturn:
    place = "at the top level" if where == "top level" else f"in a {where}"
    listed = ", ".join(allowed)
    closest = _closest(key, allowed)
    # A near-certain typo (`claim:` for `claims:`) beats "this key belongs elsewhere".
    near_typo = closest is not None and _similarity(key, closest) >= 0.85
    misplaced = _MISPLACED.get(where, {}).get(key)
    if misplaced is not None and not near_typo:
        reader.fail(line, f"{key!r} is not allowed {place}", f"{key!r} {misplaced}")
    if closest is not None:
        reader.fail(
            line,
            f"unknown key {key!r} {place}; did you mean {closest!r}?",
            f"rename {key!r} to {closest!r} (allowed {place}: {listed})",
        )
    reader.fail(line, f"unknown key {key!r} {place}", f"remove {key!r}; allowed {place}: {listed}")


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()


# --- YAML ------------------------------------------------------------------------------


class _YamlReader(_Reader):
    def read(self, text: str) -> ClaimFile:
        root = self._compose(text)
        if root is None:
            self.fail(
                None,
                "the file is empty",
                "add a `claims:` list (see the claim file format, DESIGN §2)",
            )
        import yaml

        if isinstance(root, yaml.SequenceNode):
            self.fail(
                _line(root),
                "the top level is a list; claims go under a `claims:` key",
                "write `claims:` on the first line and indent the list under it",
            )
        if not isinstance(root, yaml.MappingNode):
            self.fail(
                _line(root),
                "the top level is not a mapping with a `claims:` list",
                "start the file with `claims:` followed by a list of claims (DESIGN §2)",
            )
        top = self._mapping(root, "top level", TOP_KEYS)

        judge: str | None = None
        if "judge" in top:
            key, value = top["judge"]
            judge = self._text(key, value, "judge")
            if judge is not None:
                judge = self._check_judge(judge.strip(), _line(key))

        if "claims" not in top:
            self.fail(
                _line(root),
                "the file has no `claims:` key",
                "add `claims:` with a list of claims (each with id, claim and citations)",
            )
        key, claims_node = top["claims"]
        if _is_null(claims_node):
            self.fail(
                _line(key),
                "`claims:` has no value",
                "list the claims under it, or write `claims: []` for a file with none yet",
            )
        if not isinstance(claims_node, yaml.SequenceNode):
            self.fail(
                _line(claims_node),
                f"`claims:` must be a list, not {_kind(claims_node)}",
                "write each claim as a list item starting with `- id: ...`",
            )
        claims = [self._claim(node, judge) for node in claims_node.value]
        return ClaimFile(path=self.path, judge=judge, claims=claims)

    def _compose(self, text: str) -> yaml.Node | None:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            return yaml.compose(text, Loader=loader)
        except yaml.MarkedYAMLError as exc:
            if loader is yaml.SafeLoader:
                self._syntax_error(exc, text)
        # libyaml's messages are terser ("found character that cannot start any
        # token"); the pure-Python parser names the character. Errors are rare, so
        # re-parsing for a better message costs nothing that matters.
        try:
            return yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.MarkedYAMLError as exc:
            self._syntax_error(exc, text)

    def _syntax_error(self, exc: yaml.MarkedYAMLError, text: str) -> NoReturn:
        problem = exc.problem or "invalid YAML"
        mark = exc.problem_mark
        # An unclosed quote or bracket is reported where the file ends; the place to
        # fix is where it was opened.
        if "end of stream" in problem and exc.context_mark is not None:
            mark = exc.context_mark
        line = mark.line + 1 if mark is not None else None
        source_line = ""
        if mark is not None:
            lines = text.splitlines()
            if mark.line < len(lines):
                source_line = lines[mark.line]
        context = f" ({exc.context})" if exc.context else ""
        if (
            "\t" in source_line[: len(source_line) - len(source_line.lstrip())]
            or "'\\t'" in problem
        ):
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
        elif "end of stream" in problem:
            fix = "close the quote or bracket opened on this line"
        else:
            fix = "check the indentation and quoting on this line and the one before it"
        self.fail(line, f"invalid YAML: {problem}{context}", fix)

    def _mapping(
        self, node: yaml.MappingNode, where: str, allowed: tuple[str, ...]
    ) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        """Keys of a mapping, checked: text keys, no duplicates, only ``allowed``."""
        import yaml

        seen: dict[str, yaml.Node] = {}
        has_merge = False
        for key, _ in node.value:
            if key.tag == _MERGE_TAG:
                has_merge = True
                continue
            if not isinstance(key, yaml.ScalarNode) or _is_null(key):
                self.fail(
                    _line(key),
                    f"a key in a {where} is not text",
                    f"use one of: {', '.join(allowed)}",
                )
            if key.value in seen:
                self.fail(
                    _line(key),
                    f"duplicate key {key.value!r} (first on line {_line(seen[key.value])})",
                    f"keep one {key.value!r}; YAML would silently drop the first value",
                )
            seen[key.value] = key
        pairs = node.value
        if has_merge:
            # `<<: *defaults`: let PyYAML expand merges into a copy, explicit keys win.
            from yaml.constructor import ConstructorError, SafeConstructor

            merged = yaml.MappingNode(node.tag, list(node.value), node.start_mark, node.end_mark)
            try:
                SafeConstructor().flatten_mapping(merged)
            except ConstructorError as exc:
                mark = exc.problem_mark or node.start_mark
                self.fail(
                    mark.line + 1,
                    f"invalid merge key: {exc.problem}",
                    "`<<:` merges a mapping into this one: point it at one, e.g. `<<: *defaults`",
                )
            pairs = merged.value
        result: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key, value in pairs:
            if not isinstance(key, yaml.ScalarNode) or _is_null(key):
                self.fail(
                    _line(key),
                    f"a key in a {where} is not text",
                    f"use one of: {', '.join(allowed)}",
                )
            if key.value not in allowed:
                _unknown_key_error(self, _line(key), key.value, where, allowed)
            result[key.value] = (key, value)
        return result

    def _text(self, key: yaml.Node, value: yaml.Node, name: str) -> str | None:
        """A scalar exactly as written, or None for an empty/null value."""
        import yaml

        if not isinstance(value, yaml.ScalarNode):
            self.fail(
                _line(key),
                f"{name!r} must be text, not {_kind(value)}",
                f"write {name!r} as one text value, not a list or mapping "
                "(quote it if it contains ': ' or ' #')",
            )
        if _is_null(value):
            return None
        return str(value.value)

    def _check_judge(self, judge: str, line: int) -> str:
        if not JUDGE_PATTERN.fullmatch(judge):
            self.fail(
                line,
                f"judge {judge!r} is not of the form provider:model",
                "write e.g. `judge: openai:gpt-4o-mini` or `judge: ollama:llama3.1:8b`",
            )
        return judge

    def _claim(self, node: yaml.Node, judge: str | None) -> Claim:
        import yaml

        if not isinstance(node, yaml.MappingNode):
            self.fail(
                _line(node),
                f"a claim must be a mapping with id, claim and citations, not {_kind(node)}",
                "write the claim as `- id: ...` with `claim:` and `citations:` indented under it",
            )
        start = _line(node)
        fields = self._mapping(node, "claim", CLAIM_KEYS)
        for required in ("id", "claim", "citations"):
            if required not in fields:
                example = {
                    "id": "`id: water-boiling-point` (unique in this file; it becomes the test id)",
                    "claim": "`claim: <the sentence the LLM wrote>`",
                    "citations": "`citations:` with a list of URLs or documents "
                    "(`citations: []` if the LLM cited nothing)",
                }[required]
                self.fail(start, f"claim has no {required!r}", f"add {example}")

        id_key, id_node = fields["id"]
        claim_id = (self._text(id_key, id_node, "id") or "").strip()
        self.check_id(claim_id, _line(id_key))

        text_key, text_node = fields["claim"]
        text = self.check_claim_text(self._text(text_key, text_node, "claim"), _line(text_key))

        expect: Label | None = None
        if "expect" in fields:
            expect_key, expect_node = fields["expect"]
            raw_expect = self._text(expect_key, expect_node, "expect")
            if raw_expect is not None:
                expect = self._check_expect(raw_expect.strip(), _line(expect_key))

        cit_key, cit_node = fields["citations"]
        if _is_null(cit_node):
            self.fail(
                _line(cit_key),
                "`citations:` has no value",
                "list the citations under it, or write `citations: []` if the LLM cited nothing",
            )
        if not isinstance(cit_node, yaml.SequenceNode):
            self.fail(
                _line(cit_node),
                f"`citations:` must be a list, not {_kind(cit_node)}",
                "write each citation as a list item: `- https://...` or `- document: <path>`",
            )
        citations = [self._citation(item) for item in cit_node.value]
        return Claim(
            id=claim_id,
            claim=text,
            citations=citations,
            expect=expect,
            judge=judge,
            line=start,
        )

    def _check_expect(self, raw: str, line: int) -> Label:
        if raw in EXPECTABLE_LABELS:
            return Label(raw)
        if raw == Label.FABRICATED.value:
            self.fail(
                line,
                "expect 'fabricated' can never happen: a claim with a fabricated quote "
                "is contradicted as a whole",
                "write expect: contradicted",
            )
        closest = _closest(raw.replace(" ", "_"), EXPECTABLE_LABELS)
        hint = f"; did you mean {closest!r}?" if closest else ""
        self.fail(
            line,
            f"expect {raw!r} is not a label{hint}",
            f"use one of: {', '.join(EXPECTABLE_LABELS)}",
        )

    def _citation(self, node: yaml.Node) -> Citation:
        import yaml

        line = _line(node)
        if isinstance(node, yaml.ScalarNode):
            if _is_null(node):
                self.fail(
                    line,
                    "empty citation",
                    "write a URL (`- https://...`) or `- document: <path>`, or remove the dash",
                )
            return Citation(url=self.check_url(str(node.value), line))
        if not isinstance(node, yaml.MappingNode):
            self.fail(
                line,
                f"a citation must be a URL or a mapping with url/document, not {_kind(node)}",
                "write `- https://...`, `- url: https://...` or `- document: <path>`",
            )
        fields = self._mapping(node, "citation", CITATION_KEYS)
        values: dict[str, str | None] = {}
        for name in CITATION_KEYS:
            if name in fields:
                key, value = fields[name]
                raw = self._text(key, value, name)
                values[name] = raw.strip() if raw is not None else None
        url, document = values.get("url"), values.get("document")
        if "url" in fields and "document" in fields:
            self.fail(
                line,
                "a citation has both `url` and `document`",
                "keep one: split it into two citations if the LLM cited both",
            )
        if "url" not in fields and "document" not in fields:
            self.fail(
                line,
                "a citation has neither `url` nor `document`",
                "add `url: https://...` or `document: <path relative to this file>`",
            )
        for name in ("quote", "section"):
            # null means "no quote" (generators write it); "" is a mistake.
            if values.get(name) == "":
                self.fail(
                    _line(fields[name][0]),
                    f"{name!r} is empty",
                    f"give the {'quoted text' if name == 'quote' else 'section, e.g. 4.1.4'} "
                    f"or remove {name!r}",
                )
        if "url" in fields:
            checked = self.check_url(url or "", _line(fields["url"][0]))
            for name in ("quote", "section"):
                # A web page is read by retrieval and the judge; a quote or section
                # given with it would be silently ignored, so say so instead.
                if values.get(name) is not None:
                    self.fail(
                        _line(fields[name][0]),
                        f"{name!r} is only read for `document` citations; a URL citation "
                        "is checked against the passages retrieval finds on the page",
                        f"remove {name!r} from this citation",
                    )
            return Citation(url=checked)
        document_path = self._document(document, _line(fields["document"][0]))
        return Citation(
            document=document,
            document_path=document_path,
            quote=values.get("quote"),
            section=values.get("section"),
        )

    def _document(self, document: str | None, line: int) -> Path:
        if not document:
            self.fail(
                line,
                "`document` is empty",
                "give the path of the source file, relative to this claim file",
            )
        base = self.path.resolve().parent
        resolved = (base / document).resolve()
        if not resolved.exists():
            self.fail(
                line,
                f"document {document!r} not found: {resolved} does not exist",
                f"document paths are relative to the claim file's folder ({base}); "
                "correct the path or add the file",
            )
        if not resolved.is_file():
            self.fail(
                line,
                f"document {document!r} is not a file: {resolved}",
                "point `document` at a text file, not a folder",
            )
        return resolved


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


def _is_null(node: yaml.Node) -> bool:
    return node.tag == _NULL_TAG


def _kind(node: yaml.Node) -> str:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if _is_null(node):
        return "an empty value"
    return f"the value {node.value!r}"


# --- JSONL (batch records, DESIGN §8) --------------------------------------------------


class _JsonlReader(_Reader):
    _EXAMPLE = '{"id": "q1", "claim": "...", "urls": ["https://..."]}'

    def read(self, text: str) -> ClaimFile:
        claims: list[Claim] = []
        # Split on "\n" only: str.splitlines() would also split on U+2028, which
        # json.dumps(ensure_ascii=False) leaves raw inside strings.
        for number, raw in enumerate(text.split("\n"), start=1):
            if not raw.strip():
                continue
            claims.append(self._record(raw, number))
        return ClaimFile(path=self.path, judge=None, claims=claims)

    def _record(self, raw: str, line: int) -> Claim:
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            self.fail(
                line,
                f"invalid JSON: {exc.msg} (column {exc.colno})",
                f"each line must be one complete JSON object, e.g. {self._EXAMPLE}",
            )
        if not isinstance(record, dict):
            self.fail(
                line,
                f"a record must be a JSON object, not {type(record).__name__}",
                f"write one object per line, e.g. {self._EXAMPLE}",
            )
        # Extra fields are ignored: batch outputs usually carry more (answer, model...).
        self._require(record, line)

        raw_id = record["id"]
        if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
            self.fail(
                line, f"`id` must be a string, not {_json_kind(raw_id)}", 'write e.g. "id": "q1"'
            )
        claim_id = str(raw_id).strip()
        self.check_id(claim_id, line)

        text = record["claim"]
        if text is not None and not isinstance(text, str):
            self.fail(
                line,
                f"`claim` must be a string, not {_json_kind(text)}",
                'write e.g. "claim": "Water boils at 100 °C."',
            )
        text = self.check_claim_text(text, line)

        urls = record["urls"]
        if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
            bad = (
                urls
                if not isinstance(urls, list)
                else next(u for u in urls if not isinstance(u, str))
            )
            self.fail(
                line,
                f"`urls` must be a list of strings; found {_json_kind(bad)}",
                'write e.g. "urls": ["https://example.com/a", "https://example.com/b"] '
                "(or [] if nothing was cited)",
            )
        citations = [Citation(url=self.check_url(url, line)) for url in urls]
        return Claim(id=claim_id, claim=text, citations=citations, line=line)

    def _require(self, record: Mapping[str, Any], line: int) -> None:
        for required in JSONL_KEYS:
            if required in record:
                continue
            extra = [key for key in record if key not in JSONL_KEYS]
            closest = _closest(required, extra)
            if closest is not None:
                self.fail(
                    line,
                    f"record has no {required!r} field; did you mean {closest!r}?",
                    f"rename {closest!r} to {required!r} (records are {self._EXAMPLE})",
                )
            self.fail(
                line, f"record has no {required!r} field", f"records look like {self._EXAMPLE}"
            )


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
    return names.get(type(value), f"a {type(value).__name__}") + f" ({json.dumps(value)[:40]})"


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ClaimFileError(
            path,
            None,
            f"cannot read the file: {exc.strerror}",
            "check the path and its permissions",
        ) from exc
    try:
        # utf-8-sig: tolerate the BOM some Windows editors write.
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ClaimFileError(
            path, line, f"the file is not valid UTF-8 (byte {exc.start})", "save the file as UTF-8"
        ) from exc
