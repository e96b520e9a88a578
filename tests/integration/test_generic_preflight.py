"""``certify --broker-image IMG`` of a foreign image under ``generic`` (no distribution file) whose brokers
report a node id they were not given (111 on every broker: it ignores KAFKA_NODE_ID) is INCOMPATIBLE with
one line naming the ids and the distribution-file key to set, after one preflight cluster instead of every
scenario waiting out its 120 s start (issue 43). The image is built here from kafka-chaos/kfake (no pull);
one Docker test, one cluster; the time it takes is printed, not asserted (benchmarks/ for figures)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from harness import docker_util
from harness.foreign_images import KFAKE_TAG, build_kfake

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def foreign111(kc_docker, tmp_path_factory):
    """kfake with KFAKE_NODE_IDS=111 baked in: what the generic adapter's environment does not change."""
    build_kfake()
    ctx = tmp_path_factory.mktemp("foreign111")
    # it listens where the harness's listener settings say (the advertised EXTERNAL port), as an
    # apache/kafka-style image does, but reports node id 111 whatever KAFKA_NODE_ID says
    (ctx / "run-foreign.sh").write_text(
        'port=$(printf %s "$KAFKA_ADVERTISED_LISTENERS" | sed -E \'s|.*EXTERNAL://[^:]*:([0-9]+).*|\\1|\')\n'
        'exec env KFAKE_PORTS="$port" /usr/local/bin/kfake-broker\n')
    (ctx / "Dockerfile").write_text(f"FROM {KFAKE_TAG}\nENV KFAKE_NODE_IDS=111\nCOPY run-foreign.sh /run-foreign.sh\n"
                                    'ENTRYPOINT ["/bin/sh", "/run-foreign.sh"]\n')
    tag = f"kafka-chaos-test/foreign111:{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "build", "--pull=false", "-q", "-t", tag, str(ctx)], check=True, capture_output=True,
                   timeout=120)
    yield tag
    subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=60)


def test_foreign_ids_under_generic_are_incompatible_with_the_key_to_set(foreign111, tmp_path):
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "harness.cli", "certify", "--broker-image", foreign111,
                          "--profile", "compatible", "--out", str(tmp_path / "cert")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - t0
    print(f"certify of a node-id-111 image under generic: exit {res.returncode} in {seconds:.1f} s")
    assert res.returncode == 3, res.stderr[-3000:]
    line = res.stdout.strip().splitlines()[-1]
    print(line)
    assert line.startswith("INCOMPATIBLE "), res.stdout
    cert = json.loads((tmp_path / "cert" / "certificate.json").read_text())
    assert cert["overall"] == "INCOMPATIBLE" and cert["capabilities"] == []
    reason = cert["overall_reason"]
    assert "node ids [111]" in reason and "node_ids = [111]" in reason and "distribution file" in reason, reason
    assert "[1, 2, 3]" in reason and "KAFKA_NODE_ID" in reason, reason
    assert "[1/" not in res.stderr              # no scenario ran
    left = docker_util.client().containers.list(all=True, filters={"ancestor": foreign111})
    assert not left, [c.name for c in left]
