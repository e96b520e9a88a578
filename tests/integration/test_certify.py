"""`kafka-chaos certify` against real clusters of the default image (one cluster at a time).

* ``--capability controller_failover``: both controller-failover scenarios run and pass, the
  certificate says CERTIFIED for that scope, exit 0, and Chromium shows the green CERTIFIED badge.
* ``--capability acks --scenario acks.all_below_min_isr --config min.insync.replicas=1 --parallel 2``:
  the broker (in a ``kafka-chaos run`` child process, which must get the override) acknowledges
  ``acks=all`` writes while the ISR is the leader alone, although the scenario declares
  ``min.insync.replicas=2``; the certificate fails the capability, exit 1, and names the failing run
  with a working link.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_certify_unit import CHROMIUM, _chromium, assert_shows_overall  # noqa: E402


def kc(*args, timeout=1800):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))


def _profile(image) -> str:
    v = image.kafka_version
    return f"apache-zk-{'.'.join(v.split('.')[:2])}" if v else "compatible"


def _cap(cert: dict, name: str) -> dict:
    (c,) = [c for c in cert["capabilities"] if c["name"] == name]
    return c


def test_certify_controller_failover_certified(kc_image, tmp_path):
    out = tmp_path / "cert"
    res = kc("certify", "--broker-image", kc_image.tag, "--profile", _profile(kc_image),
             "--capability", "controller_failover", "--out", str(out))
    assert res.returncode == 0, res.stderr[-4000:]
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["overall"] == "CERTIFIED" and cert["exit_code"] == 0
    assert cert["subject"]["broker_image"] == kc_image.tag
    assert cert["subject"]["image_id"] == kc_image.image_id
    assert cert["profile"] == _profile(kc_image)
    assert cert["scope"] == {"capabilities": ["controller_failover"], "scenarios": None, "complete": False}
    assert re.fullmatch(r"[0-9a-f]{40}", cert["harness"]["git_sha"] or "")
    cap = _cap(cert, "controller_failover")
    assert cap["status"] == "PASS"
    names = sorted(s["name"] for s in cap["scenarios"])
    assert names == ["controller_failover.delete_controller_znode", "controller_failover.kill_controller"]
    for s in cap["scenarios"]:
        assert s["status"] == "PASS" and s["runs"][-1]["verdict"] == "PASS"
        run = out / s["runs"][-1]["path"]
        verdict = json.loads((run / "verdict.json").read_text())
        assert verdict["verdict"] == "PASS"
        assert verdict["checks"]["conformance"]["verdict"] == "PASS"
        meta = json.loads((run / "metadata.json").read_text())
        assert meta["suite"] == "certify" and meta["profile"] == cert["profile"]
    # one progress line per scenario, and the summary
    assert len(re.findall(r"^\[\d/2\] controller_failover/.*: running \.\.\.$", res.stderr, re.M)) == 2
    assert "CERTIFIED: all 1 applicable capabilities passed" in res.stderr
    if Path(CHROMIUM).exists():
        assert_shows_overall(out / "certificate.html", "CERTIFIED", tmp_path)


def test_certify_misconfigured_min_isr_fails_acks(kc_image, tmp_path):
    out = tmp_path / "cert"
    res = kc("certify", "--broker-image", kc_image.tag, "--profile", _profile(kc_image),
             "--capability", "acks", "--scenario", "acks.all_below_min_isr", "--config", "min.insync.replicas=1",
             "--out", str(out), "--parallel", "2")
    assert res.returncode == 1, res.stderr[-4000:]
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["overall"] == "NOT CERTIFIED" and cert["broker_config_overrides"] == {"min.insync.replicas": "1"}
    assert cert["scope"] == {"capabilities": ["acks"], "scenarios": ["acks.all_below_min_isr"], "complete": False}
    cap = _cap(cert, "acks")
    assert cap["status"] == "FAIL"
    (scen,) = cap["scenarios"]
    assert scen["name"] == "acks.all_below_min_isr"
    run = scen["runs"][-1]
    assert run["verdict"] == "FAIL"
    assert "acks_semantics" in [r["rule"] for r in run["failing_rules"]]
    assert "min.insync.replicas=2" in run["judged_against"]
    run_dir = out / run["path"]
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["broker_config"]["min.insync.replicas"] == "1"        # the broker really ran misconfigured
    assert json.loads((run_dir / "verdict.json").read_text())["verdict"] == run["run_verdict"]
    assert (out / "runs" / ".logs").is_dir() and "(log " in res.stderr       # it ran in a child process
    # the report names the failing run and links to its record
    page = (out / "certificate.html").read_text()
    row = re.search(r'<tr id="cap-acks" data-status="FAIL">(.*?)</tr>', page, re.S).group(1)
    assert run["run_id"] in row and "acks_semantics" in row
    assert f'href="{run["path"]}/verdict.json"' in row
    if Path(CHROMIUM).exists():
        dom = _chromium(["--dump-dom"], out / "certificate.html").stdout
        assert re.search(r'id="overall"[^>]*>NOT CERTIFIED<', dom)
        assert_shows_overall(out / "certificate.html", "NOT CERTIFIED", tmp_path)
