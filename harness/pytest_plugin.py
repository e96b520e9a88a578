"""The kafka-chaos pytest plugin (entry point ``pytest11: kafka_chaos``): real Kafka clusters in Docker,
faults, a workload, the observer and a judge, as fixtures of your own tests.

Installed with the package, it is active in every pytest run (``-p no:kafka_chaos`` turns it off).
Reference and examples: docs/pytest-plugin.md. In short::

    def test_leader_kill(kc_ctx, kc_nemesis, kc_judge):
        old = kc_ctx.leader("chaos", 0)
        kc_nemesis.apply("kill", "leader(chaos,0)")          # roles resolve now, from the observer
        kc_ctx.wait_until("a new leader", lambda: kc_ctx.leader("chaos", 0) not in (None, old), 30)
        kc_judge()       # heal, drain, record; fail unless the model, durability and expectations PASS

Cluster settings come, last wins, from the options (``--kc-kafka-version``, ``--kc-distribution``,
``--kc-brokers``, ...), the ``kafka_chaos(...)`` marker of the test, its module or class, and an
indirect parameter of ``kc_spec`` (``@pytest.mark.parametrize("kc_spec", [{...}], indirect=True)``).

``--kc-nodes FILE`` points every cluster fixture and judged run at the cluster of a nodes file (hosts the
harness does not start, reached over SSH: docs/remote.md) instead of starting containers; no Docker engine
is needed then.

Under pytest-xdist every worker starts its own clusters (their names carry the worker id) and removes
them at teardown; ``--kc-keep-cluster`` leaves them running (``kafka-chaos cluster down --name N``).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from harness.pytest_run import CLUSTER_KEYS, RUN_KEYS, KcRun, RunFailed, RunSpec, scenario_name

MARKER = "kafka_chaos"
LAYOUTS = {"zookeeper": "apache-zk", "combined": "apache-kraft", "dedicated": "apache-kraft-dedicated"}
_CLUSTER_FIXTURES = ("kc_cluster", "kc_cluster_module", "kc_cluster_session", "kc_cluster_factory", "kc_run",
                     "kc_scenario_file")


def pytest_addoption(parser):
    from harness import images
    g = parser.getgroup("kafka-chaos", "kafka-chaos: real Kafka clusters, faults and a judge")
    env = os.environ.get
    g.addoption("--kc-kafka-version", default=env("KAFKA_CHAOS_KAFKA_VERSION"), metavar="V",
                help=f"Kafka version of the clusters (default: {images.default_version_help()}; "
                     "$KAFKA_CHAOS_KAFKA_VERSION)")
    g.addoption("--kc-distribution", default=env("KAFKA_CHAOS_DISTRIBUTION"), metavar="NAME",
                help="apache-kraft (default), apache-zk (ZooKeeper mode), apache-kraft-dedicated, or a distribution file "
                     "($KAFKA_CHAOS_DISTRIBUTION)")
    g.addoption("--kc-broker-image", default=env("KAFKA_CHAOS_BROKER_IMAGE"), metavar="IMAGE",
                help="run this local image instead of kafka-chaos/kafka:<version>")
    g.addoption("--kc-brokers", type=int, default=None, metavar="N", help="brokers per cluster (default 3)")
    g.addoption("--kc-zookeepers", type=int, default=None, choices=[1, 3, 5],
                help="ZooKeeper nodes (ZooKeeper mode; default 1)")
    g.addoption("--kc-runs-dir", default=env("KAFKA_CHAOS_RUNS_DIR", "runs"), metavar="DIR",
                help="where judged runs write their records (default ./runs; $KAFKA_CHAOS_RUNS_DIR)")
    g.addoption("--kc-security", default=env("KAFKA_CHAOS_SECURITY"), metavar="PROTOCOL[:MECHANISM]",
                help="the clusters' client listener, e.g. SASL_SSL:SCRAM-SHA-512 (default PLAINTEXT; "
                     "$KAFKA_CHAOS_SECURITY; docs/security.md)")
    g.addoption("--kc-keep-cluster", action="store_true", default=False,
                help="leave clusters running after the tests (remove with `kafka-chaos cluster down --name N`)")
    g.addoption("--kc-nodes", default=env("KAFKA_CHAOS_NODES"), metavar="FILE",
                help="run against the cluster of this nodes file (hosts reached over SSH, not started by the "
                     "harness; docs/remote.md) instead of containers ($KAFKA_CHAOS_NODES)")


def _nodes_distribution(config) -> str | None:
    """``remote:<absolute path>`` of ``--kc-nodes`` (None without it): the file is read and checked once, at
    configure time (a bad file, or an option it contradicts, is one usage error line before any test)."""
    path = config.getoption("kc_nodes", None)
    if not path:
        return None
    clash = [o for o, k in (("--kc-distribution", "kc_distribution"), ("--kc-kafka-version", "kc_kafka_version"),
                            ("--kc-broker-image", "kc_broker_image"), ("--kc-security", "kc_security"))
             if config.getoption(k)]
    if clash:
        raise pytest.UsageError(f"--kc-nodes cannot be combined with {clash[0]}: the nodes file says what the "
                                "cluster runs and how clients connect")
    if getattr(config.option, "numprocesses", None):
        raise pytest.UsageError("--kc-nodes cannot be combined with -n (pytest-xdist): the nodes file is one "
                                "cluster, and two workers' faults on it would judge each other's runs")
    from harness.errors import HarnessError
    from harness.remote import nodes_file        # lazy: only with --kc-nodes
    try:
        return "remote:" + str(nodes_file.load(path).path)
    except HarnessError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_configure(config):
    config._kc_nodes = _nodes_distribution(config)
    config.addinivalue_line("markers", f"{MARKER}(**settings): kafka-chaos cluster and run settings for a test "
                            f"({', '.join(RUN_KEYS + ('layout',))})")
    config.addinivalue_line("markers", "docker: needs a Docker engine (and builds the broker image on first use)")


def pytest_collection_modifyitems(config, items):
    """Tests using a cluster fixture are marked ``docker`` (so ``-m "not docker"`` leaves them out), and
    tests marked ``docker`` ask for ``kc_docker`` first: without an engine they fail with the reason (or
    skip, with ``KAFKA_CHAOS_SKIP_DOCKER=1``) before anything starts."""
    for item in items:
        names = getattr(item, "fixturenames", [])
        if any(f in names for f in _CLUSTER_FIXTURES) and not item.get_closest_marker("docker"):
            item.add_marker(pytest.mark.docker)
        if item.get_closest_marker("docker") and "kc_docker" not in names:
            names.insert(0, "kc_docker")


# ---- settings ------------------------------------------------------------------------------------
def _options(config) -> dict:
    o = config.getoption
    return {k: v for k, v in {"kafka_version": o("kc_kafka_version"),
                              "distribution": getattr(config, "_kc_nodes", None) or o("kc_distribution"),
                              "image": o("kc_broker_image"), "brokers": o("kc_brokers"),
                              "zookeepers": o("kc_zookeepers"), "security": o("kc_security")}.items()
            if v is not None}


def _marked(node) -> dict:
    """The ``kafka_chaos`` marker settings of a test (closest last), ``layout`` turned into a distribution."""
    out: dict = {}
    for m in reversed(list(node.iter_markers(MARKER))):
        out.update(m.kwargs)
    layout = out.pop("layout", None)
    if layout is not None:
        if layout not in LAYOUTS:
            raise pytest.UsageError(f"kafka_chaos(layout={layout!r}): one of {', '.join(LAYOUTS)}")
        out.setdefault("distribution", LAYOUTS[layout])
    return out


def _cluster_settings(values: dict) -> dict:
    return {k: v for k, v in values.items() if k in CLUSTER_KEYS and v is not None}


def _worker() -> str:
    w = os.environ.get("PYTEST_XDIST_WORKER", "")
    return w if w.isalnum() else ""


# ---- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def kc_docker(request):
    """The Docker client. Fails the test when no engine answers (skips it instead when
    ``KAFKA_CHAOS_SKIP_DOCKER=1``). Tests marked ``docker`` or using a cluster fixture get it first.
    With ``--kc-nodes`` the clusters are the nodes file's: None when no engine answers."""
    from harness.docker_util import client
    from harness.errors import DockerUnavailable
    try:
        return client()
    except DockerUnavailable as e:
        if getattr(request.config, "_kc_nodes", None):
            return None
        if os.environ.get("KAFKA_CHAOS_SKIP_DOCKER") == "1":
            pytest.skip(f"KAFKA_CHAOS_SKIP_DOCKER=1 and {e}")
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def kc_image(request, kc_docker):
    """The broker image of ``--kc-broker-image`` / ``--kc-kafka-version`` (an ``ImageInfo``: ``.tag``,
    ``.kafka_version``); the Apache image is built on first use (offline from cached jars, ~1-3 min)."""
    from harness import images
    image = request.config.getoption("kc_broker_image")
    if image:
        return images.inspect(image)
    return images.image_for(request.config.getoption("kc_kafka_version"), build_missing=True,
                            mode=_mode(request.config.getoption("kc_distribution")))


@pytest.fixture
def kc_spec(request) -> dict:
    """The settings of this test's cluster and run: the options, then the ``kafka_chaos`` markers, then
    an indirect parameter (``@pytest.mark.parametrize("kc_spec", [{"distribution": "apache-kraft"}],
    indirect=True)``). Keys: ``distribution``, ``kafka_version``, ``layout``, ``brokers``, ``zookeepers``,
    ``broker_config``, ``topic``, ``partitions``, ``replication_factor``, ``workload``, ``checks``, ..."""
    out = {**_options(request.config), **_marked(request.node)}
    param = getattr(request, "param", None) or {}
    if "layout" in param:
        param = dict(param)
        out["distribution"] = LAYOUTS[param.pop("layout")]
    return {**out, **param}


def _mode(distribution) -> str:
    """The mode (``kraft`` / ``zk``) whose default Kafka version a cluster of ``distribution`` (a name, an
    adapter, None: the default) runs when no version is asked for (``harness.images.DEFAULT_VERSIONS``)."""
    from harness import distributions
    from harness.distributions.base import Distribution
    adapter = distribution if isinstance(distribution, Distribution) else distributions.resolve(distribution)
    return adapter.controller_model


class ClusterPool:
    """Clusters made by one fixture: started on ``make()``, all removed by ``close()`` (unless kept),
    which checks none is left behind. Names: ``<prefix><xdist worker>-<random>``."""

    def __init__(self, config, defaults: dict):
        self.config = config
        self.defaults = defaults
        self.made: list = []

    def make(self, **settings):
        from harness import images
        from harness.cluster.cluster import Cluster, ClusterSpec
        from harness.runner import run_cluster_name
        s = {**_cluster_settings(self.defaults), **_cluster_settings(settings)}
        extra = {k: v for k, v in settings.items() if k not in CLUSTER_KEYS}
        remote = str(s.get("distribution") or "").startswith("remote:")    # --kc-nodes: no image
        if not s.get("image") and not remote:
            s["image"] = images.image_for(s.pop("kafka_version", None), build_missing=True,
                                          mode=_mode(s.get("distribution"))).tag
        s.pop("kafka_version", None)
        if isinstance(s.get("security"), str):     # PROTOCOL[:MECHANISM] (docs/security.md)
            from harness.cluster.security import Security
            s["security"] = Security.parse(s["security"], "kafka-chaos security")
        keep = self.config.getoption("kc_keep_cluster")
        cl = Cluster(ClusterSpec(name=run_cluster_name(secrets.token_hex(3)), persistent=keep, **s, **extra))
        self.made.append(cl)
        return cl.start()

    def close(self) -> None:
        if self.config.getoption("kc_keep_cluster"):
            for cl in self.made:
                print(f"\nkafka-chaos: kept cluster {cl.name} (kafka-chaos cluster down --name {cl.name})")
            return
        for cl in self.made:
            cl.remove()
        if all(cl.is_remote for cl in self.made):     # --kc-nodes: nothing was started (release: remote_cluster.py)
            return
        from harness.cluster.cleanup import list_clusters
        remaining = [cl.name for cl in self.made if cl.name in list_clusters()]
        assert not remaining, f"clusters left behind: {remaining}"


@pytest.fixture
def kc_cluster_factory(request, kc_spec, kc_docker):
    """``kc_cluster_factory(brokers=3, zookeepers=1, broker_config={...}, distribution=..., kafka_version=...)``
    → a started :class:`harness.cluster.cluster.Cluster`; defaults from ``kc_spec``. Every cluster made here is
    removed at teardown (unless ``--kc-keep-cluster``), and the teardown checks none remains."""
    pool = ClusterPool(request.config, kc_spec)
    yield pool.make
    pool.close()


@pytest.fixture
def kc_cluster(kc_cluster_factory):
    """A started cluster for one test (settings: ``kc_spec``); ``.bootstrap_servers``, ``.brokers``,
    ``.zookeeper_connect``, ``.create_topic(...)``, ... (harness/cluster/cluster.py)."""
    return kc_cluster_factory()


@pytest.fixture(scope="module")
def kc_cluster_module(request, kc_docker):
    """A started cluster shared by the tests of one module (settings: the options and the module's
    ``pytestmark`` ``kafka_chaos`` marker). Tests sharing it must not leave faults behind."""
    pool = ClusterPool(request.config, {**_options(request.config), **_marked(request.node)})
    yield pool.make()
    pool.close()


@pytest.fixture(scope="session")
def kc_cluster_session(request, kc_docker):
    """A started cluster shared by the whole session (by each xdist worker: one per worker; settings:
    the options). Tests sharing it must not leave faults behind."""
    pool = ClusterPool(request.config, _options(request.config))
    yield pool.make()
    pool.close()


@pytest.fixture
def kc_run(request, kc_spec, kc_docker):
    """A judged run of this test (:class:`harness.pytest_run.KcRun`): a fresh cluster, its topic (``chaos``,
    3 partitions, RF 3) with full ISR, the observer, the nemesis and an acks=all workload, all started
    the way ``kafka-chaos run`` starts them. The test body is the run's script; at teardown (or
    ``kc_judge()``) it is healed, drained, recorded under ``--kc-runs-dir`` and judged: a verdict other
    than PASS at teardown is an error of the test unless the test ended the run itself (``kc_run.end()``)."""
    spec = RunSpec.from_dict(scenario_name(request.node.nodeid), kc_spec,
                             description=(getattr(request.node, "function", None).__doc__ or "").strip()
                             if getattr(request.node, "function", None) else "")
    run = KcRun(spec, Path(request.config.getoption("kc_runs_dir")),
                keep_cluster=request.config.getoption("kc_keep_cluster")).start()
    request.node.user_properties.append(("kafka_chaos_run", spec.name))
    yield run
    error = getattr(request.node, "_kc_error", None)
    looked = run.outcome is not None          # the test ended (and judged or inspected) the run itself
    out = run.end(error)
    request.node.user_properties.append(("kafka_chaos_record", str(out.path)))
    request.node.user_properties.append(("kafka_chaos_verdict", out.verdict))
    if not looked and error is None and out.verdict != "PASS":     # judged at teardown: not PASS is an error
        from harness.pytest_run import failure_message
        pytest.fail(failure_message(out, run.verdict()), pytrace=False)


@pytest.fixture
def kc_ctx(kc_run):
    """The run's :class:`harness.scenario.scenario.RunContext`: ``fault``/``heal``, ``wait_until`` and ``expect``
    (recorded expectations the judge checks), ``leader(t, p)``, ``isr``, ``controller()``, ``live_brokers()``,
    ``has_role``, ``semantics``, ``history_marker()``/``writes_since()``."""
    return kc_run.ctx


@pytest.fixture
def kc_nemesis(kc_run):
    """The run's nemesis (harness/nemesis): ``apply(fault, target, params)`` → handle, ``heal(handle)``,
    ``heal_all()``. Targets name roles resolved now from the observer: ``leader(topic,p)``,
    ``follower(topic,p)``, ``controller``, ``group-coordinator(g)``, ``txn-coordinator(id)``, ``zk:N``,
    ``zookeeper-leader``, ``quorum-leader``, ``quorum-follower``, ``broker:N`` (docs/faults.md)."""
    return kc_run.nemesis


@pytest.fixture
def kc_workload(kc_run):
    """The run's workload (already producing with acks=all; ``acknowledged()``, ``wait_acknowledged(n)``,
    ``stats()``); every send and read is recorded for the durability checker."""
    return kc_run.workload


@pytest.fixture
def kc_observer(kc_run):
    """The run's live view of the control plane (ZooKeeper watch, or the Kafka protocol on KRaft):
    ``leader(t, p)``, ``isr(t, p)``, ``controller_id()``, ``live_brokers()``; each read lands in the record."""
    return kc_run.observer


@pytest.fixture
def kc_judge(kc_run):
    """``kc_judge()``: end the run (heal, drain, record) and judge the record with the reference model,
    the durability checker and the run's expectations; fails the test unless PASS, naming the rule ids
    and the record's path. Returns the outcome (``.verdict``, ``.path``)."""
    def judge():
        try:
            return kc_run.judge()
        except RunFailed as e:
            failed = str(e)
        pytest.fail(failed, pytrace=False)     # outside the except: one message, no chained traceback
    return judge


@pytest.fixture
def kc_scenario_file(request, kc_spec, kc_docker):
    """``kc_scenario_file(path, **settings)``: run a scenario file (TOML, docs/scenario-files.md) on a fresh
    cluster, judged like ``kafka-chaos run FILE``; fails the test unless PASS (naming the rule ids and the
    record), skips it when the scenario does not apply to the cluster. Settings (``kc_spec``, then the
    call's) win over the file's ``[cluster]`` defaults. Returns the outcome (``.verdict``, ``.path``)."""
    from harness.pytest_run import failure_message, run_scenario_file

    def run(path, **settings):
        out, verdict = run_scenario_file(Path(path), Path(request.config.getoption("kc_runs_dir")),
                                         {**kc_spec, **settings}, skip=pytest.skip,
                                         keep_cluster=request.config.getoption("kc_keep_cluster"))
        request.node.user_properties.append(("kafka_chaos_record", str(out.path)))
        request.node.user_properties.append(("kafka_chaos_verdict", out.verdict))
        if out.verdict != "PASS":
            pytest.fail(failure_message(out, verdict), pytrace=False)
        return out
    return run


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """An exception of a test with a judged run goes into the run (recorded as its failed expectation)."""
    try:
        return (yield)
    except BaseException as e:
        item._kc_error = e
        raise


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    """Collect the judged runs from the teardown reports (they come from xdist workers too)."""
    props = dict(getattr(report, "user_properties", ()) or ())
    if report.when == "teardown" and "kafka_chaos_record" in props:
        _SEEN.append((report.nodeid, props["kafka_chaos_verdict"], props["kafka_chaos_record"]))


_SEEN: list = []


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line per judged run: its verdict and where its record is."""
    runs = _SEEN
    if runs:
        terminalreporter.section("kafka-chaos runs")
        for nodeid, verdict, path in runs:
            terminalreporter.line(f"{verdict:8} {nodeid}  record: {path}")
