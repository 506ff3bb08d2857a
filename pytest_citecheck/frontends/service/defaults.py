"""What ``citecheck serve`` starts with: its defaults and start-up rules.

Plain constants and stdlib checks, so ``citecheck --help`` and the start-up
refusal (no key off loopback) need neither FastAPI nor uvicorn.
"""

from __future__ import annotations

import ipaddress

from pytest_citecheck.core.defaults import MIN_KEY_CHARS
from pytest_citecheck.core.providers import SERVICE_KEY_ENV

RETRY_AFTER_SECONDS = 5
# Seconds a request waits for an audit file another writer holds (before spending, and
# when recording after it).
DEFAULT_AUDIT_WAIT = 5.0
# JSON nested deeper than this is refused before it is parsed (a request is two deep).
MAX_JSON_DEPTH = 32
# Connections with a request being served at once; more are answered 503 straight
# away. A connection whose request headers are still arriving is not counted.
MAX_CONNECTIONS = 100
# Connections still waiting for their request headers (new ones, kept-alive ones
# between requests), per client address and in all: one more closes the oldest, so
# slow sockets cannot crowd out a client whose headers arrive at once.
MAX_WAITING_PER_CLIENT = 64
MAX_WAITING = 512
# A Crawler delivery's body as it arrives (gzip-compressed) and once decompressed:
# larger ones are refused (413). The second cap is what stops a gzip bomb; both are
# far above a real page's size, because every refusal makes the Crawler crawl the
# page again and deliver it again, and charges for it.
DEFAULT_MAX_DELIVERY_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_DELIVERY_PAGE_BYTES = 64 * 1024 * 1024


def binding_problem(host: str, api_key: str | None) -> str | None:
    """Why the service must not listen on ``host`` as configured, or None.

    Only loopback is served without a key: anything else (``0.0.0.0``, a LAN
    address, a name) lets other machines spend the operator's credits."""
    if api_key is not None or is_loopback(host):
        return None
    return (
        f"--host {host} accepts connections from other machines, and every request spends "
        f"your Crawlbase credits and judge tokens: set {SERVICE_KEY_ENV} (or --key-file PATH) "
        f"to a secret of at least {MIN_KEY_CHARS} characters, which clients send as "
        "`Authorization: Bearer <key>`; or keep the default --host 127.0.0.1 (behind a "
        "reverse proxy, say)"
    )


def is_loopback(host: str) -> bool:
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_key(key: str, where: str) -> str:
    """``key`` stripped, or ValueError naming ``where`` it came from when it is too weak."""
    key = key.strip()
    if len(key) < MIN_KEY_CHARS:
        raise ValueError(
            f"{where}: the service key has {len(key)} characters; use at least "
            f'{MIN_KEY_CHARS}, e.g. the output of `python -c "import secrets; '
            f'print(secrets.token_urlsafe(32))"`'
        )
    return key
