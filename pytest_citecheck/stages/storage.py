"""Re-reading a stored page through the Crawlbase Storage API.

Every URL citation is fetched with ``store=true``, and the audit index keeps the
``rid`` of the stored copy. :func:`read_stored_page` gets that copy back:
``GET /storage?token=T&rid=RID&format=html``. The call is free; Crawlbase keeps
pages for 30 days. Storage may be kept per token (Crawlbase's own plugin says
"Storage is per-token", its storage tools take a ``use_js_token`` flag for pages
crawled with the JavaScript token): the token that crawled the page is asked first
(``crawled_with``; a recording's request names it), then the other one.

Why the ``crawlbase`` SDK here, when the fetcher talks HTTP itself: for a
Storage API read the SDK's ``StorageAPI.get`` returns everything needed -- the
(gunzipped) page body and the ``rid``, ``url``, ``original_status`` and
``stored_at`` headers -- and the one thing it loses on a non-2xx reply (the
headers) is not needed, since the status code alone tells "not stored" (404)
from "bad token" (401). Two of its habits are worked around: it
shares a mutable default ``options`` dict between calls, so a fresh dict is
passed every time; and its base URL is a module constant, so the instance's
``buildURL`` is replaced to honour ``CITECHECK_CRAWLBASE_URL`` (the same
variable the fetcher reads) without touching the module for other callers.

The token goes only into the request; errors name its environment variable.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from pytest_citecheck.core.errors import CitecheckError, ConfigurationError
from pytest_citecheck.core.providers import TOKEN_ENV, TokenKind
from pytest_citecheck.core.secrets import scrub
from pytest_citecheck.stages.fetch import BASE_URL_ENV, DEFAULT_BASE_URL

RETENTION_DAYS = 30
INSTALL_HINT = "pip install 'pytest-citecheck[service]'"


class PageNotStored(CitecheckError):
    """The Storage API has no page for this rid (wrong, or older than the retention)."""


class StorageError(CitecheckError):
    """The Storage API could not be asked, or answered something unexpected."""


@dataclass(frozen=True)
class StoredPage:
    """A page as the Crawling API stored it when the citation was verified."""

    rid: str
    url: str | None
    stored_at: str | None
    original_status: int | None
    body: str


def storage_tokens(
    environ: Mapping[str, str] | None = None, crawled_with: TokenKind | None = None
) -> list[tuple[str, str]]:
    """``(variable name, token)`` of every Crawlbase token set, in the order to ask:
    ``crawled_with`` (``"normal"`` or ``"javascript"``) first, else the Normal token."""
    env = os.environ if environ is None else environ
    kinds: list[TokenKind] = ["normal", "javascript"]
    if crawled_with == "javascript":
        kinds.reverse()
    found = [(TOKEN_ENV[kind], env[TOKEN_ENV[kind]]) for kind in kinds if env.get(TOKEN_ENV[kind])]
    if not found:
        raise ConfigurationError(
            f"reading a stored page needs a Crawlbase token: set {TOKEN_ENV['normal']} "
            f"(or {TOKEN_ENV['javascript']}; the Storage API accepts either)."
        )
    return found


def _header(headers: Mapping[str, Any], name: str) -> str | None:
    value = headers.get(name)
    # The SDK turns a missing header into the string 'None'.
    return None if value in (None, "", "None") else str(value)


def _status(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def read_stored_page(
    rid: str,
    environ: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    crawled_with: TokenKind | None = None,
) -> StoredPage:
    """Fetch the page stored under ``rid``: with the token that crawled it
    (``crawled_with``, else the Normal token) first, then with the other one when
    the first's storage has no such page or refuses the token.

    Raises :class:`ConfigurationError` (no token, every token refused),
    :class:`PageNotStored` (404 from every token asked) or :class:`StorageError`
    (anything else).
    """
    env = os.environ if environ is None else environ
    tokens = storage_tokens(env, crawled_with)
    base_url = env.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    try:
        from crawlbase import StorageAPI
    except ImportError:
        raise ConfigurationError(
            f"reading a stored page needs the crawlbase package: {INSTALL_HINT}"
        ) from None
    refused: list[tuple[str, int]] = []
    for token_env, token in tokens:
        response = _ask(StorageAPI, base_url, token, rid, timeout)
        status = int(response.get("status_code") or 0)
        if status in (401, 403):
            refused.append((token_env, status))
            continue
        if status == 404:
            continue
        if not 200 <= status < 300:
            raise StorageError(f"the Storage API answered HTTP {status} for rid {rid!r}")
        return _stored(rid, response)
    if len(refused) == len(tokens):
        names = " and ".join(name for name, _ in refused)
        statuses = ", ".join(f"HTTP {status}" for _, status in refused)
        raise ConfigurationError(
            f"the Storage API rejected the token in {names} ({statuses}): check that "
            f"{names} {'holds' if len(refused) == 1 else 'hold'} your Crawlbase tokens."
        )
    asked = " and ".join(name for name, _ in tokens)
    raise PageNotStored(
        f"no stored page has rid {rid!r} (asked with {asked}): Crawlbase keeps stored "
        f"pages for {RETENTION_DAYS} days, so it may have expired, or the rid is wrong."
    )


def _ask(storage_api: Any, base_url: str, token: str, rid: str, timeout: float) -> dict[str, Any]:
    """One Storage API read of ``rid`` with ``token`` (the SDK's reply dict)."""
    api = storage_api({"token": token, "timeout": timeout})

    def build_url(options: Mapping[str, str]) -> str:
        # The SDK's own format (token raw, then the urlencoded options), on our base URL.
        return f"{base_url.rstrip('/')}/{api.base_path}?token={token}&{urlencode(options)}"

    api.buildURL = build_url
    try:
        with warnings.catch_warnings():
            # The SDK builds ssl.SSLContext(PROTOCOL_TLS) on every call.
            warnings.simplefilter("ignore", DeprecationWarning)
            response: dict[str, Any] = api.get(rid, {"format": "html"})
    except OSError as exc:
        raise StorageError(
            scrub(f"the Storage API could not be reached ({type(exc).__name__}: {exc})", [token])
        ) from None
    return response


def _stored(rid: str, response: Mapping[str, Any]) -> StoredPage:
    headers: Mapping[str, Any] = response.get("headers") or {}
    body = response.get("body") or b""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    return StoredPage(
        rid=_header(headers, "rid") or rid,
        url=_header(headers, "url"),
        stored_at=_header(headers, "stored_at"),
        original_status=_status(_header(headers, "original_status")),
        body=text,
    )
