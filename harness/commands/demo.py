"""``kafka-chaos demo``: what ``./run.sh demo`` does after its setup, from any directory: build the
default broker image (cached), run the smoke suite (or ``--scenario``) on local clusters, two at a time
(``--parallel``), and write the HTML report; each step prints its own time. Run records go to
``./runs``, the report to ``./report/report.html``.

Exit code 0 when every run passed and the report's gate passed, otherwise the first non-zero one.
"""

from __future__ import annotations

import functools
import sys
import time
from typing import Callable


def cmd_demo(args, main: Callable[[list[str]], int]) -> int:
    """Each step is a whole ``kafka-chaos`` command line given to ``main`` (the CLI's own entry point)."""
    from harness import distributions, images
    # the image the run takes: the asked version, else the default of the adapter's controller mode
    # (images.DEFAULT_VERSIONS: KRaft the newest 4.x, ZooKeeper mode the newest 3.9.x)
    version = args.kafka_version or images.default_series(distributions.resolve(args.distribution).controller_model)
    steps = [["images", "build", "--kafka", version],
             ["run", args.scenario, "--runs-dir", args.runs_dir, "--parallel", str(args.parallel)]
             + (["--kafka-version", args.kafka_version] if args.kafka_version else [])
             + (["--distribution", args.distribution] if args.distribution else []),
             ["report", args.runs_dir, "-o", args.report_dir]]
    codes = []
    t_all = time.monotonic()
    for argv in steps:
        print(f"[demo] kafka-chaos {' '.join(argv)}", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        rc = main(argv)
        codes.append(rc)
        print(f"[demo] {argv[0]}: {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
        if argv[0] == "images" and rc != 0:
            return rc
    print(f"[demo] run records in ./{args.runs_dir}, report in ./{args.report_dir}/report.html "
          f"(run exit {codes[1]}, report gate exit {codes[2]}); {time.monotonic() - t_all:.0f} s in all", file=sys.stderr)
    return next((c for c in codes if c), 0)


def add_parser(sub, main: Callable[[list[str]], int]) -> None:
    """``main``: the CLI's entry point (harness.cli passes its own ``main``), which runs each step."""
    from harness import images
    d = sub.add_parser("demo", help="build the image, run the smoke suite and write the HTML report (./run.sh demo "
                                    "without the setup)",
                       description="Build the default broker image, run the smoke suite on local clusters and "
                                   "write the report (run records in ./runs, report in ./report).")
    d.add_argument("--scenario", default="smoke", help="a suite, family or scenario instead of `smoke`")
    d.add_argument("--kafka-version", metavar="V", help=f"Kafka version (default: {images.default_version_help()})")
    d.add_argument("--distribution", help="apache-kraft (default), apache-zk (ZooKeeper mode), apache-kraft-dedicated")
    d.add_argument("--parallel", type=int, default=3, metavar="N",
                   help="scenarios at a time, each on its own cluster (default 3: the three smoke scenarios at once)")
    d.add_argument("--runs-dir", default="runs", help="where the run records go (default ./runs)")
    d.add_argument("--report-dir", default="report", help="where the report goes (default ./report)")
    d.set_defaults(func=functools.partial(cmd_demo, main=main))
