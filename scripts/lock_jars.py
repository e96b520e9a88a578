#!/usr/bin/env python3
"""Write harness/jar_locks/<VERSION>.txt from the classpath Maven resolves for Kafka VERSION (harness/jar_lock.py).

    python3 scripts/lock_jars.py 4.4.0        # resolves with Maven first when the cache lacks it
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["KAFKA_CHAOS_JARS"] = "maven"        # resolve with Maven, never from an existing lock

from harness import images, jar_lock  # noqa: E402

if len(sys.argv) != 2:
    sys.exit(__doc__.strip())
libs = images.ensure_jars(sys.argv[1])
m2 = Path(os.environ.get("KAFKA_CHAOS_M2", Path.home() / ".m2" / "repository"))
print(jar_lock.write(sys.argv[1], libs, m2))
