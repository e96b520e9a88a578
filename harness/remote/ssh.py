"""One host of a nodes file reached over SSH (paramiko): the node access of ``--nodes FILE`` clusters
(the interface is harness/cluster/access.py ``NodeAccess``; this class implements every method of it).

- Host keys are checked against the nodes file's known_hosts only (``RejectPolicy``: an unknown host or
  a changed key refuses, one line, before anything is done); no agent, no ~/.ssh keys, only the file's key.
- Every connect and command is bounded (``connect_timeout_s``, ``command_timeout_s``).
- Privileged commands run with ``sudo -n`` when the file says ``sudo = true``.
- The process: the pid in ``service.pidfile`` (when alive), else the oldest ``pgrep -f`` match of
  ``service.process`` (passed base64-encoded, so the pattern never matches the command looking for it).
  kill = ``kill -<SIG> <pid>``, pause / unpause = SIGSTOP / SIGCONT, a clean stop / start = the node's own
  service commands; status = running / paused (state T) / exited / unreachable.
- Files are read read-only (``cat`` / ``ls``, under sudo when configured).
- Every host change is written to the journal (harness/remote/journal.py) before it is made: a kill or
  stop (undo: start the service unless its process runs), a pause (undo: SIGCONT that pid), the run's
  iptables chains (undo: unhook, flush, delete exactly those chains), a netem/tbf qdisc (undo: delete it).
  Network faults write their rules for the chains ``KAFKA_CHAOS_IN/OUT`` and the interface ``eth0``
  (harness/nemesis/netrules.py); here they become the run's chains ``KC_<run>_IN/OUT`` (hosts are shared
  machines: each run owns its chains) and the file's ``interface``.
"""

from __future__ import annotations

import base64
import re
import shlex
import socket
import threading
import time

from harness.errors import ClusterError, HarnessError

_LOGICAL_CHAINS = ("KAFKA_CHAOS_IN", "KAFKA_CHAOS_OUT")


class HostKeyError(HarnessError):
    """The host's key is unknown to the nodes file's known_hosts, or differs from it: refuse."""


class Unreachable(ClusterError):
    """The host does not answer SSH (or refuses the key): the run is UNKNOWN(environment), host named."""


class _NoProcess(ClusterError):
    """No process to signal: nothing was changed."""


def chain_names(run_tag: str) -> tuple[str, str]:
    return f"KC_{run_tag}_IN", f"KC_{run_tag}_OUT"


def chains_undo(run_tag: str) -> str:
    """Unhook, flush and delete the run's two chains (idempotent)."""
    lines = []
    for chain, hook in zip(chain_names(run_tag), ("INPUT", "OUTPUT")):
        lines.append(f"while iptables -w 5 -D {hook} -j {chain} 2>/dev/null; do :; done")
        lines.append(f"iptables -w 5 -F {chain} 2>/dev/null; iptables -w 5 -X {chain} 2>/dev/null")
    return "\n".join(lines + ["true"])


class SshAccess:
    """One node of a nodes file over SSH (implements harness/cluster/access.py ``NodeAccess``)."""

    kind = "ssh"

    def __init__(self, node, interface: str = "eth0", journal=None, run_tag: str = "local", label: str = ""):
        self.node = node                   # harness/remote/nodes_file.RemoteNode
        self.ssh = node.ssh
        self.svc = node.service
        self.interface = interface
        self.journal = journal
        self.run_tag = run_tag
        self.label = label or f"node{node.id}"   # the journal's name for it
        self._client = None
        self._lock = threading.Lock()
        self._log_offset = 0               # the log file's size when the harness last started the service

    # -- connection -----------------------------------------------------------------------------
    def where(self) -> str:
        return f"ssh {self.ssh.user}@{self.node.host}:{self.ssh.port}"

    def connect(self):
        """The SSH client (connected once, reused; reconnects when the transport died)."""
        import paramiko  # lazy: only --nodes runs need it
        with self._lock:
            if self._client is not None and self._client.get_transport() is not None \
                    and self._client.get_transport().is_active():
                return self._client
            c = paramiko.SSHClient()
            c.load_host_keys(str(self.ssh.known_hosts))
            c.set_missing_host_key_policy(paramiko.RejectPolicy())
            t = self.ssh.connect_timeout_s
            try:
                c.connect(self.node.host, port=self.ssh.port, username=self.ssh.user,
                          key_filename=str(self.ssh.key_file), timeout=t, banner_timeout=t, auth_timeout=t,
                          allow_agent=False, look_for_keys=False)
            except paramiko.BadHostKeyException as e:
                c.close()
                raise HostKeyError(f"{self.where()}: host key mismatch ({e.key.get_name()} "
                                   f"{e.key.get_fingerprint().hex()[:16]}... is not the one in "
                                   f"{self.ssh.known_hosts}): refusing to connect") from None
            except paramiko.SSHException as e:
                c.close()
                if "not found in known_hosts" in str(e):
                    raise HostKeyError(f"{self.where()}: host key unknown to {self.ssh.known_hosts}: refusing "
                                       "to connect") from None
                raise Unreachable(f"{self.where()}: SSH failed: {e}") from None
            except (OSError, EOFError, socket.timeout) as e:
                c.close()
                raise Unreachable(f"{self.where()}: unreachable: {e or type(e).__name__}") from None
            c.get_transport().set_keepalive(15)
            self._client = c
            return c

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _run(self, script: str, privileged: bool = True, timeout: float | None = None) -> tuple[int, bytes]:
        """Run a shell script on the host (``sudo -n sh -c`` when privileged and the file says sudo)."""
        cmd = f"sh -c {shlex.quote(script)}"
        if privileged and self.ssh.sudo:
            cmd = "sudo -n " + cmd
        client = self.connect()
        t = timeout or self.ssh.command_timeout_s
        try:
            chan = client.get_transport().open_session(timeout=self.ssh.connect_timeout_s)
            chan.settimeout(t)
            chan.set_combine_stderr(True)
            chan.exec_command(cmd)
            chan.shutdown_write()
            out = bytearray()
            deadline = time.monotonic() + t
            while True:
                data = chan.recv(65536)
                if not data:
                    break
                out += data
                if time.monotonic() > deadline:
                    raise socket.timeout()
            rc = chan.recv_exit_status()
            chan.close()
            return rc, bytes(out)
        except socket.timeout:
            raise Unreachable(f"{self.where()}: command did not finish in {t:.0f} s: {script[:120]}") from None
        except (OSError, EOFError) as e:
            self.close()
            raise Unreachable(f"{self.where()}: connection lost: {e}") from None
        except Exception as e:  # paramiko.SSHException: channel refused, transport closed
            self.close()
            raise Unreachable(f"{self.where()}: SSH failed: {type(e).__name__}: {e}") from None

    # -- the process ------------------------------------------------------------------------------
    def _pid_script(self) -> str:
        """Shell that sets $pid to the service's process ('' when none)."""
        parts = ["pid="]
        if self.svc.pidfile:
            p = shlex.quote(self.svc.pidfile)
            parts.append(f'[ -r {p} ] && pid=$(cat {p} 2>/dev/null | tr -dc 0-9) '
                         '&& { [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || pid=; }')
        if self.svc.process:
            enc = base64.b64encode(self.svc.process.encode()).decode()
            parts.append(f'[ -n "$pid" ] || pid=$(pgrep -o -f "$(echo {enc} | base64 -d)" 2>/dev/null)')
        return "; ".join(parts) + "; true"

    def pid(self) -> int | None:
        rc, out = self._run(self._pid_script() + '; echo "pid=$pid"')
        m = re.search(rb"pid=(\d+)", out)
        return int(m.group(1)) if m else None

    def status(self) -> str:
        try:
            rc, out = self._run(self._pid_script() + '; [ -n "$pid" ] && echo "state=$(ps -o stat= -p $pid)"; true')
        except HostKeyError:
            raise
        except ClusterError:
            return "unreachable"
        m = re.search(rb"state=\s*(\S)", out)
        if not m:
            return "exited"
        if m.group(1) == b"Z":          # killed, not yet reaped by its parent: gone as far as Kafka is concerned
            return "exited"
        return "paused" if m.group(1) == b"T" else "running"

    def _signal(self, sig: str) -> int:
        rc, out = self._run(self._pid_script() + f'; [ -n "$pid" ] || exit 3; kill -{sig} "$pid"; echo "pid=$pid"')
        if rc == 3:
            raise _NoProcess(f"{self.where()}: no {self.label} process to signal (not running)")
        if rc != 0:
            raise ClusterError(f"{self.where()}: kill -{sig} failed: {out.decode(errors='replace').strip()[:300]}")
        return int(re.search(rb"pid=(\d+)", out).group(1))

    def _record(self, kind: str, undo: str, **detail) -> str | None:
        if self.journal is not None:
            return self.journal.record(self.label, kind, undo, host=self.where(), run=self.run_tag, **detail)
        return None

    def _forget(self, eid: str | None) -> None:
        """The change a journal line announced was not made after all (e.g. no process to signal)."""
        if eid is not None and self.journal is not None:
            self.journal.done(eid)

    def _done(self, kind: str) -> None:
        if self.journal is not None:
            self.journal.done_all(self.label, kind)

    def _start_unless_running(self) -> str:
        """Undo of a stop: start the service unless its process runs (as the service's start command)."""
        return self._pid_script() + f'; [ -n "$pid" ] || {{ {self.svc.start} ; }}'

    def kill(self, signal: str = "SIGKILL") -> None:
        sig = signal.removeprefix("SIG")
        eid = None
        if sig in ("KILL", "TERM", "9", "15"):
            eid = self._record("stopped", self._start_unless_running(), signal=sig)
        try:
            pid = self._signal(sig)
        except _NoProcess:
            self._forget(eid)     # nothing was running: starting it later would be a change of ours
            raise
        if sig in ("KILL", "9"):  # as `docker kill`: back once the process is gone (bounded: 50 x 0.1 s)
            self._run(f'for i in $(seq 50); do s=$(ps -o stat= -p {pid}); case "$s" in ""|Z*) exit 0;; esac; '
                      f'sleep 0.1; done; exit 0')

    def stop(self, timeout: int = 60) -> None:
        """The node's own clean stop command (bounded by ``timeout`` + the command timeout)."""
        self._record("stopped", self._start_unless_running(), how="service stop")
        rc, out = self._run(self.svc.stop, timeout=timeout + self.ssh.command_timeout_s)
        if rc != 0:
            raise ClusterError(f"{self.where()}: `{self.svc.stop}` failed (exit {rc}): "
                               f"{out.decode(errors='replace').strip()[:300]}")

    def start(self) -> None:
        """The node's own start command; the log read by :meth:`started_since_start` begins here."""
        self._log_offset = self._log_size()
        rc, out = self._run(self.svc.start)
        if rc != 0:
            raise ClusterError(f"{self.where()}: `{self.svc.start}` failed (exit {rc}): "
                               f"{out.decode(errors='replace').strip()[:300]}")
        self._done("stopped")

    def pause(self) -> None:
        pid = self.pid()
        if pid is None:
            raise ClusterError(f"{self.where()}: no {self.label} process to pause (not running)")
        eid = self._record("paused", f"kill -CONT {pid} 2>/dev/null; true", pid=pid)
        try:
            self._signal_pid(pid, "STOP")
        except _NoProcess:
            self._forget(eid)
            raise

    def _signal_pid(self, pid: int, sig: str) -> None:
        rc, out = self._run(f"kill -0 {pid} 2>/dev/null || exit 3; kill -{sig} {pid}")
        if rc == 3:
            raise _NoProcess(f"{self.where()}: process {pid} of {self.label} is gone")
        if rc != 0:
            raise ClusterError(f"{self.where()}: kill -{sig} {pid} failed: {out.decode(errors='replace').strip()[:300]}")

    def unpause(self) -> None:
        if self.status() == "paused":
            self._signal("CONT")
        self._done("paused")

    # -- commands -------------------------------------------------------------------------------------
    def host_script(self, script: str) -> str:
        """A fault's script for this host: the logical chains become the run's, ``eth0`` the file's
        interface. Journals the chains / qdisc it would create before they exist."""
        cin, cout = chain_names(self.run_tag)
        if any(c in script for c in _LOGICAL_CHAINS):
            script = script.replace("KAFKA_CHAOS_IN", cin).replace("KAFKA_CHAOS_OUT", cout)
            if " -N " in script and self.journal is not None and not self.journal.pending(self.label, "chains"):
                self._record("chains", chains_undo(self.run_tag), chains=[cin, cout])
        if "dev eth0" in script or "-i eth0" in script or "-o eth0" in script:
            iface = self.interface
            script = (script.replace("dev eth0", f"dev {iface}").replace("-i eth0", f"-i {iface}")
                      .replace("-o eth0", f"-o {iface}"))
        if re.search(r"tc qdisc (replace|add) dev \S+ root", script):
            self._record("qdisc", f"if tc qdisc show dev {self.interface} | grep -qE ' (netem|tbf) '; then "
                                  f"tc qdisc del dev {self.interface} root; fi; true")
        return script

    def exec(self, cmd: list[str] | str, check: bool = False) -> tuple[int, str]:
        """Run ``cmd`` privileged (sudo -n where configured); ``sh -c SCRIPT`` lists are run as that script."""
        if isinstance(cmd, list) and len(cmd) == 3 and cmd[:2] == ["sh", "-c"]:
            script = cmd[2]
        else:
            script = cmd if isinstance(cmd, str) else " ".join(shlex.quote(c) for c in cmd)
        script = self.host_script(script)
        rc, out = self._run(script)
        text = out.decode(errors="replace")
        if check and rc != 0:
            raise ClusterError(f"{self.where()}: `{script[:120]}` failed: {text.strip()[:300]}")
        if "qdisc" in script and " del dev " in script and rc == 0:
            self._done("qdisc")
        return rc, text

    def read_file(self, path: str) -> bytes:
        rc, out = self._run(f"cat -- {shlex.quote(path)}")
        if rc != 0:
            raise ClusterError(f"{self.where()}: cannot read {path}: {out.decode(errors='replace').strip()[:200]}")
        return out

    def list_dir(self, path: str) -> list[str]:
        rc, out = self._run(f"ls -1A -- {shlex.quote(path)}")
        if rc != 0:
            raise ClusterError(f"{self.where()}: cannot list {path}: {out.decode(errors='replace').strip()[:200]}")
        return sorted(ln for ln in out.decode(errors="replace").splitlines() if ln)

    def logs(self, tail: int = 50) -> str:
        if not self.svc.log_file:
            return f"({self.label}: the nodes file names no service.log_file)"
        try:
            rc, out = self._run(f"tail -n {int(tail)} -- {shlex.quote(self.svc.log_file)}")
        except ClusterError as e:
            return f"({e})"
        return out.decode(errors="replace")

    def _log_size(self) -> int:
        if not self.svc.log_file:
            return 0
        rc, out = self._run(f"stat -c %s -- {shlex.quote(self.svc.log_file)} 2>/dev/null || echo 0")
        try:
            return int(out.decode().strip().splitlines()[-1])
        except (ValueError, IndexError):
            return 0

    def started_since_start(self, line: str) -> bool:
        if self.status() != "running":
            return False
        if not line or not self.svc.log_file:
            return True
        f = shlex.quote(self.svc.log_file)
        off = self._log_offset
        rc, _ = self._run(f"size=$(stat -c %s -- {f} 2>/dev/null || echo 0); off={off}; "
                          f"[ \"$size\" -lt \"$off\" ] && off=0; "
                          f"tail -c +$((off + 1)) -- {f} | grep -qF -- {shlex.quote(line)}")
        return rc == 0

    # -- the plan -------------------------------------------------------------------------------------
    def describe(self, op: str, **kw) -> list[str]:
        """The commands ``op`` would run on this host (nothing is connected to)."""
        pre = f"{self.where()}: {'sudo -n ' if self.ssh.sudo else ''}"
        proc = f"$(cat {self.svc.pidfile})" if self.svc.pidfile else f"$(pgrep -o -f {shlex.quote(self.svc.process)})"
        if op == "kill":
            return [pre + f"kill -{kw.get('signal', 'SIGKILL').removeprefix('SIG')} {proc}"]
        if op == "stop":
            return [pre + self.svc.stop]
        if op == "start":
            return [pre + self.svc.start]
        if op == "pause":
            return [pre + f"kill -STOP {proc}"]
        if op == "unpause":
            return [pre + f"kill -CONT {proc}"]
        if op in ("iptables", "netem"):
            cin, cout = chain_names(kw.get("run_tag", self.run_tag))
            script = kw.get("script", "...").replace("KAFKA_CHAOS_IN", cin).replace("KAFKA_CHAOS_OUT", cout)
            script = script.replace("eth0", self.interface)
            return [pre + ln for ln in script.splitlines() if ln.strip() and ln.strip() not in ("true", "set -e")]
        raise ValueError(f"unknown operation {op!r}")
