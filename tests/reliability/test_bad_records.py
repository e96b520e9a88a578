"""Stored records are evidence (issue 41): a damaged copy of a real record is UNKNOWN(record-invalid) or
judged exactly as the intact record; never FAIL because of the damage, and never PASS over a lost write.

The corpus mutates copies of real records (ZooKeeper mode: tests/fixtures/runs/real, KRaft:
tests/fixtures/runs/kraft, and a copy of the ZooKeeper-mode one whose final read misses an acknowledged
write) in tmp_path, and judges each with what ``kafka-chaos check`` uses (harness.commands.check._judge).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import __version__
from harness.commands.check import _judge
from harness.record import RecordError, RunRecorder, read_run
from harness.record.read import read_record
from harness.record.writer import file_sha256
from harness.record.schema import BOOL, DICT, EVENT_FIELDS, INT, INTS, LIST, NUM, SCALAR, STR, STRS
from harness.record.verdicts import FAIL, PASS, RECORD_INVALID, UNKNOWN

ROOT = Path(__file__).resolve().parents[2]
ZK = ROOT / "tests/fixtures/runs/real/20261121T075025Z-broker_failover.kill_leader-53702c"
ZK_FAIL = ROOT / "tests/fixtures/runs/real/20261121T080040Z-isr.partition_follower-0ddce7"
KRAFT = ROOT / "tests/fixtures/runs/kraft/20261125T151131Z-broker_failover.kill_leader-5620b2"

WRONG = {INT: ["zero", 1.5, True, [1]], NUM: ["x", None and 0, True], STR: [123, ["a"]], BOOL: ["yes", 1],
         LIST: ["a", {"k": 1}], DICT: [[1], "x"], INTS: ["a", ["a"], [1.5]], STRS: [1, [1]],
         SCALAR: [[1], {"a": 1}]}
NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"]      # written as JSON text


# -- records ------------------------------------------------------------------------------------------------
def _lines(d: Path) -> list[str]:
    return (d / "events.jsonl").read_text().splitlines(keepends=True)


def _lost_copy(dst: Path) -> Path:
    """ZK with one acknowledged write missing from every read: a record whose events show a lost write."""
    shutil.copytree(ZK, dst)
    evs = [json.loads(line) for line in _lines(ZK)]
    acked = [e for e in evs if e["type"] == "client" and e.get("f") == "send" and e.get("phase") == "ok"]
    gone = acked[len(acked) // 2]["value"]
    keep = [e for e in evs if not (e["type"] == "client" and e.get("f") in ("poll", "drain") and e.get("value") == gone)]
    (dst / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in keep))
    return dst


def _first(src: Path, type_: str) -> int:
    """Index of the first line of ``src``'s events.jsonl with an event of ``type_``."""
    return next(i for i, line in enumerate(_lines(src)) if json.loads(line)["type"] == type_)


def _outcome(d: Path) -> tuple:
    stored, v = _judge(d, None)
    return v.verdict, v.cause, v.reason, stored is None


# -- mutations: (name, function(record dir)) --------------------------------------------------------------------
def _set_lines(d: Path, lines: list[str]) -> None:
    (d / "events.jsonl").write_text("".join(lines))


def _field_line(line: str, key: str, raw_json: str) -> str:
    """``line`` with field ``key`` set to the JSON text ``raw_json``."""
    ev = json.loads(line)
    ev[key] = "__PLACEHOLDER__"
    return json.dumps(ev).replace('"__PLACEHOLDER__"', raw_json) + "\n"


def _mutate_event(index: int, key: str, raw_json: str):
    def m(d: Path) -> None:
        lines = _lines(d)
        lines[index] = _field_line(lines[index], key, raw_json)
        _set_lines(d, lines)
    return m


def _mutate_meta(**fields):
    def m(d: Path) -> None:
        md = json.loads((d / "metadata.json").read_text())
        md.update(fields)
        (d / "metadata.json").write_text(json.dumps(md))
    return m


def _replace_file(name: str, kind: str):
    def m(d: Path) -> None:
        p = d / name
        p.unlink()
        if kind == "dir":
            p.mkdir()
        elif kind == "fifo":
            os.mkfifo(p)
        elif kind == "device":
            p.symlink_to("/dev/zero")
        elif kind == "dangling":
            p.symlink_to(d / "nowhere")
    return m


def _symlink_file(name: str):
    def m(d: Path) -> None:
        p = d / name
        real = d.parent / f"{d.name}.{name}"
        p.rename(real)
        p.symlink_to(real)
    return m


def _deep(depth: int = 200_000):
    def m(d: Path) -> None:
        lines = _lines(d)
        ev = json.loads(lines[1])
        ev["params"] = "__DEEP__"
        lines[1] = json.dumps(ev).replace('"__DEEP__"', "[" * depth + "]" * depth) + "\n"
        _set_lines(d, lines)
    return m


def _deep_meta(d: Path) -> None:
    text = (d / "metadata.json").read_text().rstrip()
    (d / "metadata.json").write_text(text[:-1] + ', "extra": ' + "{\"a\": " * 200_000 + "1" + "}" * 200_000 + "}")


def _bad_utf8(name: str, at: int = 3):
    def m(d: Path) -> None:
        p = d / name
        data = bytearray(p.read_bytes())
        nl = [i for i, b in enumerate(data) if b == 10]
        pos = nl[at] - 5 if name == "events.jsonl" else len(data) // 2
        data[pos:pos + 1] = b"\xff\xfe"
        p.write_bytes(bytes(data))
    return m


def _line_mutations() -> list[tuple[str, object]]:
    def dup_all(d):
        _set_lines(d, [x for line in _lines(d) for x in (line, line)])

    def reverse(d):
        _set_lines(d, _lines(d)[::-1])

    def shuffle(d):
        lines = _lines(d)
        random.Random(41).shuffle(lines)
        _set_lines(d, lines)

    def dup_one(d):
        lines = _lines(d)
        _set_lines(d, lines[:10] + [lines[9]] + lines[10:])

    def swap(d):
        lines = _lines(d)
        lines[20], lines[21] = lines[21], lines[20]
        _set_lines(d, lines)

    def cut_last(d):
        data = (d / "events.jsonl").read_text()
        (d / "events.jsonl").write_text(data[:-25])

    def cut_middle(d):
        lines = _lines(d)
        lines[len(lines) // 2] = lines[len(lines) // 2][:30] + "\n"
        _set_lines(d, lines)

    def blank_lines(d):          # harmless: judged as the intact record
        lines = _lines(d)
        _set_lines(d, lines[:5] + ["\n", "   \n"] + lines[5:])

    def unknown_type(d):
        lines = _lines(d)
        _set_lines(d, lines[:3] + [_field_line(lines[3], "type", '"client.teleport"')] + lines[4:])

    def not_object(d):
        lines = _lines(d)
        _set_lines(d, lines[:3] + ["[1, 2]\n"] + lines[3:])

    return [("dup-all", dup_all), ("reversed", reverse), ("shuffled", shuffle), ("dup-one", dup_one),
            ("swapped", swap), ("truncated-last-line", cut_last), ("truncated-middle-line", cut_middle),
            ("blank-lines", blank_lines), ("unknown-type", unknown_type), ("not-an-object", not_object)]


def _field_mutations(src: Path) -> list[tuple[str, object]]:
    """Every schema field of the first event of each type in ``src``: wrong JSON types, non-finite numbers."""
    out: list[tuple[str, object]] = []
    seen: set[str] = set()
    for i, line in enumerate(_lines(src)):
        ev = json.loads(line)
        if ev["type"] in seen or i == 0:
            continue
        seen.add(ev["type"])
        fields = {"seq": INT, "t": NUM, "wall": NUM, **EVENT_FIELDS[ev["type"]]}
        for key, kind in fields.items():
            if key not in ev:
                continue
            for bad in WRONG[kind]:
                if bad is None:
                    continue
                out.append((f"{ev['type']}.{key}={json.dumps(bad)}", _mutate_event(i, key, json.dumps(bad))))
            if kind in (NUM, INT):
                for raw in NON_FINITE:
                    out.append((f"{ev['type']}.{key}={raw}", _mutate_event(i, key, raw)))
        out.append((f"{ev['type']}.t=1e308", _mutate_event(i, "t", "1e308")))
    return out


def _meta_mutations() -> list[tuple[str, object]]:
    return [
        ("checks-string", _mutate_meta(checks="durability")),
        ("checks-bogus", _mutate_meta(checks=["bogus"])),
        ("checks-numbers", _mutate_meta(checks=[1, 2])),
        ("workload-null", _mutate_meta(workload=None)),
        ("workload-string", _mutate_meta(workload="plain")),
        ("workload-list", _mutate_meta(workload=[])),
        ("record-yes", _mutate_meta(record="yes")),
        ("cluster-list", _mutate_meta(cluster=[3])),
        ("topics-object", _mutate_meta(topics={"chaos": 3})),
        ("broker-config-list", _mutate_meta(broker_config=["a"])),
        ("controller-model-bogus", _mutate_meta(controller_model="zoo")),
        ("scenario-number", _mutate_meta(scenario=5)),
        ("seed-list", _mutate_meta(seed=[1])),
        ("profile-number", _mutate_meta(profile=3.9)),
        ("distribution-object", _mutate_meta(distribution={"a": 1})),
        ("schema-version-2", _mutate_meta(schema_version=2)),
    ]


def _file_mutations() -> list[tuple[str, object]]:
    out = []
    for name in ("events.jsonl", "metadata.json", "verdict.json"):
        out += [(f"{name}-dir", _replace_file(name, "dir")), (f"{name}-fifo", _replace_file(name, "fifo")),
                (f"{name}-device", _replace_file(name, "device")),
                (f"{name}-dangling", _replace_file(name, "dangling")),
                (f"{name}-symlink", _symlink_file(name)), (f"{name}-bad-utf8", _bad_utf8(name))]
    return out + [("deep-event", _deep()), ("deep-metadata", _deep_meta)]


def _corpus() -> list[tuple[str, str, object]]:
    out = []
    for base in ("zk", "kraft"):
        src = ZK if base == "zk" else KRAFT
        for name, m in _line_mutations() + _field_mutations(src) + _meta_mutations() + _file_mutations():
            out.append((base, name, m))
    # the record with a lost write: the damage most likely to hide it
    for name, m in _line_mutations() + _meta_mutations() + _file_mutations():
        out.append(("lost", name, m))
    for i, key, raw in ((100, "offset", '"5"'), (100, "partition", '"zero"'), (100, "value", "17"),
                        (100, "offset", "NaN"), (101, "offset", "1e999")):
        out.append(("lost", f"line{i}.{key}={raw}", _mutate_event(i, key, raw)))
    return out


CORPUS = _corpus()


@pytest.fixture(scope="module")
def intact(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("intact")
    out = {"zk": _outcome(ZK), "kraft": _outcome(KRAFT), "lost": _outcome(_lost_copy(tmp / "lost"))}
    assert out["lost"][0] == FAIL and "lost" in out["lost"][2], out["lost"]
    return out


def test_the_corpus_is_large_and_covers_both_controller_models():
    assert len(CORPUS) >= 60
    assert {b for b, _, _ in CORPUS} == {"zk", "kraft", "lost"}


_FILES = ("metadata.json", "verdict.json", "events.jsonl")


def _read(read) -> tuple:
    """(metadata, verdict, events) a reader returns, or the message of its RecordError."""
    try:
        r = read()
    except RecordError as e:
        return ("error", str(e))
    return (r.metadata, r.verdict, r.events)


def test_each_damaged_record_is_invalid_or_judged_as_the_intact_one(tmp_path, intact):
    outcomes: dict[str, int] = {"record-invalid": 0, "same": 0}
    bad: list[str] = []
    same_reader = 0
    for i, (base, name, mutate) in enumerate(CORPUS):
        d = tmp_path / f"{i:04d}-{base}"
        if base == "lost":
            _lost_copy(d)
        else:
            shutil.copytree(ZK if base == "zk" else KRAFT, d)
        mutate(d)
        verdict, cause, reason, unread = _outcome(d)
        if verdict == UNKNOWN and cause == RECORD_INVALID:
            assert unread and str(d) in reason, (base, name, reason)
            outcomes["record-invalid"] += 1
        elif (verdict, cause, reason) == intact[base][:3]:
            outcomes["same"] += 1
        else:
            bad.append(f"{base} {name}: {verdict}({cause}) {reason[:200]}")
        if base == "lost":
            assert verdict != PASS, (name, reason)
        assert not (verdict == FAIL and intact[base][0] != FAIL), (base, name, reason)
        if all(os.path.isfile(d / n) for n in _FILES):     # the report's reader (bytes): the same answer
            files = {n: (d / n).read_bytes() for n in _FILES}
            assert _read(lambda: read_record(str(d), files)) == _read(lambda: read_run(d)), (base, name)
            same_reader += 1
    assert not bad, "\n".join(bad)
    assert same_reader >= 50
    print(f"corpus {len(CORPUS)}: {outcomes}")
    assert outcomes["record-invalid"] >= 60 and outcomes["same"] >= 5


def test_invalid_names_file_line_and_field(tmp_path):
    d = shutil.copytree(ZK, tmp_path / "r")
    i = _first(ZK, "client")
    _mutate_event(i, "offset", '"x"')(d)
    _, v = _judge(d, None)
    assert v.cause == RECORD_INVALID and f"{d / 'events.jsonl'}:{i + 1}:" in v.reason and "'offset'" in v.reason
    d2 = shutil.copytree(ZK, tmp_path / "u")
    _bad_utf8("events.jsonl", at=3)(d2)
    assert f"{d2 / 'events.jsonl'}:4: " in _judge(d2, None)[1].reason and "UTF-8" in _judge(d2, None)[1].reason


# -- check DIR over a mixed folder -------------------------------------------------------------------------------
def _check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", "check", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def _mixed_folder(tmp_path: Path) -> tuple[Path, list[Path], list[Path], list[Path]]:
    runs, outside = tmp_path / "runs", tmp_path / "outside"
    runs.mkdir()
    outside.mkdir()
    good = []
    for i in range(10):
        src = (ZK, ZK_FAIL, KRAFT)[i % 3] if i != 9 else ZK
        good.append(shutil.copytree(src, runs / f"good-{i:02d}"))
    broken = []
    for i, m in enumerate((_mutate_meta(record="yes"), _replace_file("verdict.json", "dir"),
                           _replace_file("events.jsonl", "fifo"), _deep(), _mutate_event(_first(ZK, "client"), "partition", '"zero"'))):
        d = shutil.copytree(ZK, runs / f"broken-{i}")
        m(d)
        broken.append(d)
    linked = []
    for i in range(2):
        target = shutil.copytree(KRAFT if i else ZK, outside / f"rec-{i}")
        (runs / f"link-{i}").symlink_to(target, target_is_directory=True)
        linked.append(runs / f"link-{i}")
    (runs / "link-again").symlink_to(good[0], target_is_directory=True)     # judged once, by real path
    return runs, good, broken, linked


def test_check_dir_judges_every_good_record_names_the_broken_ones_and_writes_atomically(tmp_path):
    runs, good, broken, linked = _mixed_folder(tmp_path)
    r = _check("--json", str(runs))
    rows = {Path(json.loads(line)["path"]).name: json.loads(line) for line in r.stdout.splitlines()}
    assert sorted(rows) == sorted([d.name for d in good] + [d.name for d in linked])
    errors = [line for line in r.stderr.splitlines() if line.startswith("kafka-chaos: error:")]
    assert len(errors) == len(broken) and all("UNKNOWN(record-invalid)" in e for e in errors)
    assert {next(b.name for b in broken if str(b) in e) for e in errors} == {b.name for b in broken}
    assert r.returncode == 1                    # the worst verdict: a FAIL among the good ones
    assert "15 record(s)" not in r.stderr and f"{len(good) + len(linked) + len(broken)} record(s)" in r.stderr

    # --write: each changed verdict replaced atomically, the broken records untouched, written ones named
    before = {b: sorted(p.name for p in b.iterdir()) for b in broken if b.is_dir()}
    w = _check("--json", "--write", str(runs))
    written = [json.loads(line) for line in w.stdout.splitlines() if json.loads(line).get("written")]
    assert written and all(row["changed"] for row in written)
    for row in written:
        p = Path(row["path"])
        assert json.loads((p / "verdict.json").read_text())["verdict"] == row["verdict"]
        assert (p / "verdict.previous.json").is_file() and not list(p.glob(".*.tmp"))
        ev = json.loads((p / "verdict.json").read_text())["evidence"]
        assert ev["events_sha256"] == file_sha256(p / "events.jsonl") and ev["harness_version"] == __version__
        assert ev["metadata_sha256"] == file_sha256(p / "metadata.json")
    assert {b: sorted(p.name for p in b.iterdir()) for b in broken if b.is_dir()} == before
    assert f"{len(written)} verdict.json written" in w.stderr
    again = _check("--json", str(runs))
    assert not any(json.loads(line)["changed"] for line in again.stdout.splitlines())


# -- checks named; profiles checked against the record ----------------------------------------------------------
def test_a_verdict_names_the_checks_applied_and_says_when_no_durability_check_was(tmp_path):
    lost = _lost_copy(tmp_path / "lost")
    _, v = _judge(lost, None)
    assert v.to_dict()["checks_applied"] == ["conformance", "durability", "expectations"]
    assert v.to_dict()["checks_not_applied"] == {} and "no durability check" not in v.reason
    _mutate_meta(checks=["expectations"])(lost)
    _, v = _judge(lost, None)
    assert v.applied == ["expectations"] and "durability" not in v.checks
    assert "no durability check applied: the record's checks do not name it" in v.reason
    assert "acknowledged write(s) not checked" in v.reason
    txn = _mutate_meta(checks=["conformance", "transactions", "durability"])
    d = shutil.copytree(ZK, tmp_path / "txn")
    txn(d)
    _, v = _judge(d, None)
    assert v.not_applied == {"transactions": "the workload's kind is plain, not txn"}


def test_a_profile_of_another_controller_model_or_version_is_refused_per_record(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(ZK, runs / "zk")
    shutil.copytree(KRAFT, runs / "kraft")
    r = _check("--profile", "kraft-4.1", str(runs))
    errors = [line for line in r.stderr.splitlines() if line.startswith("kafka-chaos: error:")]
    assert len(errors) == 1 and str(runs / "zk") in errors[0] and "ZooKeeper mode" in errors[0]
    assert str(runs / "kraft") in r.stdout and r.returncode == 4     # the kraft record judged UNKNOWN: undecided
    r = _check("--profile", "apache-zk-3.8", str(runs / "zk"))
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"kafka-chaos: error: {runs / 'zk'}: profile 'apache-zk-3.8' is for Apache Kafka 3.8.x, this record ran 3.9.2"]


def test_a_recorded_verdict_names_the_digests_of_what_it_judged(tmp_path):
    rec = RunRecorder(tmp_path, "s.x", metadata={"harness_version": "9.9"})
    rec.emit("phase", name="run.end")
    d = rec.finish("PASS", "ok")
    ev = json.loads((d / "verdict.json").read_text())["evidence"]
    assert ev == {"metadata_sha256": file_sha256(d / "metadata.json"), "events_sha256": file_sha256(d / "events.jsonl"),
                  "harness_version": "9.9"}
