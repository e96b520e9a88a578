"""Rule ids used in divergence reports, with the spec section each one comes from.

``H*`` = hard invariants (spec §8.2): checked under every profile.
``P*`` = progress rules (spec §8.4, ``liveness.py``; P3 in ``liveness_p3.py``): checked under every profile, time-bounded.
``D*`` = Apache-Kafka determinism rules (spec §8.3): checked only under ``apache-zk-*`` profiles.
"""

from __future__ import annotations

RULES: dict[str, tuple[str, str]] = {
    "H1": ("§8.2/§2.2", "controller epoch is monotonic and has at most one controller"),
    "H2": ("§8.2/§2.2", "no write carries a controller epoch other than the current one (zombie fencing, 2.2+)"),
    "H3": ("§8.2", "leader epoch never decreases"),
    "H4": ("§8.2", "one leader per leader epoch"),
    "H5": ("§8.2", "leader is -1 or in the ISR"),
    "H6": ("§8.2", "leader is -1 or a replica"),
    "H7": ("§8.2", "ISR non-empty while a leader exists"),
    "H8": ("§8.2/§7.10", "ISR ⊆ replicas (RS ∪ AR, and the RS before a reassignment write: §7.10 transients)"),
    "H9": ("§8.2", "partition epoch (znode version) strictly increases"),
    "H10": ("§8.2", "same-epoch transitions keep the leader, which stays in the ISR"),
    "H11": ("§8.2/§4.1.3", "a new leader comes from the previous ISR unless unclean election is permitted"),
    "H12": ("§8.2/§4.1.3", "unclean election marks RECOVERING; RECOVERING means a one-member ISR"),
    "H13": ("§8.2/§5.8", "ISR grows only through the leader, with replicas of RS that are live"),
    "H14": ("§8.2/§6.2", "no election while the topic is being deleted"),
    "H15": ("§8.2/§7.1", "reassignment state shape: AR ∩ RR = ∅, AR, RR ⊆ RS, ORS and TRS non-empty"),
    "H16": ("§8.2/§7.6", "a reassignment completes only with TRS ⊆ ISR, and RS becomes TRS"),
    "H19": ("§8.2/§5.1", "a broker the controller considers dead is never elected nor added to an ISR"),
    "P1": ("§8.4/§5.2/§4.6", "a partition without a live leader gets one within the bound while an ISR member is "
           "registered; a dead leader is replaced or set to -1"),
    "P3": ("§8.4/§7.6", "an in-flight reassignment completes within the bound once its target is in the ISR, or "
           "once faults healed with every target replica registered"),
    "D1": ("§4.1.2", "clean offline election: first RS replica online and in ISR; ISR := ISR ∩ online"),
    "D2": ("§4.1.3", "unclean election: first online RS replica; ISR := [leader]"),
    "D3": ("§4.1.1", "new partition: first online RS replica leads, ISR = online RS, LE 0, PE 0"),
    "D4": ("§4.3", "preferred election only to RS[0]"),
    "D5": ("§4.4", "controlled shutdown: first RS replica in ISR not shutting down; ISR −= shutting down"),
    "D6": ("§4.2", "reassignment election: first TRS replica online and in ISR"),
    "D7": ("§4.10", "every controller write bumps LE by exactly 1; leader ISR changes never do"),
    "D8": ("§4.6/§4.9", "controller ISR removal: leader → -1 if removed, last ISR member kept"),
    "D9": ("§5.8", "a leader expands the ISR one replica at a time"),
    "D10": ("§5.2", "broker failure: elections, then one ISR-removal write per dead follower"),
    "D11": ("§2.2", "controller epoch +1 per election"),
    "D12": ("§2.5", "failover: leader dead before the new controller read /brokers/ids → leader=-1 write, then election"),
    "D15": ("§7.1", "reassignment encoding RS' = distinct(T ++ ORS), AR/RR in RS' order"),
    "D16": ("§7.5", "reassignment LE accounting (A1, B3, B4)"),
}


def section(rule: str) -> str:
    return RULES[rule][0]


def rule_id(rule: str) -> str:
    """``"D1"`` -> ``"§4.1.2/D1"`` (the form used in reports)."""
    return f"{RULES[rule][0]}/{rule}"
