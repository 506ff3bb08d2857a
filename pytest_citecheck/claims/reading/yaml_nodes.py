"""YAML composed into nodes and turned into plain data, every value's line kept:
refused tags, merges, duplicate keys, aliases that expand too far, and syntax errors
worded with the line to fix."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_citecheck.claims.reading.base import _BROKEN, ReaderCore, _Invalid
from pytest_citecheck.claims.schema import Loc

if TYPE_CHECKING:
    import yaml


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


class YamlNodes(ReaderCore):
    """YAML text to plain data (str/list/dict/None) with lines; problems collected."""

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
