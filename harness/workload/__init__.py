"""Client workload: producers and consumers (confluent-kafka) that record every operation.

``Workload(bootstrap, WorkloadConfig(topic=...), recorder.emit)`` -> ``start()`` -> faults ->
``stop()`` -> heal -> ``drain()``. Sends are recorded invoke -> ok | fail | info (see
``outcomes.py`` for which errors are definite), reads as ``poll`` / ``drain`` ``ok`` events,
and the drain's end offsets as ``partition.end`` (docs/run-record.md).
"""

from .config import WorkloadConfig
from .drain import drain
from .outcomes import classify_delivery_error, single_attempt
from .workload import Workload

__all__ = ["Workload", "WorkloadConfig", "drain", "classify_delivery_error", "single_attempt"]
