"""Loopback test doubles of the Crawling API and the judge providers (tests only).

They speak the providers' wire formats and listen on 127.0.0.1 only.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self


class PaidRequests:
    """Every paid request the doubles received (a judge call, a crawl, a Crawler push),
    counted by its body (a GET's by its query).

    A client that re-sends a request the provider already received pays for it twice
    while the cassette and the cost report show one; ``tests/conftest.py`` fails every
    test in which the same paid body reached a double twice, unless the test is marked
    ``allow_resend`` (it exercises a retry on purpose).

    Bodies are counted per *phase*: a test that runs the same claims again on purpose
    (record, then replay, recheck or record again) starts a new phase between its runs
    with :func:`resend_phase`; every engine built in the test process starts one itself
    (``tests/conftest.py``). A body twice within one phase still fails. A double's
    ``reset()`` starts a new round: what it received before is forgotten here too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._phase = 0
        self._counts: Counter[tuple[int, str, str, bytes]] = Counter()

    def received(self, double: str, where: str, body: bytes) -> None:
        """``double`` (its name and port) received ``body`` at ``where`` (method, path)."""
        with self._lock:
            self._counts[(self._phase, double, where, body)] += 1

    def new_phase(self) -> None:
        """What doubles receive from now on is counted apart from what came before."""
        with self._lock:
            self._phase += 1

    def forget(self, double: str | None = None) -> None:
        """Forget what ``double`` received (None: every double)."""
        with self._lock:
            if double is None:
                self._counts.clear()
            else:
                for key in [k for k in self._counts if k[1] == double]:
                    del self._counts[key]

    def resent(self) -> list[tuple[str, str, bytes, int]]:
        """Each body received more than once in one phase: (double, where, body, times)."""
        with self._lock:
            return [(d, w, b, n) for (_, d, w, b), n in self._counts.items() if n > 1]


def recording_environ(
    crawlbase_url: str,
    openai_url: str,
    tokens: Mapping[str, str],
    key: str,
    *,
    keys: bool = True,
) -> dict[str, str]:
    """The environment an engine records with against the doubles: their addresses and
    (``keys``) the planted Crawlbase tokens and OpenAI key; without keys, a replay's."""
    environ = {"CITECHECK_CRAWLBASE_URL": crawlbase_url, "OPENAI_BASE_URL": openai_url}
    if keys:
        environ |= {
            "CRAWLBASE_TOKEN": tokens["normal"],
            "CRAWLBASE_JS_TOKEN": tokens["javascript"],
            "OPENAI_API_KEY": key,
        }
    return environ


# The one ledger of this process (an xdist worker has its own).
PAID = PaidRequests()


def resend_phase() -> None:
    """Start a new phase of the test: the paid bodies sent from now on may repeat what
    an earlier phase sent (the same claims run again on purpose), never each other."""
    PAID.new_phase()


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing and answers byte-stable headers."""

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output clean

    # Fixed, so recordings made against a double are byte-stable.
    def date_time_string(self, timestamp: float | None = None) -> str:
        return "Wed, 01 Jan 2025 00:00:00 GMT"

    def version_string(self) -> str:
        return "citecheck-test-double"

    def reply(self, status: int, headers: Iterable[tuple[str, str]], body: bytes) -> None:
        """Send one whole answer: status, headers, Content-Length and body."""
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    # socketserver's listen backlog is 5: a burst of connections beyond it while the
    # accept thread waits for the CPU has its SYNs dropped, and the kernel sends them
    # again only after a second (TCP's initial retransmission timeout), so requests
    # started evenly arrive a second late, bunched with later ones (the per-second
    # Crawling API double then refused a paced client). A real service's backlog is large.
    request_queue_size = 128


class LoopbackServer:
    """An HTTP server on ``127.0.0.1`` (a free port) in a daemon thread.

    A context manager that serves while inside the ``with``. The port stays
    known after :meth:`stop`, so recordings made against it can be replayed
    with the server gone.
    """

    name = "loopback-double"

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class; subclasses bind it to their state."""
        raise NotImplementedError

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError(f"{type(self).__name__} was never started; use it with `with`")
        return self._port

    def start(self) -> Self:
        self._server = _Server(("127.0.0.1", 0), self.handler())
        self._server.daemon_threads = True
        self._port = self._server.server_address[1]
        # A short poll interval: shutdown() waits for it, once per test.
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=self.name,
            daemon=True,
        )
        self._thread.start()
        return self

    @property
    def ledger_name(self) -> str:
        """How :data:`PAID` names this double: its class and port."""
        return f"{type(self).__name__}:{self._port}"

    def paid(self, where: str, body: bytes) -> None:
        """Count a paid request this double received (see :class:`PaidRequests`)."""
        PAID.received(self.ledger_name, where, body)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
