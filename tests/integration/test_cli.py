"""The kafka-chaos command line against a real engine: cluster up/status/down and every bad-input path."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from harness.cluster.cleanup import list_clusters, reap_orphans
from harness.errors import EXIT_ENV
from tests.subproc import sigint_default

pytestmark = pytest.mark.docker


def kc(*args, env=None, timeout=300):
    e = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=e)


def _error_line(res) -> str:
    lines = [l for l in res.stderr.splitlines() if l.startswith("kafka-chaos: error:")]
    assert len(lines) == 1, res.stderr
    return lines[0]


@pytest.fixture
def cli_cluster_name(kc_image):
    name = f"cli{os.getpid() % 100000}"
    yield name
    kc("cluster", "down", "--name", name)
    assert name not in list_clusters()


def test_cluster_up_status_down(cli_cluster_name, kc_image):
    name = cli_cluster_name
    up = kc("cluster", "up", "--name", name, "--brokers", "2", "--broker-image", kc_image.tag, "--distribution", "apache-zk",
            "--distribution", "apache-zk", "--config", "min.insync.replicas=2")
    assert up.returncode == 0, up.stderr
    lines = dict(l.split("=", 1) for l in up.stdout.splitlines() if "=" in l)
    assert lines["bootstrap.servers"].count("127.0.0.1:") == 2
    assert lines["zookeeper.connect"].startswith("127.0.0.1:")

    # a host client can use exactly what `up` printed
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": lines["bootstrap.servers"]}).list_topics(timeout=10)
    assert set(md.brokers) == {1, 2}

    st = kc("cluster", "status", "--name", name)
    assert st.returncode == 0
    assert f"bootstrap.servers={lines['bootstrap.servers']}" in st.stdout
    assert f"zookeeper.connect={lines['zookeeper.connect']}" in st.stdout

    again = kc("cluster", "up", "--name", name, "--broker-image", kc_image.tag, "--distribution", "apache-zk")
    assert again.returncode == 2
    assert "already exists" in _error_line(again)
    assert name in list_clusters()  # the first one is untouched

    down = kc("cluster", "down", "--name", name)
    assert down.returncode == 0
    assert name not in list_clusters()


def test_cluster_up_default_is_kraft_on_the_newest_4x(cli_cluster_name):
    """`cluster up` with no distribution, version or image: KRaft (apache-kraft) on the newest 4.x (issue 40),
    no ZooKeeper, a quorum, usable bootstrap servers."""
    from harness import docker_util, images
    name = cli_cluster_name
    up = kc("cluster", "up", "--name", name, "--build")
    assert up.returncode == 0, up.stderr
    default = images.image_tag(images.resolve_version(None))
    assert default.startswith(images.KAFKA_REPO + ":4.")
    assert default in docker_util.client().containers.get(f"kc-{name}-b1").image.tags
    lines = dict(l.split("=", 1) for l in up.stdout.splitlines() if "=" in l)
    assert lines["distribution"] == "apache-kraft" and "zookeeper.connect" not in lines
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": lines["bootstrap.servers"]}).list_topics(timeout=10)
    assert set(md.brokers) == {1, 2, 3}
    st = kc("cluster", "status", "--name", name)
    assert st.returncode == 0 and "distribution=apache-kraft" in st.stdout
    assert "zk" not in "".join(l.split()[1] for l in st.stdout.splitlines() if l.startswith("# kc-"))
    from harness.cluster.cluster import Cluster
    q = Cluster.attach(name).quorum()
    assert q.error is None and q.leader_id in (1, 2, 3) and sorted(v.replica_id for v in q.voters) == [1, 2, 3]


def test_unknown_version_is_one_line_exit_2():
    res = kc("images", "build", "--kafka", "3.9.99")
    assert res.returncode == 2
    assert "unknown Kafka version 3.9.99" in _error_line(res)
    res = kc("cluster", "up", "--name", "nover", "--kafka-version", "banana")
    assert res.returncode == 2
    assert "unknown Kafka version" in _error_line(res)
    assert "nover" not in list_clusters()


def test_missing_image_is_one_line_exit_2():
    res = kc("cluster", "up", "--name", "noimg", "--broker-image", "vendor/kafka:does-not-exist")
    assert res.returncode == 2
    assert "not present locally" in _error_line(res)
    assert "noimg" not in list_clusters()


def test_docker_unreachable_is_one_line_exit_5(tmp_path):
    env = {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    for args in (["images", "list"], ["cluster", "up", "--name", "nodock"], ["cluster", "status"]):
        res = kc(*args, env=env)
        assert res.returncode == EXIT_ENV, (args, res.stderr)     # not a usage error (docs/cli.md)
        assert "Docker engine unreachable" in _error_line(res)


def test_port_conflict_is_one_line_exit_5_and_nothing_left(kc_image):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        res = kc("cluster", "up", "--name", "portc", "--broker-image", kc_image.tag, "--distribution", "apache-zk",
                 "--port-base", str(busy - 1))  # broker 1 would get `busy`
    assert res.returncode == EXIT_ENV
    assert "port conflict" in _error_line(res)
    assert "portc" not in list_clusters()


def test_typo_and_missing_action_are_exit_2():
    assert kc("clustr", "up").returncode == 2
    assert kc("cluster").returncode == 2
    assert kc("images", "build", "--nope").returncode == 2


def test_orphans_of_a_killed_harness_process_are_reaped(kc_image):
    """A harness process killed with SIGKILL leaves containers; the next start (or cleanup) removes them."""
    script = textwrap.dedent(f"""
        import sys, time
        from harness.cluster.cluster import Cluster, ClusterSpec
        c = Cluster(ClusterSpec(brokers=1, zookeepers=1, name="orphan{os.getpid() % 10000}",
                                image="{kc_image.tag}", distribution="apache-zk"))
        c.wait_ready = lambda *a, **k: None
        c.start()
        print("up", flush=True)
        time.sleep(600)
    """)
    name = f"orphan{os.getpid() % 10000}"
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        assert name in list_clusters()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert name in list_clusters()  # left behind by the killed process
    assert name in reap_orphans()
    assert name not in list_clusters()


def test_ctrl_c_during_cluster_up_removes_the_cluster(kc_image):
    name = f"intr{os.getpid() % 10000}"
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "cluster", "up", "--name", name,
                             "--broker-image", kc_image.tag, "--distribution", "apache-zk"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "KAFKA_CHAOS_QUIET": "0"}, preexec_fn=sigint_default)
    deadline = time.monotonic() + 60
    while name not in list_clusters() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert name in list_clusters()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert name not in list_clusters()
