"""Stand-ins for cluster nodes in the adapters' unit tests: what ``plan`` / ``aux_plan`` / ``node_config``
read of a node (id, alias, published port, role), without Docker."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class N:
    node_id: int
    alias: str
    host_port: int
    role: str = "broker"


BROKERS = [N(i, f"broker{i}", 40000 + i) for i in (1, 2, 3)]


def controllers(n: int) -> list[N]:
    """Dedicated controllers 101..100+n (aliases ``controller<ID>``)."""
    return [N(100 + i, f"controller{100 + i}", 41000 + i, "controller") for i in range(1, n + 1)]
