"""This repository's own pytest setup: its tests use the kafka-chaos pytest plugin (harness/pytest_plugin.py)
exactly as a user's tests do: fixtures ``kc_docker``, ``kc_image``, ``kc_cluster_factory``, ``kc_cluster``,
``kc_run``, ... and the options ``--kc-kafka-version``, ``--kc-broker-image``, ``--kc-brokers``,
``--kc-zookeepers``, ``--kc-runs-dir``, ``--kc-distribution``, ``--kc-keep-cluster`` (docs/pytest-plugin.md).

What is left here is this repository's own:

- every ``docker`` or ``spark`` test is in one xdist group, so ``./run.sh test -n 2 --dist loadgroup``
  runs them one at a time on one worker (never two clusters or Spark jobs of its own at once) while the
  pure tests run on the other worker;
- the suite markers ``smoke``/``conformance``/``chaos``/``nightly`` and ``ssh`` (SSH test hosts) imply ``docker`` (the plugin then gives
  such tests ``kc_docker`` first: no engine → they **fail** with the reason, unless
  ``KAFKA_CHAOS_SKIP_DOCKER=1`` is set explicitly, which skips them);
- the older option names ``--kafka-version``, ``--broker-image``, ``--brokers``, ``--zookeepers``,
  ``--runs-dir`` still work (they set the ``--kc-*`` ones);
- this repository's integration tests were written for ZooKeeper mode (the default until issue 40): with no
  ``--kc-distribution``, ``--kc-broker-image``, ``--kc-nodes`` or a 4.x ``--kc-kafka-version`` given, the plugin's
  clusters and ``kc_image`` are ``apache-zk`` on the newest 3.9.x (:data:`ZK_TESTS`), named here once; tests that
  start clusters another way name their distribution themselves. The product's default (KRaft on the newest
  4.x) is what ``kafka-chaos run``, ``cluster up`` and the demo get, and what the tests that run them without
  a distribution check;
- the plugin is loaded from this checkout when the installed package does not register its entry point
  (an editable install made before the plugin existed), and a run whose ``harness`` is not this
  checkout's stops at once (use ``python -m pytest`` from the checkout).
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path

import pytest

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
os.environ.setdefault("KAFKA_CHAOS_QUIET", "1")

SUITE_MARKERS = ("smoke", "conformance", "chaos", "nightly")
ZK_TESTS = "apache-zk"      # the distribution of this repository's plugin-fixture tests (see above)
LEGACY_OPTIONS = {"kafka_version": "kc_kafka_version", "broker_image": "kc_broker_image", "brokers": "kc_brokers",
                  "zookeepers": "kc_zookeepers", "runs_dir": "kc_runs_dir"}

# pytester: tests/test_pytest_plugin.py runs the plugin in subprocesses
pytest_plugins = ["pytester"] + ([] if any(ep.value == "harness.pytest_plugin" for ep in entry_points(group="pytest11"))
                                 else ["harness.pytest_plugin"])


def pytest_addoption(parser):
    g = parser.getgroup("kafka-chaos")
    for name in LEGACY_OPTIONS:
        kw = {"type": int} if name in ("brokers", "zookeepers") else {}
        g.addoption("--" + name.replace("_", "-"), dest=name, default=None, help=f"(older name of --kc-{name.replace('_', '-')})", **kw)


def pytest_configure(config):
    import harness
    import harness.images
    here = Path(__file__).resolve().parent
    if Path(harness.__file__).resolve().parent.parent != here:
        raise pytest.UsageError(f"`harness` was imported from {Path(harness.__file__).parent}, not from this checkout "
                                f"({here}): run `python -m pytest` from {here} (or `pip install -e .` here)")
    for old, new in LEGACY_OPTIONS.items():
        value = config.getoption(old)
        if value is not None:
            setattr(config.option, new, value)
    version = config.getoption("kc_kafka_version", None)
    if not any(config.getoption(k, None) for k in ("kc_distribution", "kc_broker_image", "kc_nodes")) and \
            not (version and harness.images.is_kraft_only(version)):     # a 4.x version: KRaft, the default
        config.option.kc_distribution = ZK_TESTS


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which turns the group into a nodeid suffix
def pytest_collection_modifyitems(config, items):
    for item in items:
        implies_docker = any(item.get_closest_marker(m) for m in SUITE_MARKERS + ("ssh",))
        if implies_docker and not item.get_closest_marker("docker"):
            item.add_marker(pytest.mark.docker)
        # under `-n 2 --dist loadgroup` (the default of `./run.sh test`): the tests that start clusters run
        # on one worker, one at a time, so one cluster runs at once as without xdist; the Spark-only tests
        # (a local JVM, no container) run one at a time on the other worker; the pure tests fill both.
        # tests/test_xdist_groups.py checks that xdist sees these groups.
        group = xdist_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


def xdist_group(item) -> str | None:
    """The xdist group of a test: "clusters" when it starts containers, "spark" for a Spark JVM alone."""
    if item.get_closest_marker("docker"):
        return "clusters"
    if item.get_closest_marker("spark"):
        return "spark"
    return None
