"""Offline build of the SSH test host image ``kafka-chaos/sshhost:<kafka version>``: a machine with
sshd and Kafka installed as a service, what the ``--nodes`` adapter (harness/remote/) is tested
against (tests/remote/hosts.py starts them; docs/ssh-test-hosts.md).

Built like the broker image (harness/images.py), without a registry:

- the base ``kafka-chaos/base:bookworm-jre17-ssh``: a Debian bookworm root filesystem made by
  mmdebstrap with the broker base's packages (JRE 17, iptables, iproute2 with tc, procps) plus
  openssh-server and sudo, its build-time host keys removed (every host gets its own);
- the Kafka jars of that version from the cache ``images.ensure_jars`` fills (Maven Central, once);
- ``harness/host_files/``: ``/etc/init.d/kafka`` and ``/etc/init.d/zookeeper`` (start-stop-daemon, a
  pidfile in /run/kafka, the JVM as user ``kafka``, its output appended to /var/log/kafka/*.log),
  ``/etc/default/kafka``, the tools ``kafka-storage`` and ``kafka-run-class``, the sshd settings
  (ed25519 host key, key-only logins of the user ``chaos``), the sudo rule of ``chaos`` (NOPASSWD) and
  ``host-boot``, the main process: sshd in the foreground, services started at boot when configured;
- the broker image's ``warm-up.sh`` run at build time: a class-data-sharing archive and a KRaft
  storage template, as in the broker image.

Layout on the host: config /etc/kafka/server.properties (zookeeper.properties), data
/var/lib/kafka/data (KRaft metadata log in the same directory), ZooKeeper data /var/lib/zookeeper,
pidfiles /run/kafka/{kafka,zookeeper}.pid, logs /var/log/kafka/{server,zookeeper}.log.

Cached like the broker image: the base by its package list, the final image by a hash of all its
inputs in the label ``kafka-chaos.input-hash``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from harness import docker_util, images
from harness.errors import HarnessError

SSH_BASE_TAG = "kafka-chaos/base:bookworm-jre17-ssh"
SSH_BASE_PACKAGES = images.BASE_PACKAGES + ["openssh-server", "sudo"]
# the host keys openssh-server's postinst generated in the root filesystem would be every host's
SSH_BASE_HOOKS = ('rm -f "$1"/etc/ssh/ssh_host_*_key "$1"/etc/ssh/ssh_host_*_key.pub',)
HOST_REPO = "kafka-chaos/sshhost"
HARNESS_USER = "chaos"          # the login of the harness (key only, sudo NOPASSWD)
HARNESS_UID = 1001
_HOST_FILES = Path(__file__).resolve().parent / "host_files"
_IMAGE_FILES = ("log4j.properties", "tools-log4j.properties", "warm-up.sh")  # from harness/image_files


def host_tag(version: str) -> str:
    return f"{HOST_REPO}:{version}"


def default_file(version: str) -> str:
    """``/etc/default/kafka`` of the image of ``version``: the JVM settings the service script reads
    (those of the broker image's entrypoint, so both adapters run the same JVMs)."""
    lines = ["# Read by /etc/init.d/kafka, /etc/init.d/zookeeper and /usr/local/bin/kafka-run-class.",
             "# JIT: C1 only, no DNS caching, Log4j 1 properties: as harness/image_files/entrypoint.sh.",
             'KAFKA_HEAP_OPTS="-Xms128m -Xmx512m"',
             'KAFKA_JVM_OPTS="-Djava.awt.headless=true -XX:+UseG1GC -XX:MaxGCPauseMillis=20 '
             '-XX:+ExitOnOutOfMemoryError -XX:TieredStopAtLevel=1 -Dsun.net.inetaddr.ttl=0 '
             '-Dsun.net.inetaddr.negative.ttl=0 -Dlog4j.configuration=file:/opt/kafka/config/log4j.properties"',
             "# yes: host-boot starts the service when the container starts (set once it is configured)",
             "START_AT_BOOT=no"]
    if images.is_kraft_only(version):
        lines.append("LOG4J_COMPATIBILITY=true   # Kafka 4.x: Log4j 2 reads the Log4j 1 properties")
    return "\n".join(lines) + "\n"


def dockerfile(version: str, input_hash: str) -> str:
    """The Dockerfile of ``kafka-chaos/sshhost:<version>`` (context: libs/, the broker image's log4j
    files and warm-up.sh, host/ = harness/host_files plus default-kafka)."""
    zookeeper = ("install -m 0755 zookeeper.init /etc/init.d/zookeeper && "
                 "printf 'START_AT_BOOT=no\\n' > /etc/default/zookeeper && "
                 if not images.is_kraft_only(version) else "")
    return (f"FROM {SSH_BASE_TAG}\n"
            "COPY libs/ /opt/kafka/libs/\n"
            "COPY log4j.properties tools-log4j.properties /opt/kafka/config/\n"
            "COPY warm-up.sh /opt/kafka-chaos/\n"
            "COPY host/ /opt/kafka-chaos/host/\n"
            "RUN set -e; cd /opt/kafka-chaos/host && "
            "useradd --uid 1000 --user-group --no-create-home --home-dir /var/lib/kafka --shell /usr/sbin/nologin kafka && "
            f"useradd --uid {HARNESS_UID} --user-group --create-home --shell /bin/bash {HARNESS_USER} && "
            f"usermod -p '*' {HARNESS_USER} && "
            "mkdir -p /usr/local/lib/kafka-chaos /etc/kafka /var/lib/kafka/data /var/lib/zookeeper /var/log/kafka "
            "/run/kafka /etc/ssh/authorized_keys && "
            "install -m 0644 service.sh /usr/local/lib/kafka-chaos/service.sh && "
            "install -m 0755 run-jvm /usr/local/lib/kafka-chaos/run-jvm && "
            "install -m 0755 kafka.init /etc/init.d/kafka && "
            f"{zookeeper}"
            "install -m 0644 default-kafka /etc/default/kafka && "
            "install -m 0755 host-boot /usr/local/sbin/host-boot && "
            "install -m 0755 kafka-run-class kafka-storage /usr/local/bin/ && "
            "install -m 0644 sshd.conf /etc/ssh/sshd_config.d/kafka-chaos.conf && "
            f"install -m 0440 sudoers /etc/sudoers.d/{HARNESS_USER} && "
            # no audit subsystem in a container: pam_loginuid must not fail the login
            "sed -i 's/^session\\s\\+required\\s\\+pam_loginuid.so/session optional pam_loginuid.so/' /etc/pam.d/sshd && "
            "chown -R kafka:kafka /var/lib/kafka /var/lib/zookeeper /var/log/kafka /run/kafka && "
            "chmod 0755 /opt/kafka-chaos/warm-up.sh && visudo -c -q && "
            # the sshd settings parse (with a throw-away host key: the image has none)
            "mkdir -p /run/sshd && ssh-keygen -q -t ed25519 -N '' -f /tmp/hk && sshd -t -o HostKey=/tmp/hk && rm -f /tmp/hk /tmp/hk.pub\n"
            "RUN /opt/kafka-chaos/warm-up.sh\n"
            f"LABEL kafka-chaos=1 kafka-chaos.kafka-version={version} kafka-chaos.input-hash={input_hash} "
            "kafka-chaos.host-image=1\n"
            "EXPOSE 22 9092\n"
            "ENTRYPOINT [\"/usr/local/sbin/host-boot\"]\n")


def _inputs_hash(base_id: str, libs: Path, version: str) -> str:
    h = hashlib.sha256(base_id.encode())
    h.update(version.encode())
    for jar in sorted(libs.iterdir()):
        h.update(f"{jar.name}:{jar.stat().st_size}".encode())
    for f in sorted(_HOST_FILES.iterdir()) + [images._HERE / n for n in _IMAGE_FILES]:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    h.update(default_file(version).encode())
    h.update(dockerfile(version, "").encode())
    return h.hexdigest()[:16]


def build(version: str | None = None, force: bool = False) -> images.BuiltImage:
    """Build ``kafka-chaos/sshhost:<version>`` offline (cached by input hash)."""
    t0 = time.monotonic()
    v = images.resolve_version(version)
    docker_util.client()  # fail early and clearly when Docker is unreachable
    base_id, libs = images.base_and_jars(
        lambda: images.ensure_rootfs_image(SSH_BASE_TAG, SSH_BASE_PACKAGES, SSH_BASE_HOOKS, force=force), v)
    want = _inputs_hash(base_id, libs, v)
    tag = host_tag(v)
    img = images.find_image(tag)
    if img is not None and not force and img.labels.get("kafka-chaos.input-hash") == want:
        return images.BuiltImage(tag, v, img.id, True, time.monotonic() - t0)
    images._log(f"building {tag}")
    with tempfile.TemporaryDirectory(prefix="kc-hostimage-") as ctx:
        ctxp = Path(ctx)
        shutil.copytree(libs, ctxp / "libs")
        for name in _IMAGE_FILES:
            shutil.copy(images._HERE / name, ctxp / name)
        shutil.copytree(_HOST_FILES, ctxp / "host")
        (ctxp / "host" / "default-kafka").write_text(default_file(v))
        (ctxp / "Dockerfile").write_text(dockerfile(v, want))
        res = subprocess.run(["docker", "build", "-q", "-t", tag, str(ctxp)], capture_output=True, text=True,
                             env={**os.environ, "DOCKER_BUILDKIT": "0"})
        if res.returncode != 0:
            raise HarnessError(f"docker build of {tag} failed: {res.stderr.strip()[-400:]}")
    img = images.find_image(tag)
    return images.BuiltImage(tag, v, img.id, False, time.monotonic() - t0)
