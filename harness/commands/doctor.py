"""``kafka-chaos doctor``: is this host ready to run clusters? One line per check, with what to do.

    ok    docker     engine 26.1.5 at unix:///var/run/docker.sock
    FAIL  image      kafka-chaos/kafka:4.4.0 (the default) is not built  -> kafka-chaos images build

Checks: the Docker engine, the default broker image (KRaft on the newest 4.x, ``harness.images.DEFAULT_VERSIONS``;
or the tools that build it: mmdebstrap, Maven, root), free disk for Docker and for the run records, the kernel's ``netem`` queueing discipline and
``iptables`` (the network faults, tried in a throw-away container of the image: netem missing is a WARN,
the netem faults are then skipped as an environment limit; iptables missing is a FAIL), the host port band
the clusters publish on (below the ephemeral range) and Java 17+ for the Spark report. Exit code 0
when nothing is FAIL, 5 (environment) otherwise (WARN is advice).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from harness.errors import EXIT_ENV

OK, WARN, FAIL = "ok", "WARN", "FAIL"
MIN_FREE_GB = 5.0


def _line(status: str, what: str, detail: str, todo: str = "") -> tuple[str, str, str, str]:
    return status, what, detail, todo


def check_docker():
    from harness import docker_util
    from harness.errors import DockerUnavailable
    try:
        c = docker_util.client()
    except DockerUnavailable as e:
        return _line(FAIL, "docker", str(e).split(";")[0], "start the engine (scripts/ensure-docker.sh, or "
                     "`dockerd &`), or point DOCKER_HOST at one"), None
    info = c.info()
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return _line(OK, "docker", f"engine {c.version().get('Version')} at {where} "
                 f"(storage {info.get('Driver')}, {info.get('NCPU')} cpus)"), info


def check_image():
    from harness import images
    try:
        version = images.resolve_version(None)
    except Exception as e:  # noqa: BLE001 - offline and nothing cached: said, not raised
        return _line(WARN, "image", f"cannot resolve the default Kafka version ({e})",
                     f"kafka-chaos images build --kafka {images.FALLBACK_DEFAULT_VERSION}")
    tag = images.image_tag(version)
    built = sorted(r["tag"] for r in images.list_images() if r["tag"].startswith(images.KAFKA_REPO + ":"))
    if tag in built:
        return _line(OK, "image", f"{tag} (the default); built: {', '.join(built)}")
    tools = [t for t, ok in (("mmdebstrap", shutil.which("mmdebstrap")), ("mvn", shutil.which("mvn")),
                             ("root", os.geteuid() == 0)) if not ok]
    todo = "kafka-chaos images build" + (f" (first install: {', '.join(tools)}; or ./run.sh setup)" if tools else "")
    return _line(FAIL if tools else WARN, "image", f"{tag} (the default) is not built yet"
                 + (f"; built: {', '.join(built)}" if built else ""), todo)


def check_disk(info, runs_dir: str):
    out = []
    for what, path in (("disk", (info or {}).get("DockerRootDir") or "/var/lib/docker"), ("disk", runs_dir)):
        p = Path(path)
        while not p.exists() and p != p.parent:
            p = p.parent
        try:
            free = shutil.disk_usage(p).free / 1e9
        except OSError as e:
            out.append(_line(WARN, what, f"{path}: {e}"))
            continue
        label = "Docker data" if path != runs_dir else f"run records ({runs_dir})"
        status = OK if free >= MIN_FREE_GB else FAIL
        out.append(_line(status, what, f"{label}: {free:.1f} GB free at {p}",
                         "" if status == OK else f"free space (>= {MIN_FREE_GB:.0f} GB): `docker system prune`, old runs"))
    return out


def check_netem():
    """netem and iptables inside a throw-away container of a kafka-chaos image, as root with NET_ADMIN
    (as the faults use them): two lines. Without netem the latency/jitter faults are unavailable (they
    say so as an environment limit) while partitions and the iptables ``loss`` fault still work."""
    from harness import images
    tags = sorted(r["tag"] for r in images.list_images() if r["tag"].startswith(images.KAFKA_REPO + ":"))
    if not tags:
        return [_line(WARN, "netem", "no kafka-chaos image to try it in", "kafka-chaos images build, then doctor again")]
    script = ("if tc qdisc add dev lo root netem delay 1ms 2>/tmp/e; then tc qdisc del dev lo root; echo netem=ok; "
              "else echo \"netem=$(tail -n1 /tmp/e)\"; fi; "
              "if iptables -A OUTPUT -p tcp --dport 1 -j DROP 2>/tmp/f && iptables -D OUTPUT -p tcp --dport 1 -j DROP; "
              "then echo iptables=ok; else echo \"iptables=$(tail -n1 /tmp/f)\"; fi")
    try:
        res = subprocess.run(["docker", "run", "--rm", "--user", "0", "--cap-add", "NET_ADMIN", "--network", "none",
                              "--entrypoint", "sh", tags[-1], "-c", script],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return [_line(WARN, "netem", f"could not try it: {type(e).__name__}: {e}", "check the docker CLI")]
    got = dict(ln.split("=", 1) for ln in res.stdout.splitlines() if "=" in ln)
    out = []
    if got.get("netem") == "ok":
        out.append(_line(OK, "netem", "tc netem works in a container (latency, jitter, loss faults)"))
    else:
        out.append(_line(WARN, "netem", f"tc netem unavailable in containers ({got.get('netem') or res.stderr.strip()[-200:]}): "
                         "the netem faults are skipped as an environment limit; partitions and `loss` (iptables) work",
                         "a kernel with sch_netem: `modprobe sch_netem` (linux-modules-extra-$(uname -r))"))
    if got.get("iptables") == "ok":
        out.append(_line(OK, "iptables", "iptables works in a container (partitions, isolation, loss)"))
    else:
        out.append(_line(FAIL, "iptables", f"iptables failed in a container ({got.get('iptables') or res.stderr.strip()[-200:]})",
                         "a kernel with netfilter (iptables/nf_tables) modules"))
    return out


def check_ports():
    from harness.cluster.host_ports import PORT_RANGE
    try:
        lo, hi = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        return _line(WARN, "ports", "cannot read the ephemeral port range")
    if lo < PORT_RANGE[1]:
        return _line(WARN, "ports", f"the ephemeral range {lo}-{hi} overlaps the clusters' band {PORT_RANGE[0]}-{PORT_RANGE[1]}",
                     f"sysctl -w net.ipv4.ip_local_port_range=\"{PORT_RANGE[1] + 768} {max(hi, 60999)}\"")
    return _line(OK, "ports", f"clusters publish on 127.0.0.1:{PORT_RANGE[0]}-{PORT_RANGE[1]}, below the ephemeral range {lo}-{hi}")


def check_java():
    java = shutil.which("java")
    if not java:
        return _line(WARN, "java", "no java on PATH (the Spark report needs Java 17+)", "apt-get install openjdk-17-jre-headless")
    res = subprocess.run([java, "-version"], capture_output=True, text=True)
    m = re.search(r'version "(\d+)', res.stderr + res.stdout)
    major = int(m.group(1)) if m else 0
    if major < 17:
        return _line(WARN, "java", f"Java {major or '?'} (the Spark report needs 17+)", "install Java 17+ and put it first on PATH")
    return _line(OK, "java", f"Java {major} for the Spark report")


def run_checks(runs_dir: str = "runs") -> list[tuple[str, str, str, str]]:
    docker_line, info = check_docker()
    lines = [docker_line]
    if docker_line[0] == OK:
        lines += [check_image(), *check_disk(info, runs_dir), *check_netem()]
    lines += [check_ports(), check_java()]
    return lines


def cmd_doctor(args) -> int:
    lines = run_checks(args.runs_dir)
    bad = [ln for ln in lines if ln[0] == FAIL]
    code = EXIT_ENV if bad else 0      # 5: this host needs fixing (harness/errors.py)
    if args.json:      # one object on stdout: {"exit_code", "checks": [{status, check, detail, todo}]}
        print(json.dumps({"exit_code": code, "checks": [dict(zip(("status", "check", "detail", "todo"), ln))
                                                        for ln in lines]}))
        return code
    for status, what, detail, todo in lines:
        print(f"{status:5} {what:8} {detail}" + (f"  -> {todo}" if todo else ""))
    print(f"{len(lines)} checks: {len(lines) - len(bad)} ok or advice, {len(bad)} FAIL", file=sys.stderr)
    return code


def add_parser(sub) -> None:
    d = sub.add_parser("doctor", help="check this host: Docker, images, disk, netem, ports, Java (one line each)",
                       description="Check what running clusters needs here, one line per check with what to do. "
                                   "Exit codes: 0 nothing FAIL, 5 something to fix on this host.")
    d.add_argument("--runs-dir", default="runs", help="where run records go (its free disk is checked)")
    d.add_argument("--json", action="store_true", help="the checks as one JSON object on stdout")
    d.set_defaults(func=cmd_doctor)
