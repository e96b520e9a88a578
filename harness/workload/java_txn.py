"""The Java transactional workload (``kind: "java-txn"``): Apache Kafka's own read-process-write client.

Why a Java client: transactions v2 (KIP-890 part 2: a new producer epoch at the end of every transaction)
is chosen per request by the client, and librdkafka, the harness's client, does not implement it
(docs/transactions.md "Transactions v2"). The Apache Java client 4.x does, whenever the brokers finalize
``transaction.version`` >= 2. The broker image carries that client and Kafka's system-test tool
``org.apache.kafka.tools.TransactionalMessageCopier`` (kafka-tools): it consumes one input partition
read_committed, and per transaction (``--transaction-size`` records) produces them to the same partition
of an output topic and commits the consumed offsets with them (``sendOffsetsToTransaction``); with
``--enable-random-aborts`` a third of the transactions abort and rewind to the committed offsets. It
copies up to the input's end offset at its start, prints a JSON status line per loop
(``totalProcessed`` = records committed) and exits 0.

Here, per input partition ``p`` a thread (process ``j<p>``) runs **generations**: write ``chunk`` records
to ``<input_topic>-p`` (an idempotent librdkafka producer, acks=all; ``jtxn.input`` lists the acknowledged
values), then start a copier container with ``transactional.id`` ``kc-jtx-<topic>-<p>`` and wait for it to
end. The container runs the broker's own image on the cluster's Docker network (never privileged,
labelled with the cluster, so the cluster's removal and ``kafka-chaos cleanup`` take it; role ``client``).
Every instance is a ``jtxn.client`` event (``started``, ``exited`` with its exit code, ``killed``).

:meth:`JavaTxnWorkload.crash` (the nemesis's ``client_crash``) SIGKILLs a copier's container mid-transaction
and starts a new instance at once with the same ``transactional.id``: its InitProducerId fences the dead
one's epoch and the coordinator aborts its open transaction. After :meth:`stop`, :meth:`drain` lets each
thread run one **final** instance that copies whatever is left (``final: true``), then reads the output
topic back batch by batch (harness/workload/batch_log.py) for harness/checkers/txn_epochs.py.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass

from harness.clientlog import with_logger
from harness.workload.batch_log import read_log
from harness.workload.config import connection, partition_ids

JTXN_INPUT, JTXN_CLIENT = "jtxn.input", "jtxn.client"
COPIER = "org.apache.kafka.tools.TransactionalMessageCopier"
RUN_CLASS = "/opt/kafka-chaos/kafka-run-class"        # the harness image's launcher (java -Xmx256m -cp libs/*)
INTERNAL_PORT = 9093                                  # the brokers' inter-broker listener on the cluster network
CLIENT_ROLE = "client"


@dataclass
class JavaTxnWorkloadConfig:
    topic: str                          # the output topic (the copiers' transactions write here)
    partitions: int | list = 2          # input partitions = copiers; output partition = input partition
    kind: str = "java-txn"
    input_topic: str | None = None      # default <topic>-in
    chunk: int = 2000                   # input records per partition per generation
    transaction_size: int = 20          # --transaction-size (max.poll.records): records per transaction
    random_aborts: bool = True          # --enable-random-aborts: about a third of the transactions abort
    transaction_timeout_ms: int = 15000
    duration_s: float = 120.0
    min_committed_txns: int = 100       # the checker's coverage need (committed transactions in the log)
    final_timeout_s: float = 150.0      # the final copier of each partition must end within this
    read_settle_s: float = 45.0         # the read-back waits this long for open transactions to end
    process_prefix: str = ""
    transactional_id: str | None = None # prefix; default kc-jtx-<topic>; the copier of p uses <prefix>-<p>
    seed: int | None = None

    @property
    def partition_ids(self) -> list[int]:
        return partition_ids(self.partitions)

    @property
    def in_topic(self) -> str:
        return self.input_topic or f"{self.topic}-in"

    def tx_id(self, p: int) -> str:
        return f"{self.transactional_id or 'kc-jtx-' + self.topic}-{p}"

    def to_metadata(self) -> dict:
        d = asdict(self)
        d["partitions"] = self.partition_ids
        d["input_topic"] = self.in_topic
        d["transactional_ids"] = {str(p): self.tx_id(p) for p in self.partition_ids}
        d["client"] = COPIER
        d["isolation.level"] = "read_committed"
        return d


class _Copier:
    """One input partition's copier thread and its current container."""

    def __init__(self, wl: "JavaTxnWorkload", p: int):
        self.wl, self.p = wl, p
        self.name = f"{wl.config.process_prefix}j{p}"
        self.instance = 0
        self.container = None
        self.killed = False
        self.detached = None          # the paused container handed to a zombie watcher (JavaTxnWorkload.zombie)
        self._stream = None
        self.committed = 0            # records committed by finished instances
        self.current = 0              # ... by the running one (its last totalProcessed)
        self.thread = threading.Thread(target=self._run, name=f"jtxn-{self.name}", daemon=True)

    # -- one instance ---------------------------------------------------------------------------------
    def _launch(self, final: bool):
        wl, cfg = self.wl, self.wl.config
        self.instance += 1
        self.killed = False
        name = f"kc-{wl.cluster.name}-jtx{self.p}-{self.instance}"
        args = [COPIER, "--broker-list", wl.internal_bootstrap, "--input-topic", cfg.in_topic,
                "--input-partition", str(self.p), "--output-topic", cfg.topic,
                "--consumer-group", f"{cfg.tx_id(self.p)}-g", "--transactional-id", cfg.tx_id(self.p),
                "--transaction-size", str(cfg.transaction_size),
                "--transaction-timeout", str(cfg.transaction_timeout_ms)]
        if cfg.random_aborts:
            args.append("--enable-random-aborts")
        labels = {**wl.cluster._labels(CLIENT_ROLE, self.p)}
        self.current = 0
        self.container = wl.docker.containers.run(
            wl.image, args, entrypoint=[RUN_CLASS], name=name, detach=True, network=wl.cluster.network_name,
            labels=labels, mem_limit="512m", init=False, privileged=False)
        wl.emit(JTXN_CLIENT, process=self.name, transactional_id=cfg.tx_id(self.p), partition=self.p,
                instance=self.instance, container=name, state="started", final=final)
        return self.container

    def _follow(self, c) -> tuple[int | None, list[str]]:
        """Read the instance's output to its end: (exit code, its last non-status lines)."""
        tail: list[str] = []
        buf = b""
        try:
            self._stream = stream = c.logs(stream=True, follow=True)
            for chunk in stream:
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for ln in lines:
                    self._line(ln.decode(errors="replace"), tail)
        except Exception as e:  # noqa: BLE001 - the container went away under the stream (a crash)
            tail.append(f"log stream ended: {type(e).__name__}: {e}")
        if buf:
            self._line(buf.decode(errors="replace"), tail)
        if self.detached is c:                  # paused and handed to its zombie watcher: it lives on
            return None, tail[-6:]
        try:
            code = c.wait(timeout=30).get("StatusCode")
        except Exception:  # noqa: BLE001
            code = None
        return code, tail[-6:]

    def _line(self, ln: str, tail: list[str]) -> None:
        if ln.startswith("{") and '"stage"' in ln:
            try:
                st = json.loads(ln)
                self.current = int(st.get("totalProcessed") or 0)
                return
            except (ValueError, TypeError):
                pass
        if ln.strip() and not ln.startswith("\tat "):
            tail.append(ln.strip()[:300])
            del tail[:-20]

    def _run_instance(self, final: bool, timeout_s: float | None = None) -> int | None:
        c = self._launch(final)
        timer = None
        if timeout_s is not None:
            timer = threading.Timer(timeout_s, self._kill_quietly, args=(c,))
            timer.daemon = True
            timer.start()
        code, tail = self._follow(c)
        if timer is not None:
            timer.cancel()
        self.committed += self.current
        self.current = 0
        if self.detached is c:
            self.detached = None
            self.container = None
            self.wl.emit(JTXN_CLIENT, process=self.name, transactional_id=self.wl.config.tx_id(self.p),
                         partition=self.p, instance=self.instance, container=c.name, state="detached",
                         final=final, committed_records=self.committed, output=tail)
            return None                         # a replacement starts at once, as after a crash
        state = "killed" if self.killed else "exited"
        self.wl.emit(JTXN_CLIENT, process=self.name, transactional_id=self.wl.config.tx_id(self.p),
                     partition=self.p, instance=self.instance, container=c.name, state=state, exit_code=code,
                     final=final, committed_records=self.committed, output=tail)
        try:
            c.remove(force=True)
        except Exception:  # noqa: BLE001 - the cluster's removal takes it by its label
            pass
        self.container = None
        return None if self.killed else code

    def _kill_quietly(self, c) -> None:
        self.killed = True
        try:
            c.kill()
        except Exception:  # noqa: BLE001
            pass

    # -- the thread -----------------------------------------------------------------------------------
    def _run(self) -> None:
        wl = self.wl
        need_input = True
        gen = 0
        try:
            while not wl._stop.is_set():
                if need_input:
                    gen += 1
                    wl.write_input(self.p, gen)
                code = self._run_instance(final=False)
                need_input = code == 0
                if code not in (0, None):
                    time.sleep(1.0)       # a failed instance: the next one starts after a breath
            self._run_instance(final=True, timeout_s=wl.config.final_timeout_s)
        except Exception as e:  # noqa: BLE001 - Docker failed: recorded, the checker decides without it
            wl.emit(JTXN_CLIENT, process=self.name, transactional_id=wl.config.tx_id(self.p), partition=self.p,
                    instance=self.instance, state="error", error=f"{type(e).__name__}: {e}", final=False)

    def crash(self) -> bool:
        c = self.container
        if c is None:
            return False
        self._kill_quietly(c)
        return True


class JavaTxnWorkload:
    """``start()`` -> faults (``crash``) -> ``stop()`` -> ``drain()``; the run's ``java-txn`` workload."""

    def __init__(self, bootstrap, config: JavaTxnWorkloadConfig, emit, cluster=None):
        if cluster is None or getattr(cluster, "is_remote", False) or not hasattr(cluster, "network_name"):
            raise ValueError("the java-txn workload runs Kafka's Java client in a container on the cluster's "
                             "Docker network: it needs a cluster the harness runs in Docker (not --nodes)")
        from harness import docker_util         # lazy: docker-py
        self.config, self.emit, self.cluster = config, emit, cluster
        self.conf = connection(bootstrap)
        self.docker = docker_util.client()
        self.image = cluster.image.tag
        self.internal_bootstrap = ",".join(f"{cluster.brokers[b].alias}:{INTERNAL_PORT}" for b in cluster.broker_ids)
        self.copiers = [_Copier(self, p) for p in config.partition_ids]
        self.producers = self.copiers            # the runner counts them
        self.consumers: list = []
        self._stop = threading.Event()
        self._input = None
        self._input_lock = threading.Lock()
        self._zombies: list[threading.Thread] = []

    # -- input ----------------------------------------------------------------------------------------
    def write_input(self, p: int, gen: int) -> None:
        """``chunk`` records to input partition ``p``, flushed; one ``jtxn.input`` with the acknowledged
        values (and the unsure ones: not acknowledged, maybe written)."""
        from confluent_kafka import Producer   # lazy, as every workload module's clients
        cfg = self.config
        with self._input_lock:
            if self._input is None:
                self._input = Producer(with_logger({**self.conf, "client.id": f"{cfg.process_prefix}jin",
                                                    "enable.idempotence": True, "acks": "all", "linger.ms": 5,
                                                    "message.timeout.ms": 30000}))
        acked, unsure = [], []

        def report(err, msg, v):
            (unsure if err is not None else acked).append(v)

        for i in range(cfg.chunk):
            v = f"{cfg.process_prefix}{p}-{gen}-{i}"
            while True:
                try:
                    self._input.produce(cfg.in_topic, value=v, key=v, partition=p,
                                        on_delivery=lambda err, msg, v=v: report(err, msg, v))
                    break
                except BufferError:
                    self._input.poll(0.1)
            self._input.poll(0)
        self._input.flush(60)
        self.emit(JTXN_INPUT, process=f"{cfg.process_prefix}jin", topic=cfg.in_topic, partition=p, generation=gen,
                  values=acked, unsure=unsure)

    # -- the run --------------------------------------------------------------------------------------
    def start(self) -> None:
        self.emit("client.config", process=f"{self.config.process_prefix}jin", role="producer",
                  config={"enable.idempotence": True, "acks": "all"})
        for c in self.copiers:
            c.thread.start()

    def acknowledged(self) -> int:
        """Records committed so far (the copiers' ``totalProcessed``)."""
        return sum(c.committed + c.current for c in self.copiers)

    def stats(self) -> dict:
        """For verdict.json ``stats.workload``."""
        return {"kind": "java-txn", "committed_records": self.acknowledged(),
                "instances": {c.name: c.instance for c in self.copiers}}

    def wait_acknowledged(self, n: int = 1, timeout_s: float = 30.0) -> bool:
        # a copier is a JVM in a new container: its first commit comes seconds after the start
        deadline = time.monotonic() + max(timeout_s, 120.0)
        while self.acknowledged() < n:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)
        return True

    def crash(self, target: str, rng=None, timeout_s: float = 30.0) -> str:
        """SIGKILL a copier's container (``j<p>``, or ``random-producer``); its thread starts a new instance
        with the same ``transactional.id``. Returns the process name."""
        by_name = {c.name: c for c in self.copiers}
        if target in ("random-producer", "random-consumer", "random-copier"):
            pool = [c for c in self.copiers if c.container is not None]
            if not pool:
                raise LookupError("client_crash: no copier container running")
            c = rng.choice(pool) if rng is not None else pool[0]
        else:
            c = by_name.get(target) or by_name.get(self.config.process_prefix + str(target))
            if c is None:
                raise LookupError(f"client_crash: no copier {target!r}; the workload has {', '.join(sorted(by_name))}")
        deadline = time.monotonic() + timeout_s
        while not c.crash():
            if time.monotonic() >= deadline:
                raise LookupError(f"client_crash: {c.name} has no running container")
            time.sleep(0.2)
        return c.name

    def zombie(self, target: str, pause_s: float = 15.0, timeout_s: float = 90.0) -> str:
        """Make a zombie of copier ``target``: freeze its container (``docker pause``), let its thread start a
        replacement with the same ``transactional.id`` at once (whose InitProducerId fences the frozen
        one's epoch and aborts its open transaction), and thaw the frozen one ``pause_s`` later: whatever it
        still sends carries the fenced epoch and must be refused (the log check ``zombie-write``; a commit
        of it would also be an ``eos-duplicate``). Its end is a ``jtxn.client`` ``zombie-exited`` (killed
        after ``timeout_s``). Returns the zombie's container name."""
        c = next((x for x in self.copiers if target in (x.name, self.config.process_prefix + str(target))), None)
        if c is None or c.container is None:
            raise LookupError(f"zombie: no running copier {target!r}")
        cont = c.container
        cont.pause()
        base = {"process": c.name, "transactional_id": self.config.tx_id(c.p), "partition": c.p,
                "instance": c.instance, "container": cont.name}
        self.emit(JTXN_CLIENT, **base, state="paused", final=False)
        c.detached = cont
        if c._stream is not None:
            c._stream.close()                   # its thread stops following it and starts the replacement

        def watch() -> None:
            time.sleep(pause_s)
            tail: list[str] = []
            try:
                cont.unpause()
                self.emit(JTXN_CLIENT, **base, state="resumed", final=False)
                code = cont.wait(timeout=timeout_s).get("StatusCode")
            except Exception:  # noqa: BLE001 - still running after timeout_s (or gone): killed
                code = None
                try:
                    cont.kill()
                except Exception:  # noqa: BLE001
                    pass
            try:
                out = cont.logs().decode(errors="replace").splitlines()
                tail = [ln.strip()[:300] for ln in out if ln.strip() and not ln.startswith(("{", "\tat "))][-6:]
                cont.remove(force=True)
            except Exception:  # noqa: BLE001
                pass
            self.emit(JTXN_CLIENT, **base, state="zombie-exited", exit_code=code, final=False, output=tail)

        t = threading.Thread(target=watch, name=f"jtxn-zombie-{cont.name}", daemon=True)
        self._zombies.append(t)
        t.start()
        return cont.name

    def stop(self, timeout: float | None = None) -> bool:
        """No new generation after the running one; each thread then runs its final copier (in :meth:`drain`)."""
        self.emit("phase", name="workload.stopping", topic=self.config.topic)
        self._stop.set()
        return True

    def drain(self, timeout_s: float = 60.0) -> dict:
        """Wait for every copier thread (its running and final instances), then read the output topic back."""
        cfg = self.config
        self.emit("phase", name="drain.start", topic=cfg.topic, partitions=cfg.partition_ids)
        deadline = time.monotonic() + 2 * cfg.final_timeout_s + 30
        for t in [c.thread for c in self.copiers] + self._zombies:
            t.join(max(0.0, deadline - time.monotonic()))
        alive = [c.name for c in self.copiers if c.thread.is_alive()]
        for c in self.copiers:
            if c.thread.is_alive():
                c.crash()
        self.emit("phase", name="workload.stop", topic=cfg.topic, still_running=alive)
        if self._input is not None:
            self._input.flush(10)
        res = read_log(self.conf["bootstrap.servers"], cfg.topic, cfg.partition_ids, self.emit,
                       settle_s=cfg.read_settle_s)
        self.emit("phase", name="drain.end", topic=cfg.topic, records=sum(r["batches"] for r in res.values()),
                  incomplete=[p for p, r in res.items() if r["error"] or r["lso_below_high"]])
        return res
