"""A cassette file as VCR.py writes it: loaded with PyYAML's C safe loader and checked
interaction by interaction, and dumped the same way.

A truncated, empty, binary or ``!!python``-tagged file, or one of the wrong shape, raises
:class:`CorruptCassette` with a one-line reason (no traceback reaches a user); see
:mod:`pytest_citecheck.recording.cassette` for the whole format.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from pytest_citecheck.recording.matching import (
    Interaction,
    match_key,
)

try:  # the C loader/dumper when libyaml is there: the same output, ~10x faster
    from yaml import CSafeDumper as _Dumper
    from yaml import CSafeLoader as _Loader
    from yaml._yaml import CParser as _EventParser

    _LIBYAML = True
except ImportError:  # pragma: no cover - PyYAML without libyaml
    from yaml import SafeDumper as _Dumper  # type: ignore[assignment]
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

    _LIBYAML = False

CASSETTE_VERSION = 1

# A too-large response is recorded without its body, under this header, so a
# replay reports the same ``page_too_large`` the recording run did.
TOO_LARGE_HEADER = "x-citecheck-too-large"


class CorruptCassette(Exception):
    """The cassette file exists but cannot be read as a VCR.py cassette."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


def load_yaml(text: str) -> Any:
    """``yaml.load(text, Loader=CSafeLoader)``, the same data and the same errors,
    about twice as fast for a cassette: plain mappings, lists and scalars are built
    straight from libyaml's events (no node tree, no constructor generators);
    anything else -- a tag, an anchor or alias, a merge key, a timestamp, more
    than one document, a syntax error -- is left to the safe loader itself."""
    if _LIBYAML:
        try:
            return _from_events(text)
        except (_Unusual, yaml.YAMLError, RecursionError):
            pass
    return yaml.load(text, Loader=_Loader)  # the C *safe* loader


def dump_yaml(data: Any) -> str:
    """``yaml.dump(data, Dumper=CSafeDumper)``: a cassette's text as VCR.py writes it."""
    text: str = yaml.dump(data, Dumper=_Dumper)
    return text


class _Unusual(Exception):
    """The document holds more than plain mappings, lists and scalars."""


_STR_TAG = "tag:yaml.org,2002:str"

_RESOLVER = yaml.resolver.Resolver()

# How the safe loader builds each implicit scalar kind (all plain functions).
_SCALARS = {
    tag: yaml.constructor.SafeConstructor.yaml_constructors[tag]
    for tag in (
        "tag:yaml.org,2002:null",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
    )
}

_SAFE_CONSTRUCTOR = yaml.constructor.SafeConstructor()


@functools.lru_cache(maxsize=4096)
def _plain_tag(value: str) -> str:
    """The tag the safe loader resolves a plain (unquoted) scalar to."""
    resolve: Callable[[type[yaml.ScalarNode], str, tuple[bool, bool]], str] = _RESOLVER.resolve
    return resolve(yaml.ScalarNode, value, (True, False))


def _from_events(text: str) -> Any:
    parser = _EventParser(text)
    try:
        get = parser.get_event
        if type(get()) is not yaml.StreamStartEvent:
            raise _Unusual
        event = get()
        if type(event) is yaml.StreamEndEvent:
            return None
        if type(event) is not yaml.DocumentStartEvent:
            raise _Unusual
        data = _build(get)
        if type(get()) is not yaml.DocumentEndEvent or type(get()) is not yaml.StreamEndEvent:
            raise _Unusual  # a second document: the safe loader says so
        return data
    finally:
        parser.dispose()


def _build(get: Callable[[], Any]) -> Any:
    """The document's one node, from its events (one loop, no recursion)."""
    scalar, mapping_start, sequence_start = (
        yaml.ScalarEvent,
        yaml.MappingStartEvent,
        yaml.SequenceStartEvent,
    )
    mapping_end, sequence_end = yaml.MappingEndEvent, yaml.SequenceEndEvent
    # The open collection, whether it is a mapping, and its key while it awaits a
    # value; the collections around it, outermost first, each with the same two.
    container: Any = None
    is_mapping = False
    key: Any = _NO_KEY
    around: list[tuple[Any, bool, Any]] = []
    while True:
        event = get()
        kind = type(event)
        if kind is scalar:
            if event.anchor is not None or event.tag is not None:
                raise _Unusual
            value: Any = event.value
            if event.implicit[0]:
                tag = _plain_tag(value)
                if tag != _STR_TAG:
                    construct = _SCALARS.get(tag)
                    if construct is None:
                        raise _Unusual  # a timestamp, a merge key...
                    value = construct(_SAFE_CONSTRUCTOR, yaml.ScalarNode(tag, value))
            if container is None:
                return value
        elif kind is mapping_start or kind is sequence_start:
            if event.anchor is not None or event.tag is not None:
                raise _Unusual
            if is_mapping and key is _NO_KEY:
                raise _Unusual  # a mapping or list as a key
            around.append((container, is_mapping, key))
            is_mapping = kind is mapping_start
            container, key = ({} if is_mapping else []), _NO_KEY
            continue
        elif kind is mapping_end or kind is sequence_end:
            value = container
            container, is_mapping, key = around.pop()
            if container is None:
                return value
        else:
            raise _Unusual  # an alias
        if not is_mapping:
            container.append(value)
        elif key is _NO_KEY:
            key = value
        else:
            container[key] = value
            key = _NO_KEY


_NO_KEY = object()


def check(condition: bool, why: str, path: Path) -> None:
    if not condition:
        raise CorruptCassette(path, why)


def _check_header_values(headers: Any, where: str, path: Path) -> None:
    """Header values are text (a list of them, as VCR.py writes): a nested list or
    a mapping would reach httpx as garbage."""
    if not isinstance(headers, dict):
        return
    for name, values in headers.items():
        for value in values if isinstance(values, list) else [values]:
            if type(value) is str:
                continue  # the usual case, checked without building the message
            check(
                isinstance(value, str | int | float) and not isinstance(value, bool),
                f"{where} header {str(name)[:40]!r} holds {_kind(value)}, not text",
                path,
            )


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "nothing" if value is None else f"a {type(value).__name__}"


def read_interaction(raw: Any, n: int, path: Path, placeholder: Callable[[str], str]) -> Any:
    where = f"interaction {n + 1}"
    check(isinstance(raw, dict), f"{where} is not a mapping", path)
    request, response = raw.get("request"), raw.get("response")
    check(isinstance(request, dict), f"{where} has no request mapping", path)
    check(isinstance(response, dict), f"{where} has no response mapping", path)
    method, uri = request.get("method"), request.get("uri")
    check(isinstance(method, str) and isinstance(uri, str), f"{where}: no method or uri", path)
    check(isinstance(request.get("headers", {}), dict), f"{where}: request headers", path)
    _check_header_values(request.get("headers", {}), f"{where}: request", path)
    check(
        isinstance(request.get("body"), str | bytes | None), f"{where}: request body is odd", path
    )
    status, headers, body = response.get("status"), response.get("headers"), response.get("body")
    check(
        isinstance(status, dict) and isinstance(status.get("code"), int),
        f"{where}: the response has no status code",
        path,
    )
    check(
        isinstance(headers, dict) and all(isinstance(v, list) for v in headers.values()),
        f"{where}: response headers are not lists",
        path,
    )
    _check_header_values(headers, f"{where}: response", path)
    check(
        isinstance(body, dict) and isinstance(body.get("string"), str | bytes | None),
        f"{where}: the response has no body string",
        path,
    )
    request.setdefault("headers", {})
    return Interaction(request, response, match_key(method, uri, placeholder))


def unicode_body(request: dict[str, Any]) -> dict[str, Any]:
    body = request.get("body")
    if isinstance(body, bytes):
        try:
            return {**request, "body": body.decode("utf-8")}
        except UnicodeDecodeError:
            return request
    return request


def unicode_response(response: dict[str, Any]) -> dict[str, Any]:
    string = response["body"].get("string")
    if isinstance(string, bytes):
        try:
            return {**response, "body": {**response["body"], "string": string.decode("utf-8")}}
        except UnicodeDecodeError:
            return response
    return response


def _text_or_bytes(body: bytes) -> str | bytes:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body


def request_dict(method: str, uri: str, body: bytes, headers: Mapping[str, str]) -> dict[str, Any]:
    """A request as VCR.py's ``Request._to_dict`` lays it out (one value per header)."""
    return {
        "method": method,
        "uri": uri,
        "body": _text_or_bytes(body),
        "headers": {name: [value] for name, value in headers.items()},
    }
