"""iptables rule generation for the network faults (pure; no containers)."""

from __future__ import annotations

from harness.nemesis import netrules as nr
from harness.nemesis.catalog import CATALOG, PEER_LINKS, normalize_links
from harness.nemesis.faults import FAULT_CLASSES

B1 = nr.NetNode("c-b1", "broker1", "broker", "10.0.0.11", 40001, "10.0.0.1")
B2 = nr.NetNode("c-b2", "broker2", "broker", "10.0.0.12", 40002, "10.0.0.1")
B3 = nr.NetNode("c-b3", "broker3", "broker", "10.0.0.13", 40003, "10.0.0.1")
Z1 = nr.NetNode("c-zk1", "zk1", "zookeeper", "10.0.0.2", 2181, "10.0.0.1")
ALL = [Z1, B1, B2, B3]


def _ips(rules, chain, flag):
    return sorted(a[a.index(flag) + 1] for c, a in rules if c == chain and flag in a)


def test_every_catalog_fault_has_an_implementation():
    assert set(CATALOG) == set(FAULT_CLASSES)


def test_isolate_cuts_target_from_every_peer_both_ways_only_inside_the_target():
    plan = nr.isolate_rules([B1], ALL, PEER_LINKS, "tag")
    assert list(plan) == ["c-b1"]
    rules = plan["c-b1"]
    peers = sorted(f"{n.ip}/32" for n in (Z1, B2, B3))
    assert _ips(rules, nr.CHAIN_IN, "-s") == peers
    assert _ips(rules, nr.CHAIN_OUT, "-d") == peers
    assert all(a[-2:] == ("-j", "DROP") and "tag" in a for _, a in rules)
    assert not any("--dport" in a for _, a in rules)          # host clients not cut by default


def test_isolate_with_clients_also_drops_the_external_port():
    rules = nr.isolate_rules([B2], ALL, PEER_LINKS + ("client",), "t")["c-b2"]
    assert (nr.CHAIN_IN, ("-p", "tcp", "--dport", "40002", "-m", "comment", "--comment", "t", "-j", "DROP")) in rules
    assert (nr.CHAIN_OUT, ("-p", "tcp", "--sport", "40002", "-m", "comment", "--comment", "t", "-j", "DROP")) in rules


def test_client_link_only_leaves_inter_broker_and_zookeeper_traffic_alone():
    rules = nr.isolate_rules([B2], ALL, ("client",), "t")["c-b2"]
    assert len(rules) == 2
    assert not any("-s" in a or "-d" in a for _, a in rules)   # no peer address is matched
    assert not any("9093" in a for _, a in rules)


def test_client_link_on_zookeeper_matches_the_gateway_only():
    rules = nr.client_rules(Z1, "both", "t")
    assert rules[0][1][:2] == ("-s", "10.0.0.1/32") and "2181" in rules[0][1]
    assert rules[1][1][:2] == ("-d", "10.0.0.1/32")


def test_link_classes_select_peers():
    bb = nr.isolate_rules([B1], ALL, ("broker-broker",), "t")["c-b1"]
    assert _ips(bb, nr.CHAIN_IN, "-s") == ["10.0.0.12/32", "10.0.0.13/32"]
    bz = nr.isolate_rules([B1], ALL, ("broker-zk",), "t")["c-b1"]
    assert _ips(bz, nr.CHAIN_IN, "-s") == ["10.0.0.2/32"]
    assert nr.isolate_rules([B1], ALL, ("zk-zk",), "t") == {}


def test_partition_is_symmetric_and_complete():
    plan = nr.partition_rules([[B1], [Z1, B2, B3]], PEER_LINKS, "t")
    assert set(plan) == {"c-b1", "c-zk1", "c-b2", "c-b3"}
    assert _ips(plan["c-b1"], nr.CHAIN_IN, "-s") == ["10.0.0.12/32", "10.0.0.13/32", "10.0.0.2/32"]
    for name in ("c-zk1", "c-b2", "c-b3"):
        assert _ips(plan[name], nr.CHAIN_IN, "-s") == ["10.0.0.11/32"]
        assert _ips(plan[name], nr.CHAIN_OUT, "-d") == ["10.0.0.11/32"]


def test_one_way_directions():
    out = nr.one_way_rules([B1], [B2, Z1], "out", PEER_LINKS, "t")["c-b1"]
    assert {c for c, _ in out} == {nr.CHAIN_OUT}
    inn = nr.one_way_rules([B1], [B2, Z1], "in", PEER_LINKS, "t")["c-b1"]
    assert {c for c, _ in inn} == {nr.CHAIN_IN} and len(inn) == 2


def test_bridge_keeps_the_bridge_node_connected():
    plan = nr.bridge_rules([B2, B3], [Z1], PEER_LINKS, "t")
    assert "c-b1" not in plan                                   # the bridge has no rules
    assert _ips(plan["c-b2"], nr.CHAIN_IN, "-s") == ["10.0.0.2/32"]
    assert _ips(plan["c-zk1"], nr.CHAIN_IN, "-s") == ["10.0.0.12/32", "10.0.0.13/32"]
    assert "10.0.0.11/32" not in str(plan)


def test_loss_rules_are_on_eth0_only():
    rules = nr.loss_rules(B1, 25, "both", "t")["c-b1"]
    assert len(rules) == 2
    assert ("-i", "eth0") == rules[0][1][:2] and ("-o", "eth0") == rules[1][1][:2]
    assert "0.250000" in rules[0][1]


def test_scripts_touch_only_the_dedicated_chains():
    rules = nr.isolate_rules([B1], ALL, PEER_LINKS, "kafka-chaos:1:isolate")["c-b1"]
    apply = nr.apply_script(rules)
    for line in apply.splitlines()[1:]:
        assert "KAFKA_CHAOS_" in line
        assert " -F" not in line and " -P " not in line          # never flush or change policies
    assert "-I INPUT 1 -j KAFKA_CHAOS_IN" in apply and "-I OUTPUT 1 -j KAFKA_CHAOS_OUT" in apply
    remove = nr.remove_script(rules)
    assert remove.count("-D KAFKA_CHAOS_") == len(rules)
    assert nr.flush_script().count("-F KAFKA_CHAOS_") == 2
    listing = ("-N KAFKA_CHAOS_IN\n-A KAFKA_CHAOS_IN -s 1.2.3.4/32 -j DROP\n-N KAFKA_CHAOS_OUT\n")
    assert nr.parse_listing(listing) == ["-A KAFKA_CHAOS_IN -s 1.2.3.4/32 -j DROP"]


# -- the KRaft controller link (port 9094 only) -------------------------------------------------------
V1 = nr.NetNode("c-b1", "broker1", "broker", "10.0.0.11", 40001, "10.0.0.1", 9094)   # combined voter
V2 = nr.NetNode("c-b2", "broker2", "broker", "10.0.0.12", 40002, "10.0.0.1", 9094)
O4 = nr.NetNode("c-b4", "broker4", "broker", "10.0.0.14", 40004, "10.0.0.1")           # broker only


def _rule(chain, *match):
    return chain, tuple(match) + ("-m", "comment", "--comment", "t", "-j", "DROP")


def test_controller_link_cuts_only_the_controller_listener_of_the_leader_for_a_broker():
    rules = nr.isolate_rules([V1], [O4], ("controller",), "t")["c-b1"]
    assert rules == [_rule(nr.CHAIN_IN, "-s", "10.0.0.14/32", "-p", "tcp", "--dport", "9094"),
                     _rule(nr.CHAIN_OUT, "-d", "10.0.0.14/32", "-p", "tcp", "--sport", "9094")]


def _both_listeners(peer_ip: str, port: str) -> list:
    """The four rules cutting a link on ``port`` both nodes listen on: to and from each one's listener."""
    return sorted([_rule(nr.CHAIN_IN, "-s", f"{peer_ip}/32", "-p", "tcp", "--dport", port),
                   _rule(nr.CHAIN_OUT, "-d", f"{peer_ip}/32", "-p", "tcp", "--sport", port),
                   _rule(nr.CHAIN_IN, "-s", f"{peer_ip}/32", "-p", "tcp", "--sport", port),
                   _rule(nr.CHAIN_OUT, "-d", f"{peer_ip}/32", "-p", "tcp", "--dport", port)])


def test_controller_link_between_two_controllers_cuts_both_listeners():
    rules = nr.isolate_rules([V1], [V2], ("controller",), "t")["c-b1"]
    assert sorted(rules) == _both_listeners("10.0.0.12", "9094")


def test_controller_link_cuts_nothing_without_a_controller_and_defers_to_a_whole_link():
    assert nr.isolate_rules([O4], [B2, B3], ("controller",), "t") == {}
    # broker-broker already drops every packet between the two: no port rules on top
    whole = nr.isolate_rules([V1], [V2], ("broker-broker", "controller"), "t")["c-b1"]
    assert not any("9094" in a for _, a in whole) and len(whole) == 2


def test_controller_link_names():
    assert normalize_links("controller") == ("controller",)
    assert normalize_links(["broker-controller", "client"]) == ("controller", "client")
    assert "controller" not in PEER_LINKS


# -- the replication link (the inter-broker listener, port 9093, only) ----------------------------------
R1 = nr.NetNode("c-b1", "broker1", "broker", "10.0.0.11", 40001, "10.0.0.1", 9094, 9093)   # combined voter
R2 = nr.NetNode("c-b2", "broker2", "broker", "10.0.0.12", 40002, "10.0.0.1", 9094, 9093)
RC = nr.NetNode("c-c101", "controller101", "controller", "10.0.0.21", 9094, "10.0.0.1", 9094)   # dedicated


def test_replication_link_cuts_both_inter_broker_listeners_and_keeps_the_controller_listener():
    rules = nr.isolate_rules([R1], [R2], ("replication",), "t")["c-b1"]
    assert sorted(rules) == _both_listeners("10.0.0.12", "9093")
    assert not any("9094" in a for _, a in rules)


def test_replication_link_cuts_nothing_towards_a_dedicated_controller_or_a_node_without_broker_port():
    assert nr.isolate_rules([R1], [RC], ("replication",), "t") == {}
    assert nr.isolate_rules([B1], [B2], ("replication",), "t") == {}     # no internal_port known
    one_way = nr.one_way_rules([R1], [R2], "out", ("replication",), "t")["c-b1"]
    assert {c for c, _ in one_way} == {nr.CHAIN_OUT} and len(one_way) == 2


def test_replication_link_names():
    assert normalize_links("replication") == ("replication",)
    assert normalize_links(["inter-broker-listener", "client"]) == ("replication", "client")
    assert "replication" not in PEER_LINKS
