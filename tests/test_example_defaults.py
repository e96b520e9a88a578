"""The example distribution files for Apache Kafka say their ``[config]`` table is the harness's own
defaults for its clusters (harness/distributions/node_settings.py): a user who copies one gets the timings the
scenarios were written for. This keeps them in step when a default changes."""

import tomllib
from pathlib import Path

import pytest

from harness.distributions.node_settings import DEFAULT_BROKER_CONFIG, DEFAULT_ZK_CONFIG

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


@pytest.mark.parametrize("name, zookeeper", [("apache-zk-3.9.toml", True), ("apache-kraft-4.toml", False)])
def test_an_apache_example_carries_every_harness_default(name, zookeeper):
    config = tomllib.loads((EXAMPLES / name).read_text())["config"]
    want = {k: v for k, v in DEFAULT_BROKER_CONFIG.items() if zookeeper or not k.startswith("zookeeper.")}
    differ = {k: (config.get(k), v) for k, v in want.items() if config.get(k) != v}
    assert differ == {}, f"{name} [config] differs from DEFAULT_BROKER_CONFIG (file, default): {differ}"
    if not zookeeper:
        assert not [k for k in config if k.startswith("zookeeper.")]


def test_the_controller_request_timeout_is_below_kafkas_default():
    # docs/scenarios.md: a broker's AlterPartition to a paused controller froze its ISR changes for the
    # whole timeout; the harness's clusters give up on it after 10 s, not Kafka's 30 s
    assert int(DEFAULT_BROKER_CONFIG["controller.socket.timeout.ms"]) == 10000
    assert int(DEFAULT_BROKER_CONFIG["controller.socket.timeout.ms"]) > int(DEFAULT_BROKER_CONFIG["zookeeper.session.timeout.ms"])


def test_the_zookeeper_example_carries_the_harness_zookeeper_settings():
    # its properties are written out in the service's command (KC_CONFIG="key=value ..."); the port
    # and the log directory are the file's own
    service = next(s for s in tomllib.loads((EXAMPLES / "apache-zk-3.9.toml").read_text())["service"]
                   if s["role"] == "zookeeper")
    script = service["command"][-1]
    props = dict(line.strip().strip('"').split("=", 1) for line in
                 script.split('KC_CONFIG="', 1)[1].split('"', 1)[0].splitlines() if "=" in line)
    differ = {k: (props.get(k), v) for k, v in DEFAULT_ZK_CONFIG.items()
              if k != "clientPort" and props.get(k) != v}
    assert differ == {}, differ
    assert DEFAULT_ZK_CONFIG["preAllocSize"] == "1024"
