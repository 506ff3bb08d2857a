"""The service's HTTP connections: what uvicorn is told so that slow sockets cannot
close the service, and what its access log may show.

uvicorn answers 503 to every request once ``limit_concurrency`` connections are
open, and it counts a socket from the moment it connects: 100 sockets that send
their request headers a byte at a time (or never) are enough to make ``/health``
503 for everyone. :func:`protocol_class` gives uvicorn an HTTP protocol that

- cuts a connection off when its request headers have not all arrived within
  ``read_timeout`` seconds (408), for the first request and each kept-alive one;
- does not count a connection against ``limit_concurrency`` while its request
  headers are still arriving (nor a kept-alive connection between requests): that
  limit is on requests being served, which cost memory and a worker;
- bounds the connections still waiting for their headers, per client address
  (``per_client``) and in all (``total``): one more closes the *oldest* waiting
  one of that address (or of all), so a new client -- whose headers arrive at once
  -- is still served while a flood of slow sockets churns through the cap.

Why this and not h11 or uvicorn settings alone: h11's
``max_incomplete_event_size`` bounds the *size* of the headers, not how long they
take, and uvicorn has no header timeout and no per-address cap. A reverse proxy
in front (nginx ``client_header_timeout``, ``limit_conn``) does the same job;
this keeps the service safe without one. Behind a proxy every connection comes
from the proxy's address: a proxy sends complete headers, so its connections wait
only between requests, and evicting an idle kept-alive one costs a reconnect.

The access log (:func:`drop_query_strings`) shows paths without their query
string: a client that sends its key as ``?key=`` is refused (401), and the key must
not land in the log either.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

log = logging.getLogger("pytest_citecheck.service")

# How often, at most, the log says that waiting connections were closed (a flood
# would otherwise write a line per socket).
_EVICTION_LOG_EVERY = 10.0


class HeaderWaits:
    """Connections whose request headers have not all arrived, oldest first,
    bounded per client address and in all."""

    def __init__(self, per_client: int, total: int) -> None:
        if per_client < 1 or total < 1:
            raise ValueError("the caps on connections waiting for headers must be at least 1")
        self.per_client = per_client
        self.total = total
        self._all: dict[object, str] = {}  # connection -> client address
        self._by_client: dict[str, dict[object, None]] = {}
        # The connection whose data is being read: its request may complete now,
        # and then it counts against the concurrency limit like any served request.
        self.receiving: object | None = None
        self.evicted = 0
        self._logged = float("-inf")

    def __len__(self) -> int:
        return len(self._all)

    def __contains__(self, connection: object) -> bool:
        return connection in self._all

    def waiting(self, connection: object) -> bool:
        """Whether ``connection`` is not counted against the concurrency limit."""
        return connection in self._all and connection is not self.receiving

    def add(self, connection: object, client: str) -> list[object]:
        """Start waiting; returns the connections to close to stay within the caps."""
        self._all[connection] = client
        same = self._by_client.setdefault(client, {})
        same[connection] = None
        evict: list[object] = []
        if len(same) > self.per_client:
            evict.append(next(iter(same)))
        elif len(self._all) > self.total:
            evict.append(next(iter(self._all)))
        for old in evict:
            self.discard(old)
        self.evicted += len(evict)
        return evict

    def discard(self, connection: object) -> None:
        client = self._all.pop(connection, None)
        if client is None:
            return
        same = self._by_client[client]
        same.pop(connection, None)
        if not same:
            del self._by_client[client]

    def should_log(self) -> bool:
        now = time.monotonic()
        if now - self._logged < _EVICTION_LOG_EVERY:
            return False
        self._logged = now
        return True


class _Counted:
    """uvicorn's set of open connections, as its concurrency check counts them:
    without the connections still waiting for request headers. Adding and removing
    go to uvicorn's own set, so its shutdown still sees (and closes) every one."""

    def __init__(self, connections: set[Any], waits: HeaderWaits) -> None:
        self._connections = connections
        self._waits = waits

    def add(self, connection: Any) -> None:
        self._connections.add(connection)

    def discard(self, connection: Any) -> None:
        self._connections.discard(connection)

    def __contains__(self, connection: object) -> bool:
        return connection in self._connections

    def __iter__(self) -> Iterator[Any]:
        return iter(self._connections)

    def __len__(self) -> int:
        return sum(1 for c in self._connections if not self._waits.waiting(c))


def protocol_class(read_timeout: float, waits: HeaderWaits) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the header deadline and the caps of ``waits``."""

    class HeaderDeadline(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def __init__(
            self,
            config: Config,
            server_state: ServerState,
            app_state: dict[str, Any],
            _loop: asyncio.AbstractEventLoop | None = None,
        ) -> None:
            super().__init__(config, server_state, app_state, _loop)
            self.connections = _Counted(server_state.connections, waits)  # type: ignore[assignment]

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()
            self._wait_for_headers()

        def data_received(self, data: bytes) -> None:
            waits.receiving = self
            try:
                super().data_received(data)
            finally:
                waits.receiving = None
            if self.conn.their_state is not h11.IDLE:
                waits.discard(self)  # its request is complete: it counts now

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()  # the next request on this connection gets its own deadline
            self._wait_for_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            waits.discard(self)
            super().connection_lost(exc)

        def _wait_for_headers(self) -> None:
            if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return
            client = self.client[0] if self.client else ""
            evicted = waits.add(self, client)
            for old in evicted:
                assert isinstance(old, HeaderDeadline)
                old._close_waiting()
            if evicted and waits.should_log():
                log.info(
                    "%s has more than %d connections (or the service more than %d) still "
                    "waiting for request headers: closed the oldest (%d so far)",
                    client or "a client",
                    waits.per_client,
                    waits.total,
                    waits.evicted,
                )

        def _arm(self) -> None:
            self._disarm()
            if not self.transport.is_closing():
                self._header_timer = self.loop.call_later(read_timeout, self._headers_late)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_late(self) -> None:
            self._header_timer = None
            # IDLE: the request line and headers have not all arrived.
            if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
                return
            if self.conn.trailing_data[0]:
                client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
                log.info("%s sent no complete request headers within %g s", client, read_timeout)
            self._close_waiting()

        def _close_waiting(self) -> None:
            """Close a connection whose request headers have not all arrived (408 when
            some of them did)."""
            self._disarm()
            waits.discard(self)
            if self.transport.is_closing():
                return
            if self.conn.trailing_data[0]:
                self.transport.write(
                    b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n"
                    b"connection: close\r\n\r\n"
                )
            self.transport.close()

    return HeaderDeadline


def drop_query_strings(record: logging.LogRecord) -> bool:
    """A logging filter for ``uvicorn.access``: the request's path without its
    query string (where a client may have put a key)."""
    args = record.args
    if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
        path = args[2].partition("?")[0]
        record.args = (*args[:2], path, *args[3:])
    return True
