"""What a certificate covers: the capability table (each capability and the scenario families that
are its evidence), the subject (the broker image and the distribution adapter it runs with), and
the plan — per capability, which scenarios apply to that broker and why the others do not. Pure
planning: nothing here starts a cluster (harness/certify/command.py runs the plan and judges it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from harness.distributions.capability_table import CAPABILITIES, NO_SCENARIO, SELECT_TAG, Capability, capability, capability_names
from harness.distributions.base import Distribution
from harness.errors import HarnessError

# -- the subject of the certificate -------------------------------------------------------------
@dataclass
class Subject:
    """What is certified: the broker image, what is known of it, and the distribution adapter it runs with."""

    broker_image: str
    image_id: str | None
    kafka_version: str | None
    adapter: Distribution          # the distribution the run request resolved (harness/request.py)

    @classmethod
    def from_image_info(cls, info, adapter: Distribution) -> "Subject":
        """From :class:`harness.images.ImageInfo` and the adapter its runs use."""
        return cls(info.tag, info.image_id, info.kafka_version, adapter)

    @property
    def distribution(self) -> str:
        """The adapter's name (``file:<path>`` for a distribution file), as the certificate says it."""
        return self.adapter.name

    def to_dict(self) -> dict:
        return {"broker_image": self.broker_image, "image_id": self.image_id, "kafka_version": self.kafka_version,
                "distribution": self.distribution, "roles": list(self.adapter.roles)}


def resolve_profile(name: str, subject: Subject) -> str:
    """The profile's canonical name, or a HarnessError saying why it cannot certify this broker
    (the distribution adapter decides which profiles describe it: :meth:`Distribution.profile`)."""
    return subject.adapter.profile(name, subject.kafka_version).name


# -- planning: which scenarios are evidence, which are not applicable -----------------------------
@dataclass
class ScenarioPlan:
    scenario: object               # harness.scenario.scenario.Scenario
    applicable: bool
    reason: str = ""               # why not applicable (or a note, e.g. version unknown)

    @property
    def name(self) -> str:
        return self.scenario.name


@dataclass
class CapabilityPlan:
    capability: Capability
    scenarios: list[ScenarioPlan] = field(default_factory=list)
    na_reason: str = ""            # set when the whole capability is NOT-APPLICABLE

    @property
    def applicable(self) -> list[ScenarioPlan]:
        return [s for s in self.scenarios if s.applicable]


def _scenario_applicability(s, subject: Subject) -> tuple[bool, str]:
    if SELECT_TAG not in s.tags:
        return False, f"not a {SELECT_TAG} scenario (tags: {', '.join(s.tags)})"
    why = s.not_applicable(subject.kafka_version, subject.adapter)    # the runner's own test
    if why:
        return False, why
    if s.min_version and subject.kafka_version is None:
        return True, f"needs Kafka {s.min_version}+; the image's version is unknown, so it is run"
    return True, ""


def missing_apis(cap: Capability, advertised_apis: Iterable[int] | None) -> list[str]:
    """The APIs ``cap`` needs that the broker does not advertise ([] when its ApiVersions are unknown)."""
    if advertised_apis is None:
        return []
    have = set(advertised_apis)
    return [f"{name} ({key})" for name, key in cap.needs_apis if key not in have]


def plan(scenarios: Iterable, subject: Subject, selected: Iterable[str] | None = None,
         only: Iterable[str] | None = None, advertised_apis: Iterable[int] | None = None) -> list[CapabilityPlan]:
    """Per selected capability (table order), its scenarios from the catalog and whether each applies.

    ``only``: scenario names; when given, a capability's other scenarios are left out (a quick,
    partial certificate) and capabilities none of them belongs to are not selected.
    ``advertised_apis``: the API keys the broker advertises (a distribution file's preflight); a
    capability needing one it lacks is NOT-APPLICABLE, and so is one the distribution file does not
    declare (``Distribution.declared_capabilities``). None (the Apache adapters): neither applies."""
    scenarios = list(scenarios)
    if only:
        only = set(only)
        known = {s.name: s for s in scenarios}
        for n in only:
            if n not in known:
                raise HarnessError(f"unknown scenario {n!r} (see `kafka-chaos run list`)")
            if not any(known[n].family in c.families for c in CAPABILITIES):
                raise HarnessError(f"scenario {n!r} is evidence for no capability (family {known[n].family!r})")
        scenarios = [s for s in scenarios if s.name in only]
        fams = {s.family for s in scenarios}
        in_only = {c.name for c in CAPABILITIES if fams & set(c.families)}
        selected = (set(selected) & in_only) if selected else in_only
        for n in selected or ():
            capability(n)
    wanted = set(selected) if selected else set(capability_names())
    for n in wanted:
        capability(n)  # unknown names raise
    out = []
    for cap in CAPABILITIES:
        if cap.name not in wanted:
            continue
        cp = CapabilityPlan(cap)
        members = [s for s in scenarios if s.family in cap.families]
        declared = subject.adapter.declared_capabilities
        lacking = missing_apis(cap, advertised_apis)
        if declared is not None and cap.name not in declared:
            cp.scenarios = [ScenarioPlan(s, False, "capability not declared") for s in members]
            cp.na_reason = "the distribution file does not declare this capability"
        elif lacking:
            cp.scenarios = [ScenarioPlan(s, False, f"needs {', '.join(lacking)}") for s in members]
            cp.na_reason = f"the broker does not advertise {', '.join(lacking)} in ApiVersions"
        elif cap.needs_role and cap.needs_role not in subject.adapter.roles:
            cp.scenarios = [ScenarioPlan(s, False, f"needs {cap.needs_role} nodes") for s in members]
            cp.na_reason = f"the broker runs no {cap.needs_role} nodes ({subject.distribution})"
            if cap.needs_role == "dynamic-quorum":      # KIP-853: a distribution of its own, not a node kind
                cp.na_reason = (f"{subject.distribution} formats no dynamic KRaft quorum: the capability needs "
                                "--distribution apache-kraft-dynamic (Kafka 4.x)")
        elif not members:
            cp.na_reason = NO_SCENARIO
        else:
            for s in members:
                ok, why = _scenario_applicability(s, subject)
                cp.scenarios.append(ScenarioPlan(s, ok, why))
            if not cp.applicable:
                reasons = sorted({sp.reason for sp in cp.scenarios})
                cp.na_reason = "no applicable scenario: " + "; ".join(reasons)
        out.append(cp)
    return out


def unmapped_scenarios(scenarios: Iterable) -> list[str]:
    """Conformance scenarios whose family no capability claims (worth adding to the table)."""
    families = {f for c in CAPABILITIES for f in c.families}
    return [s.name for s in scenarios if SELECT_TAG in s.tags and s.family not in families]
