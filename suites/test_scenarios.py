"""Every catalogued scenario as a pytest test: a fresh real cluster, its faults, and a PASS verdict
from the conformance checker (reference model), the durability checker and its own expectations.

Select with markers: ``-m smoke`` (CI), ``-m conformance``, ``-m chaos``, ``-m nightly``.
"""

from __future__ import annotations

import gzip
import json

import pytest

from harness.checkers.verdict import DATA_CHECKS
from harness.request import prepare
from harness.runner import execute
from suites.catalog import SCENARIOS


def _params() -> list:
    """A list, not a generator: pytest 9 deprecates iterators in parametrize (PytestRemovedIn10Warning)."""
    return [pytest.param(s, id=s.name, marks=[getattr(pytest.mark, t) for t in s.tags]) for s in SCENARIOS]


@pytest.mark.parametrize("scenario", _params())
def test_scenario(scenario, kc_image, request):
    # the session's distribution (--kc-distribution; this repository's tests: apache-zk, conftest.py), with the
    # image of its version; applicability decided once
    req = prepare(scenario, image=kc_image.tag, distribution=request.config.getoption("kc_distribution"))
    if req.not_applicable:
        pytest.skip(f"{scenario.name}: {req.not_applicable}")
    runs_dir = request.config.getoption("kc_runs_dir")
    out = execute(req, runs_dir=runs_dir, suite="pytest")
    verdict = json.loads((out.path / "verdict.json").read_text())
    assert out.verdict == verdict["verdict"]
    assert out.verdict == "PASS", f"{scenario.name}: {out.verdict}: {out.reason} (record: {out.path})"
    # a PASS must rest on evidence: the model saw controller writes, the workload acknowledged writes
    conf = verdict["checks"]["conformance"]
    assert conf["stats"], conf
    if scenario.workload:       # the data checks of its workload kind (durability, transactions, share, ...)
        data = {n: verdict["checks"][n] for n in DATA_CHECKS if n in verdict["checks"]}
        assert data, sorted(verdict["checks"])
        assert all(c["verdict"] == "PASS" for c in data.values()), data
    # every container's own log is in the record (harness/cluster/container_logs.py)
    logs = json.loads((out.path / "metadata.json").read_text())["container_logs"]
    assert len(logs) >= scenario.brokers and all("path" in e for e in logs), logs
    texts = [gzip.decompress((out.path / e["path"]).read_bytes()).decode(errors="replace") for e in logs]
    assert sum("started" in t for t in texts) >= scenario.brokers, [e["container"] for e in logs]
