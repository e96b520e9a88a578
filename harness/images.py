"""Offline image builds: a Debian bookworm root filesystem (mmdebstrap) imported as a base image,
plus the Apache Kafka jars resolved from Maven Central. No container registry is used.

Images:
  kafka-chaos/base:bookworm-jre17   Debian bookworm + openjdk-17-jre-headless, iptables, iproute2, procps
  kafka-chaos/kafka:<version>       base + Kafka runtime classpath + entrypoint (runs a broker or ZooKeeper)

Every step is cached: the base image by a hash of its package list, the jars per version in
``$KAFKA_CHAOS_CACHE`` (default ``~/.cache/kafka-chaos``), and the final image by a hash of all of its
inputs stored in the label ``kafka-chaos.input-hash``. A rebuild with nothing changed takes seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from . import docker_util
from .errors import HarnessError, ImageMissing, UnknownVersion

BASE_PACKAGES = ["openjdk-17-jre-headless", "iptables", "iproute2", "procps", "netcat-openbsd"]
BASE_TAG = "kafka-chaos/base:bookworm-jre17"
KAFKA_REPO = "kafka-chaos/kafka"
DEBIAN_MIRROR = os.environ.get("KAFKA_CHAOS_DEBIAN_MIRROR", "http://deb.debian.org/debian")
DEBIAN_SECURITY = os.environ.get("KAFKA_CHAOS_DEBIAN_SECURITY", "http://deb.debian.org/debian-security")
MAVEN_METADATA = "https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/maven-metadata.xml"
# Used when Maven Central cannot be asked (offline) and nothing is cached.
FALLBACK_DEFAULT_VERSION = "3.9.2"
DEFAULT_SERIES = "3.9"

_HERE = Path(__file__).resolve().parent / "image_files"


def cache_dir() -> Path:
    d = Path(os.environ.get("KAFKA_CHAOS_CACHE", Path.home() / ".cache" / "kafka-chaos"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _log(msg: str) -> None:
    print(f"[images] {msg}", file=sys.stderr, flush=True)


# -- versions ------------------------------------------------------------------------------------
def _version_key(v: str) -> tuple:
    return tuple(int(x) if x.isdigit() else -1 for x in re.split(r"[.-]", v))


def available_versions(refresh: bool = False) -> list[str]:
    """Release versions of kafka_2.13 on Maven Central (cached for a day; [] when offline)."""
    cached = cache_dir() / "kafka-versions.json"
    if cached.exists() and not refresh and time.time() - cached.stat().st_mtime < 86400:
        return json.loads(cached.read_text())
    try:
        with urllib.request.urlopen(MAVEN_METADATA, timeout=20) as r:
            xml = r.read().decode()
    except Exception:
        return json.loads(cached.read_text()) if cached.exists() else []
    versions = sorted({v for v in re.findall(r"<version>([^<]+)</version>", xml)
                       if re.fullmatch(r"\d+\.\d+\.\d+", v)}, key=_version_key)
    cached.write_text(json.dumps(versions))
    return versions


def resolve_version(requested: str | None) -> str:
    """``None``/``latest`` → latest 3.9.x; ``3.7`` → latest 3.7.x; ``2.8.2`` → itself (if it exists)."""
    req = (requested or DEFAULT_SERIES).strip()
    if req == "latest":
        req = DEFAULT_SERIES
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", req):
        raise UnknownVersion(f"unknown Kafka version {requested!r}: expected a version like 3.9.2 or a series like 3.9")
    versions = available_versions()
    if not versions:  # offline: accept exact versions and the built-in default
        if req.count(".") == 2:
            return req
        if req == DEFAULT_SERIES:
            return FALLBACK_DEFAULT_VERSION
        raise UnknownVersion(f"cannot resolve Kafka series {req} offline; give an exact version like 3.9.2")
    if req.count(".") == 2:
        if req not in versions:
            series = ".".join(req.split(".")[:2])
            near = [v for v in versions if v.startswith(series + ".")] or versions[-5:]
            raise UnknownVersion(f"unknown Kafka version {req}: not on Maven Central (known: {', '.join(near)})")
        return req
    matching = [v for v in versions if v.startswith(req + ".")]
    if not matching:
        raise UnknownVersion(f"unknown Kafka series {req}: no release on Maven Central")
    return matching[-1]


def image_tag(version: str) -> str:
    return f"{KAFKA_REPO}:{version}"


# -- base image ---------------------------------------------------------------------------------
def _base_hash() -> str:
    return hashlib.sha256(json.dumps([BASE_PACKAGES, "bookworm", "v1"]).encode()).hexdigest()[:16]


def find_image(tag: str):
    """The local image called ``tag``, or None."""
    import docker.errors
    try:
        return docker_util.client().images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def ensure_base_image(force: bool = False) -> str:
    """Build (or reuse) the Debian base image; returns its id."""
    want = _base_hash()
    img = find_image(BASE_TAG)
    if img is not None and not force and img.labels.get("kafka-chaos.input-hash") == want:
        return img.id
    if shutil.which("mmdebstrap") is None:
        raise HarnessError("mmdebstrap is not installed; run `apt-get install mmdebstrap` (or ./run.sh setup)")
    if os.geteuid() != 0:
        raise HarnessError("building the base image needs root (mmdebstrap creates device nodes); run as root")
    _log(f"building base image {BASE_TAG} with mmdebstrap (about a minute)")
    with tempfile.TemporaryDirectory(prefix="kc-rootfs-") as tmp:
        tar = Path(tmp) / "rootfs.tar"
        cmd = ["mmdebstrap", "--variant=apt", "--include=" + ",".join(BASE_PACKAGES),
               "--aptopt=Acquire::Retries \"3\"",
               "--customize-hook=rm -rf \"$1\"/var/cache/apt/archives/*.deb \"$1\"/var/lib/apt/lists/*",
               "bookworm", str(tar),
               f"deb {DEBIAN_MIRROR} bookworm main", f"deb {DEBIAN_SECURITY} bookworm-security main"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise HarnessError("mmdebstrap failed: " + (res.stderr.strip().splitlines() or ["?"])[-1])
        changes = ["LABEL kafka-chaos=1", f"LABEL kafka-chaos.input-hash={want}",
                   "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                   "ENV LANG=C.UTF-8"]
        args = ["docker", "import"]
        for c in changes:
            args += ["-c", c]
        res = subprocess.run(args + [str(tar), BASE_TAG], capture_output=True, text=True)
        if res.returncode != 0:
            raise HarnessError("docker import failed: " + res.stderr.strip())
    return find_image(BASE_TAG).id


# -- jars ----------------------------------------------------------------------------------------
def _pom(version: str) -> str:
    deps = [("org.apache.kafka", "kafka_2.13", version),
            # logging backend so brokers and ZooKeeper log (Kafka's distribution ships the same)
            ("org.slf4j", "slf4j-reload4j", "1.7.36")]
    if _version_key(version) >= _version_key("3.5.0"):
        deps.append(("org.apache.kafka", "kafka-tools", version))  # reassignment tool lives here since 3.5
    body = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
        "<exclusions><exclusion><groupId>log4j</groupId><artifactId>log4j</artifactId></exclusion>"
        "<exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-log4j12</artifactId></exclusion>"
        "<exclusion><groupId>ch.qos.logback</groupId><artifactId>*</artifactId></exclusion></exclusions>"
        "</dependency>"
        for g, a, v in deps)
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0</modelVersion>"
            "<groupId>kafka-chaos</groupId><artifactId>kafka-jars</artifactId><version>1</version>"
            f"<packaging>pom</packaging><dependencies>{body}</dependencies></project>\n")


def ensure_jars(version: str) -> Path:
    """Resolve the Kafka runtime classpath for ``version`` into the cache; returns the libs dir."""
    root = cache_dir() / "jars" / version
    libs = root / "libs"
    if (root / ".complete").exists():
        return libs
    if shutil.which("mvn") is None:
        raise HarnessError("Maven (mvn) is not installed; run `apt-get install maven` (or ./run.sh setup)")
    _log(f"resolving org.apache.kafka:kafka_2.13:{version} and its runtime dependencies with Maven")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    (root / "pom.xml").write_text(_pom(version))
    res = subprocess.run(["mvn", "-q", "-B", "-f", str(root / "pom.xml"), "dependency:copy-dependencies",
                          f"-DoutputDirectory={libs}", "-DincludeScope=runtime"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        tail = [l for l in (res.stdout + res.stderr).splitlines() if "ERROR" in l][:2]
        raise UnknownVersion(f"could not resolve Kafka {version} from Maven Central: {' '.join(tail)[:300]}")
    if not any(libs.glob("kafka_2.13-*.jar")) or not any(libs.glob("zookeeper-*.jar")):
        raise HarnessError(f"Maven resolved Kafka {version} without kafka_2.13 or zookeeper jars (in {libs})")
    (root / ".complete").write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ"))
    return libs


# -- kafka image -------------------------------------------------------------------------------
def _inputs_hash(base_id: str, libs: Path) -> str:
    h = hashlib.sha256(base_id.encode())
    for jar in sorted(libs.iterdir()):
        h.update(f"{jar.name}:{jar.stat().st_size}".encode())
    for f in sorted(_HERE.iterdir()):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


@dataclass
class BuiltImage:
    tag: str
    version: str
    image_id: str
    cached: bool
    seconds: float


def build(version: str | None = None, force: bool = False) -> BuiltImage:
    """Build ``kafka-chaos/kafka:<version>`` offline (cached)."""
    t0 = time.monotonic()
    v = resolve_version(version)
    docker_util.client()  # fail early and clearly when Docker is unreachable
    base_id = ensure_base_image(force=force)
    libs = ensure_jars(v)
    want = _inputs_hash(base_id, libs)
    tag = image_tag(v)
    img = find_image(tag)
    if img is not None and not force and img.labels.get("kafka-chaos.input-hash") == want:
        return BuiltImage(tag, v, img.id, True, time.monotonic() - t0)
    _log(f"building {tag}")
    with tempfile.TemporaryDirectory(prefix="kc-image-") as ctx:
        ctxp = Path(ctx)
        shutil.copytree(libs, ctxp / "libs")
        for f in _HERE.iterdir():
            shutil.copy(f, ctxp / f.name)
        (ctxp / "Dockerfile").write_text(
            f"FROM {BASE_TAG}\n"
            "COPY libs/ /opt/kafka/libs/\n"
            "COPY log4j.properties tools-log4j.properties /opt/kafka/config/\n"
            "COPY entrypoint.sh kafka-run-class /opt/kafka-chaos/\n"
            "RUN chmod 0755 /opt/kafka-chaos/entrypoint.sh /opt/kafka-chaos/kafka-run-class && "
            "mkdir -p /var/lib/kafka/data /var/lib/zookeeper /etc/kafka-chaos\n"
            f"LABEL kafka-chaos=1 kafka-chaos.kafka-version={v} kafka-chaos.input-hash={want} "
            "kafka-chaos.distribution=apache-zk\n"
            "ENTRYPOINT [\"/opt/kafka-chaos/entrypoint.sh\"]\n")
        res = subprocess.run(["docker", "build", "-q", "-t", tag, str(ctxp)], capture_output=True, text=True,
                             env={**os.environ, "DOCKER_BUILDKIT": "0"})
        if res.returncode != 0:
            raise HarnessError(f"docker build of {tag} failed: {res.stderr.strip()[-400:]}")
    img = find_image(tag)
    return BuiltImage(tag, v, img.id, False, time.monotonic() - t0)


def list_images() -> list[dict]:
    """Images built by the harness (base and Kafka)."""
    out = []
    for img in docker_util.client().images.list(filters={"label": "kafka-chaos=1"}):
        for tag in img.tags or ["<none>"]:
            out.append({"tag": tag, "id": img.short_id.replace("sha256:", ""),
                        "kafka_version": img.labels.get("kafka-chaos.kafka-version"),
                        "created": img.attrs.get("Created", "")[:19],
                        "size_mb": round(img.attrs.get("Size", 0) / 1e6)})
    return sorted(out, key=lambda r: r["tag"])


@dataclass
class ImageInfo:
    """What the cluster needs to know about an image it is asked to run."""
    tag: str
    image_id: str
    kafka_version: str | None
    distribution: str  # apache-zk for images built here, generic for anything else


def inspect(image: str) -> ImageInfo:
    """Look up an image that must already exist locally (nothing can be pulled here)."""
    img = find_image(image)
    if img is None:
        hint = ""
        m = re.fullmatch(rf"{re.escape(KAFKA_REPO)}:(.+)", image)
        if m:
            hint = f"; build it with `kafka-chaos images build --kafka {m.group(1)}`"
        raise ImageMissing(f"image {image} is not present locally and no registry is reachable{hint}")
    return ImageInfo(image, img.id, img.labels.get("kafka-chaos.kafka-version"),
                     img.labels.get("kafka-chaos.distribution", "generic"))


def image_for(version: str | None = None, image: str | None = None, build_missing: bool = False) -> ImageInfo:
    """The image a cluster should run: an explicit image name, or the built image of a Kafka version."""
    if image:
        return inspect(image)
    v = resolve_version(version)
    tag = image_tag(v)
    if find_image(tag) is None:
        if not build_missing:
            raise ImageMissing(f"image {tag} is not built; run `kafka-chaos images build --kafka {v}`")
        build(v)
    return inspect(tag)
