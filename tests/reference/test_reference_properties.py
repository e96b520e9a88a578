"""Property-based tests (hypothesis) over random model event sequences:

1. every allowed outcome of every step satisfies the model's hard invariants;
2. the history of one random path, rendered as run-record events, is accepted (PASS) by the
   checker under the matching apache-zk profile and under the compatible profile.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference import check_conformance
from reference.invariants import model_state_violations
from reference.model import ControllerModel
from reference.model_events import BrokerStartup, ControllerElected, CreateTopic, DeleteTopic
from tests.reference.render import Renderer, metadata_for
from reference.state import ModelConfig

BROKERS = (1, 2, 3, 4)
VERSIONS = [(3, 9), (3, 2), (2, 8), (2, 4), (2, 3), (2, 1)]


def run_random(data, version, unclean, steps):
    m = ControllerModel(ModelConfig(version=version, unclean_default=unclean))
    s = m.initial_state()
    r = Renderer(version)
    boot = [BrokerStartup(b) for b in BROKERS] + [ControllerElected(None),
            CreateTopic("a", ((0, (1, 2, 3)), (1, (2, 3, 4)))), CreateTopic("b", ((0, (4, 1)), (1, (3,))))]
    for i in range(len(boot) + steps):
        if i < len(boot):
            ev = boot[i]
        else:
            groups: dict[str, list] = {}
            for e in m.enabled_events(s, BROKERS):       # pick the kind first so rare kinds get exercised
                if isinstance(e, DeleteTopic) and e.topic == "a":
                    continue                             # keep one topic alive for the rest of the path
                groups.setdefault(type(e).__name__, []).append(e)
            kind = data.draw(st.sampled_from(sorted(groups)), label="kind")
            ev = groups[kind][data.draw(st.integers(0, len(groups[kind]) - 1), label="event")]
        outs = m.step(s, ev)
        for o in outs:
            bad = model_state_violations(o.state)
            assert not bad, f"{ev}: {bad}\n{o.state.summary()}"
        o = outs[data.draw(st.integers(0, len(outs) - 1), label="outcome")]
        r.event_inputs(ev)
        r.writes(o.writes)
        s = o.state
    return r.events


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), version=st.sampled_from(VERSIONS), unclean=st.booleans(),
       steps=st.integers(1, 40))
def test_model_paths_are_invariant_clean_and_accepted_by_checker(data, version, unclean, steps):
    events = run_random(data, version, unclean, steps)
    cfg = ModelConfig(version=version, unclean_default=unclean)
    for profile in (f"apache-zk-{version[0]}.{version[1]}", "compatible"):
        res = check_conformance(events, metadata_for(cfg, profile), profile)
        assert res.verdict == "PASS", "\n".join(
            [profile] + [str(d) for d in res.divergences + res.invariant_violations])
