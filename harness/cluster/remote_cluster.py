"""A cluster the harness does not start (``--nodes FILE``, the ``remote`` distribution:
harness/distributions/remote.py): connect and check instead of creating containers, undo instead of removing.

- :func:`check_nodes` (before any run: ``run``, ``certify``, ``cluster status``): every host answers SSH
  with the host key its known_hosts holds, ``sudo -n`` works where the file says sudo, the node's
  service process runs (and its ``service.status`` command succeeds when the file names one). Any
  failure is one line naming the node and the host (exit 2), and nothing has been changed.
- :func:`connect` (``Cluster.start``): the nodes with their SSH access (harness/remote/ssh.py), what the
  journal still holds from a harness that died undone first (harness/remote/journal.py), then the
  readiness wait of the control plane.
- :func:`release` (``Cluster.remove``): never stops the user's services; undoes what this process's
  journal lines still name (rules, chains, a paused or stopped process) and closes the connections.
- :func:`cleanup` (``kafka-chaos cleanup --nodes FILE``): undoes every pending journal line but those of
  a harness process still running.

Every journal line about a node is also appended to a copy on its host (:func:`mirror_to`); before it
undoes anything, each of the above reads the hosts' copies and takes in the lines this machine's journal
lacks (:func:`adopt_host_copies`: a harness on another machine made them), so a second harness machine
finds what the first left. Lines whose owner ran on another machine are undone only by ``cleanup``
(whether that harness still runs cannot be told from here); a run says they are there.
"""

from __future__ import annotations

import base64
import json
import secrets
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from harness.cluster.node import Node
from harness.cluster.owner import owner_alive, this_owner
from harness.errors import ClusterError, HarnessError
from harness.protocol.endpoint import Endpoint
from harness.remote.journal import HOST_STATE_DIR, Journal, parse_lines, pending_of
from harness.remote.ssh import SshAccess


def _log(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)


def journal_of(nodes) -> Journal:
    """The journal of a loaded nodes file (harness/remote/nodes_file.NodesFile)."""
    return Journal(nodes.name, this_owner(), owner_alive)


def node_name(nodes, rn) -> str:
    """A node's name in messages, the journal and the record: ``<file name>-<zk|n><id>``."""
    return f"{nodes.name}-{'zk' if 'zookeeper' in rn.roles else 'n'}{rn.id}"


def accesses(nodes, journal: Journal | None = None, run_tag: str = "check") -> dict[str, SshAccess]:
    accs = {node_name(nodes, rn): SshAccess(rn, nodes.interface, journal, run_tag, node_name(nodes, rn))
            for rn in nodes.nodes}
    if journal is not None:
        journal.mirror = mirror_to(nodes, accs)
    return accs


def host_copy(nodes) -> str:
    """The journal's copy on each host (a path in the SSH user's home there)."""
    return f"{HOST_STATE_DIR}/{nodes.name}.jsonl"


def mirror_to(nodes, accs: dict[str, SshAccess]):
    """The journal's ``mirror``: append a line to the copy on the host of the node it names (as the SSH
    user, not root: one short command, before the change itself is sent)."""
    path = host_copy(nodes)

    def mirror(node: str, entry: dict) -> None:
        acc = accs.get(node)
        if acc is None:
            return
        data = base64.b64encode((json.dumps(entry, sort_keys=True) + "\n").encode()).decode()
        rc, out = acc._run(f"mkdir -p {HOST_STATE_DIR} && echo {data} | base64 -d >> {path}", privileged=False)
        if rc != 0:
            raise ClusterError(f"{acc.where()}: cannot append to {path}: {out.decode(errors='replace')[:200]}")
    return mirror


def host_lines(nodes, accs: dict[str, SshAccess]) -> list[dict]:
    """Every line of the journal's copies on the hosts (a host that cannot be read: none of its lines)."""
    path = host_copy(nodes)

    def read(name: str, acc: SshAccess) -> list[dict]:
        try:
            rc, out = acc._run(f"cat {path} 2>/dev/null; true", privileged=False)
        except HarnessError:
            return []
        return parse_lines(out.decode(errors="replace")) if rc == 0 else []
    return [e for lines in _parallel(read, accs).values() for e in lines]


def pending_everywhere(nodes, accs: dict[str, SshAccess]) -> list[dict]:
    """Read-only: this machine's pending journal lines, then the hosts' pending lines it lacks."""
    journal = journal_of(nodes)
    known = {e.get("id") for e in journal.read()}
    return journal.pending() + [e for e in pending_of(host_lines(nodes, accs)) if e["id"] not in known]


def adopt_host_copies(nodes, journal: Journal, accs: dict[str, SshAccess]) -> list[dict]:
    """Take the hosts' pending lines this machine's journal lacks into it (Journal.adopt); log them."""
    new = journal.adopt(host_lines(nodes, accs))
    if new:
        owners = sorted({f"{(e.get('owner') or {}).get('host', '?')} pid {(e.get('owner') or {}).get('pid', '?')}"
                         for e in new})
        _log(f"{nodes.name}: the hosts hold {len(new)} change(s) this machine's journal did not ({', '.join(owners)})")
    return new


def compact_host_copies(nodes, accs: dict[str, SshAccess]) -> None:
    """Empty each host's copy once nothing in it is pending (unless it grew meanwhile: another harness)."""
    path = host_copy(nodes)

    def one(name: str, acc: SshAccess) -> None:
        rc, out = acc._run(f"[ -f {path} ] && stat -c %s {path} && cat {path}; true", privileged=False)
        text = out.decode(errors="replace")
        size, _, body = text.partition("\n")
        if rc == 0 and size.strip().isdigit() and int(size) > 0 and not pending_of(parse_lines(body)):
            acc._run(f"[ \"$(stat -c %s {path})\" = {int(size)} ] && : > {path}; true", privileged=False)
    try:
        _parallel(one, accs)
    except HarnessError:
        pass                       # a host gone meanwhile: its copy stays, and says what it says


def _foreign_left(nodes, journal: Journal) -> None:
    """Say which pending lines a harness on another machine owns (not undone here: it may still run)."""
    mine = journal.owner.get("host")
    foreign = [e for e in journal.pending() if (e.get("owner") or {}).get("host") != mine]
    if foreign:
        hosts = sorted({(e.get("owner") or {}).get("host", "?") for e in foreign})
        _log(f"{nodes.name}: {len(foreign)} change(s) on the hosts by a harness on {', '.join(hosts)} are not "
             f"undone (it may still run); `kafka-chaos cleanup --nodes {nodes.path}` undoes them")


def _parallel(fn, items: dict) -> dict:
    """``fn(name, item)`` for every item at once (bounded by the SSH timeouts); the first error raised."""
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(items)))) as pool:
        futs = {name: pool.submit(fn, name, item) for name, item in items.items()}
        return {name: f.result() for name, f in futs.items()}


def _check_one(name: str, acc: SshAccess) -> None:
    acc.connect()                  # host key and reachability: HostKeyError / Unreachable, one line
    rc, out = acc._run("true")
    if rc != 0:
        raise HarnessError(f"{name} ({acc.where()}): `sudo -n` refused ({out.decode(errors='replace').strip()[:160]}); "
                           "the nodes file says sudo = true: the harness user needs passwordless sudo there "
                           "(docs/remote.md)")
    if acc.svc.status:
        rc, out = acc._run(acc.svc.status)
        if rc != 0:
            raise HarnessError(f"{name} ({acc.where()}): service.status `{acc.svc.status}` failed (exit {rc}): "
                               f"{out.decode(errors='replace').strip()[:160]}")
    st = acc.status()
    if st != "running":
        raise HarnessError(f"{name} ({acc.where()}): its service process is {st} "
                           f"({acc.svc.pidfile or acc.svc.process}); start it first (the harness never does "
                           "before a run)")


def check_nodes(nodes) -> None:
    """Every host reachable with its known host key, sudo working, every service running; HarnessError
    (one line naming node and host) otherwise. Changes nothing but undoing what a harness that died left
    (its journal lines: harness/remote/journal.py); closes its connections."""
    journal = journal_of(nodes)
    accs = accesses(nodes, journal)
    try:
        _parallel(lambda name, a: a.connect(), accs)     # every host key checked before anything runs
        adopt_host_copies(nodes, journal, accs)
        if journal.pending():
            recover(nodes, journal, accs, "dead")
            _foreign_left(nodes, journal)
        _parallel(_check_one, accs)
    finally:
        for a in accs.values():
            a.close()


def recover(nodes, journal: Journal, accs: dict[str, SshAccess], which: str = "dead") -> int:
    """Undo the pending journal lines of ``which`` owners (journal.Journal.undo) through ``accs``."""
    def run(node: str, script: str) -> None:
        acc = accs.get(node)
        if acc is None:
            raise ClusterError(f"no node {node} in {nodes.path}")
        rc, out = acc._run(script)
        if rc != 0:
            raise ClusterError(f"exit {rc}: {out.decode(errors='replace').strip()[:200]}")
    n, errors = journal.undo(run, which)
    if n:
        _log(f"{nodes.name}: undid {n} change(s) a previous harness left on the hosts ({journal.path})")
    if errors:
        raise ClusterError(f"{nodes.name}: could not undo what the journal {journal.path} holds: {errors[0]}")
    return n


def connect(cluster) -> None:
    """``Cluster.start`` of a remote cluster: nodes, accesses, leftovers undone, readiness."""
    t0 = time.monotonic()
    f = cluster.distribution.nodes
    journal = journal_of(f)
    cluster.journal = journal
    cluster.run_tag = secrets.token_hex(4)
    accs = {}
    for rn in f.nodes:
        name = node_name(f, rn)
        acc = SshAccess(rn, f.interface, journal, cluster.run_tag, name)
        accs[name] = acc
    journal.mirror = mirror_to(f, accs)
    for rn in f.nodes:
        name = node_name(f, rn)
        acc = accs[name]
        # where the harness's clients reach it: the file's endpoint (a controller-only node has none: its
        # CONTROLLER listener at its address, which nothing but the plan's listing uses)
        ep = rn.endpoint or Endpoint(rn.address, rn.controller_port)
        if "zookeeper" in rn.roles:
            node = Node(cluster.name, "zookeeper", rn.id, name, name, ep.port, "", client_port=rn.client_port,
                        access=acc, address=rn.address, host=ep.host)
            cluster.aux_nodes.setdefault("zookeeper", []).append(node)
        elif "broker" in rn.roles:
            cluster.brokers[rn.id] = Node(cluster.name, "broker", rn.id, name, name, ep.port,
                                          rn.service.started_line, client_port=rn.client_port, access=acc,
                                          address=rn.address, host=ep.host)
        else:
            cluster.aux_nodes.setdefault("controller", []).append(
                Node(cluster.name, "controller", rn.id, name, name, ep.port, rn.service.started_line,
                     client_port=rn.controller_port, access=acc, address=rn.address, host=ep.host))
    for n in cluster.nodes():      # the listener ports network faults match (harness/nemesis/fault_base.py)
        rn = n.access.node
        n.internal_port, n.controller_port = rn.internal_port, rn.controller_port
    try:
        _parallel(lambda name, a: a.connect(), accs)
        adopt_host_copies(f, journal, accs)
        recover(f, journal, accs, "dead")
        _foreign_left(f, journal)
        _parallel(_check_one, accs)
        cluster.broker_config = cluster.distribution.common_config({}, len(cluster.brokers), {})
        cluster.started = True
        _log(f"{cluster.name}: connected to {cluster._layout()} of {f.path} ({f.name}) in "
             f"{time.monotonic() - t0:.1f} s")
        # the users and certificates are the cluster's own and exist already: a refused login or an
        # untrusted certificate is final at once (one line, exit 2), not a cluster that is slow to be ready
        from harness.cluster.listener_security import check_client_access
        check_client_access(cluster, timeout_s=5.0)
        cluster.wait_ready(cluster.spec.startup_timeout_s)
        _parallel(lambda name, n: check_client_port(n), {n.name: n for n in cluster.brokers.values()})
    except BaseException:
        release(cluster)
        raise


def listening_ports(acc: SshAccess) -> set[int]:
    """The TCP ports something listens on at the host of ``acc`` (``/proc/net/tcp`` and ``tcp6``, state 0A)."""
    rc, out = acc._run("cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == \"0A\" {print $2}'",
                       privileged=False)
    if rc != 0:
        raise ClusterError(f"{acc.where()}: cannot read /proc/net/tcp (exit {rc})")
    return {int(a.rsplit(":", 1)[1], 16) for a in out.decode(errors="replace").split() if ":" in a}


def check_client_port(node) -> None:
    """A ready broker of a nodes file listens on its client port on its host (``[ports] client``, else the
    endpoint's port), which a ``client`` link cut matches: otherwise the cut would leave the clients'
    traffic alone and network.client_only would FAIL a correct broker. HarnessError (one line) if not."""
    port = node.client_port
    ports = listening_ports(node.access)
    if port not in ports:
        others = sorted(p for p in ports if p not in (node.internal_port, node.controller_port))[:8]
        raise HarnessError(f"{node.name} ({node.access.where()}): nothing listens on port {port} on the host, "
                           f"the broker's client port ([ports] client, else the endpoint {node.endpoint}'s port); "
                           f"set [ports] client to the port its client listener binds (listening there: "
                           f"{', '.join(map(str, others)) or 'nothing'})")


def release(cluster) -> None:
    """``Cluster.remove`` of a remote cluster: undo this process's journal lines, close connections."""
    journal = getattr(cluster, "journal", None)
    accs = {n.name: n.access for n in cluster.nodes()}
    try:
        if journal is not None:
            recover(cluster.distribution.nodes, journal, accs, "mine")
            compact_host_copies(cluster.distribution.nodes, accs)
    finally:
        for a in accs.values():
            a.close()


def cleanup(nodes) -> int:
    """``kafka-chaos cleanup --nodes FILE``: undo every pending journal line except a live harness's."""
    journal = journal_of(nodes)
    accs = accesses(nodes, journal)
    try:
        adopt_host_copies(nodes, journal, accs)         # what a harness on another machine left
        if not journal.pending():
            return 0
        n = recover(nodes, journal, accs, "all")
        compact_host_copies(nodes, accs)
        return n
    finally:
        for a in accs.values():
            a.close()
