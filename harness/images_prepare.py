"""``python -m harness.images_prepare [VERSION]``: the inputs of the default broker image -- the Debian base
image (mmdebstrap, ``docker import``) and Kafka's jars (Maven) -- made at the same time, with the standard
library alone.

``run.sh setup`` starts it as soon as the Debian packages and the Docker engine are there, while pip is still
installing the Python dependencies; ``kafka-chaos images build`` then finds both cached and only runs
``docker build``. On a fresh machine that takes the base image (about 50 s) and the jars (about a minute from an
empty Maven repository) off the path after pip (docs/benchmarks.md "demo"). One line and exit 2 on failure.
"""

from __future__ import annotations

import sys

from harness import images
from harness.errors import HarnessError


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or args[:1] in (["-h"], ["--help"]):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    try:
        version = images.resolve_version(args[0] if args else None)
        images.base_and_jars(images.ensure_base_image, version)
    except HarnessError as e:
        print(f"images_prepare: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
