"""Whether a worker host is this machine: the one loopback check every caller uses (the
token requirement, and the local-file tools that a shared worker must never serve)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """`localhost`, any 127.x address, `::1` and bracketed `[::1]` (a host, not host:port).

    A DNS name other than localhost is never loopback: it may resolve anywhere.
    """
    host = host.strip().strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
