"""``pytest --kc-nodes FILE`` (harness/pytest_plugin.py, docs/pytest-plugin.md) on the SSH test hosts
(tests/remote/hosts.py): a test's ``kc_cluster`` is the nodes file's cluster, and a judged run
(``kc_ctx``/``kc_nemesis``/``kc_judge``) kills a leader over SSH, is judged PASS and leaves nothing on the hosts.

Long (~1-2 min): ``python3 -m pytest -p no:cacheprovider -n 0 -m long tests/remote/test_plugin_nodes.py``.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.remote import hosts

pytestmark = [pytest.mark.docker, pytest.mark.ssh, pytest.mark.long]

ROOT = Path(__file__).resolve().parents[2]
P = [] if any(ep.value == "harness.pytest_plugin" for ep in entry_points(group="pytest11")) else ["-p", "harness.pytest_plugin"]

TESTS = '''
def test_the_cluster_is_the_nodes_file_s(kc_cluster):
    assert kc_cluster.is_remote and kc_cluster.bootstrap_servers == {bootstrap!r}
    assert sorted(kc_cluster.broker_ids) == {ids!r}


def test_a_judged_leader_kill_over_ssh(kc_ctx, kc_nemesis, kc_judge, kc_run):
    assert kc_run.cluster.is_remote
    old = kc_ctx.leader("chaos", 0)
    fault = kc_nemesis.apply("kill", "leader(chaos,0)")
    kc_ctx.wait_until("a new leader", lambda: kc_ctx.leader("chaos", 0) not in (None, old), 90)
    kc_nemesis.heal(fault)
    kc_judge()
'''


def test_kc_nodes_runs_fixtures_and_judged_runs_on_the_hosts(ssh_hosts, pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("KAFKA_CHAOS_STATE", str(tmp_path / "state"))
    pytester.makepyfile(TESTS.format(bootstrap=ssh_hosts.bootstrap_servers,
                                     ids=sorted(h.node_id for h in ssh_hosts.kafka_hosts)))
    res = pytester.runpytest_subprocess(*P, "-p", "no:cacheprovider", "--kc-nodes", str(ssh_hosts.nodes_file),
                                        "--kc-runs-dir", str(tmp_path / "runs"), "-v", timeout=900)
    res.assert_outcomes(passed=2)
    (run_dir,) = list((tmp_path / "runs").iterdir())
    assert '"verdict": "PASS"' in (run_dir / "verdict.json").read_text()
    assert f"remote:{ssh_hosts.nodes_file}" in (run_dir / "metadata.json").read_text()
    assert hosts.host_leftovers(ssh_hosts.nodes_file) == []
