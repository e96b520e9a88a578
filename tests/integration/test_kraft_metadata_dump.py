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


def dump(version: str) -> dict[int, tuple[str, dict | None]]:
    """offset -> (what Kafka's tool says the record is, its decoded JSON when it prints one)."""
    tag = images.build(version).tag
    res = subprocess.run(["docker", "run", "--rm", "--network", "none", "--entrypoint",
                          "/opt/kafka-chaos/kafka-run-class", "-v", f"{FIXTURES / version}:/seg:ro", tag,
                          "kafka.tools.DumpLogSegments", "--cluster-metadata-decoder", "--files", f"/seg/{SEGMENT}"],
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
def test_decoder_agrees_with_kafka_dump_log(version, docker_engine):
    compared, problems = _compare(version)
    assert not problems, "\n".join(problems[:20])
    assert compared >= 40, f"only {compared} records had fields to compare"
