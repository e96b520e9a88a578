"""The run record (docs/run-record.md): one directory per run, and the one module its writer and
every reader share (the checkers, ``reference/``, ``check``, ``reports/``).

* :mod:`harness.record.events`: event type names; :mod:`harness.record.verdicts`: verdicts, causes;
* :mod:`harness.record.windows`: fault windows (the one pairing of ``fault.start`` with its end);
* :mod:`harness.record.truth`: ZooKeeper's ground truth; :mod:`harness.record.facts`: run facts;
* :mod:`harness.record.read`: reading, validating and upgrading a record; schema version;
* :mod:`harness.record.writer`: :class:`RunRecorder`; :mod:`harness.record.storage`: stores.

Imports nothing of the project but :mod:`harness.errors` (import-linter contract), so ``reference/``
may import it.
"""

from harness.record.read import (SCHEMA_VERSION, RecordError, RunRecord, iter_events, list_runs,
                                  load_json_object, parse_event_lines, read_run, upgrade)
from harness.record.verdicts import VERDICTS, WRITE_CAUSE
from harness.record.writer import (FLUSH_BYTES, RESERVE_BYTES, RecordWriteError, RunRecorder, _write_json_atomic,
                                   describe_os_error, new_run_id)

__all__ = ["SCHEMA_VERSION", "VERDICTS", "WRITE_CAUSE", "FLUSH_BYTES", "RESERVE_BYTES", "RecordError",
           "RecordWriteError", "RunRecord", "RunRecorder", "describe_os_error", "iter_events", "list_runs",
           "load_json_object", "new_run_id", "parse_event_lines", "read_run", "upgrade", "_write_json_atomic"]
