"""A scripted TCP server on 127.0.0.1 for unit tests of the protocol client and sampler: it
answers each request frame with canned bytes (it is not a Kafka broker)."""

from __future__ import annotations

import socket
import struct
import threading

from harness.protocol.wire import Reader


def h(*parts: str) -> bytes:
    return bytes.fromhex("".join(p.replace(" ", "") for p in parts))


class ScriptedServer:
    """Accepts connections and answers each request frame with ``answer(api_key, version, cid)``:
    bytes after the size prefix (header included), or None to stay silent."""

    def __init__(self, answer):
        self.answer = answer
        self.requests: list[tuple[int, int, int]] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._conn, args=(conn,), daemon=True).start()

    def _conn(self, conn):
        with conn:
            conn.settimeout(5)
            try:
                while True:
                    head = conn.recv(4, socket.MSG_WAITALL)
                    if len(head) < 4:
                        return
                    data = conn.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
                    r = Reader(data)
                    key, ver, cid = r.int16(), r.int16(), r.int32()
                    self.requests.append((key, ver, cid))
                    out = self.answer(key, ver, cid)
                    if out is None:
                        self._stop.wait(10)
                        return
                    conn.sendall(struct.pack(">i", len(out)) + out)
            except OSError:
                return

    def close(self):
        self._stop.set()
        self.sock.close()
