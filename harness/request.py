"""One run request: what a command resolves once before any run, and each run then uses as resolved.

Preparing a run is: scenario (or scenario file) -> image -> distribution adapter -> does the broker fit
it -> does the scenario apply -> preflight -> profile. ``run``, ``run --replay``, ``certify`` and the
pytest plugin all do it here: :func:`resolve_broker` turns the command line into a :class:`Broker`
(the image, the adapter — the one :func:`harness.distributions.resolve` call of the command — and the
profile asked for), :meth:`Broker.request` adds a scenario and decides once whether it applies, and
:func:`harness.runner.steps` runs the :class:`RunRequest` without resolving anything again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reference.profiles import profile_for

from harness import distributions, images
from harness.distributions.base import Distribution
from harness.errors import HarnessError


@dataclass(frozen=True)
class Broker:
    """What the runs of one command run against: the image, the distribution adapter and the profile
    asked for (None: the adapter's default for the image's Kafka version)."""
    image: images.ImageInfo
    distribution: Distribution
    profile: str | None = None

    def request(self, scenario) -> "RunRequest":
        """``scenario`` on this broker, with why it does not apply (None: it does), decided here once."""
        return RunRequest(scenario, self, scenario.not_applicable(self.image.kafka_version, self.distribution))

    def applicable(self, scenarios, say=None) -> list["RunRequest"]:
        """The requests of the ``scenarios`` that apply; ``say(line)`` for each one skipped."""
        out = []
        for s in scenarios:
            req = self.request(s)
            if req.not_applicable:
                if say:
                    say(f"skipped {s.name}: {req.not_applicable}")
            else:
                out.append(req)
        return out


@dataclass(frozen=True)
class RunRequest:
    """One scenario on one :class:`Broker`, as :func:`harness.runner.steps` runs it."""
    scenario: object                    # harness.scenario.scenario.Scenario
    broker: Broker
    not_applicable: str | None = None   # why the scenario cannot run there (None: it can)

    @property
    def image(self) -> images.ImageInfo:
        return self.broker.image

    @property
    def distribution(self) -> Distribution:
        return self.broker.distribution

    @property
    def profile(self) -> str:
        """The profile the run is judged with: the one asked for, else the adapter's default."""
        return self.broker.profile or self.distribution.default_profile(self.image.kafka_version)


def check_profile(dist: Distribution | None, name: str | None, kafka_version: str | None) -> None:
    """Refuse an unknown or mismatched ``--profile`` before an image is built or a cluster started
    (it would otherwise only fail when the finished run is judged); ``dist`` None (not known before the
    image is): only whether the name is a profile of either controller model."""
    if not name:
        return
    version = kafka_version if kafka_version and re.fullmatch(r"\d+\.\d+(\.\d+)?", kafka_version) else None
    if version is None and name in ("apache-zk", "kraft", "apache-kraft"):
        return  # the version comes from the image, known later
    try:
        if dist is not None:
            dist.profile(name, version, same_series=False)
            return
        try:
            profile_for(version, name)
        except ValueError as e:
            try:
                profile_for(version, name, kraft_run=True)
            except ValueError:
                raise HarnessError(str(e)) from None
    except HarnessError as e:
        raise HarnessError(f"--profile: {e}") from None


def resolve_broker(*, kafka_version: str | None = None, image: str | None = None,
                   distribution: str | Distribution | None = None, distribution_file: str | None = None,
                   layout: str | None = None, profile: str | None = None,
                   default: str | None = distributions.DEFAULT, build_missing: bool = False,
                   nodes: str | None = None, check_nodes: bool = True) -> Broker:
    """The :class:`Broker` of a command line: ``--kafka-version`` / ``--broker-image``, ``--distribution``
    (a name or an adapter already resolved), ``--distribution-file``, ``--layout``, ``--profile``.

    With no distribution asked, ``default`` is the adapter (``run``: apache-kraft), None meaning the image's
    own (``certify``); an image not built here runs as ``generic`` either way. With no version asked, the
    adapter's mode picks the version (``images.DEFAULT_VERSIONS``: the newest 4.x; apache-zk: the newest
    3.9.x). The distribution's fit to ``kafka_version`` and the profile are checked before an image is
    built; the image's fit after.

    ``nodes`` (``--nodes FILE``): the cluster of a nodes file, which the harness does not start (no image;
    harness/distributions/remote.py); with ``check_nodes`` every host is reached and checked now (host
    keys, sudo, services running: harness/cluster/remote_cluster.check_nodes), one line on any failure."""
    remote = nodes or (isinstance(distribution, str) and distribution.startswith("remote:")) or \
        getattr(distribution, "nodes", None) is not None
    if remote:
        return _remote_broker(distribution, distribution_file, layout, nodes, kafka_version, image, profile,
                              check_nodes)
    if distribution_file and kafka_version:
        raise HarnessError("--kafka-version does not apply to --distribution-file: the file names its image "
                           "(--broker-image overrides it)")
    info = None
    if isinstance(distribution, Distribution):
        dist = distribution
    elif distribution or distribution_file or layout:
        dist = distributions.resolve(distribution, distribution_file, layout)
    else:                                  # the default: apache-kraft, the image's own, generic for a foreign one
        if image or default is None:
            check_profile(None, profile, kafka_version)      # before Docker is asked for the image
            info = images.image_for(kafka_version, image, build_missing=build_missing)
            name = "generic" if info.distribution == "generic" else (default or info.distribution)
        else:
            name = default
        dist = distributions.resolve(name)
    if info is None:
        dist.fits(kafka_version)
        check_profile(dist, profile, kafka_version)
        info = images.image_for(kafka_version, image or dist.image, build_missing=build_missing,
                                mode=dist.controller_model)
    else:
        check_profile(dist, profile, info.kafka_version)
    dist.check_image(info)                 # a broker that does not fit: before any run
    return Broker(info, dist, profile)


def _remote_broker(distribution, distribution_file, layout, nodes, kafka_version, image, profile,
                   check_nodes: bool) -> Broker:
    if kafka_version or image:
        raise HarnessError("--kafka-version and --broker-image do not apply to --nodes: the nodes run what they "
                           "run (the file's kafka_version says which version)")
    if isinstance(distribution, Distribution):
        dist = distribution
    else:
        dist = distributions.resolve(distribution, distribution_file, layout, nodes=nodes)
    f = dist.nodes
    check_profile(dist, profile, f.kafka_version)
    if check_nodes:
        from harness.cluster.remote_cluster import check_nodes as check  # lazy: paramiko
        check(f)
    return Broker(images.ImageInfo(f"remote:{f.name}", "", f.kafka_version, dist.name), dist, profile)


def prepare(scenario, *, kafka_version: str | None = None, image: str | None = None,
            distribution: str | Distribution | None = None, profile: str | None = None,
            build_missing: bool = False) -> RunRequest:
    """The request of one scenario (scripts and tests that run one: :func:`harness.runner.execute`)."""
    return resolve_broker(kafka_version=kafka_version, image=image, distribution=distribution, profile=profile,
                          build_missing=build_missing).request(scenario)
