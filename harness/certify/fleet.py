"""``certify`` across a CI fleet: ``--shard I/N`` runs one slice of the certification's scenarios, and
``--merge`` builds one certificate from the records every shard left in a shared ``--runs-dir``
(a local folder or ``s3://bucket/prefix``), running nothing.

A shard is the same deterministic, duration-balanced slice as ``run --shard`` (:mod:`harness.shard`),
taken over the applicable scenarios of the certification's plan, so N jobs with the same options
cover the plan exactly once. The merge takes, for each applicable scenario, the records of the same
certification: suite ``certify``, the same broker image, profile and distribution; its attempts are
those records in the order they started (a scenario whose runs were all UNKNOWN stays UNKNOWN; one
with no record at all is "not run", so a missing shard makes the certificate INCONCLUSIVE, never
CERTIFIED).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

from harness.record import storage
from harness.errors import HarnessError
from harness.record import RecordError, list_runs, read_run
from harness.shard import select


def shard_todo(todo: list, shard: str) -> list:
    """The (capability plan, scenario plan) pairs of shard ``I/N``, in the plan's order."""
    names = list(dict.fromkeys(sp.name for _, sp in todo))
    mine = set(select(names, shard))
    return [(cp, sp) for cp, sp in todo if sp.name in mine]


def _matches(meta: dict, image: str, profile: str, distribution: str | None) -> bool:
    return (meta.get("suite") == "certify" and meta.get("broker_image") == image
            and meta.get("profile") == profile
            and (distribution is None or (meta.get("distribution") or "apache-zk") == distribution))


def merged_results(runs_dir: str, names: set[str], image: str, profile: str, distribution: str | None,
                   judge: Callable, endpoint: str | None = None) -> dict[str, list[dict]]:
    """scenario -> attempts (as :func:`harness.certify.command.judge_run` plus run_id, path, seconds, attempt),
    from every matching record under ``runs_dir``; ``judge(run_dir, scenario_name)`` judges one."""
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-merge-") as tmp:
        if storage.is_remote(runs_dir):
            store = storage.open_store(runs_dir, endpoint)
            dirs = [(d, store.record_url(d.name)) for d in store.download_all(Path(tmp))]
        else:
            if not Path(runs_dir).is_dir():
                raise HarnessError(f"--merge: --runs-dir {runs_dir} is not a directory")
            dirs = [(d, str(d.resolve())) for d in list_runs(runs_dir)]
        found: dict[str, list[tuple[str, Path, str, dict]]] = {}
        for d, where in dirs:
            try:
                rec = read_run(d, with_events=False)
            except RecordError:
                continue
            meta = rec.metadata
            if meta.get("scenario") in names and _matches(meta, image, profile, distribution):
                found.setdefault(meta["scenario"], []).append((meta.get("started_at") or "", d, where, rec.verdict))
        results: dict[str, list[dict]] = {}
        for name, recs in found.items():
            for attempt, (_, d, where, verdict) in enumerate(sorted(recs, key=lambda r: (r[0], r[1].name))):
                j = judge(d, name)
                j.update(run_id=d.name, path=where, attempt=attempt,
                         seconds=round(float((verdict.get("stats") or {}).get("seconds") or 0.0), 1))
                results.setdefault(name, []).append(j)
        return results
