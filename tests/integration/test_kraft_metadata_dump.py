"""The harness's metadata-log decoder agrees with Kafka's own: every record of the real segments
under tests/fixtures/kraft_metadata/<version>/ is decoded by ``kafka.tools.DumpLogSegments
--cluster-metadata-decoder`` (``kafka-dump-log.sh``) run from that version's image, and by
harness/observer/kraft_metadata.py; the offsets, record types, versions and every field both
decode must be the same (issue 15: "cross-check against kafka-dump-log.sh on the same segments").

The images are built on first use (3.9.2 by ``./run.sh setup``; 4.1.2 as tests/integration/test_kafka4.py
builds it). One short-lived container per version, no cluster.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from harness import images
from harness.observer.kraft_metadata import read_metadata_blobs

pytestmark = pytest.mark.docker

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kraft_metadata"
SEGMENT = "00000000000000000000.log"
_LINE = re.compile(r"^\| offset: (\d+) .*?(?:payload: |LeaderChange: |controlType: )(.*)$")
# control records as DumpLogSegments names them -> the decoder's names
_CONTROL = {"LeaderChange": "LeaderChangeMessage"}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _upper_snake(type_name: str) -> str:
    return _snake(type_name).upper()


def _snake_keys(v):
    if isinstance(v, dict):
        return {_snake(k): _snake_keys(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_snake_keys(x) for x in v]
    return v


def dump(version: str, seg_dir: Path | None = None, segments: list[str] | None = None
         ) -> dict[int, tuple[str, dict | None]]:
    """offset -> (what Kafka's tool says the record is, its decoded JSON when it prints one), for the
    segments ``segments`` (default: the fixture's one) in ``seg_dir`` (default: that version's fixtures)."""
    tag = images.build(version).tag
    seg_dir = seg_dir or FIXTURES / version
    files = ",".join(f"/seg/{n}" for n in (segments or [SEGMENT]))
    res = subprocess.run(["docker", "run", "--rm", "--network", "none", "--entrypoint",
                          "/opt/kafka-chaos/kafka-run-class", "-v", f"{seg_dir.resolve()}:/seg:ro", tag,
                          "kafka.tools.DumpLogSegments", "--cluster-metadata-decoder", "--files", files],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    out: dict[int, tuple[str, dict | None]] = {}
    for line in res.stdout.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        offset, rest = int(m.group(1)), m.group(2)
        if line.find("LeaderChange: ") > 0:
            out[offset] = ("LeaderChange", json.loads(rest))
        elif rest.startswith("{"):
            out[offset] = ("payload", json.loads(rest))
        else:
            out[offset] = (rest.strip(), None)              # e.g. LEADER_CHANGE(2) on 3.5
    return out


def _compare(version: str) -> tuple[int, list[str]]:
    ours = {r.offset: r for r in read_metadata_blobs({SEGMENT: (FIXTURES / version / SEGMENT).read_bytes()}).records}
    theirs = dump(version)
    problems = []
    if sorted(ours) != sorted(theirs):
        problems.append(f"offsets differ: only ours {sorted(set(ours) - set(theirs))[:10]}, "
                        f"only Kafka's {sorted(set(theirs) - set(ours))[:10]}")
    compared = 0
    for off in sorted(set(ours) & set(theirs)):
        r, (kind, doc) = ours[off], theirs[off]
        if r.problem:
            problems.append(f"offset {off}: ours did not decode {r.type}: {r.problem}")
            continue
        if kind == "LeaderChange":
            want_type, data = _CONTROL["LeaderChange"], _snake_keys(doc)
        elif kind == "payload":
            if _upper_snake(r.type) != doc["type"] or r.version != doc["version"]:
                problems.append(f"offset {off}: ours {r.type} v{r.version}, Kafka's {doc['type']} v{doc['version']}")
                continue
            want_type, data = r.type, _snake_keys(doc["data"])
        else:
            want_type, data = ("LeaderChangeMessage" if kind.startswith("LEADER_CHANGE") else kind), None
        if r.type != want_type:
            problems.append(f"offset {off}: ours {r.type}, Kafka's {want_type}")
            continue
        for k, v in r.fields.items():
            if data is not None and k in data and data[k] != v:
                problems.append(f"offset {off} {r.type}.{k}: ours {v!r}, Kafka's {data[k]!r}")
        if data is not None:
            compared += 1
    return compared, problems


@pytest.mark.parametrize("version", ["3.9.2", "4.1.2"])
def test_decoder_agrees_with_kafka_dump_log(version, kc_docker):
    compared, problems = _compare(version)
    assert not problems, "\n".join(problems[:20])
    assert compared >= 40, f"only {compared} records had fields to compare"


# -- a run's record against Kafka's decoding of the log it was read from ------------------------------------
def _many_changes(ctx) -> None:
    """Kill and restart brokers 2 then 3 (one at a time) under a 16-partition topic: each cycle shrinks and
    re-expands every ISR holding the victim and moves the partitions it led (about 35 records a cycle)."""
    from suites.scenarios.common import wait_or_diagnose
    for victim in (2, 3):
        h = ctx.fault("kill", f"broker:{victim}")
        ctx.wait_until(f"broker {victim} leaves every ISR of many",
                       lambda v=victim: all(v not in ctx.isr("many", p) for p in range(16)), 60)
        ctx.heal(h)
        wait_or_diagnose(ctx, f"broker {victim} back in every ISR of many",
                         lambda v=victim: all(v in ctx.isr("many", p) for p in range(16)), 120, [victim])


KAFKA4_VERSION = os.environ.get("KAFKA_CHAOS_KAFKA4_VERSION", "4.1.2")    # as tests/integration/test_kafka4.py


def test_run_record_holds_every_partition_change_kafka_dump_log_decodes(kc_docker, tmp_path):
    """Issue 15: on a run with >= 50 leader/ISR changes, no partition-state change of the controller's log
    is missing from the run record. The record keeps the segments it read (``metadata_log/``); Kafka's
    DumpLogSegments decodes them; every PartitionRecord / PartitionChangeRecord it prints must be a
    ``meta.partition`` event of the record at the same offset, with the same values for what it set."""
    from harness.record import read_run
    from harness.runner import execute
    from harness.scenario.scenario import Scenario, TopicSpec

    sc = Scenario("observer.many_changes", "kill and restart brokers 2 and 3 in turn under 16 partitions",
                  _many_changes, tags=("test",), topics=[TopicSpec("many", 16, 3)],
                  workload={"topic": "many", "partitions": 16}, kraft=True, max_duration_s=400)
    out = execute(sc, runs_dir=tmp_path, kafka_version=KAFKA4_VERSION, suite="pytest", distribution="apache-kraft")
    rec = read_run(out.path)
    assert out.verdict == "PASS", f"{out.reason} ({out.path})"
    obs = rec.metadata["observer"]
    assert obs["source"] == "metadata_log" and obs["complete"] and obs["segments"]
    seg_dir = Path(out.path) / "metadata_log"
    theirs = dump(KAFKA4_VERSION, seg_dir, [Path(s).name for s in obs["segments"]])
    ours = {e["offset"]: e for e in rec.of_type("meta.partition")}
    kinds = {"PARTITION_RECORD": "PartitionRecord", "PARTITION_CHANGE_RECORD": "PartitionChangeRecord"}
    missing, differ, changes = [], [], 0
    for off, (kind, doc) in sorted(theirs.items()):
        if kind != "payload" or doc["type"] not in kinds:
            continue
        data = _snake_keys(doc["data"])
        ev = ours.get(off)
        if ev is None or ev["record"] != kinds[doc["type"]]:
            missing.append((off, doc["type"], data))
            continue
        if doc["type"] == "PARTITION_CHANGE_RECORD" and ("leader" in data or "isr" in data):
            changes += 1
        for k, mine in (("leader", "leader"), ("isr", "isr"), ("replicas", "replicas"),
                        ("eligible_leader_replicas", "elr"), ("last_known_elr", "last_known_elr"),
                        ("leader_recovery_state", "leader_recovery_state")):
            if k in data and not (k == "leader" and data[k] == -2) and data[k] != ev[mine]:
                differ.append((off, k, data[k], ev[mine]))
    assert not missing, f"{len(missing)} partition records of the log are not in the run record: {missing[:5]}"
    assert not differ, f"values differ from Kafka's decoding: {differ[:10]}"
    assert changes >= 50, f"only {changes} leader/ISR changes in the log"
