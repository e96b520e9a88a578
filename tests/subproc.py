"""For tests that interrupt a child ``kafka-chaos`` process with SIGINT.

A test suite started in the background from a non-interactive shell (``./run.sh test &``) runs with
SIGINT ignored (POSIX: asynchronous commands without job control), and an ignored signal stays
ignored across exec, so the child would never see the test's Ctrl-C. Pass ``preexec_fn=sigint_default``
to give the child the default disposition, as an interactive terminal would.
"""

from __future__ import annotations

import signal


def sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
