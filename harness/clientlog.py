"""Where librdkafka's own log lines go.

During faults, clients log every refused connection to stderr; that drowns the harness's
progress lines. Every client the harness creates passes ``client_logger()`` as its ``logger``,
so librdkafka logs reach the Python logger ``kafka_chaos.librdkafka``: silent by default, printed
to stderr with ``KAFKA_CHAOS_VERBOSE=1``.
"""

from __future__ import annotations

import logging
import os

_LOGGER = logging.getLogger("kafka_chaos.librdkafka")
if not _LOGGER.handlers:
    if os.environ.get("KAFKA_CHAOS_VERBOSE") == "1":
        _h = logging.StreamHandler()
        _h.setFormatter(logging.Formatter("%(asctime)s librdkafka %(levelname)s %(message)s"))
        _LOGGER.addHandler(_h)
        _LOGGER.setLevel(logging.INFO)
    else:
        _LOGGER.addHandler(logging.NullHandler())
    _LOGGER.propagate = False


def client_logger() -> logging.Logger:
    return _LOGGER


def with_logger(conf: dict) -> dict:
    """``conf`` plus the harness's librdkafka logger (unless the caller chose one)."""
    return {"logger": _LOGGER, **conf}
