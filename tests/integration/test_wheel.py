"""The package as a user gets it: the wheel built from this checkout, installed (not editable, the core only:
no extra) in a fresh venv of the lowest supported Python (3.11) and of 3.12, and a directory outside the
repository holding only a user's ``test_*.py``
(tests/integration/wheel_user/user_test_kafka.py) and a scenario file (docs/examples/scenarios/broker_failover.toml).
``pytest`` there, with nothing but the installed plugin, runs a leader-kill test on a real cluster
that PASSes, a deliberately broken expectation that FAILs with its rule id, and the scenario file
(PASS), on a KRaft cluster of Apache Kafka 4.4.0 named explicitly (``--kc-distribution apache-kraft
--kc-kafka-version 4.4.0``); ``kafka-chaos --version``, ``images build`` and ``completion`` work from that
directory. ``pip check`` is clean, and the core install holds none of the extras' packages (pyspark, boto3,
pytest-xdist); the installed size (site-packages, MB) is printed. An interpreter is found as ``pythonX.Y`` on
the PATH or under ``~/.pyenv/versions/X.Y.*``; a version not there is skipped, saying so.

Cost per Python: the wheel (~10-20 s), the venv and its dependencies (~30 s from the pip cache), three judged
runs (~3-4 min). Run it on demand, in a cluster slot::

    python -m pytest -p no:cacheprovider -n 0 -m wheel tests/integration/test_wheel.py -s
 Marked ``wheel`` besides ``docker`` so CI can choose it (``-m "not wheel"``).
``KAFKA_CHAOS_WHEELHOUSE=DIR`` installs the dependencies from DIR only (``--no-index --find-links``).
"""

from __future__ import annotations

import os
import shutil
import glob
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.wheel]
ROOT = Path(__file__).resolve().parents[2]
# not named test_*.py here, so this repository's own runs never collect it; copied as test_user_kafka.py
USER_TEST = Path(__file__).resolve().parent / "wheel_user" / "user_test_kafka.py"
SCENARIO_FILE = ROOT / "docs" / "examples" / "scenarios" / "broker_failover.toml"
DISTRIBUTION, KAFKA_VERSION = "apache-kraft", "4.4.0"      # named, never the default
PYTHONS = ("3.11", "3.12")      # the lowest supported (pyproject requires-python) and the newest tested
EXTRAS_PACKAGES = ("pyspark", "boto3", "xdist")      # [report], [s3], [xdist]: none of them in the core install


def _python(version: str) -> str | None:
    """An interpreter of ``version`` that runs: ``~/.pyenv/versions/X.Y.*`` first, then ``pythonX.Y`` on the
    PATH (a pyenv shim on the PATH may name a version that is not the selected one: it is tried)."""
    found = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
    for cand in [*found[::-1], shutil.which(f"python{version}")]:
        if cand and subprocess.run([cand, "-c", "pass"], capture_output=True).returncode == 0:
            return cand
    return None


def site_packages_mb(venv: Path) -> float:
    """The installed size of a venv's site-packages, in MB (what ``du -sm`` counts)."""
    total = 0
    for sp in venv.glob("lib/python*/site-packages"):
        for p in sp.rglob("*"):
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_blocks * 512
    return total / 1e6


def _env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME") and not k.startswith("PYTEST_")}
    env["KAFKA_CHAOS_QUIET"] = "1"
    return env


def _run(args, cwd, timeout=900, check=True) -> subprocess.CompletedProcess:
    res = subprocess.run([str(a) for a in args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {res.returncode}:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    return res


@pytest.fixture(scope="module")
def kraft_image(kc_docker):
    from harness import images
    return images.image_for(KAFKA_VERSION, build_missing=True)


@pytest.mark.parametrize("python_version", PYTHONS)
def test_wheel_in_a_fresh_venv_runs_a_users_plugin_tests(tmp_path, kraft_image, python_version):
    python = _python(python_version)
    if python is None:
        pytest.skip(f"no Python {python_version} on this machine (pythonX.Y on PATH, ~/.pyenv/versions)")
    kc_image = kraft_image
    times = {}
    t = time.monotonic()
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, ROOT], cwd=tmp_path)   # pyproject build-system
    wheel = next(dist.glob("kafka_chaos-*.whl"))
    times["wheel"] = time.monotonic() - t

    t = time.monotonic()
    venv = tmp_path / "venv"
    _run([python, "-m", "venv", venv], cwd=tmp_path)
    py, bin_ = venv / "bin" / "python", venv / "bin"
    house = os.environ.get("KAFKA_CHAOS_WHEELHOUSE")
    src = ["--no-index", "--find-links", house] if house else []
    _run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *src, wheel], cwd=tmp_path)
    _run([py, "-m", "pip", "check"], cwd=tmp_path)
    times["venv+install"] = time.monotonic() - t
    assert _run([py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], cwd=tmp_path).stdout.strip() \
        == python_version
    listed = _run([py, "-m", "pip", "list", "--format", "freeze"], cwd=tmp_path).stdout.lower()
    extras = [name for name in EXTRAS_PACKAGES if name in listed]
    assert not extras, f"the core install pulled {extras}"
    print(f"Python {python_version}: core install {site_packages_mb(venv):.0f} MB of site-packages; pip check clean")

    user = tmp_path / "user-project"        # outside the repository: only the user's test file
    user.mkdir()
    shutil.copy(USER_TEST, user / "test_user_kafka.py")
    shutil.copy(SCENARIO_FILE, user / SCENARIO_FILE.name)
    loc = _run([py, "-c", "import harness; print(harness.__file__)"], cwd=user).stdout.strip()
    assert str(venv) in loc and str(ROOT) not in loc, loc       # the installed package, not this checkout
    assert _run([bin_ / "kafka-chaos", "--version"], cwd=user).stdout.startswith("kafka-chaos ")
    assert "complete -o default -F _kafka_chaos kafka-chaos" in _run([bin_ / "kafka-chaos", "completion", "bash"], cwd=user).stdout
    # package data: the image's input files hash to the image already built here (cached, no rebuild)
    _run([bin_ / "kafka-chaos", "images", "build", "--kafka", kc_image.kafka_version], cwd=user)

    t = time.monotonic()
    res = _run([py, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--kc-runs-dir", user / "runs",
                "--kc-distribution", DISTRIBUTION, "--kc-kafka-version", KAFKA_VERSION,
                "--kc-broker-image", kc_image.tag], cwd=user, timeout=1200, check=False)
    times["pytest"] = time.monotonic() - t
    out = res.stdout + res.stderr
    print(f"wheel test times (s): {', '.join(f'{k} {v:.0f}' for k, v in times.items())}")
    print("\n".join(ln for ln in res.stdout.splitlines() if ln.startswith(("PASS ", "FAIL ", "UNKNOWN ", "platform"))))
    assert res.returncode == 1, out[-4000:]
    assert "PASSED test_user_kafka.py::test_leader_kill_is_survived" in out, out[-4000:]
    assert "FAILED test_user_kafka.py::test_deliberately_broken_expectation" in out, out[-4000:]
    assert "PASSED test_user_kafka.py::test_scenario_file" in out, out[-4000:]
    assert "expectation USER-1: broker 42 is the controller" in out, out[-4000:]
    assert f"record: {user / 'runs'}" in out, out[-4000:]
    records = [p for p in (user / "runs").iterdir() if (p / "verdict.json").exists()]
    assert len(records) == 3, records
    import json
    for r in records:        # the cluster the options named, not the default
        meta = json.loads((r / "metadata.json").read_text())
        assert (meta["distribution"], meta["kafka_version"]) == (DISTRIBUTION, KAFKA_VERSION), (r, meta)
    # the records re-judge the same with the installed CLI
    again = _run([bin_ / "kafka-chaos", "check", user / "runs"], cwd=user, check=False)
    assert again.returncode == 1 and "changed" not in again.stdout.replace("0 changed", ""), again.stdout + again.stderr
