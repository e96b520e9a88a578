"""harness/record truth.py (ground truth), facts.py (run facts), read.py (validation, upgrade)."""

import json

import pytest

from harness.record import facts, truth
from harness.record.read import load_object, upgrade, validate
from harness.record.verdicts import CAUSES, VERDICTS, check_count, failed_checks

WATCH = {"type": "zk.partition_state", "t": 5.0, "wall": 105.0, "source": "watch", "leader": 1}
BARE = {"type": "zk.partition_state", "t": 5.5, "wall": 105.5, "leader": 1}
TXN = {"type": "zk.partition_state", "t": 30.0, "wall": 130.0, "source": "txnlog", "zk_time": 104.0, "leader": 1}
GAP = {"type": "zk.gap", "t": 31.0, "source": "txnlog"}
FAULT = {"type": "fault.start", "t": 4.0, "wall": 104.0, "fault_id": 0, "broker_ids": [1]}


def test_with_the_txn_log_only_its_copies_count():
    evs = [FAULT, WATCH, BARE, TXN, GAP]
    assert truth.has_txnlog(evs)
    assert truth.ground_truth(evs) == [FAULT, TXN, GAP]
    assert truth.ground_truth(evs, drop_gaps=True, strict_watch=True) == [FAULT, TXN]   # the conformance input
    (f, t) = truth.ground_truth(evs, types=("fault.start", "zk.partition_state"), retime=True)
    assert f is FAULT and t["t"] == 4.0 and TXN["t"] == 30.0      # ZooKeeper's time on the run's clock; input kept


def test_without_it_the_watchers_count():
    evs = [FAULT, WATCH, BARE]
    assert truth.ground_truth(evs) == evs                             # the report keeps source-less ones
    assert truth.ground_truth(evs, strict_watch=True) == [FAULT, WATCH]   # the conformance checker does not


def test_controller_model_from_metadata_or_inferred_for_older_records():
    assert facts.controller_model({"controller_model": "kraft", "distribution": "apache-zk"}) == "kraft"
    assert facts.controller_model({"distribution": "apache-kraft"}) == "kraft"
    assert facts.controller_model({"cluster": {"zookeepers": 0}}) == "kraft"
    assert facts.controller_model({"distribution": "apache-zk", "cluster": {"zookeepers": 1}}) == "zk"
    assert facts.controller_model(None) == "zk"


def test_acks_and_run_config():
    assert facts.normalize_acks("-1") == "all" and facts.normalize_acks(1) == "1"
    with pytest.raises(ValueError):
        facts.normalize_acks("some")
    assert facts.acks_label(" -1") == "all" and facts.acks_label("Some ") == "Some" and facts.acks_label(None) is None
    md = {"topics": [{"name": "a"}, {"name": "b", "config": {"min.insync.replicas": 2}}],
          "broker_config": {"min.insync.replicas": 1, "x": True}}
    assert facts.run_config(md, "min.insync.replicas") == 2 and facts.run_config(md, "x") is True
    assert facts.workload_kind({"workload": {"kind": "txn"}}) == "txn" and facts.workload_kind({}) is None


def test_upgrade_brings_an_older_record_to_the_current_shape_without_changing_it():
    md = {"distribution": "apache-kraft"}
    evs = [dict(FAULT), {"type": "fault.start", "t": 1.0, "node_ids": [1, 9], "broker_ids": [1]}]
    md2, evs2 = upgrade(md, evs)
    assert md2["controller_model"] == "kraft" and "controller_model" not in md
    assert evs2[0]["node_ids"] == [1] and "node_ids" not in evs[0] and evs2[1] is evs[1]
    current = {"controller_model": "zk"}
    assert upgrade(current, evs2) == (current, evs2)


def test_load_and_validate_name_the_file_and_the_field():
    assert load_object("metadata.json", None) == (None, "metadata.json: missing")
    assert "schema_version 0 not supported" in load_object("verdict.json", b'{"schema_version": 0}')[1]
    assert "not valid JSON" in load_object("verdict.json", b"{")[1]
    meta, _ = load_object("metadata.json", json.dumps({"schema_version": 1, "seed": [1]}).encode())
    verdict = {"schema_version": 1, "verdict": "MAYBE", "checks": []}
    errs = validate(meta, verdict)
    assert errs == ["verdict.json: verdict 'MAYBE' is not one of PASS, FAIL, UNKNOWN", "metadata.json: no scenario",
                    "metadata.json: field 'seed' is a list, expected an integer or a string",
                    "verdict.json: field 'checks' is a list, expected an object"]


def test_verdict_constants_and_checks():
    assert VERDICTS == ("PASS", "FAIL", "UNKNOWN") and "disk-full" in CAUSES
    checks = {"durability": {"verdict": "FAIL", "lost": {"verdict": "FAIL", "count": 2}, "checks": {}}}
    assert check_count(checks, "lost") == 2 and check_count(checks, "duplicates") is None
    assert failed_checks(checks) == ["durability", "durability.lost"]


def test_read_run_upgrades_an_older_record(tmp_path):
    import shutil
    from pathlib import Path
    from harness.record import read_run
    src = next(p for p in sorted((Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "real").iterdir())
               if p.is_dir())
    rec = read_run(shutil.copytree(src, tmp_path / src.name))
    assert rec.metadata["controller_model"] == "zk"
    assert all("node_ids" in e for e in rec.of_type("fault.start"))
