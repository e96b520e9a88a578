"""Locked runtime classpaths: the default Kafka release's jars fetched straight from Maven Central, checked
against the SHA-1 each had when Maven resolved them here.

A fresh machine's Maven spends about a minute on an empty repository (the dependency plugin's own artifacts,
then Kafka's, one request at a time); the same 93 jars of 4.4.0 (55 MB) come in seconds eight at a time. A
lock ``harness/jar_locks/<version>.txt`` lists, one per line, a jar's path under the repository root and its
SHA-1; ``scripts/lock_jars.py VERSION`` writes it from a classpath Maven resolved (``images.ensure_jars``) and
the local Maven repository. :func:`images.ensure_jars` uses a lock only when there is one for the version,
the local Maven repository does not already hold the release (then Maven's offline copy is as fast) and no
``~/.m2/settings.xml`` may name a mirror the user's Maven must go through; anything else is Maven as before.
A jar whose SHA-1 differs from the lock is an error, never a fallback.
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.errors import HarnessError

LOCK_DIR = Path(__file__).resolve().parent / "jar_locks"
REPOSITORY = os.environ.get("KAFKA_CHAOS_MAVEN_REPOSITORY", "https://repo.maven.apache.org/maven2")
THREADS = 8


def read(version: str) -> list[tuple[str, str]] | None:
    """``[(path under the repository, sha1)]`` of ``version``'s lock, None when there is none."""
    f = LOCK_DIR / f"{version}.txt"
    if not f.is_file():
        return None
    out = []
    for n, line in enumerate(f.read_text().splitlines(), 1):
        line = line.split("#")[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or len(parts[1]) != 40 or ".." in parts[0] or parts[0].startswith("/"):
            raise HarnessError(f"{f}:{n}: expected '<path under the repository> <sha1>', got {line[:80]!r}")
        out.append((parts[0], parts[1]))
    return out


def usable(version: str) -> bool:
    """A lock exists and the user's Maven has no settings that could name a mirror to go through."""
    m2 = Path.home() / ".m2"
    return (LOCK_DIR / f"{version}.txt").is_file() and not (m2 / "settings.xml").exists() \
        and os.environ.get("KAFKA_CHAOS_JARS") != "maven"


def _sha1(path: Path) -> str:
    h = hashlib.sha1()  # noqa: S324 - Maven Central's own checksum, compared, not a security boundary alone
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(version: str, libs: Path, timeout_s: float = 60.0) -> None:
    """Download every jar of ``version``'s lock into ``libs`` (eight at a time), each checked against its
    SHA-1; HarnessError naming the first that failed (the caller removes the partial directory)."""
    entries = read(version) or []
    libs.mkdir(parents=True, exist_ok=True)

    def one(entry: tuple[str, str]) -> None:
        rel, sha1 = entry
        dest = libs / rel.rsplit("/", 1)[-1]
        tmp = dest.with_suffix(".part")
        try:
            with urllib.request.urlopen(f"{REPOSITORY}/{rel}", timeout=timeout_s) as r, open(tmp, "wb") as f:
                while chunk := r.read(1 << 20):
                    f.write(chunk)
        except OSError as e:
            raise HarnessError(f"fetching {rel} from {REPOSITORY}: {e}") from None
        got = _sha1(tmp)
        if got != sha1:
            tmp.unlink(missing_ok=True)
            raise HarnessError(f"{rel} from {REPOSITORY} has SHA-1 {got}, the lock says {sha1} "
                               f"({LOCK_DIR / (version + '.txt')}); not used")
        tmp.replace(dest)

    with ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="jar-fetch") as pool:
        for fut in [pool.submit(one, e) for e in entries]:
            fut.result()


def write(version: str, libs: Path, m2: Path) -> Path:
    """Write ``version``'s lock from the jars in ``libs``, found by name in the Maven repository ``m2``."""
    by_name: dict[str, Path] = {}
    for p in m2.rglob("*.jar"):
        by_name.setdefault(p.name, p)
    lines = []
    for jar in sorted(libs.glob("*.jar")):
        src = by_name.get(jar.name)
        if src is None:
            raise HarnessError(f"{jar.name}: not in the Maven repository {m2}; resolve it with Maven first")
        sha1 = _sha1(jar)
        if _sha1(src) != sha1:
            raise HarnessError(f"{jar.name}: {src} differs from {jar}")
        lines.append(f"{src.relative_to(m2).as_posix()} {sha1}")
    LOCK_DIR.mkdir(exist_ok=True)
    out = LOCK_DIR / f"{version}.txt"
    out.write_text(f"# Kafka {version}'s runtime classpath as images.ensure_jars resolved it with Maven "
                   f"(scripts/lock_jars.py); path under the repository root, SHA-1\n" + "\n".join(lines) + "\n")
    return out
