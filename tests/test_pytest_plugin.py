"""The pytest plugin without a cluster: its options, fixtures, markers and how a judged run's failure reads;
the runner's generator protocol the plugin stops at; every data file of the packages is package data."""

from __future__ import annotations

import re
import subprocess
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from harness import runner
from harness.pytest_run import RunSpec, failure_message, rule_ids, scenario_name
from harness.runner import RunOutcome

ROOT = Path(__file__).resolve().parent.parent
# the plugin as pytest finds it: its entry point when the package is installed with it, else `-p`
P = [] if any(ep.value == "harness.pytest_plugin" for ep in entry_points(group="pytest11")) else ["-p", "harness.pytest_plugin"]


@pytest.fixture(autouse=True)
def _this_checkout_importable(monkeypatch):
    """pytester's subprocesses import the plugin from this checkout (not whatever is installed)."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


FIXTURES = ("kc_docker", "kc_image", "kc_spec", "kc_cluster_factory", "kc_cluster", "kc_cluster_module",
            "kc_cluster_session", "kc_run", "kc_ctx", "kc_nemesis", "kc_workload", "kc_observer", "kc_judge",
            "kc_scenario_file")


def test_fixtures_are_listed_with_docstrings(pytester):
    res = pytester.runpytest_subprocess("--fixtures", *P)
    text = res.stdout.str()
    for name in FIXTURES:
        m = re.search(rf"^{name}\b.*\n\s+(\S.*)$", text, re.M)
        assert m, f"{name} not listed by --fixtures:\n{text[-3000:]}"


def test_options_and_markers(pytester):
    res = pytester.runpytest_subprocess("--help", *P)
    for opt in ("--kc-kafka-version", "--kc-distribution", "--kc-runs-dir", "--kc-keep-cluster", "--kc-brokers"):
        assert opt in res.stdout.str()
    res = pytester.runpytest_subprocess("--markers", *P)
    assert "@pytest.mark.kafka_chaos(**settings)" in res.stdout.str()


def test_spec_merges_options_markers_and_parameters(pytester):
    pytester.makepyfile("""
        import pytest
        pytestmark = pytest.mark.kafka_chaos(brokers=4, broker_config={"a": "1"})

        @pytest.mark.kafka_chaos(layout="dedicated")
        @pytest.mark.parametrize("kc_spec", [{"kafka_version": "4.1.2"}], indirect=True)
        def test_spec(kc_spec):
            assert kc_spec == {"kafka_version": "4.1.2", "distribution": "apache-kraft-dedicated", "brokers": 4,
                               "broker_config": {"a": "1"}, "zookeepers": 3}
    """)
    res = pytester.runpytest_subprocess(*P, "--kc-zookeepers", "3", "--kc-kafka-version", "3.9.2")
    res.assert_outcomes(passed=1)


def test_docker_tests_fail_without_an_engine_and_skip_when_told(pytester, monkeypatch):
    pytester.makepyfile("""
        import pytest
        @pytest.mark.docker
        def test_needs_docker():
            pass
    """)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    res = pytester.runpytest_subprocess(*P)
    res.assert_outcomes(errors=1)
    assert "Docker engine unreachable" in res.stdout.str()
    monkeypatch.setenv("KAFKA_CHAOS_SKIP_DOCKER", "1")
    pytester.runpytest_subprocess(*P).assert_outcomes(skipped=1)


def test_tests_using_clusters_are_marked_docker(pytester):
    pytester.makepyfile("""
        def test_a(kc_run):
            pass

        def test_b(kc_cluster_module):
            pass

        def test_c():
            pass
    """)
    res = pytester.runpytest_subprocess(*P, "-m", "not docker", "--collect-only", "-q")
    assert "test_c" in res.stdout.str() and "test_a" not in res.stdout.str() and "test_b" not in res.stdout.str()


def test_run_spec_makes_a_scenario_that_runs_everywhere():
    sc = RunSpec.from_dict("pytest.t", {"partitions": 1, "broker_config": {"x": "y"}}).scenario()
    assert sc.topics[0].name == "chaos" and sc.topics[0].partitions == 1
    assert sc.workload == {"topic": "chaos", "partitions": 1} and sc.broker_config == {"x": "y"}
    assert sc.needs_roles == () and sc.script is None
    assert RunSpec.from_dict("pytest.t", {"workload": None}).scenario().workload is None
    with pytest.raises(Exception, match="unknown kafka-chaos run setting"):
        RunSpec.from_dict("pytest.t", {"bogus": 1})
    assert scenario_name("tests/x.py::test_a[apache-kraft 4.1.2]") == "pytest.test_a_apache-kraft_4.1.2"


def test_failure_names_rule_ids_and_the_record(tmp_path):
    verdict = {"checks": {
        "conformance": {"invariant_violations": [{"rule": "H3"}], "divergences": [{"rule": "H11"}, {"rule": "H3"}]},
        "durability": {"verdict": "FAIL", "checks": {"lost": {"verdict": "FAIL"}, "duplicated": {"verdict": "PASS"}}},
        "expectations": {"verdict": "FAIL", "items": [{"what": "a new leader", "ok": False, "rule": "E1"},
                                                      {"what": "x", "ok": True}]}}}
    assert rule_ids(verdict) == ["H3", "H11", "durability.lost", "expectation E1: a new leader"]
    out = RunOutcome("pytest.t", tmp_path, "FAIL", "conformance: H3 ...", 1.0)
    msg = failure_message(out, verdict)
    assert "FAIL" in msg and "H3; H11; durability.lost" in msg and f"record: {tmp_path}" in msg


def _fake_steps(log):
    log.append("setup")
    try:
        yield "ctx"
    except Exception as e:  # noqa: BLE001
        log.append(f"script error {type(e).__name__}")
    log.append("heal, drain, judge")
    return RunOutcome("s", Path("."), "PASS", "ok", 0.0)


def test_drive_runs_the_script_at_the_yield_and_throws_its_errors_in():
    log: list = []
    out = runner.drive(_fake_steps(log), lambda ctx: log.append(f"script {ctx}"))
    assert log == ["setup", "script ctx", "heal, drain, judge"] and out.verdict == "PASS"
    log.clear()

    def bad(ctx):
        raise ValueError("boom")
    runner.drive(_fake_steps(log), bad)
    assert log == ["setup", "script error ValueError", "heal, drain, judge"]
    log.clear()

    def skipped(ctx):
        pytest.skip("inside a run")
    with pytest.raises(pytest.skip.Exception):
        runner.drive(_fake_steps(log), skipped)
    assert log == ["setup", "script error ExpectationFailed", "heal, drain, judge"]


def test_cluster_names_carry_the_xdist_worker(monkeypatch):
    monkeypatch.setenv("KAFKA_CHAOS_CLUSTER_PREFIX", "ab")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    assert runner.run_cluster_name("123abc") == "abgw3-123abc"
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert runner.run_cluster_name("123abc") == "ab123abc"


def test_every_data_file_of_the_packages_is_package_data():
    """A file under harness/, reports/ or suites/ that is not Python must match the package-data globs
    of pyproject.toml, or the installed wheel lacks it."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    files = subprocess.run(["git", "ls-files", "harness", "reports", "suites"], cwd=ROOT, capture_output=True,
                           text=True).stdout.split()
    if not files:
        pytest.skip("not a git checkout")
    missing = []
    for f in files:
        if f.endswith(".py"):
            continue
        pkg, rest = f.split("/", 1)
        if not any(Path(rest).match(g) for g in conf.get(pkg, [])):
            missing.append(f)
    assert not missing, f"not package data (add to [tool.setuptools.package-data]): {missing}"


def test_completion_script_names_every_command():
    from harness.cli import build_parser
    from harness.commands.completion import bash_script
    script = bash_script(build_parser())
    for cmd in ("run", "check", "doctor", "demo", "completion", "images build", "cluster up"):
        assert f'"{cmd}")' in script
    res = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert res.returncode == 0, res.stderr


def _nodes_file(d: Path) -> Path:
    """A nodes file (harness/remote/nodes_file.py) with a real key; its hosts are never connected to here."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "id_ed25519")], check=True)
    pub = (d / "id_ed25519.pub").read_text().split()
    (d / "known_hosts").write_text(f"10.0.0.1 {pub[0]} {pub[1]}\n")
    nodes = "".join(f'\n[[node]]\nid = {i}\nroles = ["broker", "controller"]\nhost = "10.0.0.{i}"\n'
                    f'endpoint = "10.0.0.{i}:9092"\n' for i in (1, 2, 3))
    (d / "nodes.toml").write_text(
        'name = "plug"\nkafka_version = "4.4.0"\n[ssh]\nuser = "chaos"\nkey_file = "id_ed25519"\n'
        'known_hosts = "known_hosts"\n[service]\nstart = "s"\nstop = "t"\npidfile = "/run/k.pid"\n' + nodes)
    return d / "nodes.toml"


def test_kc_nodes_makes_every_cluster_the_nodes_file_s(pytester):
    path = _nodes_file(pytester.path)
    pytester.makepyfile(f"""
        def test_spec(kc_spec):
            assert kc_spec == {{"distribution": "remote:{path}"}}
    """)
    pytester.runpytest_subprocess(*P, "--kc-nodes", str(path)).assert_outcomes(passed=1)
    res = pytester.runpytest_subprocess("--help", *P)
    assert "--kc-nodes" in res.stdout.str() and "$KAFKA_CHAOS_NODES" in res.stdout.str()


def test_kc_nodes_errors_are_one_usage_line_before_any_test(pytester):
    path = _nodes_file(pytester.path)
    pytester.makepyfile("def test_never(kc_spec):\n    raise AssertionError('ran')\n")
    bad = pytester.path / "bad.toml"
    bad.write_text(path.read_text().replace('roles = ["broker", "controller"]', 'roles = ["brokr"]', 1))
    for args, said in ((["--kc-nodes", str(bad)], "node 1: roles: unknown role 'brokr'"),
                       (["--kc-nodes", str(pytester.path / "none.toml")], "no such file"),
                       (["--kc-nodes", str(path), "--kc-distribution", "apache-kraft"],
                        "--kc-nodes cannot be combined with --kc-distribution")):
        res = pytester.runpytest_subprocess(*P, *args)
        errors = [ln for ln in res.stderr.lines if ln.startswith("ERROR")]
        assert res.ret == pytest.ExitCode.USAGE_ERROR and len(errors) == 1 and said in errors[0], res.stderr.str()
        assert "ran" not in res.stdout.str()
