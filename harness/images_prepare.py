"""``python -m harness.images_prepare [VERSION]``: the default broker image (``images.build``: the Debian base
image and Kafka's jars made at the same time, then ``docker build``) with the standard library alone -- the
``docker`` CLI, mmdebstrap and Maven, no docker-py.

``run.sh setup`` starts it as soon as the Debian packages and the Docker engine are there, while pip is still
installing the Python dependencies; ``kafka-chaos images build`` then finds the image built. On a fresh machine
that takes the base image (about 50 s), the jars (about a minute from an empty Maven repository) and the build
(about 20 s) off the path after pip (docs/benchmarks.md "demo"). One line and exit 2 on failure.
"""

from __future__ import annotations

import signal
import sys

from harness import images
from harness.errors import HarnessError


def _stop(signum, _frame) -> None:
    raise SystemExit(128 + signum)   # unwinds: the build's temporary directories go, its children are waited for


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or args[:1] in (["-h"], ["--help"]):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    try:
        version = images.resolve_version(args[0] if args else None)
        images.build(version)
    except HarnessError as e:
        print(f"images_prepare: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
