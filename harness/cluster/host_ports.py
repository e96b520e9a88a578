"""Host ports of a cluster's published listeners: free, on 127.0.0.1, below the kernel's ephemeral range,
random (concurrent clusters rarely collide) or from a ``--port-base``; consecutive for a broker that maps
node ids to ports from one first port. Used by :mod:`harness.cluster.cluster`."""

from __future__ import annotations

import random
import socket

from harness.errors import PortConflict


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


# Host ports are picked below the kernel's ephemeral range (32768-60999 by default), so that no
# client's outgoing connection can hold a broker's port while that broker is down (a killed broker
# restarts on the same published port), and at random, so that concurrent clusters rarely collide.
PORT_RANGE = (20000, 32000)


def _free_port(rng: random.Random = random.Random()) -> int:
    for _ in range(200):
        p = rng.randrange(*PORT_RANGE)
        if _port_free(p):
            return p
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:   # a crowded range: any free port
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_taken(e: BaseException) -> bool:
    """Did Docker fail to publish a port because something took it after we picked it?"""
    text = str(e).lower()
    return "port is already allocated" in text or "address already in use" in text


def _pick_ports(n: int, base: int | None, what: str, contiguous: bool = False) -> list[int]:
    """``n`` free host ports: ``base``, base+1, ... when given; else random ones, consecutive when
    ``contiguous`` (a broker that maps node ids to ports from one first port)."""
    if base is None and contiguous:
        rng = random.Random()
        for _ in range(200):
            first = rng.randrange(PORT_RANGE[0], PORT_RANGE[1] - n)
            if all(_port_free(first + i) for i in range(n)):
                return [first + i for i in range(n)]
        raise PortConflict(f"no {n} consecutive free host ports for the {what}s in {PORT_RANGE[0]}-{PORT_RANGE[1]}")
    if base is not None:
        ports = [base + i for i in range(n)]
        busy = [p for p in ports if not _port_free(p)]
        if busy:
            raise PortConflict(f"port conflict: 127.0.0.1:{busy[0]} ({what}) is already in use; "
                               "choose another --port-base or stop what uses it")
        return ports
    ports: list[int] = []
    while len(ports) < n:
        p = _free_port()
        if p not in ports:
            ports.append(p)
    return ports
