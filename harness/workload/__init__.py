"""Client workload: producers and consumers (confluent-kafka) that record every operation.

``Workload(bootstrap, WorkloadConfig(topic=...), recorder.emit)`` -> ``start()`` -> faults ->
``stop()`` -> heal -> ``drain()``. Sends are recorded invoke -> ok | fail | info (see
``outcomes.py`` for which errors are definite), reads as ``poll`` / ``drain`` ``ok`` events,
and the drain's end offsets as ``partition.end`` (docs/run-record.md).
"""

from harness.workload.config import WorkloadConfig
from harness.workload.drain import drain
from harness.workload.outcomes import classify_delivery_error, single_attempt
from harness.workload.groups import GroupWorkload, GroupWorkloadConfig
from harness.workload.txn import TxnWorkload, TxnWorkloadConfig
from harness.workload.share import ShareWorkload, ShareWorkloadConfig
from harness.workload.workload import Workload

__all__ = ["Workload", "WorkloadConfig", "TxnWorkload", "TxnWorkloadConfig", "GroupWorkload", "GroupWorkloadConfig", "ShareWorkload", "ShareWorkloadConfig", "make_workload", "drain",
           "classify_delivery_error", "single_attempt"]


def make_workload(bootstrap: str, spec: dict, emit, cluster=None):
    """The workload a scenario's ``workload`` dict asks for: ``kind: "txn"`` the transactional one
    (:class:`TxnWorkload`, docs/transactions.md), ``kind: "group"`` the consumer-group one
    (:class:`GroupWorkload`), else the producer/consumer :class:`Workload`."""
    if spec.get("kind") == "txn":
        return TxnWorkload(bootstrap, TxnWorkloadConfig(**spec), emit)
    if spec.get("kind") == "group":
        return GroupWorkload(bootstrap, GroupWorkloadConfig(**spec), emit)
    if spec.get("kind") == "java-txn":  # Kafka's Java client in a container (transactions v2): docs/transactions.md
        from harness.workload.java_txn import JavaTxnWorkload, JavaTxnWorkloadConfig
        return JavaTxnWorkload(bootstrap, JavaTxnWorkloadConfig(**spec), emit, cluster=cluster)
    if spec.get("kind") == "share":     # a share group (KIP-932): docs/share-groups.md
        return ShareWorkload(bootstrap, ShareWorkloadConfig(**spec), emit)
    return Workload(bootstrap, WorkloadConfig(**{k: v for k, v in spec.items() if k != "kind"}), emit)
