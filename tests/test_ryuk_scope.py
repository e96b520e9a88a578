"""Issue 43: importing the pytest plugin or the cluster module leaves the user's Ryuk setting alone;
the harness turns Ryuk off only around the start of its own containers (harness/docker_util.without_ryuk)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from testcontainers.core.config import testcontainers_config as tc

from harness.docker_util import without_ryuk

ROOT = Path(__file__).resolve().parents[1]


def test_importing_the_plugin_and_the_cluster_module_sets_no_ryuk_variable():
    env = {k: v for k, v in os.environ.items() if not k.startswith("TESTCONTAINERS_")}
    code = ("import os, harness.pytest_plugin, harness.cluster.cluster; "
            "print(os.environ.get('TESTCONTAINERS_RYUK_DISABLED'))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "None"


def test_ryuk_is_off_only_while_the_harness_starts_its_containers():
    before = tc._ryuk_disabled
    try:
        tc._ryuk_disabled = False                      # the user's setting: Ryuk on
        with without_ryuk():
            assert tc.ryuk_disabled is True            # what DockerContainer.start asks
        assert tc.ryuk_disabled is False
        try:
            with without_ryuk():
                raise RuntimeError("a container that failed to start")
        except RuntimeError:
            pass
        assert tc.ryuk_disabled is False               # restored on failure too
    finally:
        tc._ryuk_disabled = before
