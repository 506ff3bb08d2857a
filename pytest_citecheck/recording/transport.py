"""Per-claim record and replay for every stage's HTTP, without VCR.py's global patching.

The engine builds the fetcher's and the judges' httpx clients
on one :class:`StageTransport`. While a claim is verified, :func:`claim_http`
makes that claim's cassette (:class:`ClaimHTTP`) the current one for the
thread running it (a :mod:`contextvars` variable), so claims verified in
parallel threads each read and write their own cassette, and a replay opens
no patchers and deep-copies nothing.

Every live response is read here, so two limits hold for all of them:

- the overall deadline of the request (retries included) that
  :func:`pytest_citecheck.core.retry.send` puts in ``request.extensions``: a server
  that drips one byte at a time is cut off when it runs out (:class:`DeadlineExceeded`);
- the size cap (``citecheck_max_page_bytes``): a larger body is not read on and
  raises :class:`ResponseTooLarge`; the recording keeps the response without its
  body, marked, so a replay says the same.

What reaches the pipeline while recording is exactly what the cassette
stores -- secret values redacted in headers and bodies, the ``token`` query
replaced by its placeholder -- so a replay is byte-for-byte the recording run.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from pytest_citecheck.core.errors import ResponseTooLarge
from pytest_citecheck.core.record_mode import RecordMode
from pytest_citecheck.core.retry import DEADLINE_EXTENSION
from pytest_citecheck.core.secrets import (
    MIN_TOKEN_CHARS,
    SECRET_HEADERS,
    redact_values,
    scrub,
    scrub_local_paths,
)
from pytest_citecheck.recording.cassette import Cassette
from pytest_citecheck.recording.cassette_file import TOO_LARGE_HEADER, request_dict
from pytest_citecheck.recording.matching import (
    MatchKey,
    describe_difference,
    filtered_uri,
    match_key,
)
from pytest_citecheck.recording.shared_reads import SharedReads
from pytest_citecheck.stages.screenshot import (
    IMAGE_FILE_HEADER,
    IMAGE_HEADER,
    SHOTS_FOLDER,
    media_type,
    store_image,
    valid_image_name,
)

_SECRET_HEADERS = frozenset(SECRET_HEADERS)
_READ_CHUNK = 64 * 1024


class UnmatchedRequest(Exception):
    """Replay only, and the cassette has no (more) reply for this request;
    ``difference`` says how it differs from the nearest recorded one."""

    def __init__(self, method: str, uri: str, difference: str | None = None) -> None:
        super().__init__(f"no recorded reply for {method} {uri}")
        self.method = method
        self.uri = uri
        self.difference = difference


@dataclass
class Reply:
    """A response as it is returned and recorded: status, headers, body."""

    status: int
    reason: str | None
    headers: dict[str, list[str]]
    body: bytes
    too_large: bool = False

    def to_response(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            self.status,
            headers=[(k, v) for k, values in self.headers.items() for v in values],
            stream=httpx.ByteStream(self.body),
            extensions={"reason_phrase": self.reason.encode("ascii", "replace")}
            if self.reason
            else {},
            request=request,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": {"code": self.status, "message": self.reason or ""},
            "headers": self.headers,
            "body": {"string": self.body},
        }


def _decompress(encoding: str, body: bytes) -> bytes | None:
    try:
        if encoding == "gzip":
            return zlib.decompress(body, zlib.MAX_WBITS | 16)
        if encoding == "deflate":
            return zlib.decompress(body)
    except zlib.error:
        return None
    return None


def read_live(
    transport: httpx.BaseTransport, request: httpx.Request, max_bytes: int | None
) -> Reply:
    """Send ``request`` and read the body, within the deadline and the size cap.

    Bodies are stored decoded, as VCR.py's ``decode_compressed_response`` does.
    """
    deadline = request.extensions.get(DEADLINE_EXTENSION)
    response = transport.handle_request(request)
    chunks: list[bytes] = []
    size = 0
    too_large = False
    try:
        for chunk in response.stream:  # type: ignore[union-attr]
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:
                too_large = True
                break
            chunks.append(chunk)
            if deadline is not None:
                deadline.check(request)
    finally:
        response.close()
    headers: dict[str, list[str]] = {}
    for name, value in response.headers.multi_items():
        headers.setdefault(name, []).append(value)
    body = b"".join(chunks)
    encoding = headers.get("content-encoding", [""])[0].strip().lower()
    if encoding and not too_large:
        decoded = _decompress(encoding, body)
        if decoded is not None:
            body = decoded
            del headers["content-encoding"]
            headers["content-length"] = [str(len(body))]
    reason = response.extensions.get("reason_phrase", b"")
    return Reply(
        response.status_code,
        reason.decode("ascii", "replace") if isinstance(reason, bytes) else str(reason or ""),
        headers,
        b"" if too_large else body,
        too_large,
    )


def _redact_body(body: bytes, secrets: Iterable[str], min_chars: int = MIN_TOKEN_CHARS) -> bytes:
    """``body`` without the whole secret values of at least ``min_chars`` characters.

    A page's or a prompt's text is the evidence: only a value as long as a real token
    (start-up refuses shorter ones) is replaced there, so a placeholder token such as
    ``anything`` never rewrites a word of it. An error reply, where an API echoes the
    key it got, loses every secret value (``min_chars=1``)."""
    extra = [v for v in secrets if len(v) >= min_chars]
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        for value in extra:
            body = body.replace(value.encode(), b"REDACTED")
        return body
    cleaned = redact_values(text, extra, min_chars=min_chars)
    return body if cleaned == text else cleaned.encode("utf-8")


def _cleaned(body: bytes, clean: Callable[[str], str]) -> bytes:
    """``body`` with ``clean`` applied to its text; the same bytes when it is not
    UTF-8 or nothing changed."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body
    cleaned = clean(text)
    return body if cleaned == text else cleaned.encode("utf-8")


def redact_reply(reply: Reply, secrets: Iterable[str]) -> Reply:
    """No secret in any header or body; bodies lose only exact secret values
    (a page that merely looks like a credential is evidence), and an error
    reply loses the home directories in its file paths."""
    extra = list(secrets)
    headers = {
        name: [scrub(v, extra) for v in values]
        for name, values in reply.headers.items()
        if name.lower() not in _SECRET_HEADERS
    }
    body = _redact_body(reply.body, extra, 1 if reply.status >= 400 else MIN_TOKEN_CHARS)
    if reply.status >= 400 and body:
        # An error reply may name the server's install path (a home directory).
        body = _cleaned(body, scrub_local_paths)
    is_json = any("json" in v.lower() for v in headers.get("content-type", []))
    if is_json and body:
        # Nor a local server's model path in a JSON judge reply; pages are never touched.
        from pytest_citecheck.stages.judges.compat import recordable_reply

        body = _cleaned(body, recordable_reply)
    return Reply(reply.status, reply.reason, headers, body, reply.too_large)


@dataclass
class ClaimHTTP:
    """One claim's cassette, answering its HTTP requests."""

    cassette: Cassette
    mode: RecordMode
    placeholder: Callable[[str], str]
    secrets: tuple[str, ...] = ()
    max_bytes: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def write_protected(self) -> bool:
        return self.mode.protects(self.cassette.existed)

    @property
    def plays_back(self) -> bool:
        return self.mode.plays_back

    def handle(
        self,
        request: httpx.Request,
        live: httpx.BaseTransport,
        shared: SharedReads[Reply] | None = None,
    ) -> httpx.Response:
        """This claim's reply to ``request``: from its cassette, or live and recorded;
        ``shared``: the run's reads, so a page other claims already fetched is not
        fetched (and billed) again (:mod:`pytest_citecheck.recording.shared_reads`)."""
        body = request.read()
        uri = str(request.url)
        key = match_key(request.method, uri, self.placeholder)
        if self.plays_back:
            with self._lock:
                if self.write_protected:
                    # Replay: the same reply wherever the services would live now.
                    interaction = self.cassette.replay(key, body)
                else:
                    interaction = self.cassette.play(key, body)
            if interaction is not None:
                if interaction.header(TOO_LARGE_HEADER) is not None:
                    raise ResponseTooLarge(scrub(uri, self.secrets), self._limit(interaction))
                reply = Reply(
                    interaction.status,
                    interaction.reason_phrase,
                    interaction.response["headers"],
                    interaction.body,
                )
                return self._found_image(reply).to_response(request)
        if self.write_protected:
            stored_uri = self._stored_uri(uri)
            with self._lock:
                nearest = self.cassette.nearest(key, body)
            difference = (
                None
                if nearest is None
                else scrub(describe_difference(nearest, request.method, stored_uri, body))
            )
            raise UnmatchedRequest(request.method, stored_uri, difference)
        reply = self._stored_image(self._read_live(request, live, key, shared))
        stored = reply
        if reply.too_large:
            headers = {**reply.headers, TOO_LARGE_HEADER: [str(self.max_bytes)]}
            stored = Reply(reply.status, reply.reason, headers, b"", True)
        recorded_request = request_dict(
            request.method,
            self._stored_uri(uri),
            _redact_body(body, self.secrets),
            {k: v for k, v in request.headers.items() if k.lower() not in _SECRET_HEADERS},
        )
        with self._lock:
            self.cassette.append(recorded_request, stored.to_dict(), key)
        if reply.too_large:
            raise ResponseTooLarge(scrub(uri, self.secrets), self.max_bytes or 0)
        return self._found_image(reply).to_response(request)

    def _read_live(
        self,
        request: httpx.Request,
        live: httpx.BaseTransport,
        key: MatchKey,
        shared: SharedReads[Reply] | None,
    ) -> Reply:
        def fetch() -> Reply:
            return redact_reply(read_live(live, request, self.max_bytes), self.secrets)

        if shared is None or request.method != "GET":
            return fetch()
        deadline = request.extensions.get(DEADLINE_EXTENSION)
        return shared.read(key, fetch, None if deadline is None else deadline.left_or_none())

    # A picture (stages/screenshot.py) is kept as a file named by its hash beside the
    # cassettes; the cassette's reply names that file and holds no image bytes.

    @property
    def shots(self) -> Path:
        return self.cassette.path.parent / SHOTS_FOLDER

    def _stored_image(self, reply: Reply) -> Reply:
        """A live picture's reply as it is recorded: its bytes in a file, its name in
        :data:`IMAGE_HEADER`, the body empty."""
        kind = media_type(reply.headers.get("content-type", [""])[0])
        if kind is None or reply.too_large or not 200 <= reply.status < 300 or not reply.body:
            return reply
        path = store_image(self.shots, reply.body, kind)
        headers = {k: v for k, v in reply.headers.items() if k.lower() != "content-length"}
        headers[IMAGE_HEADER] = [path.name]
        return Reply(reply.status, reply.reason, headers, b"")

    def _found_image(self, reply: Reply) -> Reply:
        """A picture's reply with where its file is, for this run (never recorded)."""
        names = reply.headers.get(IMAGE_HEADER)
        if not names or not valid_image_name(names[0]):
            return reply
        headers = {**reply.headers, IMAGE_FILE_HEADER: [str(self.shots / names[0])]}
        return Reply(reply.status, reply.reason, headers, reply.body, reply.too_large)

    def _stored_uri(self, uri: str) -> str:
        return redact_values(filtered_uri(uri, self.placeholder), self.secrets)

    def _limit(self, interaction: Any) -> int:
        try:
            return int(interaction.header(TOO_LARGE_HEADER))
        except (TypeError, ValueError):
            return self.max_bytes or 0


def shared_size(reply: Reply) -> int | None:
    """What a reply holds, when the run may hand it to other claims (a successful reply
    read whole, not a picture: :mod:`pytest_citecheck.recording.shared_reads`)."""
    if not 200 <= reply.status < 300 or reply.too_large or IMAGE_HEADER in reply.headers:
        return None
    return len(reply.body)


def shared_reads() -> SharedReads[Reply]:
    """The memory of one run's reads, for its claims' :class:`ClaimHTTP`."""
    return SharedReads(shared_size)


_current: ContextVar[ClaimHTTP | None] = ContextVar("citecheck.claim_http", default=None)


@contextmanager
def claim_http(http: ClaimHTTP | None) -> Iterator[None]:
    """Make ``http`` the cassette of this thread's (or task's) requests."""
    token = _current.set(http)
    try:
        yield
    finally:
        _current.reset(token)


class Borrowed(httpx.BaseTransport):
    """``transport`` lent to a borrower that does not own it: requests go through,
    :meth:`close` leaves it open (its owner closes it).

    Closing an httpx client closes its transport, and closing a shared transport cuts
    every request in flight on it -- after the server has received them, so a retry
    sends (and a provider bills) the same request twice. Whatever hands a transport it
    keeps using to a client that will be closed hands it over wrapped in this."""

    def __init__(self, transport: httpx.BaseTransport) -> None:
        self.transport = transport

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.transport.handle_request(request)

    def close(self) -> None:
        """Leave the lent transport open: it is not the borrower's to close."""


class StageTransport(httpx.BaseTransport):
    """The transport of every stage client: the current claim's cassette, or the
    network (with the deadline and the size cap) when no cassette is in use.

    ``live`` (None: a network transport of its own, built on first use) is closed
    with this one: a transport it only borrows comes wrapped in :class:`Borrowed`."""

    def __init__(
        self,
        max_bytes: int | None = None,
        live: httpx.BaseTransport | None = None,
        shared: SharedReads[Reply] | None = None,
    ):
        self.max_bytes = max_bytes
        self._live = live
        # The run's reads, shared by its claims while they record (None: each claim
        # fetches what it cites).
        self.shared = shared
        self._lock = threading.Lock()

    @property
    def live(self) -> httpx.BaseTransport:
        if self._live is None:
            with self._lock:
                if self._live is None:
                    self._live = httpx.HTTPTransport()
        return self._live

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        http = _current.get()
        if http is not None:
            return http.handle(request, self.live, self.shared)
        reply = read_live(self.live, request, self.max_bytes)
        if reply.too_large:
            raise ResponseTooLarge(scrub(str(request.url)), self.max_bytes or 0)
        return reply.to_response(request)

    def close(self) -> None:
        if self._live is not None:
            self._live.close()


class _ReplyCookies(httpx.Cookies):
    """The client's cookie jar: a reply without ``Set-Cookie`` (or ``Set-Cookie2``)
    leaves it as it is, so such a reply skips the jar's parsing (a standard-library
    request and message built per reply); the others are read as httpx reads them."""

    def extract_cookies(self, response: httpx.Response) -> None:
        headers = response.headers
        if "set-cookie" in headers or "set-cookie2" in headers:
            super().extract_cookies(response)


def stage_client(transport: StageTransport) -> httpx.Client:
    """The httpx client every built-in stage sends through ``transport``."""
    client = httpx.Client(transport=transport)
    # Set past the public setter, which would wrap the jar back in a plain httpx.Cookies.
    client._cookies = _ReplyCookies(client.cookies)
    return client
