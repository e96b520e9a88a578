"""Errors the harness reports to users as one clear line, and the exit codes (one table: docs/cli.md "Exit codes")."""

from __future__ import annotations

# The exit codes of every kafka-chaos command (docs/cli.md "Exit codes"): a nightly job's retry policy can
# tell "the broker failed a check" (1) from "fix the command" (2), "the broker does not fit the harness"
# (3), "it ran but nothing was decided" (4, retry), "this host could not run it" (5, fix the host, retry)
# and "interrupted" (130, as a shell reports SIGINT).
EXIT_OK = 0
EXIT_FAIL = 1               # a verdict FAIL, a failed gate, a capability failed
EXIT_USAGE = 2              # bad arguments or input files: nothing ran
EXIT_INCOMPATIBLE = 3       # the preflight: the broker does not fit the harness's contract
EXIT_UNKNOWN = 4            # ran, undecided: a verdict UNKNOWN (nothing FAILed), certify INCONCLUSIVE
EXIT_ENV = 5                # environment: Docker unreachable, a cluster that never started, a port taken, disk full
EXIT_INTERRUPTED = 130      # Ctrl-C / SIGTERM, after cleaning up


class HarnessError(Exception):
    """An error with a message meant for a person; ``exit_code`` follows the CLI convention
    (:data:`EXIT_USAGE` unless the subclass is an environment error, :data:`EXIT_ENV`)."""

    exit_code = EXIT_USAGE


class EnvironmentFailure(HarnessError):
    """The host, not the command, is at fault: Docker, ports, disk, a cluster that never came up."""

    exit_code = EXIT_ENV


class DockerUnavailable(EnvironmentFailure):
    pass


class UnknownVersion(HarnessError):
    pass


class ImageMissing(HarnessError):
    pass


class PortConflict(EnvironmentFailure):
    pass


class ClusterError(EnvironmentFailure):
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
