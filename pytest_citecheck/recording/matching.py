"""How a request finds its recorded interaction: the match key, the POST body compared as JSON,
and, when nothing matches, what differs from the nearest recorded request.

Matching is the way citecheck's VCR configuration did it: method, scheme, host, port, path,
query (the Crawling API ``token`` compared as its placeholder) and, for POST, the body
compared as JSON (see :mod:`pytest_citecheck.recording.cassette`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pytest_citecheck.core.secrets import REDACTED, TOKEN_PLACEHOLDERS, without_credentials
from pytest_citecheck.core.text import truncate
from pytest_citecheck.core.urls import fetch_url

_DEFAULT_PORTS = {"https": 443, "http": 80}

MatchKey = tuple[str, str, str, int | None, str, tuple[tuple[str, str], ...]]


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


def as_bytes(body: Any) -> bytes:
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


def same_body(interaction: Interaction, body: bytes) -> bool:
    return interaction.key[0] != "POST" or bodies_match(
        as_bytes(interaction.request.get("body")), body
    )


def same_question(recorded: bytes, live: bytes) -> bool:
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
        out += _body_differences(as_bytes(recorded.request.get("body")), body)
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
    old_text, new_text = message_text(old), message_text(new)
    old_claim, new_claim = claim_of(old_text), claim_of(new_text)
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


def message_text(body: dict[str, Any]) -> str:
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


def claim_of(text: str) -> str | None:
    from pytest_citecheck.stages.judges.prompt import claim_in

    return claim_in(text)


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
        return as_bytes(self.response["body"].get("string"))

    def header(self, name: str) -> str | None:
        for key, values in self.response["headers"].items():
            if key.lower() == name and values:
                return str(values[0])
        return None
