"""Negative controls on real misconfigured clusters (issue 17): the transaction and consumer-group
checkers catch the anomaly a wrong configuration really produces.

Unlike the other negative controls (which re-judge a doctored copy of a passing record), nothing here
is forged: each control runs a catalog scenario's script on a fresh cluster with one thing
misconfigured, and the run itself must come out FAIL, the reason naming the anomaly and verdict.json
showing the operations (values, offsets, readers, writers, generations). What is misconfigured:

- ``G1a`` (aborted read): ``transactions.zombie_fenced`` with its read_committed consumers and drain
  set to ``isolation.level=read_uncommitted``, while the record says read_committed was expected (the
  checker's ``expected_isolation``). 20 % of the transactions are aborted on purpose after a flush, so
  their records are in the log; a read_uncommitted fetch returns them (Kafka's ``FetchIsolation
  .HIGH_WATERMARK`` ignores the aborted-transaction index).
- ``group-skip`` (lost consumption): ``groups.member_kill`` with ``enable.auto.commit=true``: librdkafka
  stores the offset of every record it hands to the application and auto-commits it (on its timer and
  on close), before the application processed it (here: recorded its ``group.poll``). The member killed
  mid-batch leaves a committed offset beyond records nobody consumed, and the next owner starts there.
- ``double-consume``: ``groups.static_member_kill``'s static group, and 12 s in a fourth consumer that
  reuses member ``m1``'s ``group.instance.id``. In a Stable group the coordinator replaces the static
  member's id without a rebalance and hands the newcomer the same assignment in the same generation
  (``GroupCoordinator.updateStaticMemberAndRebalance``, ``case Stable``); ``m1`` goes on fetching until its
  next heartbeat or commit is answered ``FENCED_INSTANCE_ID``, so two members consume the same records in
  one generation.

Markers ``docker`` and ``chaos`` (each run is about a minute on a real cluster; the default broker image).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.runner import execute
from suites.catalog import scenarios_for

pytestmark = [pytest.mark.docker, pytest.mark.chaos]


def _misconfigured(name: str, workload: dict, script=None, description: str = ""):
    base = next(s for s in scenarios_for(name) if s.name == name)
    change = {"workload": workload, "description": f"{base.description}; NEGATIVE CONTROL: {description}"}
    s = replace(base, variants={"negative": change}).with_variant("negative")
    return replace(s, script=script) if script is not None else s


def _run(scenario, image, runs_dir):
    out = execute(scenario, runs_dir=runs_dir, image=image, suite="pytest")
    verdict = json.loads((Path(out.path) / "verdict.json").read_text())
    print(f"{scenario.name}[negative]: {out.verdict} in {out.seconds:.0f} s — {out.reason} ({out.path})")
    return out, verdict


def _failed(verdict: dict, checker: str, anomaly: str) -> dict:
    chk = verdict["checks"][checker]["checks"][anomaly]
    assert chk["verdict"] == "FAIL", (anomaly, chk)
    assert chk["examples"], chk
    return chk


def test_read_uncommitted_reader_reads_aborted_writes(broker_image, tmp_path_factory):
    """G1a: aborted transactions' records read by a reader that should have been read_committed."""
    s = _misconfigured("transactions.zombie_fenced", {"consumer_config": {"isolation.level": "read_uncommitted"}},
                       description="consumers read_uncommitted, read_committed expected")
    out, verdict = _run(s, broker_image.tag, tmp_path_factory.mktemp("runs"))
    assert out.verdict == "FAIL" and "transactions" in out.reason and "G1a" in out.reason, out.reason
    g1a = _failed(verdict, "transactions", "G1a")
    ex = g1a["examples"][0]
    assert {"value", "topic", "partition", "offset", "reader", "writer"} <= set(ex), ex
    assert ex["writer"]["status"] == "aborted", ex


def test_auto_commit_before_processing_skips_records(broker_image, tmp_path_factory):
    """group-skip: offsets auto-committed for records the killed member never processed."""
    s = _misconfigured("groups.member_kill", {"rate": 300.0, "consumer_config": {
        "enable.auto.commit": True, "auto.commit.interval.ms": 100}},
        description="enable.auto.commit=true (offsets committed before processing)")
    out, verdict = _run(s, broker_image.tag, tmp_path_factory.mktemp("runs"))
    assert out.verdict == "FAIL" and "groups" in out.reason and "group-skip" in out.reason, out.reason
    skip = _failed(verdict, "groups", "group-skip")
    assert skip["examples"][0].get("partition") is not None, skip["examples"][0]


def _impostor(ctx) -> None:
    ctx.sleep(12)            # the static group is Stable and consuming
    ctx.action("add_member", lambda: ctx.nemesis.workload.add_member("m9", {"group.instance.id": "m1"}),
               member="m9", group_instance_id="m1")
    ctx.sleep(25)


def test_duplicate_group_instance_id_double_consumes(broker_image, tmp_path_factory):
    """double-consume: a second consumer with an existing member's group.instance.id."""
    s = _misconfigured("groups.static_member_kill", {}, script=_impostor,
                       description="a fourth consumer reuses m1's group.instance.id 12 s in")
    out, verdict = _run(s, broker_image.tag, tmp_path_factory.mktemp("runs"))
    assert out.verdict == "FAIL" and "groups" in out.reason and "double-consume" in out.reason, out.reason
    dbl = _failed(verdict, "groups", "double-consume")
    assert dbl["examples"][0], dbl
