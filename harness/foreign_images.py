"""Broker images that are not Apache Kafka, built offline from package registries (docs/broker-contract.md).

``kafka-chaos images build-kfake`` (or scripts/build-kfake.sh) builds ``kafka-chaos/kfake:latest``:
franz-go's in-memory Kafka-compatible cluster ``kfake`` (Go module ``github.com/twmb/franz-go/pkg/kfake``)
wrapped by the small main in ``brokers/kfake/`` (flags / ``KFAKE_*`` variables for node ids, ports,
advertised host, cluster id, hidden APIs). The binary is compiled on the host with the Go module
proxy (``GOFLAGS=-mod=mod``; versions pinned by brokers/kfake/go.mod and go.sum), then copied into an
image ``FROM`` the local base image (no image is pulled; ``DOCKER_BUILDKIT=0``).

``kafka-chaos images build-kroxylicious`` builds ``kafka-chaos/kroxylicious:<kafka version>``: the
Kroxylicious Kafka protocol proxy (Maven Central ``io.kroxylicious:kroxylicious-runtime``, started by
the ten-line main in ``brokers/kroxylicious/``) in front of Apache Kafka in KRaft mode, one proxy per
node in the node's container (brokers/kroxylicious/kroxy-node.sh). The jar and its dependencies are
resolved and compiled on the host by Maven (``mvn package dependency:copy-dependencies``), then copied
into an image ``FROM`` the local ``kafka-chaos/kafka:<version>`` image (built if missing).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import docker_util
from .errors import HarnessError
from .images import BASE_TAG, ensure_base_image, find_image

KFAKE_TAG = "kafka-chaos/kfake:latest"
KFAKE_SRC = Path(__file__).resolve().parent.parent / "brokers" / "kfake"
GO_CANDIDATES = ("go", "/usr/local/go/bin/go")
KROXY_SRC = Path(__file__).resolve().parent.parent / "brokers" / "kroxylicious"
KROXY_KAFKA = "4.1.2"          # the Apache Kafka behind the proxy (docs/examples/kroxylicious.toml)


def kroxylicious_tag(kafka_version: str = KROXY_KAFKA) -> str:
    return f"kafka-chaos/kroxylicious:{kafka_version}"


@dataclass
class ForeignBuild:
    tag: str
    image_id: str
    cached: bool
    seconds: float


def _go() -> str:
    for g in GO_CANDIDATES:
        path = shutil.which(g) or (g if os.access(g, os.X_OK) else None)
        if path:
            return path
    raise HarnessError("Go is not installed (looked for `go` on PATH and /usr/local/go/bin/go); "
                       "kfake is built from its Go module")


def _sources_hash(base_id: str, src: Path = KFAKE_SRC) -> str:
    h = hashlib.sha256(base_id.encode())
    for f in sorted(p for p in src.rglob("*") if "target" not in p.relative_to(src).parts):
        if f.is_file():
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def kfake_dockerfile(input_hash: str) -> str:
    return (f"FROM {BASE_TAG}\n"
            "COPY kfake-broker /usr/local/bin/kfake-broker\n"
            "RUN chmod 0755 /usr/local/bin/kfake-broker\n"
            "USER 1000\n"
            f"LABEL kafka-chaos=1 kafka-chaos.distribution=generic kafka-chaos.broker=kfake "
            f"kafka-chaos.input-hash={input_hash}\n"
            "ENTRYPOINT [\"/usr/local/bin/kfake-broker\"]\n")


def build_kfake(force: bool = False) -> ForeignBuild:
    """Build ``kafka-chaos/kfake:latest`` (cached by the hash of brokers/kfake/ and the base image)."""
    t0 = time.monotonic()
    if not (KFAKE_SRC / "go.mod").is_file():
        raise HarnessError(f"kfake's Go sources are not at {KFAKE_SRC}: they come with a checkout of the "
                           "kafka-chaos repository (brokers/kfake), not with the installed package; run "
                           "`kafka-chaos images build-kfake` from a checkout")
    docker_util.client()
    base_id = ensure_base_image(force=False)
    want = _sources_hash(base_id)
    img = find_image(KFAKE_TAG)
    if img is not None and not force and img.labels.get("kafka-chaos.input-hash") == want:
        return ForeignBuild(KFAKE_TAG, img.id, True, time.monotonic() - t0)
    with tempfile.TemporaryDirectory(prefix="kc-kfake-") as ctx:
        ctxp = Path(ctx)
        env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
        res = subprocess.run([_go(), "build", "-trimpath", "-o", str(ctxp / "kfake-broker"), "."],
                             cwd=KFAKE_SRC, capture_output=True, text=True, env=env)
        if res.returncode != 0:
            raise HarnessError(f"go build of brokers/kfake failed: {res.stderr.strip()[-400:]}")
        (ctxp / "Dockerfile").write_text(kfake_dockerfile(want))
        res = subprocess.run(["docker", "build", "-q", "-t", KFAKE_TAG, str(ctxp)], capture_output=True, text=True,
                             env={**os.environ, "DOCKER_BUILDKIT": "0"})
        if res.returncode != 0:
            raise HarnessError(f"docker build of {KFAKE_TAG} failed: {res.stderr.strip()[-400:]}")
    img = find_image(KFAKE_TAG)
    return ForeignBuild(KFAKE_TAG, img.id, False, time.monotonic() - t0)


def kroxylicious_dockerfile(base_tag: str, input_hash: str) -> str:
    return (f"FROM {base_tag}\n"
            "COPY lib /opt/kroxylicious/lib\n"
            "COPY kroxylicious-broker.jar kroxy-node.sh /opt/kroxylicious/\n"
            "USER root\n"
            "RUN chmod 0755 /opt/kroxylicious/kroxy-node.sh && chmod -R a+rX /opt/kroxylicious\n"
            "USER kafka\n"
            "LABEL kafka-chaos.distribution=generic kafka-chaos.broker=kroxylicious "
            f"kafka-chaos.input-hash={input_hash}\n"
            "ENTRYPOINT [\"/opt/kroxylicious/kroxy-node.sh\"]\n")


def build_kroxylicious(kafka_version: str = KROXY_KAFKA, force: bool = False) -> ForeignBuild:
    """Build ``kafka-chaos/kroxylicious:<kafka_version>`` (cached by the hash of brokers/kroxylicious/ and
    the Kafka image it is built from)."""
    from .images import image_for      # lazy: as the other image helpers
    t0 = time.monotonic()
    docker_util.client()
    base = image_for(kafka_version, None, build_missing=True)
    tag = kroxylicious_tag(kafka_version)
    want = _sources_hash(base.image_id, KROXY_SRC)
    img = find_image(tag)
    if img is not None and not force and img.labels.get("kafka-chaos.input-hash") == want:
        return ForeignBuild(tag, img.id, True, time.monotonic() - t0)
    mvn = shutil.which("mvn")
    if mvn is None:
        raise HarnessError("Maven is not installed (`mvn` on PATH); the Kroxylicious proxy is built from Maven Central")
    with tempfile.TemporaryDirectory(prefix="kc-kroxy-") as ctx:
        ctxp = Path(ctx)
        res = subprocess.run([mvn, "-q", "-B", "-f", str(KROXY_SRC / "pom.xml"),
                              "package", "dependency:copy-dependencies", "-DincludeScope=runtime",
                              f"-DoutputDirectory={ctxp / 'lib'}"],
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise HarnessError(f"mvn package of brokers/kroxylicious failed: {(res.stdout + res.stderr).strip()[-600:]}")
        jar = KROXY_SRC / "target" / "kroxylicious-broker.jar"
        shutil.copy(jar, ctxp / "kroxylicious-broker.jar")
        shutil.copy(KROXY_SRC / "kroxy-node.sh", ctxp / "kroxy-node.sh")
        (ctxp / "Dockerfile").write_text(kroxylicious_dockerfile(base.tag, want))
        res = subprocess.run(["docker", "build", "-q", "-t", tag, str(ctxp)], capture_output=True, text=True,
                             env={**os.environ, "DOCKER_BUILDKIT": "0"})
        if res.returncode != 0:
            raise HarnessError(f"docker build of {tag} failed: {res.stderr.strip()[-400:]}")
    img = find_image(tag)
    return ForeignBuild(tag, img.id, False, time.monotonic() - t0)
