"""The current cluster view the nemesis resolves role targets with.

:class:`View` is the protocol; :class:`harness.observer.zk_watcher.ZkWatcher` satisfies it (its
methods also accept ``fresh=True``, which the resolver uses). :class:`ZkView` is the default: it
reads ZooKeeper directly through the cluster's shared kazoo client on every call, so it is always
current and needs no background watcher.
"""

from __future__ import annotations

import json
from typing import Protocol, runtime_checkable

from kazoo.exceptions import NoNodeError


@runtime_checkable
class View(Protocol):
    def controller_id(self) -> int | None: ...
    def live_brokers(self) -> list[int]: ...
    def partition_state(self, topic: str, partition: int) -> dict | None: ...
    def replicas(self, topic: str, partition: int) -> list[int]: ...


class ZkView:
    """Reads ``/controller``, ``/brokers/ids``, ``/brokers/topics/<t>`` and partition ``state`` znodes
    on demand through ``cluster.zk()``."""

    def __init__(self, cluster):
        self.cluster = cluster

    def _get_json(self, path: str):
        try:
            data, stat = self.cluster.zk().get(path)
        except NoNodeError:
            return None, None
        return (json.loads(data) if data else None), stat

    def controller_id(self, fresh: bool = True) -> int | None:
        obj, _ = self._get_json("/controller")
        return None if obj is None else int(obj["brokerid"])

    def controller_epoch(self) -> int | None:
        try:
            data, _ = self.cluster.zk().get("/controller_epoch")
        except NoNodeError:
            return None
        return int(data)

    def live_brokers(self, fresh: bool = True) -> list[int]:
        return sorted(self.cluster.registered_brokers())

    def partition_state(self, topic: str, partition: int, fresh: bool = True) -> dict | None:
        obj, stat = self._get_json(f"/brokers/topics/{topic}/partitions/{partition}/state")
        if obj is None:
            return None
        return {"leader": int(obj["leader"]), "leader_epoch": int(obj["leader_epoch"]),
                "isr": [int(b) for b in obj["isr"]], "controller_epoch": int(obj["controller_epoch"]),
                "leader_recovery_state": int(obj.get("leader_recovery_state", 0)),
                "version": stat.version, "zxid": stat.mzxid}

    def replicas(self, topic: str, partition: int) -> list[int]:
        obj, _ = self._get_json(f"/brokers/topics/{topic}")
        if obj is None:
            return []
        return [int(b) for b in obj.get("partitions", {}).get(str(partition), [])]
