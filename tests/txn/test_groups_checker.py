"""Consumer-group checks on fabricated histories: each anomaly with it (FAIL, named, operations
shown) and without it (PASS); rebalance time measured from the trigger to the last assignment."""

from __future__ import annotations

import pytest

from harness.checkers.groups import ALLOWED, FAIL, PASS, check_groups

T = "t"


class G:
    def __init__(self, records: int = 10, **topic_config):
        self.events: list[dict] = []
        self.t = 0.0
        self.op = 0
        self.metadata = {"topics": [{"name": T, "partitions": 2, "replication_factor": 3,
                                     "config": dict(topic_config)}], "broker_config": {}, "workload": {}}
        for p in (0, 1):
            for off in range(records):
                self.ev("client", process="p0", f="send", phase="ok", op_id=None, topic=T, partition=p,
                        offset=off, value=f"v{p}-{off}")

    def ev(self, type_, **f):
        self.t += 0.01
        d = {"seq": len(self.events), "t": round(self.t, 6), "type": type_, **f}
        self.events.append(d)
        return d

    def assign(self, proc, gen, parts):
        return self.ev("group.assign", process=proc, group="g", generation=gen, member_id=f"m-{proc}",
                       protocol="classic", partitions=[[T, p] for p in parts])

    def revoke(self, proc, gen, parts, lost=False):
        return self.ev("group.revoke", process=proc, group="g", generation=gen, partitions=[[T, p] for p in parts],
                       lost=lost)

    def poll(self, proc, gen, p, offsets):
        for off in offsets:
            self.ev("group.poll", process=proc, group="g", generation=gen, topic=T, partition=p, offset=off,
                    value=f"v{p}-{off}")

    def commit(self, proc, gen, p, offset, phase="ok"):
        self.op += 1
        self.ev("group.commit", process=proc, group="g", generation=gen, topic=T, partition=p, offset=offset,
                phase="invoke", op_id=self.op)
        self.ev("group.commit", process=proc, group="g", generation=gen, topic=T, partition=p, offset=offset,
                phase=phase, op_id=self.op, error=None if phase == "ok" else "REBALANCE_IN_PROGRESS")


def first_generation(g: G) -> None:
    g.assign("c0", 1, [0, 1])
    g.poll("c0", 1, 0, range(5))
    g.poll("c0", 1, 1, range(5))
    g.commit("c0", 1, 0, 5)
    g.commit("c0", 1, 1, 5)


def second_generation(g: G, c1_start: int = 5, c1_gen: int = 2) -> None:
    g.revoke("c0", 1, [0, 1])
    g.t += 0.5
    g.assign("c0", 2, [0])
    g.assign("c1", 2, [1])
    g.poll("c0", 2, 0, range(5, 10))
    g.poll("c1", c1_gen, 1, range(c1_start, 10))
    g.commit("c0", 2, 0, 10)
    g.commit("c1", c1_gen, 1, 10)


def judge(g: G) -> dict:
    return check_groups(g.events, g.metadata)


def failed(r):
    return {n for n, c in r["checks"].items() if c["verdict"] == FAIL}


def test_clean_rebalance_passes_and_is_measured():
    g = G()
    first_generation(g)
    second_generation(g)
    r = judge(g)
    assert r["verdict"] == PASS, r["reason"]
    assert r["applicable"] is True
    reb = r["checks"]["rebalances"]
    assert reb["count"] == 1 and reb["measurement"] is True
    one = reb["rebalances"][0]
    assert one["generation"] == 2 and one["trigger"] == "revoke" and 0.5 < one["seconds"] < 0.6
    assert r["stats"]["commits"] == 4 and r["stats"]["members"] == 2


def test_no_group_events_is_not_applicable():
    r = check_groups([{"seq": 0, "t": 0.0, "type": "phase", "name": "x"}], {})
    assert r["applicable"] is False and r["checks"] == {}


def test_offset_regression_on_the_next_owners_first_fetch():
    g = G()
    first_generation(g)
    second_generation(g, c1_start=3)  # the coordinator handed out 3 although 5 was acknowledged
    r = judge(g)
    assert failed(r) == {"offset-regression"}
    ex = r["checks"]["offset-regression"]["examples"][0]
    assert ex["process"] == "c1" and ex["observed_offset"] == 3 and ex["committed_offset"] == 5
    assert ex["committed_by"] == "c0" and ex["source"] == "first-fetch"


def test_a_later_lower_commit_excuses_the_lower_start():
    g = G()
    first_generation(g)
    g.commit("c0", 1, 1, 3)  # the client itself moved the committed offset back
    second_generation(g, c1_start=3)
    assert judge(g)["verdict"] == PASS


def test_offset_regression_read_back():
    g = G()
    first_generation(g)
    g.ev("group.committed", process="admin", group="g", topic=T, partition=0, offset=2, invoke_t=g.t + 0.001)
    r = judge(g)
    assert failed(r) == {"offset-regression"}
    assert r["checks"]["offset-regression"]["examples"][0]["source"] == "committed"


def test_group_skip():
    g = G()
    first_generation(g)
    second_generation(g, c1_start=7)  # 5 and 6 were consumed by nobody
    r = judge(g)
    assert failed(r) == {"group-skip"}
    ex = r["checks"]["group-skip"]["examples"][0]
    assert ex["highest_commit"] == 5 and ex["skipped_offsets"] == [5, 6]


def test_skip_is_allowed_with_unclean_leader_election():
    g = G(**{"unclean.leader.election.enable": "true"})
    first_generation(g)
    second_generation(g, c1_start=7)
    r = judge(g)
    assert r["verdict"] == PASS and r["checks"]["group-skip"]["verdict"] == ALLOWED


def test_double_consume_in_one_generation():
    g = G()
    first_generation(g)
    second_generation(g)
    g.poll("c0", 2, 1, [9])  # c0 reads partition 1 in generation 2 too, where c1 owns it
    r = judge(g)
    assert "double-consume" in failed(r)
    ex = r["checks"]["double-consume"]["examples"][0]
    assert ex["members"] == ["c1", "c0"] and ex["generation"] == 2 and ex["offset"] == 9


def test_redelivery_across_generations_is_not_double_consume():
    g = G()
    first_generation(g)
    g.poll("c0", 1, 1, [5, 6])  # consumed but not committed before the rebalance
    second_generation(g)  # c1 starts at the committed 5 and reads 5 and 6 again: at-least-once
    assert judge(g)["verdict"] == PASS


def test_nonmonotonic_poll_without_reassignment():
    g = G()
    first_generation(g)
    g.poll("c0", 1, 0, [5, 6, 4])
    r = judge(g)
    assert failed(r) == {"group-nonmonotonic-poll"}
    assert r["checks"]["group-nonmonotonic-poll"]["examples"][0]["previous_offset"] == 6


def test_rebalance_after_member_death():
    g = G()
    g.assign("c0", 1, [0])
    g.assign("c1", 1, [1])
    g.ev("client.life", process="c1", role="consumer", state="died", error="killed")
    g.t += 10.0  # session timeout
    g.revoke("c0", 1, [0])
    g.assign("c0", 2, [0, 1])
    r = judge(g)
    one = r["checks"]["rebalances"]["rebalances"][0]
    assert one["trigger"] == "member died" and one["trigger_process"] == "c1" and one["seconds"] > 10


def test_malformed_event():
    g = G()
    g.events.append({"seq": 1, "t": 1.0, "type": "group.poll", "process": "c0"})
    with pytest.raises(ValueError, match="malformed event"):
        judge(g)


def test_double_consume_by_two_later_members_of_one_generation():
    g = G()
    first_generation(g)
    second_generation(g)
    g.assign("c2", 2, [1])  # a third member believes it owns partition 1 in generation 2 as well
    g.poll("c2", 2, 1, [7])
    r = judge(g)
    assert "double-consume" in failed(r)
    assert r["checks"]["double-consume"]["examples"][0]["members"] == ["c1", "c2"]
