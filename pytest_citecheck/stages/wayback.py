"""Invented or rotted: an unreachable citation looked up in the Wayback Machine.

*Reference hallucinations in deep research* (arXiv 2604.03173) tells an invented URL
from a rotted one by asking the Internet Archive whether it was ever archived. Here one
request to the Wayback Machine's availability API
(``GET https://archive.org/wayback/available?url=URL``) answers, for a citation that is
unreachable (404, 410, a failed crawl) or a deep link redirected to the homepage:

- ``{"archived_snapshots": {}}``: never archived -> ``never_archived`` (likely invented);
- ``{"archived_snapshots": {"closest": {"available": true, "status": "200", "url":
  "http://web.archive.org/web/20130919044612/http://example.com/", "timestamp":
  "20130919044612"}}}``: archived -> ``rotted``, with the snapshot's link and time. A
  closest capture that is not a page (its ``status`` is not 2xx) is no copy of the page:
  never archived.

The request goes through the engine's HTTP client, so it is recorded in the claim's
cassette beside the crawl and replays offline; it is free (no credit, no token), and
sent only with the setting on (``citecheck_wayback``). ``CITECHECK_WAYBACK_URL`` points
it elsewhere (a loopback double in the tests).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, ValidationError

from pytest_citecheck.claims.labels import Label, Reason
from pytest_citecheck.claims.results import Archive, Verdict
from pytest_citecheck.core.retry import GaveUp, RetryPolicy, send, transport_text
from pytest_citecheck.core.text import truncate

if TYPE_CHECKING:
    import httpx

DEFAULT_URL = "https://archive.org/wayback/available"
URL_ENV = "CITECHECK_WAYBACK_URL"

# Not unreachable by label, but the cited page is gone all the same.
_GONE_REASONS = frozenset({Reason.REDIRECTED_TO_HOMEPAGE, Reason.SOFT_404})


def looks_up(verdict: Verdict) -> bool:
    """Whether a verdict's page is gone, so the archive is asked about it."""
    return verdict.label is Label.UNREACHABLE or verdict.reason in _GONE_REASONS


class _Snapshot(BaseModel):
    model_config = ConfigDict(extra="ignore")

    available: bool = False
    url: str | None = None
    timestamp: str | None = None
    status: str | None = None


class _Availability(BaseModel):
    model_config = ConfigDict(extra="ignore")

    archived_snapshots: dict[str, _Snapshot] = {}


def snapshot_time(timestamp: str | None) -> str | None:
    """``20130919044612`` -> ``2013-09-19T04:46:12Z`` (None: not a Wayback timestamp)."""
    if timestamp is None or len(timestamp) != 14 or not timestamp.isdigit():
        return None
    t = timestamp
    return f"{t[:4]}-{t[4:6]}-{t[6:8]}T{t[8:10]}:{t[10:12]}:{t[12:]}Z"


def read_availability(body: bytes) -> Archive:
    """The availability API's answer as an :class:`Archive`."""
    try:
        reply = _Availability.model_validate_json(body)
    except ValidationError:
        shown = truncate(body.decode("utf-8", "replace"), 120, flatten=True)
        return Archive(status="unknown", detail=f"the availability API answered {shown!r}")
    closest = reply.archived_snapshots.get("closest")
    if closest is None or not closest.available or not closest.url:
        return Archive(status="never_archived")
    if not (closest.status or "").startswith("2"):
        return Archive(
            status="never_archived",
            detail=f"the only capture is an HTTP {closest.status} ({closest.url})",
        )
    return Archive(
        status="rotted", snapshot_url=closest.url, snapshot_time=snapshot_time(closest.timestamp)
    )


@dataclass
class WaybackLookup:
    """Asks the availability API about one URL through ``client`` (the engine's)."""

    client: httpx.Client
    retry: RetryPolicy
    base_url: str = DEFAULT_URL

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str], client: httpx.Client, retry: RetryPolicy
    ) -> WaybackLookup:
        return cls(client=client, retry=retry, base_url=environ.get(URL_ENV) or DEFAULT_URL)

    def lookup(self, url: str) -> Archive:
        """Never archived, rotted or unknown. A recording's "no reply for this request"
        is raised, for the engine to word it."""
        request = self.client.build_request(
            "GET", self.base_url, params={"url": url}, headers={"accept": "application/json"}
        )
        try:
            sent = send(self.client, request, self.retry)
        except GaveUp as exc:
            return Archive(status="unknown", detail=transport_text(exc.error))
        response = sent.response
        if response.status_code != 200:
            return Archive(
                status="unknown",
                detail=f"the availability API answered HTTP {response.status_code}",
            )
        return read_availability(response.read())
