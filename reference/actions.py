"""What a recorded admin ``action`` means to a checker, shared by the ZooKeeper-mode checker
(``checker.py``) and the protocol (KRaft) checker (``kraft.py``): which partitions it names, and
what it permits about unclean leader elections."""

from __future__ import annotations

UNCLEAN_KEY = "unclean.leader.election.enable"


def record_unclean_permission(judge, action: str | None, params: dict) -> bool:
    """Note what a successful ``action`` permits about unclean elections on ``judge`` (its
    ``unclean_topic``, ``unclean_default``, ``unclean_grants``): a ``set_config`` of
    unclean.leader.election.enable (topic or broker default), or an ElectLeaders(UNCLEAN) grant for
    its partitions. Returns True when the action was one of these (shared by the ZooKeeper and
    KRaft checkers)."""
    if action == "set_config":
        cfg = params.get("config") or params.get("configs") or {}
        if UNCLEAN_KEY in cfg:
            val = str(cfg[UNCLEAN_KEY]).lower() == "true"
            topic = params.get("topic") or (params.get("entity_name") if params.get("entity_type") in
                                            ("topic", "topics") else None)
            if topic:
                judge.unclean_topic[topic] = val
            else:
                judge.unclean_default = val
        return True
    if action in ("elect_unclean", "elect_leaders"):
        if action == "elect_unclean" or str(params.get("election_type", "")).lower() == "unclean":
            for tp in partitions_of(params):
                judge.unclean_grants.add(tp)
        return True
    return False


def partitions_of(params: dict) -> set:
    """``action`` params -> {(topic, partition) | (topic, None)} (lenient about the shape)."""
    out = set()
    listed = params.get("partitions")
    # create_topic params carry a partition *count* (TopicSpec.to_dict); only lists name partitions
    for e in listed if isinstance(listed, list) else []:
        if isinstance(e, dict) and "topic" in e:
            out.add((e["topic"], e.get("partition")))
        elif isinstance(e, (list, tuple)) and len(e) == 2:
            out.add((e[0], int(e[1])))
    if "topic" in params:
        p = params.get("partition")
        out.add((params["topic"], None if p is None else int(p)))
    return {(t, None if p is None else int(p)) for t, p in out}
