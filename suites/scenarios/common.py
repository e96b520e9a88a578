"""What every scenario module shares: the default topic and state readers."""

from __future__ import annotations

from harness.scenario import RunContext

T = "chaos"  # the default topic every scenario's workload writes to


def state(ctx: RunContext, p: int = 0, topic: str = T) -> dict:
    """The partition's state znode now (leader, leader_epoch, isr, ...); fails if it has none."""
    st = ctx.view.partition_state(topic, p, fresh=True)
    assert st is not None, f"{topic}-{p} has no state znode"
    return st


def has_zookeeper(ctx: RunContext) -> bool:
    """The cluster runs with ZooKeeper (apache-zk); False on KRaft, observed through the protocol only."""
    return ctx.cluster.distribution.has_zookeeper
