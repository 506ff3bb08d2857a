"""The cited page as a picture (``citecheck_screenshots``), for the verdicts a person
must look at: contradicted, fabricated, blocked, paywalled, or sent to review.

The Crawling API takes a screenshot when asked with the JavaScript token and
``screenshot=true`` (https://crawlbase.com/docs/crawling-api/parameters/#screenshot): it
crawls the page in a browser and answers, beside the page, a ``screenshot_url`` header
(a JPEG, a link that expires after about an hour). The picture is downloaded at once,
through the engine's recorded client: the recording keeps both exchanges, but the
picture's bytes go to a file named by their SHA-256 in the claim file's ``shots/``
folder beside its cassettes (:mod:`pytest_citecheck.recording.transport`), never into
the cassette's text. A replay plays both exchanges back and finds the stored file, with
no network and no token.

A picture that cannot be had (no JavaScript token, the API failed, no ``screenshot_url``,
the link expired, no recording to keep it in, the file is gone) is ``missing`` with why:
never the verdict's failure, never the run's.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import Screenshot, Verdict
from pytest_citecheck.core.providers import TOKEN_ENV
from pytest_citecheck.core.retry import GaveUp, RetryPolicy, send, transport_text
from pytest_citecheck.core.secrets import TOKEN_PLACEHOLDERS
from pytest_citecheck.core.text import truncate
from pytest_citecheck.stages.fetch import base_url_from, credits_for

if TYPE_CHECKING:
    import httpx

# The verdicts a person must look at get a picture.
SHOT_LABELS = frozenset({Label.CONTRADICTED, Label.FABRICATED})
SHOT_REASONS = frozenset({Reason.BLOCKED, Reason.PAYWALLED})
# The Crawling API's reply header naming the picture (short-lived).
SCREENSHOT_URL_HEADER = "screenshot_url"
# A recorded picture's reply names its stored file here (the body is left out).
IMAGE_HEADER = "citecheck-image"
# Where the recording put (or found) that file, for this run only (never stored).
IMAGE_FILE_HEADER = "citecheck-image-file"
# The folder beside the cassettes that holds the pictures.
SHOTS_FOLDER = "shots"
_EXTENSIONS = {"image/jpeg": "jpg", "image/png": "png", "image/webp": "webp", "image/gif": "gif"}
_NAME = re.compile(r"^[0-9a-f]{64}\.(jpg|png|webp|gif|img)$")

# Maps an exception to (reason, detail): the recording's "no reply for this request".
ErrorClassifier = Callable[[BaseException], "tuple[str, str] | None"]


def wants_picture(verdict: Verdict) -> bool:
    """Whether a person must look at this verdict, so its page is pictured."""
    return verdict.label in SHOT_LABELS or verdict.reason in SHOT_REASONS or verdict.review


def media_type(content_type: str) -> str | None:
    """The picture's media type from a ``Content-Type``; None when it is no picture."""
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind if kind.startswith("image/") else None


def image_name(body: bytes, kind: str) -> str:
    """The stored file's name: the picture's SHA-256 and its extension."""
    return f"{hashlib.sha256(body).hexdigest()}.{_EXTENSIONS.get(kind, 'img')}"


def valid_image_name(name: str) -> bool:
    """Whether a recorded name is one :func:`image_name` makes (no path in it)."""
    return _NAME.match(name) is not None


def store_image(folder: Path, body: bytes, kind: str) -> Path:
    """Write ``body`` under its hash in ``folder`` (once: the same picture is one file)."""
    path = folder / image_name(body, kind)
    if path.is_file():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(body)
    os.replace(tmp, path)
    return path


@dataclass
class PageShots:
    """Takes a cited page's picture through the Crawling API (one JavaScript-token crawl,
    one download), on the engine's recorded client."""

    client: httpx.Client
    js_token: str | None
    base_url: str
    retry: RetryPolicy
    timeout: float = 90.0
    classify_error: ErrorClassifier | None = None

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str], client: httpx.Client, retry: RetryPolicy
    ) -> PageShots:
        return cls(
            client=client,
            js_token=environ.get(TOKEN_ENV["javascript"]) or None,
            base_url=base_url_from(environ),
            retry=retry,
        )

    def add(self, url: str, verdict: Verdict) -> Verdict:
        """``verdict`` with its page's picture (and what it cost) when a person must look
        at it; else unchanged. Never raises: a picture not had is ``missing``."""
        if not wants_picture(verdict):
            return verdict
        try:
            shot = self.take(url)
        except Exception as exc:
            classified = self.classify_error(exc) if self.classify_error else None
            detail = classified[1] if classified else f"{type(exc).__name__}: {exc}"
            shot = Screenshot(status="missing", detail=truncate(detail, 300))
        return verdict.model_copy(
            update={"screenshot": shot, "credits": verdict.credits + shot.credits}
        )

    def take(self, url: str) -> Screenshot:
        """The picture of ``url``: ``taken`` with its stored file, or ``missing``."""
        token = self.js_token or TOKEN_PLACEHOLDERS["javascript"]
        # Like the SDK: token, then the options, ``url`` last.
        params = (("token", token), ("format", "md"), ("screenshot", "true"), ("url", url))
        request = self.client.build_request(
            "GET", self.base_url, params=params, timeout=self.timeout
        )
        try:
            response = send(self.client, request, self.retry).response
        except GaveUp as exc:
            return _missing(f"the Crawling API did not answer ({transport_text(exc.error)})")
        headers = response.headers
        status = _int(headers.get("cb_status") or headers.get("pc_status"))
        original = _int(headers.get("original_status"))
        credits = credits_for("javascript", status, original, store=False)
        if not response.is_success:
            why = f"the Crawling API answered HTTP {response.status_code}"
            if response.status_code == 401 and self.js_token is None:
                why += f" ({TOKEN_ENV['javascript']} is not set)"
            return _missing(why, credits)
        link = headers.get(SCREENSHOT_URL_HEADER)
        if not link or not link.startswith(("http://", "https://")):
            return _missing("the Crawling API answered no screenshot_url", credits)
        return self._download(link, credits)

    def _download(self, link: str, credits: float) -> Screenshot:
        request = self.client.build_request("GET", link, timeout=self.timeout)
        try:
            response = send(self.client, request, self.retry).response
        except GaveUp as exc:
            return _missing(
                f"the picture was not downloaded ({transport_text(exc.error)})", credits
            )
        if not response.is_success:
            return _missing(f"the picture's link answered HTTP {response.status_code}", credits)
        kind = media_type(response.headers.get("content-type", ""))
        if kind is None:
            return _missing("the picture's link answered no image", credits)
        stored = response.headers.get(IMAGE_FILE_HEADER)
        if stored is None:
            named = response.headers.get(IMAGE_HEADER)
            why = (
                f"the recording names no stored picture ({named})"
                if named
                else ("no recording to keep the picture in")
            )
            return _missing(why, credits)
        path = Path(stored)
        if not path.is_file():
            return _missing(f"the stored picture {path.name} is gone", credits)
        return Screenshot(
            status="taken",
            sha256=path.name.split(".", 1)[0],
            file=_shown(path),
            media_type=kind,
            credits=credits,
        )


def _shown(path: Path) -> str:
    """The picture's path as reports name it: from the working folder when it is under
    it (no home directory in a committed report), else whole."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (OSError, ValueError):
        return str(path)


def _missing(detail: str, credits: float = 0.0) -> Screenshot:
    return Screenshot(status="missing", detail=detail, credits=credits)


def _int(value: str | None) -> int | None:
    try:
        return int(value.strip()) if value is not None else None
    except ValueError:
        return None
