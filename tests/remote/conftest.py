"""Fixtures for the tests of remote clusters (``--nodes``): SSH test hosts (tests/remote/hosts.py,
docs/ssh-test-hosts.md).

``ssh_hosts_factory`` (session): ``make(kafka_version="4.4.0", zookeeper=False, brokers=3, security=None,
network=False)`` starts a host set (``security``: ``PROTOCOL[:MECHANISM]`` as ``--security``; ``network``:
the nodes file names the hosts' IPs, hosts.py) and returns its :class:`~tests.remote.hosts.HostSet` (``.nodes_file``, ``.hosts``,
``.bootstrap_servers``, ...); every set it started is removed when the session ends.

``ssh_hosts`` (session): one KRaft host set of 3 combined nodes on Kafka 4.4.0
(``KAFKA_CHAOS_SSH_HOSTS_KAFKA`` picks another version), shared by every test of the session. A test
that stops or kills a node's service starts it again before it ends.

Host set names are ``<prefix><pid><n>`` with the prefix ``KAFKA_CHAOS_SSH_HOSTS_PREFIX`` (default ``ssh``).
"""

from __future__ import annotations

import os

import pytest

from tests.remote import hosts


@pytest.fixture(scope="session")
def ssh_hosts_factory(kc_docker, tmp_path_factory):
    started: list[hosts.HostSet] = []
    prefix = os.environ.get("KAFKA_CHAOS_SSH_HOSTS_PREFIX", "ssh")

    def make(kafka_version: str = "4.4.0", zookeeper: bool = False, brokers: int = 3,
             security: str | None = None, network: bool = False) -> hosts.HostSet:
        name = f"{prefix}{os.getpid()}{len(started)}"
        try:
            hs = hosts.up(name, tmp_path_factory.mktemp(name), kafka_version, zookeeper=zookeeper, brokers=brokers,
                          security=security, network=network)
        except hosts.HostsError as e:
            pytest.fail(f"SSH test hosts did not start: {e}", pytrace=False)
        started.append(hs)
        return hs

    yield make
    for hs in started:
        hs.down()


@pytest.fixture(scope="session")
def ssh_hosts(ssh_hosts_factory) -> hosts.HostSet:
    return ssh_hosts_factory(os.environ.get("KAFKA_CHAOS_SSH_HOSTS_KAFKA", "4.4.0"))
