"""Feature levels at format time without Docker (docs/kraft.md "Feature levels"): which levels each release
knows (reference/feature_versions.py), the scenario-file key ``[cluster] features`` and ``run --feature``,
the adapters that can set them (``kafka-storage format --feature NAME=LEVEL``) and the ones that refuse,
each with one line naming the key. The cluster itself: ``kafka-chaos run broker_failover.kill_leader
--feature transaction.version=1 --distribution apache-kraft --kafka-version 4.4.0``."""

from __future__ import annotations

import shlex

import pytest

from reference import feature_versions as fv

from tests.protocol.fake_nodes import BROKERS, controllers
from harness import distributions as d
from harness.cluster.cluster import ClusterSpec
from harness.distributions.apache_kraft import FORMAT_THEN_START, feature_args
from harness.errors import HarnessError
from harness.options import feature_pairs
from harness.scenario.file import ScenarioFileError, load_file
from harness.scenario.scenario import Scenario


CONTROLLERS = controllers(5)


# ---------------------------------------------------------------- what each release knows
def test_each_read_release_knows_its_features():
    assert fv.problem("4.4.0", {"transaction.version": 1, "group.version": 0, "share.version": 2,
                                "eligible.leader.replicas.version": 1, "streams.version": 1}) is None
    assert fv.problem("4.1.2", {"share.version": 1}) is None
    assert fv.problem("3.9.2", {"transaction.version": 0, "metadata.version": 21}) is None
    assert set(fv.MATRIX) <= set(fv.NAMES)


@pytest.mark.parametrize("version,features,says", [
    ("4.4.0", {"transaction.version": 3}, "features.transaction.version=3: Kafka 4.4.0 knows levels 0..2"),
    ("4.1.2", {"share.version": 2}, "features.share.version=2: Kafka 4.1.2 knows levels 0..1"),
    ("4.1.2", {"streams.version": 1}, "(1 with unstable.feature.versions.enable=true)"),
    ("3.9.2", {"group.version": 1}, "features.group.version: Kafka 3.9.2 has no such feature"),
    ("3.9.2", {"transaction.version": 2}, "knows levels 0..0 (2 with unstable"),
    ("4.4.0", {"metadata.version": 35}, "features.metadata.version=35: Kafka 4.4.0 knows levels 7..33"),
    ("4.4.0", {"metadata.version": 0}, "knows levels 7..33"),
    ("4.4.0", {"eligible.leader.replicas.version": 1, "metadata.version": 21},
     "needs metadata.version >= 23 (4.0-IV1); asked: metadata.version=21"),
    ("4.5.0", {"transaction.version": 1}, "feature levels of Kafka 4.5.0 are not known here"),
    ("4.0.2", {"share.version": 1}, "features.share.version: Kafka 4.0.2 has no such feature"),
    ("4.0.2", {"metadata.version": 27}, "features.metadata.version=27: Kafka 4.0.2 knows levels 7..25"),
    ("4.2.2", {"share.version": 2}, "features.share.version=2: Kafka 4.2.2 knows levels 0..1"),
    ("4.3.1", {"metadata.version": 31}, "knows levels 7..30 (31 with unstable.feature.versions.enable=true)"),
    (None, {"transaction.version": 1}, "(unknown version)"),
])
def test_unknown_levels_are_refused_naming_the_key(version, features, says):
    why = fv.problem(version, features)
    assert why is not None and says in why and "\n" not in why


def test_the_lines_read_from_their_jars_accept_their_production_levels():
    assert fv.problem("4.0.1", {"transaction.version": 2, "group.version": 1, "eligible.leader.replicas.version": 1,
                                "metadata.version": 25}) is None
    assert fv.problem("4.2.0", {"streams.version": 1, "share.version": 1, "metadata.version": 29}) is None
    assert fv.problem("4.3.1", {"streams.version": 1, "share.version": 1, "metadata.version": 30}) is None
    assert fv.problem("4.2.2", {"eligible.leader.replicas.version": 1, "metadata.version": 22}).endswith(
        "asked: metadata.version=22")
    assert {fv.known(v) is fv.KNOWN[k] for v, k in (("4.0.2", (4, 0)), ("4.2.1", (4, 2)), ("4.3.0", (4, 3)))} == {True}


def test_testing_levels_need_the_unstable_switch():
    assert fv.problem("4.1.2", {"streams.version": 1}, unstable=True) is None
    assert fv.problem("3.9.2", {"transaction.version": 2}, unstable=True) is None
    assert "knows levels 0..2" in fv.problem("4.4.0", {"transaction.version": 3}, unstable=True)


# ---------------------------------------------------------------- which adapters can set them
def test_only_the_apache_kraft_adapters_set_features():
    assert [n for n in ("apache-zk", "apache-kraft", "apache-kraft-dedicated", "apache-kraft-dynamic", "generic")
            if d.resolve(n).sets_features] == ["apache-kraft", "apache-kraft-dedicated", "apache-kraft-dynamic"]
    why = d.resolve("apache-zk").features_problem({"transaction.version": 1}, "3.9.2")
    assert why.startswith("features.transaction.version: distribution apache-zk cannot set feature levels")
    assert "cannot set feature levels" in d.resolve("generic").features_problem({"group.version": 1}, "4.4.0")
    assert d.resolve("apache-zk").features_problem({}, "3.9.2") is None


def test_kraft_version_follows_the_quorum():
    static = d.resolve("apache-kraft").features_problem({"kraft.version": 1}, "4.4.0")
    assert static.startswith("features.kraft.version=1: distribution apache-kraft runs a static quorum")
    assert d.resolve("apache-kraft").features_problem({"kraft.version": 0}, "4.4.0") is None
    assert d.resolve("apache-kraft-dynamic").features_problem({"kraft.version": 1}, "4.4.0") is None
    assert "runs a dynamic quorum" in d.resolve("apache-kraft-dynamic").features_problem({"kraft.version": 0}, "4.4.0")


def test_the_unstable_switch_comes_from_the_node_config():
    k = d.resolve("apache-kraft")
    assert k.features_problem({"streams.version": 1}, "4.1.2") is not None
    assert k.features_problem({"streams.version": 1}, "4.1.2", {"unstable.feature.versions.enable": "true"}) is None


def test_cluster_spec_refuses_before_any_container():
    with pytest.raises(HarnessError, match=r"^features.transaction.version: distribution apache-zk cannot"):
        ClusterSpec(distribution="apache-zk", kafka_version="3.9.2", features={"transaction.version": 1}).validate()
    with pytest.raises(HarnessError, match=r"knows levels 0..1"):
        ClusterSpec(distribution="apache-kraft", image="kafka-chaos/kafka:4.4.0", features={"group.version": 2}).validate()
    ClusterSpec(distribution="apache-kraft", image="kafka-chaos/kafka:4.4.0", features={"group.version": 0}).validate()


# ---------------------------------------------------------------- how the adapters apply them
def test_apache_kraft_formats_with_the_storage_tool_only_when_asked():
    k = d.resolve("apache-kraft")
    plain = k.plan({}, BROKERS[0], BROKERS, cluster_id="AAAAAAAAAAAAAAAAAAAAAA")
    assert plain.command == "kraft" and "KC_FORMAT_ARGS" not in plain.env      # the image's template
    p = k.plan({}, BROKERS[0], BROKERS, cluster_id="AAAAAAAAAAAAAAAAAAAAAA",
               features={"transaction.version": 1, "group.version": 0})
    assert p.command == ["sh", "-c", FORMAT_THEN_START]
    assert shlex.split(p.env["KC_FORMAT_ARGS"]) == ["--feature", "transaction.version=1", "--feature", "group.version=0"]
    assert "kafka.tools.StorageTool format" in FORMAT_THEN_START and "$KC_FORMAT_ARGS" in FORMAT_THEN_START
    assert FORMAT_THEN_START.rstrip().endswith("entrypoint.sh kraft")      # then the image's own start
    assert p.config == plain.config


def test_dedicated_controllers_get_the_same_features():
    k = d.resolve("apache-kraft-dedicated")
    nodes = BROKERS + CONTROLLERS[:3]
    g = k.node_groups(ClusterSpec(distribution="apache-kraft-dedicated"))[0]
    p = k.aux_plan(g, CONTROLLERS[0], CONTROLLERS[:3], {}, nodes, "AAAAAAAAAAAAAAAAAAAAAA",
                   features={"eligible.leader.replicas.version": 0})
    assert shlex.split(p.env["KC_FORMAT_ARGS"]) == ["--feature", "eligible.leader.replicas.version=0"]
    assert p.env["KC_HEAP_OPTS"]


def test_dynamic_quorum_adds_features_to_its_format_and_leaves_kraft_version_to_the_voters():
    k = d.resolve("apache-kraft-dynamic")
    nodes = BROKERS + CONTROLLERS
    p = k.plan({}, CONTROLLERS[0], nodes, cluster_id="AAAAAAAAAAAAAAAAAAAAAA",
               features={"kraft.version": 1, "transaction.version": 1})
    args = shlex.split(p.env["KC_FORMAT_ARGS"])
    assert args[0] == "--initial-controllers" and args[2:] == ["--feature", "transaction.version=1"]
    b = shlex.split(k.plan({}, BROKERS[0], nodes, cluster_id="AAAAAAAAAAAAAAAAAAAAAA",
                           features={"transaction.version": 1}).env["KC_FORMAT_ARGS"])
    assert b == ["--no-initial-controllers", "--feature", "transaction.version=1"]
    assert feature_args(None) == [] and feature_args({"share.version": 2}) == ["--feature", "share.version=2"]


# ---------------------------------------------------------------- scenarios, files, the command line
def test_scenario_features_decide_applicability():
    s = Scenario("x.y", "d", None, kraft=True, features={"transaction.version": 2})
    assert "cannot set feature levels" in s.not_applicable("3.9.2", d.resolve("apache-zk"))
    assert s.not_applicable("4.4.0", d.resolve("apache-kraft")) is None
    assert "knows levels 0..0" in s.not_applicable("3.9.2", d.resolve("apache-kraft"))
    assert Scenario("x.y", "d", None, kraft=True).not_applicable("3.9.2", d.resolve("apache-zk")) is None


def test_with_features_and_variants_merge_over_the_scenario():
    s = Scenario("x.y", "d", None, kraft=True, features={"transaction.version": 2, "group.version": 1},
                 variants={"tv1": {"features": {"transaction.version": 1}}})
    assert s.with_features({"transaction.version": 1}).features == {"transaction.version": 1, "group.version": 1}
    assert s.with_features({}) is s and s.with_features(None) is s
    assert s.with_variant("tv1").features == {"transaction.version": 1, "group.version": 1}


def _file(tmp_path, cluster: str) -> str:
    p = tmp_path / "f.toml"
    p.write_text(f'name = "features.f"\n[cluster]\nmodes = ["kraft"]\n{cluster}\n')
    return str(p)


def test_scenario_file_features(tmp_path):
    sf = load_file(_file(tmp_path, 'features = { "transaction.version" = 1, "group.version" = 0 }'))
    assert sf.scenario.features == {"transaction.version": 1, "group.version": 0}
    assert load_file(_file(tmp_path, "brokers = 3")).scenario.features == {}
    sf = load_file(_file(tmp_path, 'distribution = "apache-kraft"\nkafka_version = "4.4.0"\n'
                                   '[cluster.features]\n"share.version" = 2'))
    assert sf.scenario.features == {"share.version": 2}


@pytest.mark.parametrize("cluster,says", [
    ('features = { "bogus.version" = 1 }', 'cluster.features."bogus.version": unknown feature; allowed: '),
    ('features = { "group.version" = "1" }', 'cluster.features."group.version": expected an integer'),
    ('features = { "group.version" = -1 }', "expected an integer in 0..32767"),
    ("features = 1", "cluster.features: expected a table of feature levels"),
    ("[cluster.features]\ngroup.version = 1", 'feature names contain dots: quote them'),
    ('kafka_version = "4.4.0"\nfeatures = { "group.version" = 2 }',
     'cluster.features."group.version": Kafka 4.4.0 knows levels 0..1'),
    ('distribution = "apache-zk"\nfeatures = { "transaction.version" = 1 }',
     'cluster.features."transaction.version": distribution apache-zk cannot set feature levels'),
    ('distribution = "apache-kraft"\nkafka_version = "4.4.0"\nfeatures = { "kraft.version" = 1 }',
     'cluster.features."kraft.version": distribution apache-kraft runs a static quorum'),
])
def test_scenario_file_feature_errors_name_the_key(tmp_path, cluster, says):
    with pytest.raises(ScenarioFileError) as e:
        load_file(_file(tmp_path, cluster))
    assert says in str(e.value) and "\n" not in str(e.value)
    assert e.value.line > 0


def test_run_feature_option():
    assert feature_pairs(["transaction.version=1", "group.version = 0"]) == {"transaction.version": 1,
                                                                              "group.version": 0}
    assert feature_pairs(None) == {}
    for bad, says in (("transaction.version", "expects NAME=LEVEL"), ("group.version=x", "expects NAME=LEVEL"),
                      ("foo=1", "unknown feature 'foo'")):
        with pytest.raises(HarnessError, match=says):
            feature_pairs([bad])


def test_replay_reads_the_requested_levels():
    from harness.commands.replay import _features
    assert _features({"transaction.version": 1, "group.version": 0}) == {"transaction.version": 1, "group.version": 0}
    assert _features(None) is None and _features({}) is None          # a record from before, or none asked
    assert _features({"transaction.version": True, "x": "1"}) is None  # not levels


# ---------------------------------------------------------------- the run's finalized levels (metadata.json)
def _meta_events():
    return [
        {"type": "meta.feature", "offset": 2, "name": "metadata.version", "level": 33},
        {"type": "meta.feature", "offset": 3, "name": "eligible.leader.replicas.version", "level": 1},
        {"type": "meta.feature", "offset": 6, "name": "transaction.version", "level": 1},
        {"type": "meta.leader_change", "offset": 7, "raft_epoch": 1, "leader_id": 1, "voters": [1, 2, 3]},
        {"type": "meta.feature", "offset": 90, "name": "transaction.version", "level": 2},     # upgraded later
        {"type": "client.send", "offset": 5},                                                    # not a meta event
    ]


def test_finalized_levels_come_from_the_metadata_log_through_the_one_definition():
    from harness.runner import finalized_features
    assert finalized_features(_meta_events()) == {"metadata.version": 33, "eligible.leader.replicas.version": 1,
                                                  "transaction.version": 2}
    assert finalized_features([{"type": "zk.partition_state", "zxid": 3}]) is None   # ZooKeeper mode: none
    dyn = [*_meta_events(), {"type": "meta.kraft_version", "offset": 1, "level": 1}]
    assert finalized_features(dyn)["kraft.version"] == 1                              # a dynamic quorum


def test_record_schema_accepts_features_and_older_records_still_read():
    from harness.record.schema import metadata_errors
    assert metadata_errors("m", {"features": {"transaction.version": 1}, "features_requested": {"group.version": 0}}) == []
    assert metadata_errors("m", {}) == []                                                    # an older record
    assert metadata_errors("m", {"features": {"transaction.version": "1"}}) == [
        "m: field 'features' level of 'transaction.version' is a string, expected an integer"]
    assert metadata_errors("m", {"features": [1]}) == ["m: field 'features' is a list, expected an object"]


def test_facts_and_the_label_reports_show():
    from harness.record import facts
    meta = {"features": {"metadata.version": 33, "transaction.version": 1},
            "features_requested": {"transaction.version": 1, "group.version": 0}}
    assert facts.features(meta) == {"metadata.version": 33, "transaction.version": 1}
    assert facts.features({}) is None and facts.features_requested({}) == {}
    assert facts.features_label(facts.features(meta), facts.features_requested(meta)) == \
        "group.version=0*, metadata.version=33, transaction.version=1*"
    assert facts.features_label(None) is None and facts.features_label({}) == "none"


# ---------------------------------------------------------------- reports
def _report_meta(**kw) -> bytes:
    import json
    m = {"schema_version": 1, "run_id": "r1", "suite": "feature-matrix", "scenario": "broker_failover.kill_leader",
         "kafka_version": "4.4.0", "broker_image": "kafka-chaos/kafka:4.4.0", "started_at": "2026-11-28T20:00:00Z",
         "seed": 0}
    m.update(kw)
    return json.dumps(m).encode()


def test_report_rows_show_the_runs_feature_levels():
    pytest.importorskip("pyspark")
    import json
    from reports.parse import FIELDS, parse_run
    v = json.dumps({"schema_version": 1, "verdict": "PASS", "reason": "r", "checks": {}}).encode()
    row = dict(zip(FIELDS, parse_run("r1", {"metadata.json": _report_meta(
        features={"metadata.version": 33, "transaction.version": 1},
        features_requested={"transaction.version": 1}), "verdict.json": v})))
    assert row["skip_reason"] is None and row["features"] == "metadata.version=33, transaction.version=1*"
    old = dict(zip(FIELDS, parse_run("r1", {"metadata.json": _report_meta(), "verdict.json": v})))
    assert old["skip_reason"] is None and old["features"] is None          # an older record still reads
    bad = dict(zip(FIELDS, parse_run("r1", {"metadata.json": _report_meta(features={"x": "1"}), "verdict.json": v})))
    assert "field 'features' level of 'x' is a string" in bad["skip_reason"]


def test_feature_levels_table_counts_verdicts_per_levels():
    from reports import tables
    base = {"scenario": "s", "broker": "4.4.0"}
    runs = [{**base, "features": "transaction.version=1*", "verdict": "PASS"},
            {**base, "features": "transaction.version=1*", "verdict": "FAIL"},
            {**base, "features": "transaction.version=2*", "verdict": "PASS"},
            {**base, "features": None, "verdict": "PASS"}]                     # ZooKeeper mode: left out
    rows = tables.feature_levels(runs)
    assert [(r["features"], r["runs"], r["pass"], r["fail"]) for r in rows] == [
        ("transaction.version=1*", 2, 1, 1), ("transaction.version=2*", 1, 1, 0)]
    assert list(rows[0]) == [p.split()[0] for p in tables.SCHEMAS["feature_levels"].split(",")]


# ---------------------------------------------------------------- certificates
def _caps(*runs_per_scenario):
    return [{"name": "broker-failover", "scenarios": [
        {"name": f"s{i}", "runs": runs} for i, runs in enumerate(runs_per_scenario)]}]


def test_certificate_says_at_which_levels_its_evidence_ran():
    from harness.certify.certificate_data import feature_levels, feature_levels_text
    tv1 = {"features": {"metadata.version": 33, "transaction.version": 1}, "features_requested": {"transaction.version": 1}}
    tv2 = {"features": {"metadata.version": 33, "transaction.version": 2}, "features_requested": {}}
    one = feature_levels(_caps([tv2], [tv2], [tv1, tv2]))       # each scenario's last run is its evidence
    assert feature_levels_text(one) == "every evidence run: metadata.version=33, transaction.version=2 (3 runs)"
    two = feature_levels(_caps([tv1], [tv2], [tv2], [{"features": None}], []))
    assert [(g["label"], g["runs"], g["scenarios"]) for g in two] == [
        ("metadata.version=33, transaction.version=2", 2, ["s1", "s2"]),
        ("metadata.version=33, transaction.version=1*", 1, ["s0"]), (None, 1, ["s3"])]
    assert feature_levels_text(two) == (
        "3 sets of levels: metadata.version=33, transaction.version=2 (2 runs); metadata.version=33, "
        "transaction.version=1* (1 run); not recorded (no KRaft metadata log read) (1 run)")
    assert feature_levels_text([]) == "no run"


def test_certificate_html_shows_the_levels(tmp_path):
    from reports.certificate import render_html
    from tests.test_certify_unit import _fixture_certificate
    cert = _fixture_certificate(tmp_path, with_failure=False)           # ZooKeeper-mode fixture runs: none kept
    assert cert["feature_levels_text"] == "every evidence run: not recorded (no KRaft metadata log read) (2 runs)"
    run = cert["capabilities"][0]["scenarios"][0]["runs"][-1]
    assert run["features"] is None and run["features_requested"] == {}
    run["features"], run["features_requested"] = {"transaction.version": 1}, {"transaction.version": 1}
    html = render_html(cert)
    assert '<span id="feature-levels">every evidence run: not recorded' in html
    assert '<div class="muted features">features: transaction.version=1*</div>' in html
    del cert["feature_levels_text"]                                     # a certificate from before
    assert 'id="feature-levels"' not in render_html(cert)


def test_run_summary_rows_show_the_levels(tmp_path):
    import json
    from harness.commands import run_summary
    for name, extra in (("kraft", {"features": {"transaction.version": 2}, "features_requested": {"transaction.version": 2}}),
                        ("zk", {})):
        d = tmp_path / name
        d.mkdir()
        (d / "metadata.json").write_text(json.dumps({"scenario": "broker_failover.kill_leader", "run_id": name,
                                                     "distribution": "apache-kraft", "kafka_version": "4.4.0", **extra}))
        (d / "verdict.json").write_text(json.dumps({"verdict": "PASS", "reason": "all checks passed"}))
    rows = run_summary.rows([tmp_path / "kraft", tmp_path / "zk"])
    assert [r["features"] for r in rows] == ["transaction.version=2*", None]
    md = run_summary.markdown(rows, 0)
    assert "`broker_failover.kill_leader[apache-kraft-4.4.0]`<br>features: transaction.version=2* | PASS |" in md
