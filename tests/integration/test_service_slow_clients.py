"""Slow sockets cannot close the service: connections whose request headers are still
arriving are not counted against the connection limit and are capped per client
address, so ``/health`` and complete requests keep being served; the access log never
shows a query string (where a client may have put its key).

A real uvicorn on 127.0.0.1 (:func:`tests.integration.test_service.serving`); every
count and wait is bounded, and the test closes its sockets itself.
"""

from __future__ import annotations

import logging
import select
import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

from pytest_citecheck.frontends.service import ServiceConfig
from pytest_citecheck.frontends.service.defaults import MAX_CONNECTIONS, MAX_WAITING_PER_CLIENT
from pytest_citecheck.frontends.service.http import HeaderWaits
from tests.integration.test_service import serving
from tests.integration.test_service_security import KEY, ONE_URL, World, post
from tests.integration.test_service_security import world as world  # the fixture

SLOW = MAX_CONNECTIONS + 10  # more than uvicorn's connection limit: 110
# The start of a request whose headers never end.
HALF_HEAD = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaa"


def _closed_by_server(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(4096) == b"" or True  # EOF, or the 408 before it
    except OSError:
        return True


def test_slow_header_sockets_do_not_deny_health_or_complete_requests(
    world: World,
) -> None:
    with serving(ServiceConfig(read_timeout=8.0), world.environ) as url:
        parts = urlsplit(url)
        slow: list[socket.socket] = []
        try:
            for _ in range(SLOW):
                sock = socket.create_connection((parts.hostname, parts.port), timeout=5)
                sock.sendall(HALF_HEAD)
                slow.append(sock)
            started = time.monotonic()
            # While they are held (well inside the 8 s header deadline) the service answers.
            health = httpx.get(f"{url}/health", timeout=5)
            verified = post(url, ONE_URL, timeout=30)
            health_again = httpx.get(f"{url}/health", timeout=5)
            assert time.monotonic() - started < 8, "answered only once the slow ones timed out"
            # The waiting sockets of one address are capped: the oldest were closed.
            deadline = time.monotonic() + 3
            closed = 0
            while time.monotonic() < deadline:
                closed = sum(_closed_by_server(s) for s in slow)
                if closed >= SLOW - MAX_WAITING_PER_CLIENT:
                    break
                time.sleep(0.05)
        finally:
            for sock in slow:
                sock.close()
    assert health.status_code == 200, health.text
    assert health_again.status_code == 200, health_again.text
    assert verified.status_code == 200, verified.text
    assert verified.json()["label"] == "supported"
    assert SLOW - MAX_WAITING_PER_CLIENT <= closed < SLOW


def test_the_oldest_waiting_connection_of_an_address_goes_first() -> None:
    waits = HeaderWaits(per_client=2, total=3)
    a1, a2, a3, b1, c1 = (object() for _ in range(5))
    assert waits.add(a1, "10.0.0.1") == [] and waits.add(a2, "10.0.0.1") == []
    assert waits.add(a3, "10.0.0.1") == [a1]  # the address's own oldest
    assert waits.add(b1, "10.0.0.2") == []
    assert waits.add(c1, "10.0.0.3") == [a2]  # over the total: the oldest of all
    assert len(waits) == 3 and a3 in waits and b1 in waits and c1 in waits
    waits.receiving = b1
    assert not waits.waiting(b1) and waits.waiting(c1)  # a request completing counts
    waits.discard(b1)
    assert b1 not in waits and waits.evicted == 2
    with pytest.raises(ValueError, match="at least 1"):
        HeaderWaits(per_client=0, total=1)


def test_the_access_log_never_shows_a_query_string(
    world: World,
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "planted-query-key-0123456789"
    caplog.set_level(logging.INFO)
    config = ServiceConfig(api_key=KEY)
    with serving(config, world.environ, log_config=None, log_level="info") as url:
        refused = post(url, ONE_URL, params={"key": secret})
        health = httpx.get(f"{url}/health", params={"key": secret, "x": "1"}, timeout=5)
    assert refused.status_code == 401 and health.status_code == 200
    access = [r.getMessage() for r in caplog.records if r.name == "uvicorn.access"]
    assert any('"POST /verify HTTP/1.1" 401' in line for line in access), access
    assert any('"GET /health HTTP/1.1" 200' in line for line in access), access
    # Everything the server logged (the test's own client logs the URL it sent).
    server_lines = "\n".join(r.getMessage() for r in caplog.records if r.name != "httpx")
    assert secret not in server_lines and "key=" not in server_lines
    assert world.upstream == 0
