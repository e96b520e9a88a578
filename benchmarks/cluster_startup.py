"""Cold and warm start-up time of a 3 ZooKeeper + 3 broker cluster, to ready (image already built).

cold: the first cluster after the page cache was dropped (when permitted; otherwise the first
      cluster of this process), warm: the mean of the next starts.
Ready = every broker registered in ZooKeeper and visible in a metadata response.
Target: ready in <= 30 s on a 2-core machine.

    python benchmarks/cluster_startup.py [--warm-runs 2] [--zookeepers 3] [--brokers 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
os.environ.setdefault("KAFKA_CHAOS_QUIET", "1")

from harness import images  # noqa: E402
from harness.cluster.cluster import Cluster, ClusterSpec  # noqa: E402


def start_once(zk: int, brokers: int, image: str) -> float:
    t0 = time.monotonic()
    cl = Cluster(ClusterSpec(brokers=brokers, zookeepers=zk, image=image, distribution="apache-zk"))   # a ZooKeeper-mode figure
    try:
        cl.start()
        return time.monotonic() - t0
    finally:
        cl.remove()


def drop_caches() -> bool:
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--warm-runs", type=int, default=2)
    ap.add_argument("--zookeepers", type=int, default=3)
    ap.add_argument("--brokers", type=int, default=3)
    a = ap.parse_args()
    img = images.image_for(None, build_missing=True, mode=images.ZK).tag
    dropped = drop_caches()
    cold = start_once(a.zookeepers, a.brokers, img)
    warm = [start_once(a.zookeepers, a.brokers, img) for _ in range(a.warm_runs)]
    print(f"cluster: {a.zookeepers} ZooKeeper + {a.brokers} brokers, image {img}, cpus {os.cpu_count()}")
    print(f"cold start ({'page cache dropped' if dropped else 'first start of this process'}): {cold:.1f} s")
    print(f"warm starts: {', '.join(f'{w:.1f}' for w in warm)} s (mean {statistics.mean(warm):.1f} s)")
    print(f"cluster_startup_cold: {cold:.1f} s")
    print(f"cluster_startup: {statistics.mean(warm):.1f} s")


if __name__ == "__main__":
    main()
