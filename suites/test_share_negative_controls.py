"""Share groups (issue 40): negative controls on real misconfigured 4.4.0 KRaft clusters — the share
checker catches what a wrong configuration really produces. Nothing is forged: each control runs a
catalog scenario's script with one thing misconfigured and the run itself must come out FAIL naming
the anomaly, verdict.json showing the records.

- ``share-lost`` (accepted, never processed): ``share.member_crash`` with member ``m1`` acknowledging
  before processing (``ack_before_process``): it accepts and commits a batch, then the crash lands
  before it processed it. The broker archives accepted records (never delivered again), so the batch
  is lost to the application.
- ``share-lost`` (never delivered): ``share.member_crash`` with the group left at Kafka's default
  ``share.auto.offset.reset=latest`` and the members starting after 4 s of writes: the share-partitions
  start at the log end when the group first fetches, so what was written before is never delivered
  (GroupConfig ``share.auto.offset.reset``, kafka-group-coordinator 4.4.0).

- ``share-dlq``: ``share.member_crash[dlq]`` with the dead-letter topic created without its topic config
  ``errors.deadletterqueue.group.enable``: the broker archives rejected records without writing them.

- ``share-spso-backwards``: ``share.member_crash`` where, once the SPSO sampler has samples, every member
  ends (the group is empty) and an administrator resets the group's offsets to the earliest
  (``kafka-share-groups --reset-offsets --to-earliest --execute``: AlterShareGroupOffsets, which writes the
  share-partition state afresh): the sampled SPSO goes back to 0 — the one way Kafka moves it backwards
  (docs/share-groups.md), so the rule firing on it shows it reads real samples.

Run: ``flock /tmp/kc/slotA.lock python3 -m pytest -p no:cacheprovider -n 0 -m chaos
suites/test_share_negative_controls.py`` (about a minute each; markers ``docker`` and ``chaos``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.runner import execute
from suites.catalog import scenarios_for
from suites.scenarios import share

pytestmark = [pytest.mark.docker, pytest.mark.chaos]
IMAGE = "kafka-chaos/kafka:4.4.0"


def _misconfigured(name: str, workload: dict, script=None, description: str = ""):
    base = next(s for s in scenarios_for(name) if s.name == name)
    change = {"workload": workload, "description": f"{base.description}; NEGATIVE CONTROL: {description}"}
    s = replace(base, variants={"negative": change}).with_variant("negative")
    return replace(s, script=script) if script is not None else s


def _run(scenario, runs_dir):
    out = execute(scenario, runs_dir=runs_dir, image=IMAGE, distribution="apache-kraft", suite="pytest")
    verdict = json.loads((Path(out.path) / "verdict.json").read_text())
    print(f"{scenario.name}[negative]: {out.verdict} in {out.seconds:.0f} s — {out.reason} ({out.path})")
    return out, verdict


def _lost(verdict: dict) -> list[dict]:
    chk = verdict["checks"]["share"]["checks"]["share-lost"]
    assert chk["verdict"] == "FAIL" and chk["examples"], chk
    return chk["examples"]


def test_ack_before_processing_then_crash_loses_records(tmp_path_factory):
    s = _misconfigured("share.member_crash", {"ack_before_process": ["m1"]},
                       description="m1 accepts and commits each batch before processing it")
    out, verdict = _run(s, tmp_path_factory.mktemp("runs"))
    assert out.verdict == "FAIL" and "share-lost" in out.reason, out.reason
    ex = _lost(verdict)
    assert {e["why"] for e in ex} == {"accepted without being processed"}, ex
    assert all(e["process"] == "m1" for e in ex), ex


def _late_members(ctx) -> None:
    ctx.sleep(4)                 # writes the group will never see
    for m in ctx.nemesis.workload.consumers:
        m.thread.start()
    share.member_crash(ctx)


def test_auto_offset_reset_latest_never_delivers_earlier_writes(tmp_path_factory, monkeypatch):
    from harness.workload.share import ShareWorkload
    started = ShareWorkload.start

    def producers_first(self):          # the members start in the script, 4 s later
        members, self.consumers = self.consumers, []
        try:
            return started(self)
        finally:
            self.consumers = members
    monkeypatch.setattr(ShareWorkload, "start", producers_first)
    s = _misconfigured("share.member_crash", {"auto_offset_reset": "latest"}, script=_late_members,
                       description="share.auto.offset.reset=latest, members start 4 s after the producer")
    out, verdict = _run(s, tmp_path_factory.mktemp("runs"))
    assert out.verdict == "FAIL" and "share-lost" in out.reason, out.reason
    ex = _lost(verdict)
    assert any(e["why"] == "never delivered to a member" for e in ex), ex


def test_dead_letter_topic_without_its_switch_gets_nothing(tmp_path_factory):
    """share-dlq: the group names a dead-letter topic created without errors.deadletterqueue.group.enable:
    the 4.4.0 broker logs "DLQ is not enabled on configured DLQ topic" and archives every rejected record
    without writing it (ShareGroupDLQStateManager.validateDlqTopic, "proceeding to ARCHIVED regardless")."""
    base = next(s for s in scenarios_for("share.member_crash") if s.name == "share.member_crash")
    s = replace(base.with_variant("dlq"), variants={})
    s = replace(s, variants={"negative": {"workload": {**s.workload, "dlq_topic_enable": False},
                                          "description": "dead-letter topic without errors.deadletterqueue.group.enable"}}
                ).with_variant("negative")
    out, verdict = _run(s, tmp_path_factory.mktemp("runs"))
    assert out.verdict == "FAIL" and "share-dlq" in out.reason, out.reason
    chk = verdict["checks"]["share"]["checks"]["share-dlq"]
    assert chk["verdict"] == "FAIL" and chk["dlq_records"] == 0 and chk["dead"] > 0, chk


def _reset_after_members_end(ctx) -> None:
    from harness.cluster.admin_tool import run_tool
    share.group_formed(ctx)             # the SPSO sampler runs from here
    ctx.sleep(6)
    wl = ctx.nemesis.workload
    for m in wl.consumers:
        m.crash()
    ctx.wait_until("every share member ended (the group is empty)",
                   lambda: not any(m.thread.is_alive() for m in wl.consumers), 30)
    args = ["--group", wl.config.group, "--reset-offsets", "--to-earliest", "--topic", share.TOPIC, "--execute"]
    for _ in range(10):                 # the coordinator may still count a leaving member for a moment
        res = ctx.action("reset_share_group_offsets", lambda: run_tool(ctx.cluster, "share-groups", args, check=False),
                         group=wl.config.group, to="earliest")
        if res.exit_code == 0 and "Error" not in res.output:
            break
        ctx.sleep(2)
    ctx.sleep(5)                        # samples after the reset


def test_spso_reset_by_an_administrator_goes_backwards(tmp_path_factory):
    s = _misconfigured("share.member_crash", {}, script=_reset_after_members_end,
                       description="members end, the group's offsets reset to earliest")
    out, verdict = _run(s, tmp_path_factory.mktemp("runs"))
    assert out.verdict == "FAIL" and "share-spso-backwards" in out.reason, out.reason
    chk = verdict["checks"]["share"]["checks"]["share-spso-backwards"]
    ex = chk["examples"]
    assert chk["verdict"] == "FAIL" and ex, chk
    assert all(e["later"]["start_offset"] < e["earlier"]["start_offset"] for e in ex), ex
    assert min(e["later"]["start_offset"] for e in ex) == 0, ex
