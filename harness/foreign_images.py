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

``kafka-chaos images build-tansu`` builds ``kafka-chaos/tansu:<version>`` and its store
``kafka-chaos/seaweedfs:latest`` (docs/examples/tansu.toml, layout ``shared-storage``; brokers/tansu/README.md):
Tansu (crates.io ``tansu``, a stateless Kafka-compatible broker in Rust) compiled on the host by
``cargo install --locked --features dynostore`` (its S3 storage engine) into the harness's cache, and
SeaweedFS's ``weed`` built from the Go module proxy by scripts/build-seaweedfs.sh, with
brokers/tansu/seaweedfs-store.sh (starts ``weed server -s3``, creates the buckets, logs a ready line).
Each binary is copied into an image ``FROM`` the local base image; nothing is pulled.
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

from harness import docker_util
from harness.errors import HarnessError
from harness.images import BASE_TAG, ensure_base_image, find_image

KFAKE_TAG = "kafka-chaos/kfake:latest"
KFAKE_SRC = Path(__file__).resolve().parent.parent / "brokers" / "kfake"
GO_CANDIDATES = ("go", "/usr/local/go/bin/go")
KROXY_SRC = Path(__file__).resolve().parent.parent / "brokers" / "kroxylicious"
KROXY_KAFKA = "4.1.2"          # the Apache Kafka behind the proxy (docs/examples/kroxylicious.toml)
TANSU_SRC = Path(__file__).resolve().parent.parent / "brokers" / "tansu"
TANSU_VERSION = "0.6.0"
TANSU_FEATURES = "dynostore"   # the S3 / memory storage engine; the crate's default features add none
SEAWEEDFS_TAG = "kafka-chaos/seaweedfs:latest"
SEAWEEDFS_BUILD = Path(__file__).resolve().parent.parent / "scripts" / "build-seaweedfs.sh"
CARGO_CANDIDATES = ("cargo", str(Path.home() / ".cargo" / "bin" / "cargo"))


def kroxylicious_tag(kafka_version: str = KROXY_KAFKA) -> str:
    return f"kafka-chaos/kroxylicious:{kafka_version}"


@dataclass
class ForeignBuild:
    tag: str
    image_id: str
    cached: bool
    seconds: float


def _docker_build(ctxp: Path, tag: str, t0: float) -> ForeignBuild:
    """``docker build`` of the context ``ctxp`` as ``tag`` (no BuildKit: no registry, nothing pulled)."""
    res = subprocess.run(["docker", "build", "-q", "-t", tag, str(ctxp)], capture_output=True, text=True,
                         env={**os.environ, "DOCKER_BUILDKIT": "0"})
    if res.returncode != 0:
        raise HarnessError(f"docker build of {tag} failed: {res.stderr.strip()[-400:]}")
    return ForeignBuild(tag, find_image(tag).id, False, time.monotonic() - t0)


def _tool(candidates, missing: str) -> str:
    """The first of ``candidates`` (a name on PATH or an executable path); HarnessError ``missing`` if none."""
    for c in candidates:
        path = shutil.which(c) or (c if os.access(c, os.X_OK) else None)
        if path:
            return path
    raise HarnessError(missing)


def _go() -> str:
    return _tool(GO_CANDIDATES, "Go is not installed (looked for `go` on PATH and /usr/local/go/bin/go); "
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
        return _docker_build(ctxp, KFAKE_TAG, t0)


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
    from harness.images import image_for      # lazy: as the other image helpers
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
        return _docker_build(ctxp, tag, t0)


# -- Tansu and its store ---------------------------------------------------------------------------
def tansu_tag(version: str = TANSU_VERSION) -> str:
    return f"kafka-chaos/tansu:{version}"


def _cargo() -> str:
    return _tool(CARGO_CANDIDATES, "cargo is not installed (looked for `cargo` on PATH and ~/.cargo/bin/cargo); "
                                   "Tansu is built from its crate on crates.io")


def tansu_root(version: str = TANSU_VERSION) -> Path:
    """Where ``cargo install`` puts the Tansu binary (``bin/tansu``), in the harness's cache."""
    from harness.images import cache_dir
    return cache_dir() / "tansu" / f"{version}-{TANSU_FEATURES}"


def tansu_binary(version: str = TANSU_VERSION) -> Path:
    """The cached ``tansu`` binary, compiled once (15-30 min on 2 cores; crates from crates.io, versions
    pinned by the crate's own Cargo.lock: ``--locked``)."""
    root = tansu_root(version)
    binary = root / "bin" / "tansu"
    if binary.is_file():
        return binary
    target = root / "target"
    res = subprocess.run(["nice", _cargo(), "install", "tansu", "--version", version, "--locked",
                          "--features", TANSU_FEATURES, "--root", str(root)], capture_output=True, text=True,
                         env={**os.environ, "CARGO_TARGET_DIR": str(target)})
    if res.returncode != 0 or not binary.is_file():
        raise HarnessError(f"cargo install tansu {version} --features {TANSU_FEATURES} failed: "
                           f"{res.stderr.strip()[-600:]}")
    shutil.rmtree(target, ignore_errors=True)      # gigabytes of intermediate files
    return binary


def tansu_dockerfile(input_hash: str, version: str = TANSU_VERSION) -> str:
    return (f"FROM {BASE_TAG}\n"
            "COPY tansu /usr/local/bin/tansu\n"
            "RUN chmod 0755 /usr/local/bin/tansu\n"
            "USER 1000\n"
            f"LABEL kafka-chaos=1 kafka-chaos.distribution=generic kafka-chaos.broker=tansu "
            f"kafka-chaos.broker-version={version} kafka-chaos.input-hash={input_hash}\n"
            "ENTRYPOINT [\"/usr/local/bin/tansu\"]\n"
            "CMD [\"broker\"]\n")


def seaweedfs_dockerfile(input_hash: str) -> str:
    return (f"FROM {BASE_TAG}\n"
            "COPY weed seaweedfs-store.sh /usr/local/bin/\n"
            "USER root\n"
            "RUN chmod 0755 /usr/local/bin/weed /usr/local/bin/seaweedfs-store.sh && mkdir -p /data "
            "&& chown 1000 /data\n"
            "USER 1000\n"
            f"LABEL kafka-chaos=1 kafka-chaos.service=seaweedfs kafka-chaos.input-hash={input_hash}\n"
            "ENTRYPOINT [\"/usr/local/bin/seaweedfs-store.sh\"]\n")


def _files_hash(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:16]


def _image_from(tag: str, files: dict[str, Path], dockerfile, want: str, force: bool, t0: float) -> ForeignBuild:
    """``tag`` built from ``files`` (name in the context -> path) and ``dockerfile(input hash)``, unless an
    image with that input hash is there already."""
    img = find_image(tag)
    if img is not None and not force and img.labels.get("kafka-chaos.input-hash") == want:
        return ForeignBuild(tag, img.id, True, time.monotonic() - t0)
    with tempfile.TemporaryDirectory(prefix="kc-foreign-") as ctx:
        ctxp = Path(ctx)
        for name, path in files.items():
            shutil.copy(path, ctxp / name)
        (ctxp / "Dockerfile").write_text(dockerfile(want))
        return _docker_build(ctxp, tag, t0)


def build_tansu(version: str = TANSU_VERSION, force: bool = False) -> ForeignBuild:
    """Build ``kafka-chaos/tansu:<version>`` (cached by the hash of the binary, the Dockerfile and the base
    image)."""
    t0 = time.monotonic()
    docker_util.client()
    base_id = ensure_base_image(force=False)
    binary = tansu_binary(version)
    want = _files_hash(base_id.encode(), binary.read_bytes(), tansu_dockerfile("", version).encode())
    return _image_from(tansu_tag(version), {"tansu": binary}, lambda h: tansu_dockerfile(h, version), want, force, t0)


def seaweedfs_binary() -> Path:
    """SeaweedFS's ``weed``, built once from the Go module proxy and cached (scripts/build-seaweedfs.sh)."""
    if not SEAWEEDFS_BUILD.is_file():
        raise HarnessError(f"{SEAWEEDFS_BUILD} is missing: the store is built from a checkout of the kafka-chaos "
                           "repository, not from the installed package")
    res = subprocess.run([str(SEAWEEDFS_BUILD)], capture_output=True, text=True)
    if res.returncode != 0 or not res.stdout.strip():
        raise HarnessError(f"scripts/build-seaweedfs.sh failed ({res.returncode}): {res.stderr.strip()[-600:]}")
    return Path(res.stdout.strip().splitlines()[-1])


def build_seaweedfs(force: bool = False) -> ForeignBuild:
    """Build ``kafka-chaos/seaweedfs:latest``: an S3 store for a ``[[service]]`` (brokers/tansu/seaweedfs-store.sh)."""
    t0 = time.monotonic()
    docker_util.client()
    base_id = ensure_base_image(force=False)
    binary, script = seaweedfs_binary(), TANSU_SRC / "seaweedfs-store.sh"
    want = _files_hash(base_id.encode(), binary.read_bytes(), script.read_bytes(), seaweedfs_dockerfile("").encode())
    return _image_from(SEAWEEDFS_TAG, {"weed": binary, "seaweedfs-store.sh": script}, seaweedfs_dockerfile, want,
                       force, t0)
