"""A real S3-compatible server for the tests: SeaweedFS (``weed server -s3``) on 127.0.0.1 only.

The binary is built once from the Go module proxy by ``scripts/build-seaweedfs.sh`` and cached under
``~/.cache/kafka-chaos/seaweedfs``. The server runs in its own process group with every listener
(master, volume, filer, S3 and their gRPC ports) on free loopback ports, telemetry off, data in a
temporary directory, and an S3 identity (access key / secret) from a generated ``-s3.config``, so
requests are signed and checked as against any S3 store. :meth:`SeaweedFS.listeners` reads the
process's listening sockets from ``/proc`` so a test can prove none is bound beyond loopback.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "scripts" / "build-seaweedfs.sh"
START_TIMEOUT_S = 180


def weed_binary() -> Path:
    """The cached ``weed`` (built on first use: minutes, once)."""
    r = subprocess.run([str(BUILD)], capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(f"scripts/build-seaweedfs.sh failed ({r.returncode}): {r.stderr[-2000:]}")
    return Path(r.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _free_ports(n: int) -> list[int]:
    """n distinct free ports p whose p + 10000 is free too (SeaweedFS's default gRPC offset is avoided
    by setting every gRPC port explicitly, but keep them apart anyway)."""
    out: list[int] = []
    while len(out) < n:
        p = free_port()
        if p not in out and p < 55000:
            out.append(p)
    return out


class SeaweedFS:
    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.proc: subprocess.Popen | None = None
        self.access_key = "kc" + secrets.token_hex(6)
        self.secret_key = secrets.token_hex(16)
        self.endpoint = ""
        self.log = self.workdir / "weed.log"

    def env(self) -> dict:
        """AWS variables a client of this server needs (the standard ones: boto3, s3a, the CLI)."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}

    def start(self) -> "SeaweedFS":
        weed = weed_binary()
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = self.workdir / "s3.json"
        cfg.write_text(json.dumps({"identities": [{"name": "kafka-chaos", "credentials": [
            {"accessKey": self.access_key, "secretKey": self.secret_key}], "actions": ["Admin", "Read", "Write",
                                                                                    "List", "Tagging"]}]}))
        master, volume, filer, s3, mg, vg, fg, sg = _free_ports(8)
        self.endpoint = f"http://127.0.0.1:{s3}"
        args = [str(weed), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}",
                "-master.telemetry=false", "-master.volumeSizeLimitMB=64", "-volume.max=100",   # each bucket grows 7 volumes (sparse files)
                f"-master.port={master}", f"-master.port.grpc={mg}", f"-volume.port={volume}",
                f"-volume.port.grpc={vg}", "-filer", f"-filer.port={filer}", f"-filer.port.grpc={fg}",
                f"-filer.localSocket={self.workdir / 'filer.sock'}",
                "-s3", f"-s3.port={s3}", f"-s3.port.grpc={sg}", "-s3.port.iceberg=0", "-s3.port.lance=0",
                f"-s3.config={cfg}", "-metricsPort=0"]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         cwd=self.workdir, start_new_session=True)
        self._wait_ready()
        return self

    def client(self):
        import boto3
        from botocore.config import Config
        return boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key, region_name="us-east-1",
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2, "mode": "standard"}))

    def _wait_ready(self) -> None:
        """Until a bucket can be created and an object written and read back (bounded)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"weed exited with {self.proc.returncode}: {self.log.read_text(errors='replace')[-3000:]}")
            try:
                c = self.client()
                c.create_bucket(Bucket="readiness-probe")
                c.put_object(Bucket="readiness-probe", Key="p", Body=b"ok")
                if c.get_object(Bucket="readiness-probe", Key="p")["Body"].read() == b"ok":
                    return
            except Exception as e:  # noqa: BLE001 - not up yet
                last = e
            time.sleep(1.0)
        self.stop()
        raise RuntimeError(f"SeaweedFS not ready after {START_TIMEOUT_S} s ({last}): "
                           f"{self.log.read_text(errors='replace')[-3000:]}")

    def make_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def listeners(self) -> list[tuple[str, int]]:
        """(address, port) of every TCP socket the server process listens on (from /proc)."""
        inodes = set()
        for fd in Path(f"/proc/{self.proc.pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
        out = []
        for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
            try:
                lines = Path(table).read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                f = line.split()
                if f[3] != "0A" or f[9] not in inodes:          # 0A = LISTEN
                    continue
                addr_hex, port_hex = f[1].split(":")
                out.append((_addr(addr_hex, v6), int(port_hex, 16)))
        return sorted(out)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass


def _addr(hexaddr: str, v6: bool) -> str:
    b = bytes.fromhex(hexaddr)
    if not v6:
        return socket.inet_ntop(socket.AF_INET, b[::-1])
    words = b"".join(b[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)


class GoFakeS3(SeaweedFS):
    """Fallback when SeaweedFS cannot be built in time (``KAFKA_CHAOS_S3_SERVER=gofakes3``): gofakes3's
    server (``go install github.com/johannesboyne/gofakes3/cmd/gofakes3@v1.2.0``, a real HTTP S3 server with
    a bolt-file backend) on 127.0.0.1. It accepts any credentials: tests of authentication skip with it."""

    checks_credentials = False
    min_listeners = 1

    def start(self) -> "GoFakeS3":
        binary = Path(os.environ.get("KAFKA_CHAOS_GOFAKES3") or Path.home() / ".cache/kafka-chaos/gofakes3/gofakes3")
        if not binary.exists():
            raise RuntimeError(f"{binary} missing: GOBIN={binary.parent} go install "
                               "github.com/johannesboyne/gofakes3/cmd/gofakes3@v1.2.0")
        port = free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([str(binary), "-backend", "bolt", "-bolt.db", str(self.workdir / "s3.db"),
                                          "-host", f"127.0.0.1:{port}"], stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=self.workdir, start_new_session=True)
        self._wait_ready()
        return self


SeaweedFS.checks_credentials = True
SeaweedFS.min_listeners = 8


def s3_server(workdir: Path) -> SeaweedFS:
    """The server the tests use: SeaweedFS, or gofakes3 when ``KAFKA_CHAOS_S3_SERVER=gofakes3``."""
    return GoFakeS3(workdir) if os.environ.get("KAFKA_CHAOS_S3_SERVER") == "gofakes3" else SeaweedFS(workdir)

