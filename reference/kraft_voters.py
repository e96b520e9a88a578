"""The dynamic quorum (KIP-853) judged on the metadata log: the voter set and ``kraft.version``.

A KRaft record's metadata log carries the Raft control records that define the quorum: ``meta.voters``
(a VotersRecord: the whole voter set, each voter's id, directory id and endpoints) and
``meta.kraft_version`` (a KRaftVersionRecord), beside the ``meta.leader_change`` of every new epoch
(harness/observer/kraft_events.py). Kafka takes the latest VotersRecord in the log as the voter set,
committed or not (raft/.../internals/KRaftControlRecordStateMachine.java ``lastVoterSet``), and a leader
appends a new one only through these paths (apache/kafka raft module; the messages checked in
kafka-raft-4.4.0.jar: docs/kraft.md, "The dynamic quorum"):

* AddVoterHandler.java: the leader refuses while a previous VotersRecord is uncommitted
  (``votersEntry.offset() >= highWatermark``), while kraft.version < 1 and for an id already a voter;
  it appends ``lastVoterSet().addVoter(...)``: the old set plus ONE voter;
* RemoveVoterHandler.java: the same checks, then ``removeVoter(...)``: the old set minus ONE voter; once
  that record commits a leader outside the new set resigns (``requestResign``);
* UpdateVoterHandler.java: a voter's endpoints / supported kraft.version change, the keys stay.

Rules (ids in reference/kraft_rules.py ``KRAFT_RULES``; ``subject`` "quorum"):

* Q1 (invariant): two consecutive VotersRecords differ by at most one voter, keyed by (id, directory id)
  (VoterSet.addVoter / removeVoter; a replaced disk is a remove then an add: two records).
* Q2 (invariant): a VotersRecord is appended only after the previous one committed. Evidence needed: a
  DescribeQuorum answer (``kraft.quorum``) of the same leader epoch, asked at least
  :data:`ANSWER_SLACK_S` after the second record's append time, whose high watermark is still at or below
  the first record's offset (the high watermark of one leader epoch never goes down, so it was at or below
  it when the second was appended). Without such an answer nothing is claimed.
* Q3 (invariant): a new quorum leader (LeaderChangeMessage) is a voter of the voter set in effect at
  its offset (the latest VotersRecord before it): a removed voter is never elected.
* Q4 (progress): a VotersRecord that removes its own epoch's leader is followed, within
  :data:`HANDOVER_S` (append time), by a later epoch's LeaderChangeMessage electing a member of the new
  set; a log that ends earlier is not judged.
* Q5 (invariant): a voter set is never empty (RemoveVoterHandler does not refuse the last voter: its
  ``TODO: make sure that the user cannot shrink the voter set to zero voters``).
* Q6 (invariant): ``kraft.version`` never goes down, and the voter set changes only while the
  kraft.version in effect is at least 1 (a static quorum, kraft.version 0, has no voter changes).
* Q7 (invariant): a feature level changes only when asked: after the first level of each feature (the
  bootstrap; kraft.version 0 when a log read from offset 0 has no KRaftVersionRecord before its first
  FeatureLevelRecord: a static quorum), a ``meta.feature`` / ``meta.kraft_version`` with another level must be named by an
  ``action`` event of the run (``params.features`` ``{name: level}``) (KAFKA-18979: kraft.version raised
  without being asked; KAFKA-21426: ``kafka-features upgrade --release-version`` made a static quorum
  dynamic). A release-version upgrade names ``metadata.version`` only: it never asks for kraft.version.
"""

from __future__ import annotations

VOTER_TYPES = ("meta.voters", "meta.kraft_version", "meta.leader_change", "meta.feature")
KRAFT_VERSION = "kraft.version"
ANSWER_SLACK_S = 3.0      # a DescribeQuorum answer reflects the leader at most this long before it arrived
HANDOVER_S = 30.0         # commit of the removal + resignation + an election: seconds, not tens


def voter_keys(ev: dict) -> frozenset:
    """A ``meta.voters`` event's voters as (id, directory id) keys."""
    return frozenset((v.get("id"), v.get("directory_id")) for v in ev.get("voters") or [])


def voter_ids(ev: dict) -> set[int]:
    return {v.get("id") for v in ev.get("voters") or []}


def asked_features(actions: list[dict]) -> dict[str, set[int]]:
    """Feature name -> the levels the run's actions asked for (``params.features``)."""
    out: dict[str, set[int]] = {}
    for a in actions:
        feats = (a.get("params") or {}).get("features")
        if isinstance(feats, dict):
            for name, level in feats.items():
                try:
                    out.setdefault(str(name), set()).add(int(level))
                except (TypeError, ValueError):
                    continue
    return out


def unasked_feature_changes(meta: list[dict], actions: list[dict]) -> list[dict]:
    """Q7's findings: each feature record (``meta.feature``, or ``meta.kraft_version`` as
    ``kraft.version``) that changes a level set before without an action asking for that level."""
    asked = asked_features(actions)
    log = sorted(meta, key=lambda e: e.get("offset", 0))
    level: dict[str, int] = {}
    if implicit_kraft_version_0(log):
        level[KRAFT_VERSION] = 0
    out = []
    for ev in log:
        if ev.get("type") == "meta.feature":
            name, lv = ev.get("name"), ev.get("level")
        elif ev.get("type") == "meta.kraft_version":
            name, lv = KRAFT_VERSION, ev.get("level")
        else:
            continue
        if name in level and lv != level[name] and lv not in asked.get(name, set()):
            out.append({"offset": ev.get("offset"), "feature": name, "from": level[name], "to": lv})
        level[name] = lv
    return out


def implicit_kraft_version_0(log: list[dict]) -> bool:
    """A log read from its first offset whose bootstrap (the records before the first FeatureLevelRecord)
    has no KRaftVersionRecord: a static quorum, whose kraft.version is 0 without a record
    (KRaftControlRecordStateMachine starts at KRaftVersion.KRAFT_VERSION_0; a dynamic quorum's first leader
    writes KRaftVersionRecord 1 and the VotersRecord before the features, seen on 4.4.0)."""
    if not log or log[0].get("offset") != 0:
        return False
    for ev in log:
        if ev.get("type") == "meta.kraft_version":
            return False
        if ev.get("type") == "meta.feature":
            return True
    return False


def _quorum_answers(events: list[dict]) -> list[tuple[float, int, int]]:
    """(wall time the answer arrived, leader epoch, high watermark) of every error-free DescribeQuorum answer."""
    out = []
    for e in events:
        if e.get("type") != "kraft.quorum" or e.get("error"):
            continue
        wall, ep, hw = e.get("wall"), e.get("leader_epoch"), e.get("high_watermark")
        if isinstance(wall, (int, float)) and isinstance(ep, int) and isinstance(hw, int):
            out.append((float(wall), ep, hw))
    return out


def judge_voters(events: list[dict], meta: list[dict], report) -> dict:
    """Apply Q1-Q7 to the record's metadata-log events ``meta`` (any order; sorted by offset here) and
    its samples / actions in ``events``; ``report(rule, ev, msg, key=...)`` as in reference/kraft_log.py.
    Returns the statistics for ``stats["metadata_log"]``."""
    log = sorted((e for e in meta if e.get("type") in VOTER_TYPES), key=lambda e: e.get("offset", 0))
    answers = _quorum_answers(events)
    actions = [e for e in events if e.get("type") == "action"]
    stats = {"voter_records": 0, "voter_changes": 0, "kraft_version": None, "voter_set": None}

    def rep(rule, ev, msg, key=None):
        report(rule, {**ev, "subject": "quorum"}, msg, key=key)

    prev_voters: dict | None = None           # the latest meta.voters
    kraft_version: int | None = 0 if implicit_kraft_version_0(log) else None
    epoch_leader: dict[int, int] = {}         # raft epoch -> leader (LeaderChangeMessage)
    removals: list[tuple[dict, int, set]] = []   # (VotersRecord removing its leader, that leader, new ids)
    for ev in log:
        t = ev["type"]
        if t == "meta.kraft_version":
            lv = ev.get("level")
            if kraft_version is not None and isinstance(lv, int) and lv < kraft_version:
                rep("Q6", ev, f"kraft.version went down from {kraft_version} to {lv} at offset {ev.get('offset')}")
            kraft_version = lv if isinstance(lv, int) else kraft_version
        elif t == "meta.leader_change":
            leader, epoch = ev.get("leader_id"), ev.get("raft_epoch")
            if isinstance(epoch, int) and isinstance(leader, int):
                epoch_leader[epoch] = leader
            if prev_voters is not None and isinstance(leader, int) and leader >= 0 \
                    and leader not in voter_ids(prev_voters):
                rep("Q3", ev, f"epoch {epoch}: leader {leader} elected at offset {ev.get('offset')}, not a voter of the "
                              f"voter set in effect (offset {prev_voters.get('offset')}: {sorted(voter_ids(prev_voters))})")
        elif t == "meta.voters":
            stats["voter_records"] += 1
            keys, ids = voter_keys(ev), voter_ids(ev)
            if not keys:
                rep("Q5", ev, f"the VotersRecord at offset {ev.get('offset')} leaves no voter")
            if prev_voters is not None:
                old = voter_keys(prev_voters)
                diff = keys ^ old
                if diff:
                    stats["voter_changes"] += 1
                    if kraft_version is not None and kraft_version < 1:
                        rep("Q6", ev, f"the voter set changed at offset {ev.get('offset')} while kraft.version is "
                                      f"{kraft_version} (a static quorum)")
                if len(diff) > 1:
                    rep("Q1", ev, f"offset {ev.get('offset')}: {len(diff)} voters changed at once "
                                  f"({sorted(old)} -> {sorted(keys)}); one voter change per VotersRecord")
                if diff:
                    _in_flight(prev_voters, ev, answers, rep)
                leader = epoch_leader.get(ev.get("raft_epoch"))
                if diff and leader is not None and leader in voter_ids(prev_voters) and leader not in ids:
                    removals.append((ev, leader, ids))
            prev_voters = ev
    stats["kraft_version"] = kraft_version
    stats["voter_set"] = sorted(voter_ids(prev_voters)) if prev_voters is not None else None
    _handovers(log, removals, rep, max((e.get("time_ms") or 0) for e in meta) if meta else 0)
    for f in unasked_feature_changes(meta, actions):
        ev = next(e for e in log if e.get("offset") == f["offset"])
        rep("Q7", ev, f"{f['feature']} changed from {f['from']} to {f['to']} at offset {f['offset']} although no "
                      f"action of the run asked for {f['feature']}={f['to']}", key=(f["feature"], f["offset"]))
    return stats


def _in_flight(first: dict, second: dict, answers, rep) -> None:
    """Q2: an answer proving ``first`` uncommitted when ``second`` was appended."""
    tm = second.get("time_ms")
    if not isinstance(tm, (int, float)):
        return
    for wall, epoch, hw in answers:
        if epoch == second.get("raft_epoch") and wall - ANSWER_SLACK_S >= tm / 1000.0 and hw <= first.get("offset", -1):
            rep("Q2", second, f"VotersRecord at offset {second.get('offset')} appended while the previous one (offset "
                              f"{first.get('offset')}) was uncommitted: the epoch-{epoch} leader answered high watermark "
                              f"{hw} {wall - tm / 1000.0:.1f} s after the append")
            return


def _handovers(log: list[dict], removals, rep, last_ms: int) -> None:
    """Q4: every removed leader hands over within HANDOVER_S (``last_ms``: the log's last append time)."""
    for ev, leader, ids in removals:
        t0 = ev.get("time_ms") or 0
        nxt = next((e for e in log if e["type"] == "meta.leader_change" and e.get("offset", 0) > ev.get("offset", 0)
                    and (e.get("raft_epoch") or 0) > (ev.get("raft_epoch") or 0)), None)
        if nxt is not None and (nxt.get("time_ms") or 0) - t0 <= HANDOVER_S * 1000:
            continue              # Q3 judges whom it elected
        if nxt is None and last_ms - t0 <= HANDOVER_S * 1000:
            continue              # the log ends before the bound: not judged
        rep("Q4", ev, f"the VotersRecord at offset {ev.get('offset')} removed leader {leader} of epoch "
                      f"{ev.get('raft_epoch')}; no later epoch's leader within {HANDOVER_S:.0f} s"
                      + ("" if nxt is None else f" (next at offset {nxt.get('offset')})"))
