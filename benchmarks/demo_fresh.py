"""`./run.sh demo` as on a fresh machine: a fresh clone, a fresh venv with no pip cache, no jars, no Maven
repository and none of the harness's default images; every step's time as run.sh prints it.

What this machine cannot undo is measured beside it: the Debian packages run.sh installs (docker.io, iptables,
mmdebstrap; Maven and Java come with the machine) are installed, timed, in a throw-away container of the
freshly built base image (`apt-get update` included), and the Docker engine already runs (a fresh machine
starts it: `scripts/ensure-docker.sh`, a few seconds). The figure is the demo's time plus those packages'.

    python benchmarks/demo_fresh.py --remove-images     # removes kafka-chaos/base:bookworm-jre17 and
                                                        # kafka-chaos/kafka:<default> (the harness's own; rebuilt)

Last line: ``DEMO_FRESH: <seconds> s``. Needs root, Docker, network to Debian, PyPI and Maven Central.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import images  # noqa: E402

APT_PACKAGES = ["docker.io", "iptables", "mmdebstrap"]   # run.sh's list less what the machine kind has


def sh(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kw)


def apt_seconds() -> float:
    """Seconds to `apt-get update` and install APT_PACKAGES in a container of the base image."""
    t0 = time.monotonic()
    res = subprocess.run(
        ["docker", "run", "--rm", "--label", "kafka-chaos=1", images.BASE_TAG, "sh", "-c",
         "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
         + " ".join(APT_PACKAGES) + " >/dev/null"],
        capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"demo_fresh: apt in a container failed: {res.stderr.strip()[-300:]}")
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--remove-images", action="store_true",
                    help="remove the harness's default images first (without it they must be absent already)")
    a = ap.parse_args()
    version = images.resolve_version(None)
    tags = [images.BASE_TAG, images.image_tag(version)]
    present = [t for t in tags if images.find_image(t) is not None]
    if present and not a.remove_images:
        sys.exit(f"demo_fresh: {', '.join(present)} present; pass --remove-images to time a build from nothing")
    for t in present:
        sh(["docker", "rmi", t], capture_output=True)
    with tempfile.TemporaryDirectory(prefix="kc-demo-fresh-") as tmp:
        t = Path(tmp)
        clone = t / "clone"
        sh(["git", "clone", "-q", str(ROOT), str(clone)])
        sh([sys.executable, "-m", "venv", str(t / "venv")])
        env = {**os.environ, "PYTHON": str(t / "venv" / "bin" / "python"), "PIP_NO_CACHE_DIR": "1",
               "KAFKA_CHAOS_CACHE": str(t / "cache"), "MAVEN_OPTS": f"-Dmaven.repo.local={t / 'm2'}",
               "KAFKA_CHAOS_M2": str(t / "m2")}
        t0 = time.monotonic()
        res = subprocess.run(["./run.sh", "demo"], cwd=clone, env=env, capture_output=True, text=True)
        demo = time.monotonic() - t0
        steps = [line for line in res.stderr.splitlines() if re.match(r"\[(run\.sh|images)\] ", line)]
        print("\n".join(steps))
        if res.returncode != 0:
            print(res.stderr[-2000:])
            sys.exit(f"demo_fresh: ./run.sh demo exited {res.returncode}")
    apt = apt_seconds()
    print(f"Debian packages on a fresh machine ({', '.join(APT_PACKAGES)}; in a container of the base image): {apt:.0f} s")
    print(f"./run.sh demo, fresh clone, venv, caches and images: {demo:.0f} s")
    print(f"DEMO_FRESH: {demo + apt:.0f} s")


if __name__ == "__main__":
    main()
