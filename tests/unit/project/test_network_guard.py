"""The suite runs with the network blocked; this proves the guard is active."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import NetworkBlocked


def test_outbound_connection_is_blocked():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with pytest.raises(NetworkBlocked):
            s.connect(("93.184.216.34", 80))
    finally:
        s.close()


def test_dns_is_blocked():
    with pytest.raises(NetworkBlocked):
        socket.getaddrinfo("huggingface.co", 443)


def test_loopback_is_allowed():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        client.connect(server.getsockname())
    finally:
        client.close()
        server.close()
