"""Errors the harness reports to users as one clear line (exit code 2 = usage/environment)."""

from __future__ import annotations


class HarnessError(Exception):
    """An error with a message meant for a person; ``exit_code`` follows the CLI convention.

    0 pass, 1 a check failed, 2 usage or environment error.
    """

    exit_code = 2


class DockerUnavailable(HarnessError):
    pass


class UnknownVersion(HarnessError):
    pass


class ImageMissing(HarnessError):
    pass


class PortConflict(HarnessError):
    pass


class ClusterError(HarnessError):
    """The cluster did not start or stopped answering (an environment failure, verdict UNKNOWN)."""


class NeverServes(ClusterError):
    """A node said it was ready (its distribution's ready log line) but its published port has not
    answered the Kafka protocol for a grace period after: it listens elsewhere, or not at all. Ends a
    readiness wait at once instead of at its timeout; the preflight reports it as INCOMPATIBLE."""


class ScenarioError(HarnessError):
    """A scenario or schedule file is malformed."""


class AdminOpError(HarnessError):
    """An administrative act could not be carried out (tool failure, rejection, timeout, bad input)."""


class NotSupported(HarnessError):
    """A harness helper needs a part this cluster lacks (e.g. ZooKeeper on a KRaft cluster): the
    message names the helper, the cluster's distribution and what to use instead. Calling it is a
    mistake of the scenario script, not a failure of the environment (verdict cause ``script``)."""

    cause = "script"
