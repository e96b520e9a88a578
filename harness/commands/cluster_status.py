"""``kafka-chaos cluster status --json``: the running clusters (or a nodes file's cluster) as one JSON
object on stdout, the same facts as the text form: for each cluster its name, bootstrap.servers, the
client settings a client needs (no secret), zookeeper.connect or the distribution, and per node its
container, role, state and published port::

    {"clusters": [{"name": "default", "bootstrap_servers": "127.0.0.1:32001,...", "distribution": "apache-kraft",
                   "zookeeper_connect": null, "client_config": {...},
                   "nodes": [{"name": "kc-default-b1", "role": "broker", "status": "running",
                              "endpoint": "127.0.0.1:32001"}, ...]}]}
"""

from __future__ import annotations

import json

from harness import distributions, docker_util


def _container_cluster(name: str) -> dict:
    from harness.cluster.cleanup import labelled_containers
    from harness.cluster.cluster import Cluster
    cs = labelled_containers(f"{docker_util.LABEL_CLUSTER}={name}")
    if cs and all(c["Labels"].get(docker_util.LABEL_SSHHOST) == "1" for c in cs):   # SSH test hosts
        return {"name": name, "kind": "ssh-test-hosts",
                "nodes": [{"name": c["Names"][0].lstrip("/"), "role": "sshhost", "status": c["State"],
                           "ports": {str(p["PrivatePort"]): f"127.0.0.1:{p['PublicPort']}"
                                     for p in c.get("Ports", []) if p.get("PublicPort")}}
                          for c in sorted(cs, key=lambda c: c["Names"][0])]}
    cl = Cluster.attach(name)
    return {"name": cl.name, "kind": "containers", "bootstrap_servers": cl.bootstrap_servers,
            "client_config": dict(cl.security.client_config()),
            "zookeeper_connect": cl.zookeeper_connect if cl.zookeepers else None,
            "distribution": cl.distribution.name,
            "nodes": [{"name": n.name, "role": n.role, "status": n.status(), "endpoint": f"127.0.0.1:{n.host_port}"}
                      for n in cl.nodes()]}


def _nodes_cluster(path: str) -> dict:
    from harness.cluster.remote_cluster import accesses, journal_of   # lazy: paramiko
    f = distributions.resolve(nodes=path).nodes
    accs = accesses(f)
    try:
        nodes = [{"name": name, "roles": list(rn.roles), "status": acc.status(), "where": acc.where()}
                 for (name, acc), rn in zip(accs.items(), f.nodes)]
    finally:
        for a in accs.values():
            a.close()
    return {"name": f.name, "kind": "nodes-file", "bootstrap_servers": f.bootstrap_servers,
            "nodes_file": str(f.path), "nodes": nodes, "pending_changes": len(journal_of(f).pending())}


def status_json(name: str | None, nodes: str | None) -> str:
    from harness.cluster.cleanup import list_clusters
    if nodes:
        return json.dumps({"clusters": [_nodes_cluster(nodes)]})
    names = [name] if name else sorted(list_clusters())
    return json.dumps({"clusters": [_container_cluster(n) for n in names]})
