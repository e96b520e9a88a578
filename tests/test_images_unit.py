"""Image building without Docker (harness/images.py): the Maven projects and the jar checks per
Kafka version (2.x/3.x with ZooKeeper and reload4j, 4.x KRaft-only with Log4j 2), the Dockerfile and
input hash per version, and the jar resolution flow against a stand-in ``mvn`` on PATH."""

from __future__ import annotations

import os
import stat
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness import distributions, images
from harness.errors import HarnessError

NS = {"m": "http://maven.apache.org/POM/4.0.0"}

# the runtime jars Maven resolved for these versions (names only, abridged to what the checks look at)
JARS_292_39 = ["kafka_2.13-3.9.2.jar", "kafka-tools-3.9.2.jar", "kafka-tools-api-3.9.2.jar", "zookeeper-3.8.4.jar",
               "zookeeper-jute-3.8.4.jar", "slf4j-reload4j-1.7.36.jar", "reload4j-1.2.25.jar", "slf4j-api-1.7.36.jar"]
JARS_282 = ["kafka_2.13-2.8.2.jar", "zookeeper-3.5.9.jar", "slf4j-reload4j-1.7.36.jar", "slf4j-api-1.7.36.jar"]
JARS_412 = ["kafka_2.13-4.1.2.jar", "kafka-tools-4.1.2.jar", "kafka-tools-api-4.1.2.jar", "log4j-api-2.25.3.jar",
            "log4j-core-2.25.3.jar", "log4j-slf4j-impl-2.25.3.jar", "log4j-1.2-api-2.25.3.jar",
            "slf4j-api-1.7.36.jar"]


def deps(pom: str) -> dict[str, tuple[str, str, list[str]]]:
    """artifactId → (groupId, version, excluded 'group:artifact' list) of a pom text."""
    root = ET.fromstring(pom)
    out = {}
    for d in root.findall("m:dependencies/m:dependency", NS):
        excl = [f"{e.findtext('m:groupId', namespaces=NS)}:{e.findtext('m:artifactId', namespaces=NS)}"
                for e in d.findall("m:exclusions/m:exclusion", NS)]
        out[d.findtext("m:artifactId", namespaces=NS)] = (d.findtext("m:groupId", namespaces=NS),
                                                          d.findtext("m:version", namespaces=NS), excl)
    return out


# ---------------------------------------------------------------------------- versions
@pytest.mark.parametrize("version,kraft_only", [("2.8.2", False), ("3.9.2", False), ("3.99.0", False),
                                                ("4.0.0", True), ("4.1.2", True), ("5.0.0", True)])
def test_kraft_only_from_4(version, kraft_only):
    assert images.is_kraft_only(version) is kraft_only
    assert images.image_distribution(version) == ("apache-kraft" if kraft_only else "apache-zk")


def test_resolve_4x_series(monkeypatch, tmp_path):
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path))     # not this host's cache
    monkeypatch.setattr(images, "available_versions",
                        lambda refresh=False: ["3.9.2", "4.0.0", "4.0.2", "4.1.0", "4.1.2", "4.2.0"])
    assert images.resolve_version("4.1") == "4.1.2"
    assert images.resolve_version("4.0") == "4.0.2"
    assert images.resolve_version("4.1.0") == "4.1.0"
    assert images.resolve_version(None) == "4.2.0"          # the default: KRaft on the newest 4.x served
    assert images.resolve_version("latest") == "4.2.0"
    assert images.resolve_version("4") == "4.2.0"           # a major series: its newest release
    assert images.resolve_version(None, images.ZK) == "3.9.2"   # ZooKeeper mode: the newest 3.9.x
    with pytest.raises(HarnessError, match="4.1.9.*not on Maven Central"):
        images.resolve_version("4.1.9")


def test_the_default_follows_maven_central(monkeypatch, tmp_path):
    """A newer 4.x on Maven Central becomes the default with no change here; a 5.0 does not (the series is 4)."""
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path))     # not this host's cache
    monkeypatch.setattr(images, "available_versions", lambda refresh=False: ["3.9.2", "3.9.3", "4.4.0", "4.5.1", "5.0.0"])
    assert images.resolve_version(None) == "4.5.1"
    assert images.resolve_version(None, images.ZK) == "3.9.3"


def test_offline_defaults_come_from_the_one_table(monkeypatch, tmp_path):
    """Nothing cached and Maven Central unreachable: each mode's offline fallback of DEFAULT_VERSIONS."""
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path))     # not this host's cache
    monkeypatch.setattr(images, "available_versions", lambda refresh=False: [])
    monkeypatch.setattr(images, "_cached_versions", lambda: [])
    assert images.DEFAULT_VERSIONS == {images.KRAFT: ("4", "4.4.0"), images.ZK: ("3.9", "3.9.2")}
    assert images.resolve_version(None) == "4.4.0"
    assert images.resolve_version(None, images.ZK) == "3.9.2"
    assert images.resolve_version("3.9") == "3.9.2"
    assert images.resolve_version("4.1.2") == "4.1.2"      # an exact version is taken as given
    with pytest.raises(HarnessError, match="cannot resolve Kafka series 4.1 offline"):
        images.resolve_version("4.1")
    assert "newest 4.x" in images.default_version_help() and "newest 3.9.x" in images.default_version_help()


# ---------------------------------------------------------------------------- Maven projects
def test_pom_2x_has_reload4j_and_no_tools():
    d = deps(images._pom("2.8.2"))
    assert set(d) == {"kafka_2.13", "slf4j-reload4j"}
    assert d["kafka_2.13"][:2] == ("org.apache.kafka", "2.8.2")
    assert "log4j:log4j" in d["kafka_2.13"][2]       # reload4j replaces log4j 1.2.17


def test_pom_3x_unchanged_by_4x_support():
    """The 3.x project is byte-for-byte what it was before 4.x support (cached jars stay valid)."""
    ex = ("<exclusions><exclusion><groupId>log4j</groupId><artifactId>log4j</artifactId></exclusion>"
          "<exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-log4j12</artifactId></exclusion>"
          "<exclusion><groupId>ch.qos.logback</groupId><artifactId>*</artifactId></exclusion></exclusions>")
    body = "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>{ex}"
                   "</dependency>" for g, a, v in [("org.apache.kafka", "kafka_2.13", "3.9.2"),
                                                   ("org.slf4j", "slf4j-reload4j", "1.7.36"),
                                                   ("org.apache.kafka", "kafka-tools", "3.9.2")])
    assert images._pom("3.9.2") == (
        "<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0</modelVersion>"
        "<groupId>kafka-chaos</groupId><artifactId>kafka-jars</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{body}</dependencies></project>\n")


def test_pom_4x_has_tools_and_no_reload4j():
    d = deps(images._pom("4.1.2"))
    assert set(d) == {"kafka_2.13", "kafka-tools"}
    assert d["kafka-tools"][:2] == ("org.apache.kafka", "4.1.2")


@pytest.mark.parametrize("slf4j,binding", [("1.7.36", "log4j-slf4j-impl"), ("2.0.17", "log4j-slf4j2-impl")])
def test_logging_pom_matches_kafkas_log4j_and_slf4j(slf4j, binding):
    d = deps(images._logging_pom("2.25.3", slf4j))
    assert set(d) == {binding, "log4j-1.2-api"}
    for group, version, excl in d.values():
        assert (group, version, excl) == ("org.apache.logging.log4j", "2.25.3", ["*:*"])  # nothing transitive


def test_logging_pom_adds_core_when_kafka_brings_no_log4j2():
    d = deps(images._logging_pom("2.24.3", "1.7.36", with_core=True))
    assert set(d) == {"log4j-slf4j-impl", "log4j-1.2-api", "log4j-api", "log4j-core"}
    assert {v for _, v, _ in d.values()} == {"2.24.3"}


def test_jar_version(tmp_path):
    for n in ["log4j-core-2.24.3.jar", "log4j-core-java9-2.1.jar", "slf4j-api-1.7.36.jar"]:
        (tmp_path / n).touch()
    assert images._jar_version(tmp_path, "log4j-core") == "2.24.3"
    assert images._jar_version(tmp_path, "slf4j-api") == "1.7.36"
    assert images._jar_version(tmp_path, "log4j-api") is None


# ---------------------------------------------------------------------------- jar checks
@pytest.mark.parametrize("version,jars", [("2.8.2", JARS_282), ("3.9.2", JARS_292_39), ("4.1.2", JARS_412)])
def test_complete_classpaths_pass(version, jars):
    assert images.missing_jars(version, jars) == []


def test_3x_needs_zookeeper_and_4x_does_not():
    without_zk = [j for j in JARS_292_39 if not j.startswith("zookeeper-")]
    assert images.missing_jars("3.9.2", without_zk) == ["ZooKeeper (zookeeper)"]
    assert not any(j.startswith("zookeeper") for j in JARS_412)
    assert images.missing_jars("4.1.2", JARS_412) == []


@pytest.mark.parametrize("drop,named", [("log4j-slf4j-impl-2.25.3.jar", "Log4j 2 SLF4J binding"),
                                        ("log4j-1.2-api-2.25.3.jar", "Log4j 1 bridge (log4j-1.2-api)"),
                                        ("log4j-core-2.25.3.jar", "Log4j 2 (log4j-core)"),
                                        ("kafka_2.13-4.1.2.jar", "Kafka broker (kafka_2.13-4.1.2)")])
def test_4x_names_each_missing_jar(drop, named):
    assert images.missing_jars("4.1.2", [j for j in JARS_412 if j != drop]) == [named]


def test_tools_api_is_not_the_tools_jar():
    jars = [j for j in JARS_412 if j != "kafka-tools-4.1.2.jar"]
    assert images.missing_jars("4.1.2", jars) == ["Kafka tools (kafka-tools-4.1.2)"]
    assert not any("tools" in what for what in images.required_jars("3.4.1"))   # separate artifact from 3.5


def test_3x_classpath_does_not_pass_for_4x():
    assert images.missing_jars("4.1.2", JARS_292_39) == [
        "Kafka broker (kafka_2.13-4.1.2)", "Kafka tools (kafka-tools-4.1.2)", "Log4j 2 (log4j-core)",
        "Log4j 2 SLF4J binding", "Log4j 1 bridge (log4j-1.2-api)"]


# ---------------------------------------------------------------------------- Dockerfile and hash
def test_dockerfile_per_version():
    d3, d4 = images.dockerfile("3.9.2", "h3"), images.dockerfile("4.1.2", "h4")
    assert "kafka-chaos.distribution=apache-zk" in d3 and "LOG4J_COMPATIBILITY" not in d3
    assert "kafka-chaos.distribution=apache-kraft" in d4 and "ENV LOG4J_COMPATIBILITY=true\n" in d4
    assert "kafka-chaos.kafka-version=4.1.2 kafka-chaos.input-hash=h4" in d4
    assert d3.replace("3.9.2", "V").replace("h3", "H").replace("apache-zk", "D") == \
        d4.replace("4.1.2", "V").replace("h4", "H").replace("apache-kraft", "D").replace(
            "ENV LOG4J_COMPATIBILITY=true\n", "")


def test_dockerfile_warms_up_only_kraft_capable_versions():
    """warm-up.sh (storage template + class-data-sharing archive) runs after the version's ENV lines
    (4.x needs LOG4J_COMPATIBILITY to start) and before the image drops to its user."""
    for v in ("3.3.2", "3.9.2", "4.1.2"):
        d = images.dockerfile(v, "h")
        assert "RUN /opt/kafka-chaos/warm-up.sh\n" in d
        assert d.index("COPY entrypoint.sh") < d.index("warm-up.sh\n") < d.index("USER ")
    d4 = images.dockerfile("4.1.2", "h")
    assert d4.index("ENV LOG4J_COMPATIBILITY") < d4.index("RUN /opt/kafka-chaos/warm-up.sh")
    for v in ("2.8.2", "3.2.3"):
        assert "RUN /opt/kafka-chaos/warm-up.sh" not in images.dockerfile(v, "h")


def test_input_hash_3x_independent_of_version_4x_not(tmp_path):
    (tmp_path / "a.jar").write_bytes(b"x" * 10)
    assert images._inputs_hash("sha256:b", tmp_path, "3.9.2") == images._inputs_hash("sha256:b", tmp_path)
    assert images._inputs_hash("sha256:b", tmp_path, "4.1.2") != images._inputs_hash("sha256:b", tmp_path)


def test_zookeeper_mode_refuses_4x_image_in_one_line():
    info = images.ImageInfo("kafka-chaos/kafka:4.1.2", "sha256:x", "4.1.2", images.image_distribution("4.1.2"))
    with pytest.raises(HarnessError) as e:
        distributions.resolve("apache-zk").check_image(info)
    assert str(e.value) == "Kafka 4.1.2 has no ZooKeeper mode; use --distribution apache-kraft"
    distributions.resolve("apache-kraft").check_image(info)       # accepted


# ---------------------------------------------------------------------------- resolution flow
FAKE_MVN = textwrap.dedent("""\
    #!/usr/bin/env python3
    # stand-in for Maven: 'copies' one empty jar per dependency of the pom (plus what Kafka pulls in)
    import os, re, sys
    if "-o" in sys.argv and os.environ.get("FAKE_MVN_OFFLINE_FAIL"):
        with open(os.environ["FAKE_MVN_LOG"], "a") as log:
            log.write("-o:failed\\n")
        sys.exit(1)
    pom = open(sys.argv[sys.argv.index("-f") + 1]).read()
    out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("-DoutputDirectory="))
    os.makedirs(out, exist_ok=True)
    names = []
    for a, v in re.findall(r"<artifactId>([^<*]+)</artifactId><version>([^<]+)</version>", pom):
        names.append(f"{a}-{v}.jar")
        if a == "kafka_2.13":
            names += os.environ["FAKE_MVN_TRANSITIVE"].split()
    for n in names:
        if n not in os.environ.get("FAKE_MVN_DROP", "").split():
            open(os.path.join(out, n), "w").close()
    with open(os.environ["FAKE_MVN_LOG"], "a") as log:
        log.write(("-o:" if "-o" in sys.argv else "") + os.path.basename(sys.argv[sys.argv.index("-f") + 1]) + "\\n")
    """)


@pytest.fixture
def fake_mvn(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    mvn = bindir / "mvn"
    mvn.write_text(FAKE_MVN)
    mvn.chmod(mvn.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("KAFKA_CHAOS_JARS", "maven")   # these tests are of the Maven path (a lock is tests/test_jar_lock_unit.py)
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_MVN_LOG", str(tmp_path / "mvn.log"))
    monkeypatch.setenv("KAFKA_CHAOS_M2", str(tmp_path / "m2"))     # an empty local Maven repository
    return tmp_path / "mvn.log"


def _in_local_maven_repo(version: str) -> None:
    d = Path(os.environ["KAFKA_CHAOS_M2"]) / "org" / "apache" / "kafka" / "kafka_2.13" / version
    d.mkdir(parents=True)
    (d / f"kafka_2.13-{version}.jar").write_bytes(b"")


def test_maven_runs_offline_when_the_local_repository_has_the_version(fake_mvn, monkeypatch):
    monkeypatch.setenv("FAKE_MVN_TRANSITIVE", "zookeeper-3.8.4.jar slf4j-api-1.7.36.jar")
    _in_local_maven_repo("3.9.2")
    images.ensure_jars("3.9.2")
    assert fake_mvn.read_text().split() == ["-o:pom.xml"]          # never online


def test_maven_goes_online_only_when_offline_resolution_fails(fake_mvn, monkeypatch):
    monkeypatch.setenv("FAKE_MVN_TRANSITIVE", "zookeeper-3.8.4.jar slf4j-api-1.7.36.jar")
    monkeypatch.setenv("FAKE_MVN_OFFLINE_FAIL", "1")
    _in_local_maven_repo("3.9.2")
    images.ensure_jars("3.9.2")
    assert fake_mvn.read_text().split() == ["-o:failed", "pom.xml"]


def test_cached_jars_resolve_without_the_network_even_with_a_stale_version_list(fake_mvn, monkeypatch):
    cache = Path(os.environ["KAFKA_CHAOS_CACHE"])
    cache.mkdir(parents=True, exist_ok=True)
    listing = cache / "kafka-versions.json"
    listing.write_text('["3.8.1", "3.9.1", "3.9.2", "4.1.2"]')
    os.utime(listing, (time.time() - 5 * 86400, time.time() - 5 * 86400))     # days old
    for v in ("3.9.2", "3.8.1"):
        (cache / "jars" / v).mkdir(parents=True)
        (cache / "jars" / v / ".complete").write_text("x")

    asked = []

    def offline(*a, **k):
        asked.append(a[0])
        raise OSError("offline")
    monkeypatch.setattr(images.urllib.request, "urlopen", offline)
    assert images.resolve_version(None, images.ZK) == "3.9.2"
    assert images.resolve_version("3.8") == "3.8.1"
    assert images.resolve_version("3.8.1") == "3.8.1"
    assert asked == []
    assert images.resolve_version("4.1") == "4.1.2"     # not cached: asks (offline here: the stale list)
    assert asked == [images.MAVEN_METADATA]
    assert images.resolve_version(None) == "4.1.2"      # the default, newest 4.x of the stale list


def test_ensure_jars_4x_adds_log4j2_binding_at_kafkas_version(fake_mvn, monkeypatch):
    monkeypatch.setenv("FAKE_MVN_TRANSITIVE", "log4j-api-2.24.3.jar log4j-core-2.24.3.jar slf4j-api-1.7.36.jar")
    libs = images.ensure_jars("4.0.0")
    names = sorted(p.name for p in libs.iterdir())
    assert "log4j-slf4j-impl-2.24.3.jar" in names and "log4j-1.2-api-2.24.3.jar" in names
    assert not any(n.startswith(("zookeeper", "slf4j-reload4j")) for n in names)
    assert fake_mvn.read_text().split() == ["pom.xml", "logging-pom.xml"]
    assert (libs.parent / ".complete").exists()
    images.ensure_jars("4.0.0")                              # cached: Maven is not asked again
    assert fake_mvn.read_text().split() == ["pom.xml", "logging-pom.xml"]


def test_ensure_jars_3x_needs_zookeeper(fake_mvn, monkeypatch):
    monkeypatch.setenv("FAKE_MVN_TRANSITIVE", "slf4j-api-1.7.36.jar")          # no zookeeper jar
    with pytest.raises(HarnessError, match=r"Kafka 3\.9\.2 without ZooKeeper \(zookeeper\)"):
        images.ensure_jars("3.9.2")
    assert fake_mvn.read_text().split() == ["pom.xml"]
    assert not (Path(os.environ["KAFKA_CHAOS_CACHE"]) / "jars" / "3.9.2" / ".complete").exists()


def test_ensure_jars_40_without_log4j2_gets_the_fallback(fake_mvn, monkeypatch):
    """4.0.x poms declare no Log4j 2 at runtime: the pinned version is added, all four artifacts."""
    monkeypatch.setenv("FAKE_MVN_TRANSITIVE", "slf4j-api-1.7.36.jar")
    names = {p.name for p in images.ensure_jars("4.0.2").iterdir()}
    v = images.FALLBACK_LOG4J
    assert {f"log4j-{a}-{v}.jar" for a in ("api", "core", "slf4j-impl", "1.2-api")} <= names


def test_ensure_jars_4x_without_slf4j_is_refused(fake_mvn, monkeypatch):
    monkeypatch.setenv("FAKE_MVN_TRANSITIVE", "log4j-core-2.25.3.jar")
    with pytest.raises(HarnessError, match="without slf4j-api"):
        images.ensure_jars("4.1.2")
    assert fake_mvn.read_text().split() == ["pom.xml"]


@pytest.mark.parametrize("name,version,want", [
    ("apache-zk", "3.9.2", "apache-zk-3.9"), ("apache-zk", "2.8.2", "apache-zk-2.8"),
    ("apache-kraft", "4.1.2", "kraft-4.1"), ("generic", "3.7.0", "kraft-3.7"), ("generic", None, "compatible")])
def test_default_profile_is_the_distributions_mode_and_series(name, version, want):
    assert distributions.resolve(name).default_profile(version) == want
