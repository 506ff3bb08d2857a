"""The unit suite's guard against the network: a test that reaches for a
socket, even on loopback, fails instead of quietly slowing the suite down."""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.unit.conftest import SocketUsed


def test_a_connection_to_loopback_is_refused() -> None:
    with pytest.raises(SocketUsed, match="tests/integration"):
        socket.create_connection(("127.0.0.1", 9))


def test_a_raw_socket_can_neither_connect_nor_listen() -> None:
    with socket.socket() as s:
        with pytest.raises(SocketUsed):
            s.connect(("127.0.0.1", 9))
        with pytest.raises(SocketUsed):
            s.bind(("127.0.0.1", 0))


def test_an_http_client_gets_no_connection() -> None:
    with httpx.Client() as client, pytest.raises(SocketUsed):
        client.get("http://127.0.0.1:9/")
