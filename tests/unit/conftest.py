"""Unit tests talk to no network, not even loopback: any socket connection,
bind or name lookup fails the test that tries it. Tests that need a server
(the doubles in tests/doubles) live in tests/integration."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest


class SocketUsed(RuntimeError):
    """A unit test tried to use the network."""


def _refuse(*args: Any, **kwargs: Any) -> NoReturn:
    raise SocketUsed(
        "a unit test used a socket; move it to tests/integration or fake the transport"
    )


@pytest.fixture(autouse=True)
def _no_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    # Connecting, binding and name lookup are refused; creating a socket pair
    # (an event loop's self-pipe) stays possible since it reaches no network.
    for name in ("connect", "connect_ex", "bind", "sendto"):
        monkeypatch.setattr(socket.socket, name, _refuse)
    for name in ("create_connection", "create_server", "getaddrinfo", "gethostbyname"):
        monkeypatch.setattr(socket, name, _refuse)


# The embedding model's libraries take seconds to import; unit tests fake the model.
HEAVY_MODULES = ("torch", "sentence_transformers", "transformers")


@pytest.fixture(autouse=True)
def _no_model_libraries() -> Iterator[None]:
    # Per test, not per session: in a full run (or an xdist worker) the integration
    # tests that really embed may load them before or after; a unit test may not.
    before = [name for name in HEAVY_MODULES if name in sys.modules]
    yield
    loaded = [name for name in HEAVY_MODULES if name in sys.modules and name not in before]
    assert loaded == [], f"this unit test loaded {loaded}: fake the model or move the test"
