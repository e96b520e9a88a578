"""A cluster's topic administration through the Admin API: the shared AdminClient, creating a topic
(asked again, bounded, when a loaded machine answers too late) and waiting for its leaders, deleting
it. A mixin of :class:`harness.cluster.cluster.Cluster`, which provides ``client_config()``, ``name``,
``_admin`` and ``_progress`` (its progress line).
"""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from harness.clientlog import with_logger
from harness.errors import ClusterError


class TopicAdmin:
    def admin(self, **conf):
        """A shared AdminClient (a fresh one when ``conf`` is given). Keep a reference while futures are pending."""
        if conf:
            return AdminClient(with_logger({**self.client_config(), "socket.timeout.ms": 30000, **conf}))
        if self._admin is None:
            self._admin = AdminClient(with_logger({**self.client_config(), "socket.timeout.ms": 30000}))
        return self._admin

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     config: dict | None = None, assignment: dict[int, list[int]] | None = None,
                     timeout_s: float = 30.0) -> None:
        """Create a topic and wait until every partition has a leader. On a cluster the harness does not
        start (``--nodes``) a topic of that name left by an earlier run is deleted first, and the topics a
        run creates are deleted when it releases the cluster (:meth:`delete_created_topics`)."""
        if getattr(self, "is_remote", False):
            self._delete_leftover(name, timeout_s)
            self.created_topics = [*getattr(self, "created_topics", []), name]
        if assignment:
            # confluent-kafka 2.16 wants num_partitions = the number of assignments (not -1)
            nt = NewTopic(name, num_partitions=len(assignment),
                          replica_assignment=[assignment[p] for p in sorted(assignment)],
                          config={k: str(v) for k, v in (config or {}).items()})
            partitions = len(assignment)
        else:
            nt = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                          config={k: str(v) for k, v in (config or {}).items()})
        deadline = time.monotonic() + 2 * timeout_s
        timed_out = False
        while True:
            try:
                self.admin().create_topics([nt], operation_timeout=timeout_s)[name].result(timeout=timeout_s)
                break
            except KafkaException as e:
                code = e.args[0].code() if e.args and hasattr(e.args[0], "code") else None
                if code == KafkaError.TOPIC_ALREADY_EXISTS and timed_out:
                    break  # our own earlier attempt created it; only its answer was lost
                # a loaded machine can be slower than the request timeout: ask again, bounded
                if code not in (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT) or time.monotonic() > deadline:
                    raise
                timed_out = True
                self._progress(f"{self.name}: creating topic {name} timed out; asking again")
        self.wait_leaders(name, partitions, timeout_s)

    def wait_leaders(self, topic: str, partitions: int, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            md = self.admin().list_topics(topic=topic, timeout=5)
            t = md.topics.get(topic)
            if t is not None and t.error is None and len(t.partitions) == partitions and all(
                    p.leader >= 0 for p in t.partitions.values()):
                return
            time.sleep(0.2)
        raise ClusterError(f"topic {topic}: not every partition has a leader after {timeout_s:.0f} s")

    def delete_topic(self, name: str, timeout_s: float = 30.0) -> None:
        self.admin().delete_topics([name], operation_timeout=timeout_s)[name].result(timeout=timeout_s)

    def _topic_exists(self, name: str) -> bool:
        t = self.admin().list_topics(topic=name, timeout=10).topics.get(name)
        return t is not None and t.error is None

    def _delete_leftover(self, name: str, timeout_s: float) -> None:
        """Delete topic ``name`` if it exists (an earlier run's, killed before its release) and wait until gone."""
        if not self._topic_exists(name):
            return
        self._progress(f"{self.name}: topic {name} is left from an earlier run: deleting it first")
        self.delete_topic(name, timeout_s)
        deadline = time.monotonic() + timeout_s
        while self._topic_exists(name):
            if time.monotonic() > deadline:
                raise ClusterError(f"topic {name}: still listed {timeout_s:.0f} s after its deletion")
            time.sleep(0.5)

    def delete_created_topics(self, timeout_s: float = 30.0) -> list[str]:
        """Delete the topics this cluster object created (a ``--nodes`` cluster's release); the errors."""
        errors = []
        for name in getattr(self, "created_topics", []):
            try:
                self.delete_topic(name, timeout_s)
            except KafkaException as e:
                code = e.args[0].code() if e.args and hasattr(e.args[0], "code") else None
                if code != KafkaError.UNKNOWN_TOPIC_OR_PART:
                    errors.append(f"{name}: {e}")
            except Exception as e:  # noqa: BLE001 - a release goes on with the rest
                errors.append(f"{name}: {type(e).__name__}: {e}")
        self.created_topics = []
        return errors
