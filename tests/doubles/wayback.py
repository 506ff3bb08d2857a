"""A loopback double of the Wayback Machine's availability API (tests only).

``GET /wayback/available?url=URL`` answers as archive.org does: ``{"url": URL,
"archived_snapshots": {"closest": {"status": "200", "available": true, "url": SNAPSHOT,
"timestamp": "YYYYMMDDhhmmss"}}}`` for a URL with a snapshot (:meth:`archive`), and
``{"url": URL, "archived_snapshots": {}}`` for any other. Every request is logged in
:attr:`WaybackDouble.calls` (the ``url`` asked about). The API is free: nothing is
counted as paid, but a test can read the calls to see what was asked, and how often.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from tests.doubles import LoopbackServer, QuietHandler


class WaybackDouble(LoopbackServer):
    name = "wayback-double"

    def __init__(self) -> None:
        super().__init__()
        self.snapshots: dict[str, tuple[str, str]] = {}
        self.calls: list[str] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """What ``CITECHECK_WAYBACK_URL`` is set to."""
        return f"http://127.0.0.1:{self.port}/wayback/available"

    def archive(self, url: str, timestamp: str) -> str:
        """Give ``url`` a snapshot taken at ``timestamp``; returns the snapshot's link."""
        snapshot = f"http://web.archive.org/web/{timestamp}/{url}"
        self.snapshots[url] = (snapshot, timestamp)
        return snapshot

    def handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path != "/wayback/available":
                    self.reply(404, [], b"")
                    return
                url = parse_qs(parts.query).get("url", [""])[0]
                with double._lock:
                    double.calls.append(url)
                found = double.snapshots.get(url)
                snapshots = {}
                if found is not None:
                    snapshots["closest"] = {
                        "status": "200",
                        "available": True,
                        "url": found[0],
                        "timestamp": found[1],
                    }
                body = json.dumps({"url": url, "archived_snapshots": snapshots}).encode()
                self.reply(200, [("Content-Type", "application/json")], body)

        return Handler
