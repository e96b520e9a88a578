"""Distribution adapters: what differs between Kafka-compatible brokers when the harness starts one
node — which images it accepts, the node's configuration, how the container is started and
configured, which log line ends startup, whether the cluster has ZooKeeper and how its control plane
is observed (:meth:`Distribution.control_plane`, harness/distributions/control_plane.py).

This package is the registry: :func:`resolve` is the one call a run makes to turn its command line
(``--distribution``, ``--distribution-file``, ``--layout``, a scenario file's ``distribution``, a run
record's name) into the adapter object that is then passed down (``ClusterSpec.distribution``, the
runner, the observation source, the nemesis). Everything that differs by family is a field or method of
:class:`harness.distributions.base.Distribution`, with one default there.

Adapters, one module each: ``apache-kraft`` (the default, :mod:`.apache_kraft`), ``apache-zk``
(ZooKeeper mode, :mod:`.apache_zk`), ``apache-kraft-dedicated`` (:mod:`.dedicated`), ``generic`` (:mod:`.generic`) and
``file:<path>`` (``--distribution-file``, :mod:`.file`, docs/broker-contract.md) and ``remote:<path>``
(``--nodes``: nodes the harness does not start, :mod:`.remote`, docs/remote.md).

The nodes a cluster runs besides its brokers (a ZooKeeper ensemble, dedicated controllers) are the
adapter's :class:`NodeGroup` s (:meth:`Distribution.node_groups`, started by harness/cluster/node_groups.py).

Every broker has ``INTERNAL://broker<ID>:9093`` (inter-broker) and ``EXTERNAL://127.0.0.1:<P>``
published on 127.0.0.1:P, exactly as in ZooKeeper mode, so clients and faults see the same
addresses whatever the distribution.
"""

from __future__ import annotations

import importlib

from harness.distributions.apache_kraft import ApacheKraft
from harness.distributions.apache_zk import ApacheZk
from harness.distributions.base import (CONTROLLER_PORT, COMBINED, DEDICATED_CONTROLLERS, DEFAULT, INTERNAL_PORT,
                                        LABEL_DISTRIBUTION, LAYOUTS, Distribution, NodeGroup, NodePlan,
                                        properties_text)
from harness.distributions.generic import Generic
from harness.errors import HarnessError

__all__ = ["CONTROLLER_PORT", "INTERNAL_PORT", "LABEL_DISTRIBUTION", "LAYOUTS", "ApacheKraft", "ApacheZk",
           "Distribution", "Generic", "NodeGroup", "NodePlan", "properties_text", "NAMES", "CHOICES_HELP",
           "KRAFT_LAYOUTS", "resolve"]

_ADAPTERS = {"apache-zk": ApacheZk, "apache-kraft": ApacheKraft, "generic": Generic}
# Adapters in modules of their own (each names its class ``ADAPTER``), imported when first asked for: a
# new distribution is a module and a line here; the runner, the CLI and the scenarios take it from NAMES.
_MODULES = {"apache-kraft-dedicated": "harness.distributions.dedicated",
            "apache-kraft-dynamic": "harness.distributions.dynamic_quorum"}
NAMES = tuple(_ADAPTERS) + tuple(_MODULES)
# one line per adapter for the --distribution help of every command
CHOICES_HELP = ("apache-kraft (default: KRaft, combined broker+controller nodes, observed through the Kafka "
                "protocol), apache-zk (ZooKeeper mode, 3.x, observed through ZooKeeper), apache-kraft-dedicated (KRaft "
                "with a dedicated quorum: controller-only nodes besides the brokers) or generic (a foreign image "
                "configured by KAFKA_* variables, KRaft)")
# ``--layout``: the Apache KRaft adapter of each layout (docs/kraft.md "Layouts"); the flag picks the adapter
KRAFT_LAYOUTS = {COMBINED: "apache-kraft", DEDICATED_CONTROLLERS: "apache-kraft-dedicated"}
_PREFIX = "file:"        # a distribution file's adapter name, as run records and child processes carry it
_REMOTE = "remote:"      # a nodes file's adapter name (harness/distributions/remote.py)


def resolve(name: str | None = None, file: str | None = None, layout: str | None = None,
            nodes: str | None = None) -> Distribution:
    """The adapter of a run: ``name`` (``--distribution``, a scenario file's ``distribution`` or a run
    record's name; None: the default, ``apache-kraft``), or the distribution file ``file``
    (``--distribution-file``), or the Apache KRaft adapter of ``layout`` (``--layout``), or the nodes
    file ``nodes`` (``--nodes``: a cluster the harness does not start). One error line when they
    contradict each other or the name is unknown."""
    if nodes:
        if name or file or layout:
            raise HarnessError("--nodes cannot be combined with --distribution, --distribution-file or --layout: "
                               "the nodes file says what the cluster runs")
        name = _REMOTE + str(nodes)
    if name and name.startswith(_REMOTE):
        from harness.distributions.remote import RemoteDistribution  # lazy: the nodes file and its TOML reader
        return RemoteDistribution(name[len(_REMOTE):])
    if file:
        if name and not name.startswith(_PREFIX):
            raise HarnessError("--distribution-file and --distribution cannot be combined: the file is the distribution")
        if layout:
            raise HarnessError("--layout does not apply to --distribution-file: the file's `layout` key says it")
        name = _PREFIX + str(file)
    if layout:
        asked = name or "apache-kraft"
        name = KRAFT_LAYOUTS.get(layout)
        if name is None or asked not in (KRAFT_LAYOUTS[COMBINED], name):
            raise HarnessError(f"--layout {layout} is not a layout of --distribution {asked}: layouts are for Apache "
                               f"KRaft (apache-kraft: {', '.join(KRAFT_LAYOUTS)})")
    key = name or DEFAULT
    if key.startswith(_PREFIX):         # a distribution file (harness/distributions/file.py)
        from harness.distributions.file import FileDistribution  # lazy: loads the TOML reader only when asked
        return FileDistribution(key[len(_PREFIX):])
    if key in _MODULES:
        return importlib.import_module(_MODULES[key]).ADAPTER()
    if key not in _ADAPTERS:
        raise HarnessError(f"unknown distribution {name!r}: choose one of {', '.join(NAMES)}")
    return _ADAPTERS[key]()
