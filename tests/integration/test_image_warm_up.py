"""The build-time warm-up of a KRaft-capable image (harness/image_files/warm-up.sh).

Two things come out of it, and each is checked against Kafka itself:
- the storage template the entrypoint formats an empty node from must be what Kafka's storage tool
  writes for the harness's own node configuration (the same bootstrap records, the same
  meta.properties keys), or a cluster would start from metadata Kafka would not have written;
- the class-data-sharing archive must map and serve Kafka's classes to the image's JVMs (with
  ``-Xshare:on`` a JVM that cannot use it exits with an error instead of silently loading from jars).
"""

from __future__ import annotations

import base64
import os
import subprocess
from types import SimpleNamespace

import pytest

from harness import images
from harness.cluster.cluster import ClusterSpec
from harness.distributions import ApacheKraft, properties_text
from harness.distributions.dedicated import ApacheKraftDedicated
from harness.distributions.node_settings import DEFAULT_BROKER_CONFIG
from harness.observer.kraft_metadata import parse_segment_bytes

pytestmark = pytest.mark.docker

# 3.9 (ZooKeeper too), a 4.x that keeps the bootstrap records in bootstrap.checkpoint (4.1.2) and
# one that writes them into the metadata log's zero checkpoint, for controllers only (4.4.0, KAFKA-19648)
VERSIONS = [images.resolve_version(None, images.ZK), os.environ.get("KAFKA_CHAOS_KAFKA4_VERSION", "4.1.2"), "4.4.0"]
ZERO = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"
# the tool's output and the template hold the bootstrap records in one of these (the first found)
BOOTSTRAP_FILES = ("bootstrap.checkpoint", ZERO)


@pytest.fixture(scope="module", params=VERSIONS)
def image(request, kc_docker):
    return images.build(request.param).tag


def _sh(image: str, script: str, env: dict | None = None) -> str:
    cmd = ["docker", "run", "--rm", "--network", "none", "--label", "kafka-chaos=1", "--entrypoint", "sh"]
    for k, v in (env or {}).items():
        cmd += ["-e", f"{k}={v}"]
    res = subprocess.run(cmd + [image, "-c", script], capture_output=True, timeout=300)
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-2000:]
    return res.stdout


def _node_config(node_id: int) -> str:
    """The server properties the harness gives node ``node_id`` of a 3-node combined KRaft cluster."""
    dist = ApacheKraft()
    nodes = [SimpleNamespace(node_id=i, alias=f"broker{i}", host_port=0) for i in (1, 2, 3)]
    common = dist.common_config(DEFAULT_BROKER_CONFIG, 3, {})
    return properties_text(dist.node_config(common, nodes[node_id - 1], nodes))


def _node_config_of_role(roles: str) -> str:
    """The server properties of a node with process.roles ``roles``: a combined node, or a broker-only
    or controller-only node of the dedicated layout (harness/distributions/dedicated.py)."""
    if roles == "broker,controller":
        return _node_config(1)
    dd = ApacheKraftDedicated()
    brokers = [SimpleNamespace(node_id=i, alias=f"broker{i}", host_port=0, role="broker") for i in (1, 2, 3)]
    controllers = [SimpleNamespace(node_id=i, alias=f"controller{i}", host_port=0, role="controller")
                   for i in (101, 102, 103)]
    common = dd.common_config(DEFAULT_BROKER_CONFIG, 3, {})
    if roles == "broker":
        config = dd.plan(common, brokers[0], brokers + controllers, cluster_id="cid").config
    else:
        (group,) = dd.node_groups(ClusterSpec(distribution="apache-kraft-dedicated"))
        config = dd.aux_plan(group, controllers[0], controllers, common, brokers + controllers, "cid", {}).config
    assert config["process.roles"] == roles
    return properties_text(config)


# the first bootstrap file under $1 (a log dir or the template), base64 on one line; "none" if none
_B64_BOOTSTRAP = ("b64_bootstrap() { for f in " + " ".join(BOOTSTRAP_FILES) + "; do "
                  "if [ -f \"$1/$f\" ]; then echo \"$f\"; base64 -w0 \"$1/$f\"; echo; return; fi; done; "
                  "echo none; echo; }; ")


def _records(blob: bytes) -> list[tuple]:
    out = []
    for batch in parse_segment_bytes(blob, "bootstrap.checkpoint").batches:
        for r in batch.records:
            fields = {k: v for k, v in r.fields.items()
                      if k not in ("lastContainedLogTimestamp", "last_contained_log_timestamp")}   # the format time
            out.append((r.type, r.control, r.version, sorted(fields.items())))
    return out


def _props(text: str) -> dict:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_storage_template_is_what_the_storage_tool_writes_for_a_harness_node(image):
    config = _node_config(2)
    script = (_B64_BOOTSTRAP + "printf '%s\\n' \"$C\" > /tmp/s.properties && "
              "java -Xmx256m -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format -t MkU3OEVBNTcwNTJENDM2Qk "
              "-c /tmp/s.properties >/dev/null 2>&1 && "
              "b64_bootstrap /var/lib/kafka/data && b64_bootstrap /opt/kafka-chaos/kraft-template && "
              "cat /var/lib/kafka/data/meta.properties && echo ---- && cat /opt/kafka-chaos/kraft-template/meta.properties")
    out = _sh(image, script, {"C": config}).decode()
    tool_name, tool_b64, tpl_name, tpl_b64, rest = out.split("\n", 4)
    tool_meta, tpl_meta = rest.split("----\n")
    assert tool_name in BOOTSTRAP_FILES and tpl_name == tool_name     # the same file, where the tool put it
    tool, tpl = _records(base64.b64decode(tool_b64)), _records(base64.b64decode(tpl_b64))
    assert tool and tool == tpl
    assert any(t == "FeatureLevelRecord" and dict(f).get("name") == "metadata.version" for t, _, _, f in tpl)
    assert set(_props(tool_meta)) == set(_props(tpl_meta))
    assert _props(tool_meta)["version"] == _props(tpl_meta)["version"] == "1"


def test_entrypoint_formats_from_the_template_with_the_nodes_ids(image):
    config = _node_config(3)
    # the entrypoint's kraft mode, stopped right after the format (no server: "java" is a stub here)
    script = ("mkdir -p /tmp/bin && printf '#!/bin/sh\\necho java-stub \"$@\"\\n' > /tmp/bin/java && "
              "chmod +x /tmp/bin/java && PATH=/tmp/bin:$PATH /opt/kafka-chaos/entrypoint.sh kraft && "
              "cat /var/lib/kafka/data/meta.properties && cd /opt/kafka-chaos/kraft-template && "
              "for f in $(find . -name '*.checkpoint'); do cmp $f /var/lib/kafka/data/$f || exit 1; done")
    out = _sh(image, script, {"KC_CONFIG": config, "KC_CLUSTER_ID": "MkU3OEVBNTcwNTJENDM2Qk"}).decode()
    assert "from the image's storage template" in out
    java_lines = [line for line in out.splitlines() if line.startswith("java-stub")]
    assert len(java_lines) == 1 and "kafka.Kafka" in java_lines[0]        # the storage tool did not run
    assert "-XX:SharedArchiveFile=/opt/kafka-chaos/kafka.jsa" in java_lines[0]
    meta = _props("\n".join(line for line in out.splitlines()
                             if "=" in line and not line.startswith(("java-stub", "Formatting"))))
    assert meta["cluster.id"] == "MkU3OEVBNTcwNTJENDM2Qk" and meta["node.id"] == "3"
    if "directory.id" in meta:
        assert len(meta["directory.id"]) == 22 and not meta["directory.id"].startswith("-")


@pytest.mark.parametrize("roles", ["broker", "controller", "broker,controller"])
def test_entrypoint_writes_the_files_the_storage_tool_writes_for_each_role(image, roles):
    """From 4.4 the tool writes the bootstrap records for a node with the controller role only: a
    broker-only node formatted from the template must get no zero checkpoint either (nor miss one)."""
    config = _node_config_of_role(roles)
    files = "cd /var/lib/kafka/data && find . -type f | sort && echo ---- && rm -rf /var/lib/kafka/data/* && "
    script = ("mkdir -p /tmp/bin && printf '#!/bin/sh\\necho java-stub \"$@\"\\n' > /tmp/bin/java && "
              "chmod +x /tmp/bin/java && printf '%s\\n' \"$KC_CONFIG\" > /tmp/s.properties && "
              "java -Xmx256m -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format "
              "-t MkU3OEVBNTcwNTJENDM2Qk -c /tmp/s.properties >/dev/null 2>&1 && " + files +
              "PATH=/tmp/bin:$PATH /opt/kafka-chaos/entrypoint.sh kraft >/dev/null && "
              "cd /var/lib/kafka/data && find . -type f | sort")
    out = _sh(image, script, {"KC_CONFIG": config, "KC_CLUSTER_ID": "MkU3OEVBNTcwNTJENDM2Qk"}).decode()
    tool, entrypoint = (part.split() for part in out.split("----\n"))
    assert "./meta.properties" in tool and entrypoint == tool


def test_class_data_sharing_archive_serves_kafka_classes(image):
    # the server's main with a missing config file loads Kafka's and Scala's classes up to reading it;
    # count those (the archive also holds the JDK's, which the JVM's default archive has too)
    loads = _sh(image, "java -Xshare:on -XX:SharedArchiveFile=/opt/kafka-chaos/kafka.jsa -Xlog:class+load "
                       "-cp '/opt/kafka/libs/*' kafka.Kafka /nonexistent 2>&1 | grep -E ' (kafka|org[.]apache[.]kafka|scala)[.]' "
                       "|| true").decode().splitlines()
    from_archive = [line for line in loads if "source: shared objects file" in line]
    assert len(from_archive) > 200 and len(from_archive) >= 0.95 * len(loads), \
        f"{len(from_archive)} of {len(loads)} Kafka / Scala classes came from the archive"


def test_the_archive_of_an_image_with_zookeeper_serves_zookeeper_mode_classes(image):
    """Before 4.0 the image also runs ZooKeeper servers and ZooKeeper-mode brokers: their classes are
    in the archive too (warm-up.sh lists what a ZooKeeper server and a ZooKeeper-mode broker load)."""
    if int(_sh(image, "ls /opt/kafka/libs/ | grep -c '^zookeeper-[0-9]' || true")) == 0:
        pytest.skip("no ZooKeeper in this image (Kafka 4.x)")
    # PrintSharedArchiveAndExit lists the archived classes as "N: name loader": the ZooKeeper server's
    # and the ZooKeeper-mode broker's (kafka.server.KafkaServer; KRaft runs BrokerServer / ControllerServer)
    want = {"org.apache.zookeeper.server.ZooKeeperServer", "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            "kafka.server.KafkaServer", "kafka.zk.KafkaZkClient"}
    listed = _sh(image, "java -Xshare:on -XX:SharedArchiveFile=/opt/kafka-chaos/kafka.jsa -XX:+PrintSharedArchiveAndExit "
                        "-cp '/opt/kafka/libs/*' 2>&1 | grep -E ' (org[.]apache[.]zookeeper|kafka[.](server|zk))[.]' "
                        "|| true").decode().splitlines()
    assert want <= {line.split()[1] for line in listed if len(line.split()) > 1}
