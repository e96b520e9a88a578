"""The SSH test host image's build inputs (harness/host_image.py, harness/host_files/), without Docker."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from harness import host_image, images

HOST_FILES = Path(host_image.__file__).parent / "host_files"
SHELL_FILES = ["service.sh", "run-jvm", "kafka.init", "zookeeper.init", "host-boot", "kafka-run-class", "kafka-storage"]


def test_zookeeper_service_only_where_the_jars_have_zookeeper():
    assert "/etc/init.d/zookeeper" in host_image.dockerfile("3.9.2", "h")
    assert "/etc/init.d/zookeeper" not in host_image.dockerfile("4.4.0", "h")


def test_log4j_compatibility_only_for_4x():
    assert "LOG4J_COMPATIBILITY=true" in host_image.default_file("4.4.0")
    assert "LOG4J_COMPATIBILITY" not in host_image.default_file("3.9.2")
    assert "START_AT_BOOT=no" in host_image.default_file("4.4.0")


def test_image_runs_host_boot_as_its_main_process_and_labels_itself():
    df = host_image.dockerfile("4.4.0", "abc")
    assert 'ENTRYPOINT ["/usr/local/sbin/host-boot"]' in df
    assert "kafka-chaos.input-hash=abc" in df and "kafka-chaos.kafka-version=4.4.0" in df
    assert df.startswith(f"FROM {host_image.SSH_BASE_TAG}\n")


def test_the_broker_base_image_keeps_its_hash():
    """ensure_rootfs_image without hooks hashes exactly as the base image always did (no rebuild)."""
    want = hashlib.sha256(json.dumps([images.BASE_PACKAGES, "bookworm", "v1"]).encode()).hexdigest()[:16]
    assert images._base_hash() == want
    assert images._rootfs_hash(host_image.SSH_BASE_PACKAGES, host_image.SSH_BASE_HOOKS) != want


@pytest.mark.parametrize("name", SHELL_FILES)
def test_shell_files_parse(name):
    res = subprocess.run(["sh", "-n", str(HOST_FILES / name)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_sshd_allows_key_logins_of_the_harness_user_only():
    conf = dict(line.split(None, 1) for line in (HOST_FILES / "sshd.conf").read_text().splitlines()
                if line.strip() and not line.startswith("#"))
    assert conf["PasswordAuthentication"] == "no" and conf["KbdInteractiveAuthentication"] == "no"
    assert conf["PermitRootLogin"] == "no" and conf["AllowUsers"] == host_image.HARNESS_USER
