"""Checkers over run records (pure: no cluster needed).

``check_durability(events, metadata)`` judges lost / unseen acknowledged writes, duplicates,
inconsistent offsets, send/poll ordering, acks semantics against the observed ISR and
availability; see ``docs/checkers.md``.
"""

from harness.checkers.durability import (ALLOWED, CHECK_VERDICTS, DEFAULT_OPTIONS, FAIL, PASS, UNKNOWN, check_durability,
                         check_run_record)

__all__ = ["check_durability", "check_run_record", "DEFAULT_OPTIONS", "CHECK_VERDICTS",
           "PASS", "FAIL", "UNKNOWN", "ALLOWED"]
