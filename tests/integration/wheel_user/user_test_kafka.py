"""A user's own test of their Kafka cluster, written against the installed kafka-chaos pytest plugin only
(tests/integration/test_wheel.py copies it as test_user_kafka.py into an empty directory outside the repository;
it is not named test_*.py here so that this repository's own pytest runs never collect it)."""


def test_leader_kill_is_survived(kc_ctx, kc_nemesis, kc_workload, kc_judge):
    """SIGKILL the leader of chaos-0: a new leader from the ISR, no acknowledged write lost."""
    old = kc_ctx.leader("chaos", 0)
    fault = kc_nemesis.apply("kill", "leader(chaos,0)")       # a role, resolved now from the observer
    kc_ctx.wait_until("chaos-0 has a new leader", lambda: kc_ctx.leader("chaos", 0) not in (None, -1, old), 40)
    kc_nemesis.heal(fault)
    kc_ctx.wait_until(f"broker {old} back in the ISR", lambda: old in kc_ctx.isr("chaos", 0), 60)
    assert kc_workload.acknowledged() > 0
    out = kc_judge()       # the reference model, the durability checker, the expectations: PASS or the test fails
    assert out.verdict == "PASS"


def test_deliberately_broken_expectation(kc_ctx, kc_judge):
    """An expectation the broker cannot meet: the judge fails the test naming the rule id and the record."""
    kc_ctx.expect("broker 42 is the controller", kc_ctx.controller() == 42, rule="USER-1")
    kc_judge()


def test_scenario_file(kc_scenario_file):
    """A scenario file next to this test (a copy of docs/examples/scenarios/broker_failover.toml), judged."""
    from pathlib import Path
    out = kc_scenario_file(Path(__file__).with_name("broker_failover.toml"))
    assert out.verdict == "PASS"
