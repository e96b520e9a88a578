"""The CI gate: thresholds over the report's totals, and the resulting exit code.

Each rule has a threshold N: the gate fails when the total reaches N (``total >= N``);
N = 0 disables the rule. Defaults: any lost acknowledged write (other than those the durability
checker marks ``allowed`` by the configuration, e.g. acks=1; see ``fail_on_lost_allowed``) or any
FAIL verdict fails the gate, and so does a scenario none of whose runs was decided (every run UNKNOWN,
including runs whose coverage fell short: cause ``workload``), since the report then holds no evidence
about the broker for it, and so does a tampered or stale record (its stored verdict contradicted by
its events, or its files changed since they were judged: reports/outcome.py); UNKNOWN runs of otherwise decided scenarios, skipped records, duplicates, ...
are reported but do not fail it; and a report with no usable run fails (``min_runs``). Thresholds come from, in increasing precedence: the
defaults, a JSON ``--gate-config`` file (``{"fail_on_lost": 1, ...}``), the ``--fail-on-*`` flags.
"""

from __future__ import annotations

import json
from pathlib import Path

# rule name -> (total it reads from the summary, default threshold, what it means)
RULES: dict[str, tuple[str, int, str]] = {
    "fail_on_lost": ("lost_not_allowed", 1, "lost acknowledged writes (not allowed by the configuration)"),
    "fail_on_lost_allowed": ("lost_allowed", 0, "lost acknowledged writes the configuration allows (acks=1, ...)"),
    "fail_on_fail": ("fail", 1, "runs with a FAIL verdict"),
    "fail_on_tampered": ("tampered", 1, "tampered or stale records: a stored verdict the events contradict, or "
                                        "files changed since they were judged (reports/outcome.py)"),
    "fail_on_undecided": ("undecided_scenarios", 1, "undecided scenarios: no PASS or FAIL run (every run UNKNOWN, "
                                                    "coverage shortfalls included)"),
    "fail_on_unknown": ("unknown", 0, "runs with an UNKNOWN verdict"),
    "fail_on_duplicates": ("duplicates", 0, "duplicated writes"),
    "fail_on_inconsistent_offsets": ("inconsistent_offsets", 0, "offsets seen with two values"),
    "fail_on_divergences": ("conformance_divergences", 0, "conformance divergences"),
    "fail_on_skipped": ("skipped_records", 0, "skipped (malformed/partial/older-schema) records"),
    "fail_on_flaky": ("flaky", 0, "flaky scenario+seed groups (PASS and FAIL)"),
    "fail_on_regressions": ("regressions", 0, "regressed scenario/fault rows"),
}
MIN_RUNS_DEFAULT = 1


class GateConfigError(ValueError):
    """The gate configuration file is unreadable or has unknown keys / bad values."""


def load_config(path: str | None) -> dict[str, int]:
    """Thresholds from a JSON file (only known keys, non-negative integers)."""
    if not path:
        return {}
    try:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GateConfigError(f"gate config {path}: no such file") from None
    except (OSError, json.JSONDecodeError) as e:
        raise GateConfigError(f"gate config {path}: {e}") from None
    if not isinstance(obj, dict):
        raise GateConfigError(f"gate config {path}: expected a JSON object")
    out = {}
    for k, v in obj.items():
        if k not in RULES and k != "min_runs":
            raise GateConfigError(f"gate config {path}: unknown key {k!r} (known: {', '.join([*RULES, 'min_runs'])})")
        if v is None:
            v = 0
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise GateConfigError(f"gate config {path}: {k} must be a non-negative integer, not {v!r}")
        out[k] = v
    return out


def thresholds(file_cfg: dict[str, int], overrides: dict[str, int | None]) -> dict[str, int]:
    th = {k: d for k, (_, d, _) in RULES.items()}
    th["min_runs"] = MIN_RUNS_DEFAULT
    th.update(file_cfg)
    th.update({k: v for k, v in overrides.items() if v is not None})
    return th


def evaluate(totals: dict, th: dict[str, int]) -> dict:
    """``{"passed": bool, "rules": [...]}``; each rule with its total, threshold and outcome."""
    rules = []
    for name, (key, _, what) in RULES.items():
        n = th.get(name, 0)
        value = int(totals.get(key) or 0)
        failed = n > 0 and value >= n
        rules.append({"rule": name, "total": key, "value": value, "threshold": n, "enabled": n > 0,
                      "failed": failed, "description": what})
    runs = int(totals.get("runs") or 0)
    rules.append({"rule": "min_runs", "total": "runs", "value": runs, "threshold": th.get("min_runs", 0),
                  "enabled": th.get("min_runs", 0) > 0, "failed": runs < th.get("min_runs", 0),
                  "description": "usable run records (fails when fewer)"})
    return {"passed": not any(r["failed"] for r in rules), "rules": rules,
            "failed_rules": [r["rule"] for r in rules if r["failed"]]}
