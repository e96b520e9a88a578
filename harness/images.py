"""Offline image builds: a Debian bookworm root filesystem (mmdebstrap) imported as a base image,
plus the Apache Kafka jars resolved from Maven Central. No container registry is used.

Images:
  kafka-chaos/base:bookworm-jre17   Debian bookworm + openjdk-17-jre-headless, iptables, iproute2, procps
  kafka-chaos/kafka:<version>       base + Kafka runtime classpath + entrypoint (runs a broker or ZooKeeper)

Kafka 4.x differs (KIP-833: no ZooKeeper mode, so no zookeeper jar; KIP-653: Log4j 2 instead of
reload4j). Its images get Log4j 2 with the SLF4J binding and the Log4j 1 bridge, and run the same
entrypoint and ``log4j.properties`` files in Log4j 2's Log4j-1 compatibility mode
(``LOG4J_COMPATIBILITY=true``, what Kafka 4's own ``kafka-run-class.sh`` sets when it is given a
Log4j 1 file). They are labelled ``kafka-chaos.distribution=apache-kraft``.

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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from reference import versions

from harness import docker_util, jar_lock
from harness.errors import HarnessError, ImageMissing, UnknownVersion

BASE_PACKAGES = ["openjdk-17-jre-headless", "iptables", "iproute2", "procps", "netcat-openbsd"]
BASE_TAG = "kafka-chaos/base:bookworm-jre17"
KAFKA_REPO = "kafka-chaos/kafka"
DEBIAN_MIRROR = os.environ.get("KAFKA_CHAOS_DEBIAN_MIRROR", "http://deb.debian.org/debian")
DEBIAN_SECURITY = os.environ.get("KAFKA_CHAOS_DEBIAN_SECURITY", "http://deb.debian.org/debian-security")
MAVEN_METADATA = "https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/maven-metadata.xml"
# The default Kafka version of each mode, kept here and nowhere else (README "Versions"): with no version asked
# for, a run takes the newest release of the mode's series that Maven Central serves ("4": the newest 4.x);
# ``offline`` is used when Maven Central cannot be asked and nothing is cached. KRaft is the default mode
# (``harness.distributions.DEFAULT`` is apache-kraft); ZooKeeper mode (``--distribution apache-zk``) ended
# with 3.9 (KIP-833), so its default is the newest 3.9.x.
KRAFT, ZK = "kraft", "zk"                 # the modes, named as Distribution.controller_model names them
DEFAULT_VERSIONS: dict[str, tuple[str, str]] = {   # mode -> (series, offline fallback)
    KRAFT: ("4", "4.4.0"),
    ZK: ("3.9", "3.9.2"),
}
DEFAULT_SERIES, FALLBACK_DEFAULT_VERSION = DEFAULT_VERSIONS[KRAFT]   # the default mode's
KRAFT_ONLY_FROM = (4, 0)    # no ZooKeeper mode (KIP-833) and Log4j 2 logging (KIP-653) from 4.0 on
WARM_UP_FROM = (3, 3)       # KRaft in production: the image build formats a storage template and dumps a CDS archive
TOOLS_JAR_FROM = (3, 5)     # kafka-tools (reassignment tool) is a separate artifact from 3.5 on
# Log4j 2 for 4.x releases whose poms declare none at runtime (4.0.x; 4.1.0 on name 2.24.3 themselves)
FALLBACK_LOG4J = "2.24.3"

_HERE = Path(__file__).resolve().parent / "image_files"
# The JVMs of an image built here run as this unprivileged user (uid 1000), which owns only the data and
# config directories; `docker exec` runs faults as root (harness/cluster/node.py Node.exec). Part of the input
# hash, so images built before (JVM as root) are rebuilt by `kafka-chaos images build`.
RUN_USER = "kafka"
IMAGE_LAYOUT = f"user={RUN_USER}"


def cache_path() -> Path:
    """Where builds are cached (``$KAFKA_CHAOS_CACHE``, default ``~/.cache/kafka-chaos``), not created."""
    return Path(os.environ.get("KAFKA_CHAOS_CACHE", Path.home() / ".cache" / "kafka-chaos"))


def cache_dir() -> Path:
    d = cache_path()
    d.mkdir(parents=True, exist_ok=True)
    return d


def _log(msg: str) -> None:
    print(f"[images] {msg}", file=sys.stderr, flush=True)


# -- versions ------------------------------------------------------------------------------------
def is_kraft_only(version: str) -> bool:
    """Kafka 4.0 and newer: KRaft only, Log4j 2 logging."""
    return versions.at_least(version, KRAFT_ONLY_FROM)


def image_distribution(version: str) -> str:
    """The ``kafka-chaos.distribution`` label of the image of ``version``: ``apache-kraft`` for 4.x
    (nothing else can run it), ``apache-zk`` otherwise (which can run in KRaft mode too from 3.3)."""
    return "apache-kraft" if is_kraft_only(version) else "apache-zk"


def _cached_versions() -> list[str]:
    try:
        return json.loads((cache_dir() / "kafka-versions.json").read_text())
    except (OSError, ValueError):
        return []


def jars_cached(version: str) -> bool:
    return (cache_dir() / "jars" / version / ".complete").exists()


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
    found = sorted({v for v in re.findall(r"<version>([^<]+)</version>", xml)
                    if re.fullmatch(r"\d+\.\d+\.\d+", v)}, key=versions.parse)
    cached.write_text(json.dumps(found))
    return found


def default_series(mode: str = KRAFT) -> str:
    """The series a run of ``mode`` (``kraft`` or ``zk``, :data:`DEFAULT_VERSIONS`) takes its newest release from."""
    return DEFAULT_VERSIONS[ZK if mode == ZK else KRAFT][0]


def default_version_help() -> str:
    """The default versions as help texts say them: ``the newest 4.x (apache-zk: the newest 3.9.x)``."""
    return f"the newest {DEFAULT_VERSIONS[KRAFT][0]}.x (apache-zk: the newest {DEFAULT_VERSIONS[ZK][0]}.x)"


def resolve_version(requested: str | None, mode: str = KRAFT) -> str:
    """``None``/``latest`` → the newest release of the default series of ``mode`` (KRaft: the newest 4.x;
    ``zk``: the newest 3.9.x); ``4`` → the newest 4.x; ``3.7`` → the newest 3.7.x; ``2.8.2`` → itself (if it exists)."""
    req = (requested or "latest").strip()
    if req == "latest":
        req = default_series(mode)
    if not re.fullmatch(r"\d+(\.\d+){0,2}", req):
        raise UnknownVersion(f"unknown Kafka version {requested!r}: expected a version like 4.4.0 or a series like 4.4 or 4")
    # once a version's jars are cached nothing asks the network: an exact version as it is, a series
    # from the version list as last fetched (whatever its age; delete kafka-versions.json to ask again)
    if req.count(".") == 2 and jars_cached(req):
        return req
    known = [v for v in _cached_versions() if v.startswith(req + ".")]
    if known and jars_cached(known[-1]):
        return known[-1]
    released = available_versions()
    if not released:  # offline: accept exact versions and the built-in defaults
        if req.count(".") == 2:
            return req
        offline = {series: fallback for series, fallback in DEFAULT_VERSIONS.values()}
        if req in offline:
            return offline[req]
        raise UnknownVersion(f"cannot resolve Kafka series {req} offline; give an exact version like 4.4.0")
    if req.count(".") == 2:
        if req not in released:
            series = versions.series_name(req)
            near = [v for v in released if v.startswith(series + ".")] or released[-5:]
            raise UnknownVersion(f"unknown Kafka version {req}: not on Maven Central (known: {', '.join(near)})")
        return req
    matching = [v for v in released if v.startswith(req + ".")]
    if not matching:
        raise UnknownVersion(f"unknown Kafka series {req}: no release on Maven Central")
    return matching[-1]


def image_tag(version: str) -> str:
    return f"{KAFKA_REPO}:{version}"


# -- base image ---------------------------------------------------------------------------------
def _rootfs_hash(packages: list[str], hooks: tuple[str, ...] = ()) -> str:
    """The input hash of a root-filesystem image: its package list (and extra mmdebstrap hooks, when any:
    without them the hash is the one the base image always had)."""
    parts: list = [packages, "bookworm", "v1"] + ([list(hooks)] if hooks else [])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def _base_hash() -> str:
    return _rootfs_hash(BASE_PACKAGES)


def find_image(tag: str):
    """The local image called ``tag``, or None."""
    import docker.errors  # lazy: docker-py, kept off the CLI's start-up
    try:
        return docker_util.client().images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def _inspect_cli(tag: str) -> tuple[str, dict] | None:
    """(id, labels) of the local image ``tag`` through the ``docker`` CLI, None when there is none: :func:`find_image`
    without docker-py, so :func:`build` (``python -m harness.images_prepare``) runs before pip has installed it."""
    res = subprocess.run(["docker", "image", "inspect", "--format", "{{json .Id}} {{json .Config.Labels}}", tag],
                         capture_output=True, text=True)
    if res.returncode != 0:
        if "No such image" in res.stderr or "No such object" in res.stderr:
            return None
        raise HarnessError(f"docker image inspect {tag}: {(res.stderr.strip().splitlines() or ['?'])[-1]}")
    ident, _, labels = res.stdout.strip().partition(" ")
    return json.loads(ident), json.loads(labels) or {}


def ensure_base_image(force: bool = False) -> str:
    """Build (or reuse) the Debian base image; returns its id."""
    return ensure_rootfs_image(BASE_TAG, BASE_PACKAGES, force=force)


def ensure_rootfs_image(tag: str, packages: list[str], hooks: tuple[str, ...] = (), force: bool = False) -> str:
    """Build (or reuse) a Debian bookworm image of ``packages`` made by mmdebstrap and ``docker import``;
    ``hooks`` are extra ``--customize-hook`` shell commands (``$1`` is the root directory). Returns its id."""
    want = _rootfs_hash(packages, hooks)
    img = _inspect_cli(tag)
    if img is not None and not force and img[1].get("kafka-chaos.input-hash") == want:
        return img[0]
    if shutil.which("mmdebstrap") is None:
        raise HarnessError("mmdebstrap is not installed; run `apt-get install mmdebstrap` (or ./run.sh setup)")
    if os.geteuid() != 0:
        raise HarnessError("building the base image needs root (mmdebstrap creates device nodes); run as root")
    _log(f"building base image {tag} with mmdebstrap (about a minute)")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kc-rootfs-") as tmp:
        tar = Path(tmp) / "rootfs.tar"
        cmd = ["mmdebstrap", "--variant=apt", "--include=" + ",".join(packages),
               "--aptopt=Acquire::Retries \"3\"",
               "--customize-hook=rm -rf \"$1\"/var/cache/apt/archives/*.deb \"$1\"/var/lib/apt/lists/*"]
        cmd += [f"--customize-hook={h}" for h in hooks]
        cmd += ["bookworm", str(tar),
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
        t1 = time.monotonic()
        res = subprocess.run(args + [str(tar), tag], capture_output=True, text=True)
        if res.returncode != 0:
            raise HarnessError("docker import failed: " + res.stderr.strip())
    _log(f"base image {tag}: mmdebstrap {t1 - t0:.0f} s, docker import {time.monotonic() - t1:.0f} s")
    return _inspect_cli(tag)[0]


# -- jars ----------------------------------------------------------------------------------------
_EXCLUDE_OLD_LOGGING = ("<exclusions><exclusion><groupId>log4j</groupId><artifactId>log4j</artifactId></exclusion>"
                        "<exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-log4j12</artifactId></exclusion>"
                        "<exclusion><groupId>ch.qos.logback</groupId><artifactId>*</artifactId></exclusion>"
                        "</exclusions>")
_EXCLUDE_ALL = "<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>"


def _pom_text(deps: list[tuple[str, str, str]], exclusions: str) -> str:
    body = "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
                   f"{exclusions}</dependency>" for g, a, v in deps)
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0</modelVersion>"
            "<groupId>kafka-chaos</groupId><artifactId>kafka-jars</artifactId><version>1</version>"
            f"<packaging>pom</packaging><dependencies>{body}</dependencies></project>\n")


def _pom(version: str) -> str:
    """The Maven project whose runtime classpath is the broker's (Kafka, its tools, a logging backend)."""
    deps = [("org.apache.kafka", "kafka_2.13", version)]
    if not is_kraft_only(version):
        # logging backend so brokers and ZooKeeper log (Kafka's 2.x/3.x distribution ships the same);
        # 4.x brings Log4j 2 itself and gets its SLF4J binding from _logging_pom
        deps.append(("org.slf4j", "slf4j-reload4j", "1.7.36"))
    if versions.at_least(version, TOOLS_JAR_FROM):
        deps.append(("org.apache.kafka", "kafka-tools", version))  # reassignment tool lives here since 3.5
    return _pom_text(deps, _EXCLUDE_OLD_LOGGING)


def _jar_version(libs: Path, artifact: str) -> str | None:
    """The version of ``artifact`` among the resolved jars (``log4j-core-2.24.3.jar`` → 2.24.3)."""
    for jar in libs.glob(f"{artifact}-*.jar"):
        m = re.fullmatch(rf"{re.escape(artifact)}-(\d[\w.-]*)\.jar", jar.name)
        if m:
            return m.group(1)
    return None


def _logging_pom(log4j_version: str, slf4j_version: str, with_core: bool = False) -> str:
    """Kafka 4.x: the Log4j 2 pieces its distribution adds to what Maven resolves — the SLF4J binding
    (for SLF4J 1.x or 2.x, whichever Kafka uses) and the Log4j 1 bridge that reads ``log4j.properties``
    — at the Log4j version Kafka itself depends on, without anything transitive. ``with_core``: Kafka's
    poms bring no Log4j 2 at all (4.0.x), so log4j-api and log4j-core are added too."""
    binding = "log4j-slf4j2-impl" if slf4j_version.split(".")[0] == "2" else "log4j-slf4j-impl"
    artifacts = [binding, "log4j-1.2-api"] + (["log4j-api", "log4j-core"] if with_core else [])
    return _pom_text([("org.apache.logging.log4j", a, log4j_version) for a in artifacts], _EXCLUDE_ALL)


def required_jars(version: str) -> dict[str, str]:
    """What the image of ``version`` cannot run without: description → regex over jar file names."""
    v = re.escape(version)
    req = {f"Kafka broker (kafka_2.13-{version})": rf"kafka_2\.13-{v}\.jar"}
    if versions.at_least(version, TOOLS_JAR_FROM):
        req[f"Kafka tools (kafka-tools-{version})"] = rf"kafka-tools-{v}\.jar"
    if is_kraft_only(version):
        req["Log4j 2 (log4j-core)"] = r"log4j-core-\d[\w.-]*\.jar"
        req["Log4j 2 SLF4J binding"] = r"log4j-slf4j2?-impl-\d[\w.-]*\.jar"
        req["Log4j 1 bridge (log4j-1.2-api)"] = r"log4j-1\.2-api-\d[\w.-]*\.jar"
    else:
        req["ZooKeeper (zookeeper)"] = r"zookeeper-\d[\w.-]*\.jar"
        req["reload4j SLF4J binding"] = r"slf4j-reload4j-\d[\w.-]*\.jar"
    return req


def missing_jars(version: str, jar_names: list[str]) -> list[str]:
    """The descriptions of :func:`required_jars` that no name in ``jar_names`` matches."""
    return [what for what, rx in required_jars(version).items()
            if not any(re.fullmatch(rx, n) for n in jar_names)]


def maven_local_has(version: str) -> bool:
    """Kafka ``version``'s jar is in the local Maven repository (~/.m2 or ``KAFKA_CHAOS_M2``)."""
    m2 = Path(os.environ.get("KAFKA_CHAOS_M2", Path.home() / ".m2" / "repository"))
    return (m2 / "org" / "apache" / "kafka" / "kafka_2.13" / version / f"kafka_2.13-{version}.jar").exists()


def _mvn_copy(pom: Path, libs: Path, version: str) -> None:
    cmd = ["mvn", "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
           f"-DoutputDirectory={libs}", "-DincludeScope=runtime"]
    if maven_local_has(version):
        # offline (-o) first: Maven would otherwise re-check plugin and artifact metadata with Maven
        # Central once a day; online again only when something is missing locally
        res = subprocess.run(cmd[:1] + ["-o"] + cmd[1:], capture_output=True, text=True)
        if res.returncode == 0:
            return
        _log(f"Kafka {version}: the local Maven repository lacks a piece; asking Maven Central")
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        tail = [l for l in (res.stdout + res.stderr).splitlines() if "ERROR" in l][:2]
        raise UnknownVersion(f"could not resolve Kafka {version} from Maven Central: {' '.join(tail)[:300]}")


def ensure_jars(version: str) -> Path:
    """Resolve the Kafka runtime classpath for ``version`` into the cache; returns the libs dir."""
    root = cache_dir() / "jars" / version
    libs = root / "libs"
    if (root / ".complete").exists():
        return libs
    t0 = time.monotonic()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    if jar_lock.usable(version) and not maven_local_has(version):
        _log(f"fetching Kafka {version}'s locked classpath from {jar_lock.REPOSITORY} (harness/jar_lock.py)")
        jar_lock.fetch(version, libs)
        how = "the lock gave"
    else:
        _maven_jars(version, root, libs)
        how = "Maven resolved"
    missing = missing_jars(version, [j.name for j in libs.glob("*.jar")])
    if missing:
        raise HarnessError(f"{how} Kafka {version} without {', '.join(missing)} (in {libs})")
    (root / ".complete").write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ"))
    _log(f"Kafka {version}'s jars: {time.monotonic() - t0:.0f} s")
    return libs


def _maven_jars(version: str, root: Path, libs: Path) -> None:
    """Kafka ``version``'s runtime classpath into ``libs``, resolved by Maven (``root`` holds its poms)."""
    if shutil.which("mvn") is None:
        raise HarnessError("Maven (mvn) is not installed; run `apt-get install maven` (or ./run.sh setup)")
    _log(f"resolving org.apache.kafka:kafka_2.13:{version} and its runtime dependencies with Maven")
    (root / "pom.xml").write_text(_pom(version))
    _mvn_copy(root / "pom.xml", libs, version)
    if is_kraft_only(version):
        log4j, slf4j = _jar_version(libs, "log4j-core"), _jar_version(libs, "slf4j-api")
        if not slf4j:
            raise HarnessError(f"Maven resolved Kafka {version} without slf4j-api (in {libs}); "
                               "cannot tell which Log4j 2 binding it needs")
        (root / "logging-pom.xml").write_text(_logging_pom(log4j or FALLBACK_LOG4J, slf4j, with_core=not log4j))
        _mvn_copy(root / "logging-pom.xml", libs, version)


# -- kafka image -------------------------------------------------------------------------------
def base_and_jars(ensure_base: Callable[[], str], version: str) -> tuple[str, Path]:
    """The base image's id (``ensure_base()``) and Kafka ``version``'s libs dir (:func:`ensure_jars`), the two
    made at the same time: a fresh machine's base image waits on Debian's mirror and dpkg, the jars on Maven
    Central, neither on the other. The first failure is raised once both have ended (nothing left running)."""
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="image-inputs") as pool:
        base = pool.submit(ensure_base)
        jars = pool.submit(ensure_jars, version)
        wait([base, jars])
    return base.result(), jars.result()


def _version_env(version: str) -> list[str]:
    """Environment the image of ``version`` sets (Dockerfile ``ENV`` lines); none before 4.0.

    4.x: Log4j 2 reads the ``-Dlog4j.configuration`` Log4j 1 files of the entrypoint and
    ``kafka-run-class`` through its Log4j 1 bridge (``log4j1.compatibility``, environment form)."""
    return ["ENV LOG4J_COMPATIBILITY=true"] if is_kraft_only(version) else []


def _inputs_hash(base_id: str, libs: Path, version: str = "") -> str:
    """Hash of everything an image is built from: base image, jars, image files, and the
    version-specific Dockerfile lines (only when there are some, so 2.x/3.x hashes stay as they were)."""
    h = hashlib.sha256(base_id.encode())
    h.update(IMAGE_LAYOUT.encode())
    for jar in sorted(libs.iterdir()):
        h.update(f"{jar.name}:{jar.stat().st_size}".encode())
    for f in sorted(_HERE.iterdir()):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    extra = _version_env(version) if version else []
    if extra:
        h.update(("\n".join(extra) + image_distribution(version)).encode())
    return h.hexdigest()[:16]


def dockerfile(version: str, input_hash: str) -> str:
    """The Dockerfile of ``kafka-chaos/kafka:<version>`` (build context: libs/ and image_files/)."""
    env = "".join(line + "\n" for line in _version_env(version))
    # KRaft-capable versions: a storage template and a class-data-sharing archive (warm-up.sh)
    warm_up = "RUN /opt/kafka-chaos/warm-up.sh\n" if versions.at_least(version, WARM_UP_FROM) else ""
    return (f"FROM {BASE_TAG}\n"
            "COPY libs/ /opt/kafka/libs/\n"
            "COPY log4j.properties tools-log4j.properties /opt/kafka/config/\n"
            "COPY entrypoint.sh kafka-run-class warm-up.sh /opt/kafka-chaos/\n"
            "RUN chmod 0755 /opt/kafka-chaos/entrypoint.sh /opt/kafka-chaos/kafka-run-class /opt/kafka-chaos/warm-up.sh && "
            "mkdir -p /var/lib/kafka/data /var/lib/zookeeper /etc/kafka-chaos && "
            f"useradd --uid 1000 --user-group --no-create-home --home-dir /var/lib/kafka --shell /usr/sbin/nologin {RUN_USER} && "
            f"chown -R {RUN_USER}:{RUN_USER} /var/lib/kafka /var/lib/zookeeper /etc/kafka-chaos\n"
            f"{env}"
            f"{warm_up}"
            f"USER {RUN_USER}\n"
            f"LABEL kafka-chaos=1 kafka-chaos.kafka-version={version} kafka-chaos.input-hash={input_hash} "
            f"kafka-chaos.distribution={image_distribution(version)}\n"
            "ENTRYPOINT [\"/opt/kafka-chaos/entrypoint.sh\"]\n")


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
    docker_util.cli_engine_answers()  # fail early and clearly when Docker is unreachable (no docker-py)
    base_id, libs = base_and_jars(lambda: ensure_base_image(force=force), v)
    want = _inputs_hash(base_id, libs, v)
    tag = image_tag(v)
    img = _inspect_cli(tag)
    if img is not None and not force and img[1].get("kafka-chaos.input-hash") == want:
        return BuiltImage(tag, v, img[0], True, time.monotonic() - t0)
    _log(f"building {tag}")
    t1 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kc-image-") as ctx:
        ctxp = Path(ctx)
        shutil.copytree(libs, ctxp / "libs")
        for f in _HERE.iterdir():
            shutil.copy(f, ctxp / f.name)
        (ctxp / "Dockerfile").write_text(dockerfile(v, want))
        res = subprocess.run(["docker", "build", "-q", "-t", tag, str(ctxp)], capture_output=True, text=True,
                             env={**os.environ, "DOCKER_BUILDKIT": "0"})
        if res.returncode != 0:
            raise HarnessError(f"docker build of {tag} failed: {res.stderr.strip()[-400:]}")
    _log(f"{tag}: docker build {time.monotonic() - t1:.0f} s")
    return BuiltImage(tag, v, _inspect_cli(tag)[0], False, time.monotonic() - t0)


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
    distribution: str  # images built here: apache-zk (2.x/3.x) or apache-kraft (4.x); else generic


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


def image_for(version: str | None = None, image: str | None = None, build_missing: bool = False,
              mode: str = KRAFT) -> ImageInfo:
    """The image a cluster should run: an explicit image name, or the built image of a Kafka version
    (none given: the default of ``mode``, :func:`resolve_version`)."""
    if image:
        return inspect(image)
    v = resolve_version(version, mode)
    tag = image_tag(v)
    if find_image(tag) is None:
        if not build_missing:
            raise ImageMissing(f"image {tag} is not built; run `kafka-chaos images build --kafka {v}`")
        build(v)
    return inspect(tag)
