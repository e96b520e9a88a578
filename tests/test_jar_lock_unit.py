"""harness/jar_lock.py: locked classpaths fetched and checked against their SHA-1 (a loopback HTTP server
stands in for Maven Central's file layout)."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from harness import jar_lock
from harness.errors import HarnessError


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A Maven-layout repository with two jars, served on 127.0.0.1; the lock directory in tmp_path."""
    root = tmp_path / "m2"
    jars = {"org/example/a/1.0/a-1.0.jar": b"jar a", "com/example/b/2.1/b-2.1-tests.jar": b"jar b" * 1000}
    for rel, data in jars.items():
        (root / rel).parent.mkdir(parents=True)
        (root / rel).write_bytes(data)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(root), **kw)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    monkeypatch.setattr(jar_lock, "REPOSITORY", f"http://127.0.0.1:{srv.server_address[1]}")
    monkeypatch.setattr(jar_lock, "LOCK_DIR", tmp_path / "locks")
    yield root, jars
    srv.shutdown()


def _lock_of(tmp_path, root, jars) -> None:
    """Version 9.9.9's lock written from a classpath of ``jars`` (as Maven would have copied them)."""
    libs = tmp_path / "libs"
    libs.mkdir()
    for rel, data in jars.items():
        (libs / Path(rel).name).write_bytes(data)
    jar_lock.write("9.9.9", libs, root)


def _lock(tmp_path, text):
    (tmp_path / "locks").mkdir(exist_ok=True)
    (tmp_path / "locks" / "9.9.9.txt").write_text(text)


def test_the_lock_written_from_a_classpath_fetches_the_same_jars(repo, tmp_path):
    root, jars = repo
    _lock_of(tmp_path, root, jars)
    assert {rel for rel, _ in jar_lock.read("9.9.9")} == set(jars)
    out = tmp_path / "fetched"
    jar_lock.fetch("9.9.9", out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {Path(r).name: d for r, d in jars.items()}


def test_a_jar_whose_sha1_differs_from_the_lock_is_refused_and_not_kept(repo, tmp_path):
    root, jars = repo
    good = hashlib.sha1(b"jar a").hexdigest()
    _lock(tmp_path, f"org/example/a/1.0/a-1.0.jar {'0' * 40}\n")
    with pytest.raises(HarnessError, match="a-1.0.jar .* has SHA-1 " + good + ", the lock says 0+"):
        jar_lock.fetch("9.9.9", tmp_path / "out")
    assert not list((tmp_path / "out").iterdir())


def test_a_jar_the_repository_lacks_is_named(repo, tmp_path):
    _lock(tmp_path, f"org/example/gone/1.0/gone-1.0.jar {'1' * 40}\n")
    with pytest.raises(HarnessError, match="fetching org/example/gone/1.0/gone-1.0.jar from http://127.0.0.1"):
        jar_lock.fetch("9.9.9", tmp_path / "out")


@pytest.mark.parametrize("line", ["just-a-path.jar", "a.jar abc", "../../etc/passwd " + "2" * 40, "/abs.jar " + "3" * 40])
def test_a_malformed_lock_line_is_named(repo, tmp_path, line):
    _lock(tmp_path, f"# comment\n{line}\n")
    with pytest.raises(HarnessError, match=r"9\.9\.9\.txt:2: expected"):
        jar_lock.read("9.9.9")


def test_the_lock_is_used_only_without_a_maven_settings_file_or_an_opt_out(repo, tmp_path, monkeypatch):
    _lock(tmp_path, "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KAFKA_CHAOS_JARS", raising=False)
    assert jar_lock.usable("9.9.9") and not jar_lock.usable("9.9.8")
    monkeypatch.setenv("KAFKA_CHAOS_JARS", "maven")
    assert not jar_lock.usable("9.9.9")
    monkeypatch.delenv("KAFKA_CHAOS_JARS")
    (tmp_path / "home" / ".m2").mkdir(parents=True)
    (tmp_path / "home" / ".m2" / "settings.xml").write_text("<settings/>")
    assert not jar_lock.usable("9.9.9")


def test_the_shipped_lock_of_the_default_release_parses():
    from harness import images
    entries = jar_lock.read(images.DEFAULT_VERSIONS[images.KRAFT][1])
    assert entries and any(rel.endswith("/kafka_2.13-4.4.0.jar") for rel, _ in entries)


def test_ensure_jars_takes_a_usable_lock_before_maven(repo, tmp_path, monkeypatch):
    from harness import images
    root, jars = repo
    _lock_of(tmp_path, root, jars)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KAFKA_CHAOS_JARS", raising=False)
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KAFKA_CHAOS_M2", str(tmp_path / "empty-m2"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))              # no mvn: the lock must do it alone
    monkeypatch.setattr(images, "missing_jars", lambda version, names: [])
    got = images.ensure_jars("9.9.9")
    assert sorted(p.name for p in got.iterdir()) == sorted(Path(r).name for r in jars)
    assert (got.parent / ".complete").exists()
