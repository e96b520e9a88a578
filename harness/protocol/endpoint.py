"""Where a client reaches a Kafka node: one type, :class:`Endpoint` ``(host, port)``, passed through once
from the place that knows it to every client that dials it.

- A cluster the harness starts publishes each node's client listener on ``127.0.0.1:<port>``
  (:func:`loopback`); a nodes file (``--nodes``, harness/remote/nodes_file.py) names each node's
  ``endpoint = "HOST:PORT"`` (e.g. ``10.0.0.5:9092``), which may be another machine.
- :class:`harness.cluster.node.Node` holds it (``node.endpoint``); the cluster's bootstrap servers, the
  protocol client (:class:`harness.protocol.client.ProtocolClient`, :func:`~harness.protocol.client.first_answer`),
  the protocol sampler, the control plane and the admin operations all take it from there.

Safety (common rules: traffic only to loopback, containers the harness started and hosts a nodes file
names): the protocol client dials a loopback address, or a host a loaded nodes file names as a node's
endpoint (:func:`permit`, called by the nodes file's loader); anything else is refused with a
ValueError before a socket is opened.
"""

from __future__ import annotations

import ipaddress
import threading
from typing import Iterable, NamedTuple

LOOPBACK = "127.0.0.1"

_permitted: set[str] = set()
_lock = threading.Lock()


class Endpoint(NamedTuple):
    """``host:port`` of a Kafka listener (or a ZooKeeper client port) as the harness dials it."""
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def is_loopback(self) -> bool:
        return is_loopback(self.host)


def loopback(port: int) -> Endpoint:
    """A port published on 127.0.0.1 (a node of a cluster the harness started)."""
    return Endpoint(LOOPBACK, int(port))


def parse(text: str) -> Endpoint:
    """``HOST:PORT`` (``[v6]:PORT``) as an Endpoint; ValueError naming the text otherwise."""
    host, sep, port = text.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"{text.strip()!r} is not HOST:PORT")
    return Endpoint(host, int(port))


def join(endpoints: Iterable[Endpoint]) -> str:
    """``host:port,host:port`` (bootstrap.servers, zookeeper connect strings)."""
    return ",".join(str(e) for e in endpoints)


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def permit(hosts: Iterable[str]) -> None:
    """Let the protocol client dial ``hosts`` (the endpoints a nodes file names) in this process."""
    with _lock:
        _permitted.update(h for h in hosts if h)


def require_permitted(host: str) -> None:
    """ValueError unless ``host`` is loopback or a host a loaded nodes file names."""
    if is_loopback(host):
        return
    with _lock:
        if host in _permitted:
            return
    raise ValueError(f"the protocol client only talks to loopback addresses and the hosts a nodes file "
                     f"names, not {host!r}")
