from __future__ import annotations

import pytest

from memory.protocol.netpolicy import is_loopback


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        (" 127.0.0.1 ", True),
        ("0.0.0.0", False),
        ("::", False),
        ("[::]", False),
        ("10.0.0.5", False),
        ("192.168.1.2", False),
        ("example.com", False),
        ("localhost.example.com", False),
        ("", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
