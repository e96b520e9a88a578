"""The gate's one line names each failed rule with its value and its threshold (issue 43: "gate: FAILED
(min_runs)" said neither), so a CI log says what to change without opening the report."""

from reports.gate import evaluate, thresholds
from reports.job import gate_line


def test_a_failed_gate_names_value_and_threshold_of_each_failed_rule():
    g = evaluate({"runs": 2, "lost_not_allowed": 3, "fail": 1, "unknown": 4}, thresholds({}, {"min_runs": 5}))
    assert gate_line(g, []) == ("gate: FAILED (fail_on_lost: lost_not_allowed 3 (fails at 1), "
                                "fail_on_fail: fail 1 (fails at 1), min_runs: 2 usable run(s), at least 5 needed)")


def test_a_passed_gate_is_one_word_and_a_disabled_rule_never_fails():
    g = evaluate({"runs": 3, "unknown": 4}, thresholds({}, {}))      # fail_on_unknown is 0: off by default
    assert gate_line(g, []) == "gate: PASSED"
