"""Keeping secrets out of everything citecheck writes or prints.

Cassettes drop secret headers and values when they are written
(:mod:`pytest_citecheck.recording.cassette`); this module scrubs free text --
error messages, a "no recording for this request" error (which names the live
request), report fields -- before it leaves the process.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pytest_citecheck.core.providers import PROVIDER_ENV, SERVICE_KEY_ENV, TOKEN_ENV

# Environment variables whose values are secrets: the Crawlbase tokens and every
# judge provider's key (tests/unit/test_secrets.py checks the tables agree), and the
# key clients send to `citecheck serve`.
SECRET_ENV_VARS = (
    *TOKEN_ENV.values(),
    *(env.key_env for env in PROVIDER_ENV.values()),
    SERVICE_KEY_ENV,
)
# Header names a cassette drops from recorded requests and responses.
SECRET_HEADERS = (
    "authorization",
    "x-api-key",
    "api-key",
    "cookie",
    "set-cookie",
    "openai-organization",
    "openai-project",
    "anthropic-organization-id",
)

REDACTED = "REDACTED"

# Each pattern with what any text it matches contains, lower-cased: a text without
# it is not searched (scrubbing a large report costs a substring test per pattern).
_PATTERNS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    # token=... in any URL, including storage_url values
    (("token=",), re.compile(r"(?i)(?<![A-Za-z0-9_])(token=)[^&\s'\"]+")),
    (("bearer",), re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+")),
    (("x-api-key",), re.compile(r"(?i)(x-api-key['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+")),
    (("sk-",), re.compile(r"()\bsk-[A-Za-z0-9_-]{8,}")),
    # user:password@ in a URL (https://user:pass@host/)
    (("://", "@"), re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://)[^/?#\s@'\"]+(?=@)")),
)


# The shortest token or key start-up accepts for recording (engine/preflight.py): a
# real Crawlbase token or API key is longer, and a value this long, matched whole, is
# never an ordinary word of a page or a prompt.
MIN_TOKEN_CHARS = 16


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The secret values present in the environment, longest first."""
    env = os.environ if environ is None else environ
    values = {env[name] for name in SECRET_ENV_VARS if len(env.get(name, "")) >= 4}
    return sorted(values, key=len, reverse=True)


# What may stand next to a whole value: not a character a token is made of.
_TOKEN_CHAR = r"A-Za-z0-9_\-"


@functools.lru_cache(maxsize=256)
def _whole(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![{_TOKEN_CHAR}]){re.escape(value)}(?![{_TOKEN_CHAR}])")


def redact_values(text: str, extra: Iterable[str] = (), *, min_chars: int = 1) -> str:
    """Replace the secret values of the environment (and ``extra``) in ``text``.

    Whole values only, never part of a longer word or token (a token ``anything``
    leaves "anything you know" alone), and only values of at least ``min_chars``
    characters. Exact values: recorded bodies must stay byte-for-byte what the page
    or the judge said (a page about OAuth quoting ``Bearer ...`` is evidence, and
    retrieval's recorded choices are keyed on the exact text).
    """
    for value in [*secret_values(), *extra]:
        if value and len(value) >= min_chars and value in text:
            text = _whole(value).sub(REDACTED, text)
    return text


def scrub(text: str, extra: Iterable[str] = ()) -> str:
    """Replace every secret in ``text`` with ``REDACTED``: the environment's secret
    values and anything shaped like a token, key or bearer credential."""
    text = redact_values(text, extra)
    lowered = text.lower()
    for needles, pattern in _PATTERNS:
        if all(needle in lowered for needle in needles):
            text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


# A home directory in a path: /home/alice, /Users/alice, C:\Users\alice (also with
# the backslashes JSON doubles), /root. A local server's error reply names its
# install path; the user's name and layout do not belong in a committed cassette.
_HOME_PATH = re.compile(
    r"(?<![\w.:/-])(?:/home/|/Users/|/root(?=/)|[A-Za-z]:(?:\\\\|\\)Users(?:\\\\|\\))[^/\\\s'\"<>]*"
)
LOCAL_PATH = "~"


# Where a server is installed: everything before a package folder (site-packages,
# dist-packages) or the Python library folder, in a path written with / or \ (also
# doubled, as JSON writes it). What is left names the failing module, not the machine.
_INSTALL_PATHS = tuple(
    re.compile(
        r"(?<![^\s'\"(\[=,])(?:[A-Za-z]:|~)?(?:\\\\|[/\\])[^\s'\"<>]*?(?:\\\\|[/\\])"
        rf"({folder})(?=\\\\|[/\\])"
    )
    for folder in (r"(?:site|dist)-packages", r"python3(?:\.\d+)?")
)


def scrub_local_paths(text: str) -> str:
    """Cut install paths to the package (``.../site-packages/llama_cpp/app.py`` ->
    ``site-packages/llama_cpp/app.py``) and replace home directories in file paths
    (and this user's home) with ``~``."""
    for install_path in _INSTALL_PATHS:
        text = install_path.sub(r"\1", text)
    home = os.path.expanduser("~")
    if len(home) > 1 and home != "/":
        text = re.sub(rf"(?<![\w.:/-]){re.escape(home)}(?![\w.-])", LOCAL_PATH, text)
    return _HOME_PATH.sub(LOCAL_PATH, text)


# What the fetcher sends as ``token`` when it has none (replay), and what the
# recorder writes in place of a real token. Distinct per token kind so a
# normal and a JavaScript crawl of the same URL stay distinct requests.
TOKEN_PLACEHOLDERS = {"normal": "REDACTED-NORMAL", "javascript": "REDACTED-JS"}


# -- log records -----------------------------------------------------

# Loggers of the HTTP citecheck makes: httpx logs every request URL (with the
# Crawling API token) at INFO, httpcore and VCR.py log headers and bodies at
# DEBUG. Every record of theirs is scrubbed whatever the level or handler
# (caplog, log_cli, log_file, junit_logging=all).
SCRUBBED_LOGGERS = frozenset({"httpx", "httpcore", "vcr", "pytest_citecheck", "urllib3"})

_installed: Callable[..., logging.LogRecord] | None = None


def _scrub_record(record: logging.LogRecord) -> logging.LogRecord:
    if record.name.partition(".")[0] not in SCRUBBED_LOGGERS:
        return record
    try:
        message = record.getMessage()
    except Exception:  # a broken format string: show it, scrubbed, rather than fail
        message = f"{record.msg!r} {record.args!r}"
    record.msg = scrub(message)
    record.args = None
    if record.exc_info and not record.exc_text:
        record.exc_text = scrub("".join(traceback.format_exception(*record.exc_info)).rstrip())
    return record


def install_log_scrubber() -> None:
    """Scrub the records of :data:`SCRUBBED_LOGGERS` as they are created (idempotent).

    A record factory rather than a filter: filters on a logger miss records of
    its children (``httpcore.http11``), and pytest's handlers are not ours.
    """
    global _installed
    if _installed is not None:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        return _scrub_record(previous(*args, **kwargs))

    _installed = previous
    logging.setLogRecordFactory(factory)


def uninstall_log_scrubber() -> None:
    global _installed
    if _installed is not None:
        logging.setLogRecordFactory(_installed)
        _installed = None


def without_credentials(url: str) -> str:
    """``url`` with any ``user:password@`` replaced by ``REDACTED@``: what reports, logs and
    cassettes hold (a cassette stores the Crawling API's ``url=`` parameter this way)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return scrub(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="REDACTED@" + parts.netloc.rpartition("@")[2]))
