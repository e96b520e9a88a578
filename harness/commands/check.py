"""``kafka-chaos check RUN_DIR...``: judge stored run records again, and say what changed.

After a change of the model or a checker, or to judge a record made on another machine, this runs the
same decision the runner made when the run ended (:func:`harness.checkers.verdict.decide`) on each
stored record and prints one line per record::

    same     PASS                       runs/20261125T...-broker_failover.kill_leader-106c49
    changed  PASS -> UNKNOWN(workload)  runs/20261125T...-isr.pause_follower-0c1d2e  p0 died at 31.0 s ...

Nothing is written unless ``--write`` is given (then ``verdict.json`` is replaced atomically, the old
one kept as ``verdict.previous.json``). Exit codes as for ``run``: 0 every verdict PASS, 1 a verdict
FAIL, 2 usage error, an unreadable record or an UNKNOWN verdict.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

from harness import __version__
from harness.checkers.verdict import Verdict, decide
from harness.record import facts, storage
from harness.errors import EXIT_FAIL, EXIT_OK, EXIT_UNKNOWN, EXIT_USAGE, HarnessError
from harness.record import RecordError, _write_json_atomic, list_runs, read_run
from harness.record.writer import evidence
from harness.record.verdicts import FAIL, PASS, RECORD_INVALID, UNKNOWN


def add_parser(sub) -> None:
    c = sub.add_parser("check", help="judge stored run records again and print what changed",
                       description="Re-run the conformance, durability, coverage and expectation checks on stored "
                                   "run records (directories, or folders holding them) and print, for each, the "
                                   "stored and the new verdict. Exit codes: 0 every verdict PASS, 1 a FAIL, "
                                   "2 usage error, unreadable record or UNKNOWN.")
    c.add_argument("paths", nargs="+", metavar="RUN_DIR",
                   help="a run record directory, or a folder of them; or s3://BUCKET/PREFIX (every complete "
                        "record under it, or the one record PREFIX names)")
    c.add_argument("--s3-endpoint", metavar="URL", help="S3-compatible endpoint (default: $AWS_ENDPOINT_URL)")
    c.add_argument("--profile", help="judge with this conformance profile instead of the recorded one")
    c.add_argument("--write", action="store_true",
                   help="replace each verdict.json with the new verdict (the old one is kept as verdict.previous.json)")
    c.add_argument("--json", action="store_true", help="one JSON object per record instead of text lines")
    c.set_defaults(func=cmd_check)


def _download(url: str, endpoint: str | None, into: Path, remote: dict[Path, tuple]) -> list[Path]:
    """The complete records under ``url`` (or the one it names), downloaded into ``into``."""
    store = storage.open_store(url, endpoint, storage.READ_DEADLINE_S)
    ids = store.list_records()
    if not ids and store.prefix:      # the URL of one record: s3://bucket/prefix/<run_id>
        parent = storage.open_store(url.rstrip("/").rsplit("/", 1)[0], endpoint, storage.READ_DEADLINE_S)
        run_id = store.prefix.rsplit("/", 1)[-1]
        if run_id in parent.list_records():
            store, ids = parent, [run_id]
    if not ids:
        raise HarnessError(f"{url}: holds no complete run record (none with {storage.MANIFEST})")
    out = []
    for r in ids:
        d = store.download(r, into / store.bucket / (store.prefix or "_root"))
        remote[d] = (store, store.record_url(r))
        out.append(d)
    return out


def _record_dirs(paths: list[str], endpoint: str | None = None, into: Path | None = None,
                 remote: dict | None = None) -> list[Path]:
    out: list[Path] = []
    seen: set[Path] = set()
    for p in paths:
        if storage.is_remote(p):
            out.extend(_download(p, endpoint, into, remote))
            continue
        path = Path(p)
        if not path.exists():
            raise HarnessError(f"{p}: no such run record or folder")
        dirs = [path] if (path / "metadata.json").exists() else list_runs(path)
        if not dirs:
            raise HarnessError(f"{p}: holds no run record (a directory with metadata.json, events.jsonl, verdict.json)")
        for d in dirs:
            real = d.resolve()
            if real not in seen:        # a symlinked record is judged once
                seen.add(real)
                out.append(d)
    return out


def first_line(text: str, limit: int = 300) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _label(verdict: str | None, cause: str | None) -> str:
    return f"{verdict}({cause})" if cause else str(verdict)


def rejudge(path: Path, profile: str | None = None) -> tuple[dict, Verdict]:
    """(stored verdict.json, new Verdict) of one record; RecordError when it cannot be read, ValueError
    when ``profile`` is for another controller model or Apache Kafka version series than the record's."""
    rec = read_run(path)
    if profile:
        profile_mismatch(profile, rec.metadata)
    meta = dict(rec.metadata, profile=profile) if profile else rec.metadata
    return rec.verdict, decide(rec.events, meta)


def profile_mismatch(name: str, metadata: dict) -> None:
    """ValueError when the profile ``name`` cannot judge a record of ``metadata``: a KRaft profile for a
    ZooKeeper-mode record or the reverse (:func:`harness.record.facts.controller_model`), or an Apache
    profile of one version series (``apache-zk-3.9``, ``kraft-4.1``) for a record of Apache Kafka of another."""
    m = re.fullmatch(r"(?:apache-)?(kraft|zk)(?:-(\d+)\.(\d+)(?:\.\d+)?)?", name)
    if not m:
        return                          # compatible: any broker, either model
    want = facts.KRAFT if m.group(1) == "kraft" else facts.ZK
    model = facts.controller_model(metadata)
    words = {facts.KRAFT: "KRaft", facts.ZK: "ZooKeeper mode"}
    if model != want:
        raise ValueError(f"profile {name!r} is for {words[want]}, this record ran in {words[model]} "
                         f"(controller_model {model})")
    version = metadata.get("kafka_version")
    if m.group(2) and isinstance(version, str) and version:
        series = f"{m.group(2)}.{m.group(3)}"
        if not re.match(rf"{re.escape(series)}(?:\.|$)", version):
            raise ValueError(f"profile {name!r} is for Apache Kafka {series}.x, this record ran {version}")


def check_profile_name(name: str) -> None:
    """Refuse a ``--profile`` no record could be judged with (one usage line, exit 2), before any record
    is read; a name that does not fit a record's control plane (``apache-zk-*`` for a KRaft run) is
    reported for that record."""
    from reference.profiles import profile_for
    kraft = bool(re.fullmatch(r"(?:apache-)?kraft(?:-.*)?", name))
    if name in ("apache-zk", "kraft", "apache-kraft"):
        return                     # the version comes from each record
    try:
        profile_for("3.9" if not kraft else "4.1", name, kraft_run=kraft)
    except ValueError as e:
        raise HarnessError(f"--profile: {e}") from None


def check_changes(stored: dict, new: Verdict) -> list[str]:
    """What changed per check between a stored verdict.json and a new verdict: ``["durability PASS -> FAIL"]``
    (checks added or gone are named with ``-``)."""
    def verdicts(checks) -> dict:
        return {k: (v.get("verdict") if isinstance(v, dict) else v) for k, v in (checks or {}).items()}
    old, now = verdicts(stored.get("checks")), verdicts(new.checks)
    return [f"{k} {old.get(k, '-')} -> {now.get(k, '-')}" for k in sorted(set(old) | set(now))
            if old.get(k) != now.get(k)]


def _write(path: Path, stored: dict, new: Verdict) -> None:
    """Replace ``path``'s verdict.json by the new verdict, the old one kept as verdict.previous.json: each
    file replaced atomically, verdict.json always there (the old or the new one, never half of one)."""
    old = path / "verdict.json"
    prev_tmp = path / ".verdict.previous.json.tmp"
    try:
        with open(old, "rb") as src, open(prev_tmp, "wb") as dst:
            dst.write(src.read())
            dst.flush()
            os.fsync(dst.fileno())
        os.replace(prev_tmp, path / "verdict.previous.json")
    finally:
        if prev_tmp.exists():
            prev_tmp.unlink()
    _write_json_atomic(old, {**stored, **new.to_dict(), "evidence": evidence(path, __version__)})


def cmd_check(args) -> int:
    if args.profile:
        check_profile_name(args.profile)
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-check-") as tmp:
        return _check(args, Path(tmp))


def _judge(d: Path, profile: str | None) -> tuple[dict | None, Verdict]:
    """(stored verdict.json or None, new Verdict) of one record, whatever the record holds: a record that
    cannot be read is UNKNOWN(record-invalid), one a checker raises on UNKNOWN(checker-error), each with
    the reason naming the file (and line and field) or the error."""
    try:
        return rejudge(d, profile)
    except RecordError as e:
        return None, Verdict(UNKNOWN, str(e), RECORD_INVALID)
    except ValueError as e:        # a --profile that does not fit this record
        raise _Refused(f"{d}: {e}") from None
    except Exception as e:         # noqa: BLE001 -- one record's checker error must not stop the others
        return None, Verdict(UNKNOWN, f"{d}: a checker raised {e.__class__.__name__}: {first_line(str(e))}",
                             "checker-error")


class _Refused(Exception):
    """A record this invocation cannot judge at all (a --profile of another controller model or version)."""


def _check(args, tmp: Path) -> int:
    remote: dict[Path, tuple] = {}        # downloaded record -> (its store, its s3:// URL)
    dirs = _record_dirs(args.paths, args.s3_endpoint, tmp, remote)
    counts = {PASS: 0, FAIL: 0, UNKNOWN: 0, "unreadable": 0, "changed": 0, "refused": 0}
    written: list[str] = []
    for d in dirs:
        shown = remote[d][1] if d in remote else d
        try:
            stored, new = _judge(d, args.profile)
        except _Refused as e:
            counts["refused"] += 1
            print(f"kafka-chaos: error: {e}", file=sys.stderr)
            continue
        if stored is None:                # not judged: one line naming the record and why, the rest go on
            counts["unreadable"] += 1
            print(f"kafka-chaos: error: {new.reason} ({_label(new.verdict, new.cause)})", file=sys.stderr)
            continue
        before = _label(stored.get("verdict"), stored.get("cause"))
        after = _label(new.verdict, new.cause)
        # a record written before causes existed has none: then only the verdict itself can change
        changed = before != after if "cause" in stored else stored.get("verdict") != new.verdict
        counts[new.verdict] += 1
        counts["changed"] += changed
        diffs = check_changes(stored, new) if changed else []
        wrote = False
        if args.write and changed:
            try:
                _write(d, stored, new)
                if d in remote:               # publish the re-judged record again (manifest last)
                    remote[d][0].publish(d)
                wrote = True
                written.append(str(shown))
            except OSError as e:
                print(f"kafka-chaos: error: {shown}: verdict.json not written ({e.strerror or e})", file=sys.stderr)
        if args.json:
            out = {"path": str(shown), "stored": before, "verdict": new.verdict, "cause": new.cause,
                   "reason": new.reason, "changed": changed, "checks_changed": diffs}
            if args.write:
                out["written"] = wrote
            print(json.dumps(out))
        else:
            what = f"{before} -> {after}" if changed else after
            why = f"  [{'; '.join(diffs)}] {first_line(new.reason)}" if diffs else f"  {first_line(new.reason)}"
            print(f"{'changed' if changed else 'same':8} {what:34} {shown}" + (why if changed else "")
                  + ("  (written)" if wrote else ""))
    if counts["unreadable"] + counts["refused"] < len(dirs):     # nothing judged: the error lines say it all
        print(f"{len(dirs)} record(s): {counts[PASS]} PASS, {counts[FAIL]} FAIL, {counts[UNKNOWN]} UNKNOWN, "
              f"{counts['unreadable']} unreadable" + (f", {counts['refused']} refused" if counts["refused"] else "")
              + f"; {counts['changed']} changed"
              + (f"; {len(written)} verdict.json written" if args.write else "")
              + (f" (judged with profile {args.profile})" if args.profile else ""), file=sys.stderr)
    if counts[FAIL]:
        return EXIT_FAIL
    if counts[UNKNOWN] or counts["unreadable"]:
        return EXIT_UNKNOWN           # judged, undecided (or a record that cannot be read: never PASS)
    return EXIT_USAGE if counts["refused"] else EXIT_OK
