"""A loopback double of the Crawlbase Storage API.

``GET /storage?token=T&rid=RID`` (or ``&url=URL``, the latest copy of that URL)
with ``format=html`` (the default) or ``format=json``:

- html: the stored page as the body, gzip-compressed with ``Content-Encoding:
  gzip`` (as the API documents), and the ``stored_at``, ``original_status``,
  ``pc_status``, ``rid`` and ``url`` headers;
- json: ``{"stored_at", "pc_status", "original_status", "rid", "url", "body"}``;
- 404 with an empty body for an unknown or expired rid (``expire``), 401 for a
  token that is not one of ``tokens`` (either token kind is accepted), 404 for a
  page kept under the other token (``put(..., token_kind=)``: Crawlbase's own plugin
  says "Storage is per-token"; without it either token reads the page), 422
  when neither or both of rid and url are given.

Usage::

    with StorageDouble() as storage:
        storage.put("rid123", "https://example.com/a", "# A page\\n")
        env = {"CRAWLBASE_TOKEN": storage.tokens["normal"],
               "CITECHECK_CRAWLBASE_URL": storage.base_url}
        read_stored_page("rid123", environ=env)

Every request is logged in :attr:`StorageDouble.calls`. Listens on 127.0.0.1 only.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qsl, urlsplit

from tests.doubles import LoopbackServer, QuietHandler
from tests.doubles.crawlbase import DEFAULT_TOKENS, Call

STORED_AT = "2026-01-01T00:00:00+00:00"


@dataclass(frozen=True)
class StoredPage:
    """One page in storage."""

    rid: str
    url: str
    body: str
    original_status: int = 200
    pc_status: int = 200
    stored_at: str = STORED_AT
    # The token kind it was crawled with, whose storage alone holds it (None: any).
    token_kind: str | None = None


@dataclass
class _State:
    tokens: dict[str, str]
    pages: dict[str, StoredPage] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def kind_of(self, token: str | None) -> str | None:
        return next((k for k, v in self.tokens.items() if token and token == v), None)


def _answer(
    state: _State, path: str, params: Mapping[str, str]
) -> tuple[int, list[tuple[str, str]], bytes]:
    kind = state.kind_of(params.get("token"))
    if kind is None:
        return 401, [], b""
    if path != "/storage":
        return 404, [], b""
    rid, url = params.get("rid"), params.get("url")
    if (rid is None) == (url is None):
        return 422, [], b""
    if rid is not None:
        page = state.pages.get(rid)
    else:
        page = next((p for p in reversed(state.pages.values()) if p.url == url), None)
    if page is None or page.token_kind not in (None, kind):
        return 404, [], b""
    if params.get("format", "html") == "json":
        body = {
            "stored_at": page.stored_at,
            "pc_status": page.pc_status,
            "original_status": page.original_status,
            "rid": page.rid,
            "url": page.url,
            "body": page.body,
        }
        return 200, [("Content-Type", "application/json")], json.dumps(body).encode()
    headers = [
        ("Content-Type", "text/plain"),
        ("Content-Encoding", "gzip"),
        ("stored_at", page.stored_at),
        ("original_status", str(page.original_status)),
        ("pc_status", str(page.pc_status)),
        ("rid", page.rid),
        ("url", page.url),
    ]
    # mtime=0: the same page compresses to the same bytes every time.
    return 200, headers, gzip.compress(page.body.encode(), mtime=0)


class StorageDouble(LoopbackServer):
    """The Storage API on ``http://127.0.0.1:<free port>/storage``; a context manager."""

    name = "storage-double"

    def __init__(self, tokens: Mapping[str, str] = DEFAULT_TOKENS) -> None:
        super().__init__()
        self._state = _State(tokens=dict(tokens))

    @property
    def tokens(self) -> dict[str, str]:
        return dict(self._state.tokens)

    @property
    def base_url(self) -> str:
        """The Crawling API base URL whose ``storage`` path this double serves."""
        return f"http://127.0.0.1:{self.port}/"

    def put(
        self,
        rid: str,
        url: str,
        body: str,
        *,
        original_status: int = 200,
        stored_at: str = STORED_AT,
        token_kind: str | None = None,
    ) -> StoredPage:
        """Store (or replace) a page under ``rid`` (``token_kind``: only that token's
        storage holds it)."""
        page = StoredPage(
            rid,
            url,
            body,
            original_status=original_status,
            stored_at=stored_at,
            token_kind=token_kind,
        )
        with self._state.lock:
            self._state.pages[rid] = page
        return page

    def expire(self, rid: str) -> None:
        """Forget ``rid``, as Crawlbase does after its retention period."""
        with self._state.lock:
            self._state.pages.pop(rid, None)

    @property
    def calls(self) -> list[Call]:
        with self._state.lock:
            return list(self._state.calls)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        state = self._state

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                split = urlsplit(self.path)
                params = dict(parse_qsl(split.query, keep_blank_values=True))
                with state.lock:
                    status, headers, body = _answer(state, split.path, params)
                    token = params.get("token")
                    state.calls.append(
                        Call(split.path, params, token, state.kind_of(token), status)
                    )
                self.reply(status, headers, body)

        return Handler
