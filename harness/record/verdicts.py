"""Verdict and cause constants of the run record (verdict.json), and reading a verdict's checks.

``PASS`` / ``FAIL`` / ``UNKNOWN`` are a run's verdicts (verdict.json ``verdict``); a check inside it
may also be ``ALLOWED`` (an anomaly its configuration permits). ``NOT-APPLICABLE`` and
``INCOMPATIBLE`` are outcomes of a certification (harness/certify), not of a run. An ``UNKNOWN``
run names its ``cause``, a key of :data:`CAUSES`.
"""

from __future__ import annotations

import re
from typing import Any

PASS, FAIL, UNKNOWN = "PASS", "FAIL", "UNKNOWN"
ALLOWED = "ALLOWED"
NOT_APPLICABLE = "NOT-APPLICABLE"
INCOMPATIBLE = "INCOMPATIBLE"
VERDICTS = (PASS, FAIL, UNKNOWN)                  # of a run (verdict.json)
CHECK_VERDICTS = (PASS, FAIL, UNKNOWN, ALLOWED)   # of one check inside it

WRITE_CAUSE = "disk-full"     # the record could not be written (harness/record/writer.py)

# Why a run is UNKNOWN. Each is about the harness, the host or the evidence, never the broker.
CAUSES: dict[str, str] = {
    "aborted": "the run was interrupted (Ctrl-C or another signal)",
    "harness-crash": "the harness itself failed (a bug, or its process died); the record says where",
    "container-removed": "a container of the cluster was removed by something other than the harness",
    "container-stopped": "a container of the cluster was stopped, killed or paused by something other "
                         "than the harness",
    "docker-error": "the Docker engine failed or answered a request with an error",
    WRITE_CAUSE: "the run record could not be written (no space left on the device, or another write error)",
    "record-incomplete": "the record ends before the run did: only its complete part could be judged",
    "contract": "the broker does not fit the harness's contract (docs/broker-contract.md)",
    "workload": "a client died or stalled, so the run did not exercise what it claims",
    "script": "the scenario's own script raised an error (a scenario bug, not the broker)",
    "environment": "the cluster did not start or stopped answering for a reason outside the broker",
    "checker-error": "a checker raised an error on this record",
    "undecided": "the history cannot decide a check (for example no final read of the partitions)",
    "record-invalid": "the stored record is malformed (a file, line or field of the wrong shape): the evidence "
                      "cannot be judged, whatever it seems to say about the broker",
}
RECORD_INVALID = "record-invalid"

# The checks a scenario may name (metadata.json ``checks``; harness/scenario/schema.py).
CHECK_NAMES = ("conformance", "durability", "transactions", "groups", "share", "expectations", "txn-epochs")

# -- reading the checks of a stored verdict (verdict.json ``checks``) --------------------------------------
# Names the durability checker may use for each count readers aggregate (first match wins).
CHECK_ALIASES = {
    "lost": ("lost", "lost_acknowledged_writes", "lost_writes"),
    "duplicates": ("duplicates", "duplicated"),
    "inconsistent_offsets": ("inconsistent_offsets",),
}
# Where the checks may sit inside verdict.json ``checks``.
CHECK_PARENTS = ("durability", "client", "workload")


def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def as_int(v: Any) -> int | None:
    """An integer from a JSON value (an integral number or a string of digits); None otherwise."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"-?\d+", v.strip()):
        return int(v)
    return None


def find_check(checks: dict, name: str) -> dict | None:
    """The check ``name`` (or an alias) at the top level of ``checks`` or under a parent check."""
    for alias in CHECK_ALIASES.get(name, (name,)):
        if isinstance(checks.get(alias), dict):
            return checks[alias]
        for parent in CHECK_PARENTS:
            p = _dict(checks.get(parent))
            if isinstance(p.get(alias), dict):
                return p[alias]
            sub = _dict(p.get("checks"))
            if isinstance(sub.get(alias), dict):
                return sub[alias]
    return None


def check_count(checks: dict, name: str) -> int | None:
    """``count`` of a check; falls back to the length of a list it carries; None if absent."""
    c = find_check(checks, name)
    if c is None:
        return None
    n = as_int(c.get("count"))
    if n is not None:
        return n
    for key in ("values", "items", "examples", "offsets"):
        if isinstance(c.get(key), list):
            return len(c[key])
    return None


def failed_checks(checks: dict) -> list[str]:
    """Names of checks (top level and one level down) whose verdict is FAIL."""
    out = []
    for name, c in sorted(checks.items()):
        if not isinstance(c, dict):
            continue
        if c.get("verdict") == FAIL:
            out.append(name)
        for sub, sc in sorted(c.items()):
            if isinstance(sc, dict) and sc.get("verdict") == FAIL:
                out.append(f"{name}.{sub}")
    return out
