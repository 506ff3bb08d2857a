"""One claim's cassette: a plain VCR.py file, read and written without VCR.py's patching.

The file is exactly what VCR.py (``vcr.use_cassette`` with its YAML
serializer) reads and writes -- ``interactions`` of ``request`` (method, uri,
body, headers as lists) and ``response`` (status, headers as lists, body
string), ``version: 1`` and an optional ``metadata`` mapping -- so any VCR.py
user can replay it with an httpx client. What this module adds is what VCR.py
does per process and citecheck needs per claim, concurrently and cheaply:

- **Loading** with PyYAML's C safe loader and a structural check: a truncated,
  empty, binary or ``!!python``-tagged file, or one of the wrong shape, raises
  :class:`CorruptCassette` with a one-line reason (no traceback reaches a user).
- **Matching** the way citecheck's VCR configuration did: method, scheme, host,
  port, path, query (the Crawling API ``token`` compared as its placeholder) and,
  for POST, the body compared as JSON. Each recorded interaction plays once, in
  recorded order (a retried 429-then-200 replays as recorded).
- **Replay that does not depend on the environment** (:meth:`Cassette.replay`):
  when nothing matches exactly, a retry of a request already played gets its
  recorded reply again (a recorded 500 stays a 500, however often it is retried),
  then a request matches the recorded one *regardless of the configured base
  URL and judge settings*: scheme, host, port and path are not compared (the
  method, the query and a POST's JSON body are), nor the body fields a judge setting shapes
  (``response_format``, ``temperature``...; ``stages.judges.compat.SETTING_FIELDS``).
  When still nothing matches, :func:`describe_difference` says what differs
  from the nearest recorded request (host, model, response format, claim text...).
- **Record modes** as VCR.py defines them: ``none`` and ``once`` with an
  existing file only replay; ``new_episodes`` replays what matches and records
  the rest; ``all`` records everything and keeps the loaded interactions that
  were not re-recorded; ``rewrite`` starts empty.
- **Saving** atomically (a temporary file renamed into place), creating the
  folder only then: a failed recording leaves no file and no folder behind.

Only :mod:`yaml` is imported, and only when this module is.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import yaml

from pytest_citecheck.core.files import sweep_stale_temporaries
from pytest_citecheck.core.secrets import REDACTED, TOKEN_PLACEHOLDERS, without_credentials
from pytest_citecheck.core.text import truncate
from pytest_citecheck.core.urls import fetch_url

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
_DEFAULT_PORTS = {"https": 443, "http": 80}

MatchKey = tuple[str, str, str, int | None, str, tuple[tuple[str, str], ...]]


class CorruptCassette(Exception):
    """The cassette file exists but cannot be read as a VCR.py cassette."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


def token_placeholder(tokens: Mapping[str, str | None]) -> Callable[[str], str]:
    """Maps a ``token`` query value to what a cassette holds in its place (the same
    function for the same tokens, so :func:`match_key` remembers across claims)."""
    return _placeholder(tuple(sorted((kind, value) for kind, value in tokens.items() if value)))


@functools.lru_cache(maxsize=16)
def _placeholder(tokens: tuple[tuple[str, str], ...]) -> Callable[[str], str]:
    by_value = {value: TOKEN_PLACEHOLDERS[kind] for kind, value in tokens}
    placeholders = frozenset(TOKEN_PLACEHOLDERS.values())

    def replace(value: str) -> str:
        if value in placeholders or value == REDACTED:
            return value
        return by_value.get(value, REDACTED)

    return replace


def filtered_uri(uri: str, placeholder: Callable[[str], str]) -> str:
    """The URI as a cassette stores it: the query sorted (as VCR.py's query filter
    leaves it) and the ``token`` replaced by its placeholder."""
    parts = urlsplit(uri)
    if not parts.query:
        return uri
    query = sorted(parse_qsl(parts.query, keep_blank_values=True))
    query = [(k, _stored_value(k, v, placeholder)) for k, v in query]
    return urlunsplit(parts._replace(query=urlencode(query)))


def _stored_value(name: str, value: str, placeholder: Callable[[str], str]) -> str:
    """A query value as a cassette holds (and matching compares) it: the Crawling API's
    token as its placeholder, the crawled ``url`` as its fetch key
    (:func:`~pytest_citecheck.core.urls.fetch_url`: a recording made with a fragment
    replays without it) without any ``user:password@``."""
    if name == "token":
        return placeholder(value)
    if name == "url":
        return without_credentials(fetch_url(value))
    return value


@functools.lru_cache(maxsize=1024)
def match_key(method: str, uri: str, placeholder: Callable[[str], str]) -> MatchKey:
    """What two requests must share to match (VCR.py's method, scheme, host, port,
    path and query matchers; the token compared as its placeholder). Remembered:
    every claim asks the judge at one URI, and many cite the same pages."""
    parts = urlsplit(uri)
    query = tuple(
        (k, _stored_value(k, v, placeholder))
        for k, v in sorted(parse_qsl(parts.query, keep_blank_values=True))
    )
    port = parts.port if parts.port is not None else _DEFAULT_PORTS.get(parts.scheme)
    return (method.upper(), parts.scheme, parts.hostname or "", port, parts.path, query)


def _as_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    return str(body).encode("utf-8")


def bodies_match(recorded: bytes, live: bytes) -> bool:
    """POST bodies are equal as JSON (or as bytes when either is not JSON)."""
    if recorded == live:
        return True
    try:
        return bool(json.loads(recorded) == json.loads(live))
    except ValueError:
        return False


def endpoint(key: MatchKey) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What a request asks, wherever the service lives (a base URL may carry any
    path, ``https://gateway/openai/v1``): the method and the query (the Crawling
    API's ``url``, token kind and options); a POST's body is compared apart."""
    method, _scheme, _host, _port, _path, query = key
    return method, query


def _same_body(interaction: Interaction, body: bytes) -> bool:
    return interaction.key[0] != "POST" or bodies_match(
        _as_bytes(interaction.request.get("body")), body
    )


def _same_question(recorded: bytes, live: bytes) -> bool:
    """POST bodies equal as JSON once the judge settings' fields are left out."""
    from pytest_citecheck.stages.judges.compat import question_of

    try:
        return bool(question_of(json.loads(recorded)) == question_of(json.loads(live)))
    except ValueError:
        return recorded == live


def describe_difference(recorded: Interaction, method: str, uri: str, body: bytes) -> str:
    """How a request differs from a recorded one, in words (for a stale recording)."""
    was = urlsplit(str(recorded.request.get("uri", "")))
    now = urlsplit(uri)
    out: list[str] = []
    # Replay does not compare the host or the path (a base URL may move), so they are
    # named only when nothing that is compared differs.
    moved: list[str] = []
    if (was.scheme, was.netloc) != (now.scheme, now.netloc):
        moved.append(f"host {was.scheme}://{was.hostname} (now {now.scheme}://{now.hostname})")
    if was.path != now.path:
        moved.append(f"path {was.path} (now {now.path})")
    old_query, new_query = dict(parse_qsl(was.query)), dict(parse_qsl(now.query))
    if old_query.get("token") != new_query.get("token"):
        out.append(
            f"the Crawlbase token kind {_token_kind(old_query.get('token'))} "
            f"(now {_token_kind(new_query.get('token'))})"
        )
    for name in sorted(set(old_query) | set(new_query)):
        if name != "token" and old_query.get(name) != new_query.get(name):
            label = "the cited URL" if name == "url" else name
            out.append(f"{label} {_short(old_query.get(name))} (now {_short(new_query.get(name))})")
    if method.upper() == "POST":
        out += _body_differences(_as_bytes(recorded.request.get("body")), body)
    out = out or moved
    if not out:
        return "it matches a recorded request whose reply was already replayed"
    return "differs from the recorded request in: " + "; ".join(out)


def _token_kind(value: str | None) -> str:
    """Which Crawlbase token a stored ``token`` value stands for (its placeholder)."""
    kinds = {placeholder: kind for kind, placeholder in TOKEN_PLACEHOLDERS.items()}
    if value is None:
        return "none"
    return kinds.get(value, "unknown")


def _short(value: object, width: int = 60) -> str:
    if value is None:
        return "none"
    return repr(truncate(str(value), width))


def _body_differences(recorded: bytes, live: bytes) -> list[str]:
    try:
        old, new = json.loads(recorded), json.loads(live)
    except ValueError:
        return [] if recorded == live else ["the request body"]
    if not isinstance(old, dict) or not isinstance(new, dict):
        return [] if old == new else ["the request body"]
    out: list[str] = []
    if old.get("model") != new.get("model"):
        out.append(f"model {_short(old.get('model'))} (now {_short(new.get('model'))})")
    for name in ("response_format", "format"):
        if old.get(name) != new.get(name):
            out.append(
                f"response format {_format_name(old.get(name))} (now {_format_name(new.get(name))})"
            )
    if old.get("temperature") != new.get("temperature"):
        out.append(
            f"temperature {_short(old.get('temperature'))} (now {_short(new.get('temperature'))})"
        )
    old_text, new_text = _message_text(old), _message_text(new)
    old_claim, new_claim = _claim_of(old_text), _claim_of(new_text)
    if old_claim != new_claim:
        out.append(f"claim text {_short(old_claim)} (now {_short(new_claim)})")
    elif _system_of(old) != _system_of(new):
        out.append("the judge prompt (its system message)")
    elif old_text != new_text:
        out.append("the page passages shown to the judge")
    known = {"model", "response_format", "format", "temperature", "messages", "system"}
    others = sorted(k for k in set(old) | set(new) if k not in known and old.get(k) != new.get(k))
    if others:
        out.append("the request fields " + ", ".join(others))
    return out


def _format_name(value: Any) -> str:
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return str(value["type"])
    if value is None:
        return "none"
    return "a JSON schema" if isinstance(value, dict) else _short(value)


def _message_text(body: dict[str, Any]) -> str:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    parts = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and message.get("role") != "system":
            parts.append(content)
    return "\n".join(parts)


def _system_of(body: dict[str, Any]) -> Any:
    messages = body.get("messages")
    system = [
        m.get("content")
        for m in (messages if isinstance(messages, list) else [])
        if isinstance(m, dict) and m.get("role") == "system"
    ]
    return body.get("system"), system


def _claim_of(text: str) -> str | None:
    from pytest_citecheck.stages.judges.prompt import claim_in

    return claim_in(text)


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


@dataclass
class Interaction:
    """One recorded request and its response, in VCR.py's dict layout."""

    request: dict[str, Any]
    response: dict[str, Any]
    key: MatchKey
    played: bool = False

    @property
    def status(self) -> int:
        return int(self.response["status"]["code"])

    @property
    def reason_phrase(self) -> str | None:
        message = self.response["status"].get("message")
        return str(message) if message else None

    @property
    def body(self) -> bytes:
        return _as_bytes(self.response["body"].get("string"))

    def header(self, name: str) -> str | None:
        for key, values in self.response["headers"].items():
            if key.lower() == name and values:
                return str(values[0])
        return None


def _check(condition: bool, why: str, path: Path) -> None:
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
            _check(
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


def _read_interaction(raw: Any, n: int, path: Path, placeholder: Callable[[str], str]) -> Any:
    where = f"interaction {n + 1}"
    _check(isinstance(raw, dict), f"{where} is not a mapping", path)
    request, response = raw.get("request"), raw.get("response")
    _check(isinstance(request, dict), f"{where} has no request mapping", path)
    _check(isinstance(response, dict), f"{where} has no response mapping", path)
    method, uri = request.get("method"), request.get("uri")
    _check(isinstance(method, str) and isinstance(uri, str), f"{where}: no method or uri", path)
    _check(isinstance(request.get("headers", {}), dict), f"{where}: request headers", path)
    _check_header_values(request.get("headers", {}), f"{where}: request", path)
    _check(
        isinstance(request.get("body"), str | bytes | None), f"{where}: request body is odd", path
    )
    status, headers, body = response.get("status"), response.get("headers"), response.get("body")
    _check(
        isinstance(status, dict) and isinstance(status.get("code"), int),
        f"{where}: the response has no status code",
        path,
    )
    _check(
        isinstance(headers, dict) and all(isinstance(v, list) for v in headers.values()),
        f"{where}: response headers are not lists",
        path,
    )
    _check_header_values(headers, f"{where}: response", path)
    _check(
        isinstance(body, dict) and isinstance(body.get("string"), str | bytes | None),
        f"{where}: the response has no body string",
        path,
    )
    request.setdefault("headers", {})
    return Interaction(request, response, match_key(method, uri, placeholder))


@dataclass
class Cassette:
    """The interactions and metadata of one cassette file, in memory."""

    path: Path
    interactions: list[Interaction] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    existed: bool = False
    # Interactions recorded in this run (after the loaded ones).
    recorded: int = 0
    dirty: bool = False

    @classmethod
    def load(cls, path: Path, placeholder: Callable[[str], str]) -> Cassette:
        """Read ``path``; a missing file is an empty cassette, a bad one raises
        :class:`CorruptCassette`."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return cls(path)
        except IsADirectoryError:
            raise CorruptCassette(path, "it is a directory, not a file") from None
        except OSError as exc:
            raise CorruptCassette(path, f"it cannot be read ({exc.strerror})") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptCassette(path, "it is not UTF-8 text") from None
        try:
            parsed = load_yaml(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f" at line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or type(exc).__name__
            raise CorruptCassette(path, f"it is not valid YAML{at} ({problem})") from None
        except (RecursionError, MemoryError, ValueError) as exc:
            raise CorruptCassette(path, f"it cannot be parsed ({type(exc).__name__})") from None
        _check(isinstance(parsed, dict), "it is not a VCR.py cassette (no mapping)", path)
        interactions = parsed.get("interactions")
        _check(isinstance(interactions, list), "it has no list of interactions", path)
        metadata = parsed.get("metadata") or {}
        _check(isinstance(metadata, dict), "its metadata is not a mapping", path)
        loaded = [_read_interaction(r, n, path, placeholder) for n, r in enumerate(interactions)]
        return cls(path, loaded, metadata, existed=True)

    def __len__(self) -> int:
        return len(self.interactions)

    def play(self, key: MatchKey, body: bytes) -> Interaction | None:
        """The first unplayed recorded interaction matching the request, marked played."""
        return self._take(key, body, loose=False)

    def replay(self, key: MatchKey, body: bytes) -> Interaction | None:
        """Replay only: :meth:`play`, else a repeat of the last played reply to this
        same request, else the first unplayed one that matches regardless of the
        base URL and the judge settings (see the module doc)."""
        exact = self.play(key, body)
        if exact is not None:
            return exact
        for interaction in reversed(self.interactions):
            if interaction.played and interaction.key == key and _same_body(interaction, body):
                return interaction
        return self._take(key, body, loose=True)

    def _take(self, key: MatchKey, body: bytes, *, loose: bool) -> Interaction | None:
        """The first unplayed interaction for this request, marked played: the same key
        and body, or (``loose``) the same endpoint and question."""
        same_body = _same_question if loose else bodies_match
        for interaction in self.interactions:
            if interaction.played:
                continue
            if (endpoint(interaction.key) != endpoint(key)) if loose else interaction.key != key:
                continue
            if key[0] == "POST" and not same_body(_as_bytes(interaction.request.get("body")), body):
                continue
            interaction.played = True
            return interaction
        return None

    def recorded_claims(self) -> list[str]:
        """The claim texts the recorded judge requests asked about, in order."""
        found: list[str] = []
        for interaction in self.interactions:
            if interaction.key[0] != "POST":
                continue
            try:
                data = json.loads(_as_bytes(interaction.request.get("body")))
            except ValueError:
                continue
            claim = _claim_of(_message_text(data)) if isinstance(data, dict) else None
            if claim is not None and claim not in found:
                found.append(claim)
        return found

    def nearest(self, key: MatchKey, body: bytes) -> Interaction | None:
        """The recorded request most like this one (same method and endpoint first)."""
        candidates = [i for i in self.interactions if i.key[0] == key[0]]
        if not candidates:
            return None

        def score(interaction: Interaction) -> tuple[int, int, int]:
            same_path = interaction.key[4].rsplit("/", 1)[-1] == key[4].rsplit("/", 1)[-1]
            same_url = dict(interaction.key[5]).get("url") == dict(key[5]).get("url")
            return (int(same_url), int(same_path), int(not interaction.played))

        return max(candidates, key=score)

    def append(self, request: dict[str, Any], response: dict[str, Any], key: MatchKey) -> None:
        self.interactions.append(Interaction(request, response, key, played=True))
        self.recorded += 1
        self.dirty = True

    def drop_rerecorded(self) -> None:
        """Mode ``all``: loaded interactions that were recorded again are replaced."""
        loaded = self.interactions[: len(self.interactions) - self.recorded]
        fresh = self.interactions[len(loaded) :]
        keys = {i.key for i in fresh}
        kept = [i for i in loaded if i.key not in keys]
        self.interactions = kept + fresh

    def to_yaml(self) -> str:
        """The file text, as VCR.py's YAML serializer writes it."""
        data: dict[str, Any] = {
            "version": CASSETTE_VERSION,
            "interactions": [
                {"request": _unicode_body(i.request), "response": _unicode_response(i.response)}
                for i in self.interactions
            ],
        }
        if self.metadata:
            data["metadata"] = self.metadata
        text: str = yaml.dump(data, Dumper=_Dumper)
        return text

    def save(self, sweep: Callable[[Path], None] = sweep_stale_temporaries) -> None:
        """Write the file atomically; the folder is created here, and removed again
        if writing failed and left it empty."""
        folder = self.path.parent
        created = not folder.exists()
        text = self.to_yaml()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{self.path.name}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except BaseException:
            if created:
                remove_empty_folders(folder)
            raise
        self.dirty = False
        sweep(self.path)


def remove_empty_folders(folder: Path, stop: int = 2) -> None:
    """Remove ``folder`` and up to ``stop`` empty parents (``cassettes/<stem>/``)."""
    for _ in range(stop):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _unicode_body(request: dict[str, Any]) -> dict[str, Any]:
    body = request.get("body")
    if isinstance(body, bytes):
        try:
            return {**request, "body": body.decode("utf-8")}
        except UnicodeDecodeError:
            return request
    return request


def _unicode_response(response: dict[str, Any]) -> dict[str, Any]:
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
