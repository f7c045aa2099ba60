"""A TCP proxy on 127.0.0.1 that breaks connections on purpose, for the fault-injection tests.

Each accepted connection draws one fault from a seeded generator: none, a drop before any
byte, a request cut after a random number of bytes (an upload dying midway), a response
truncated at a random byte, or a response stalled past the client's timeout and then closed.
Keep-alive connections carry several requests, so a fault can land in any of them.
"""

from __future__ import annotations

import contextlib
import random
import socket
import threading
import time
from collections import Counter

FAULTS = ("none", "drop", "cut request", "truncate", "stall")


class FaultProxy:
    def __init__(self, target_port: int, *, seed: int, rate: float, stall: float) -> None:
        self.target_port = target_port
        self.rate = rate
        self.stall = stall
        self.counts: Counter[str] = Counter()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._server.close()

    def _draw(self) -> tuple[str, int]:
        with self._lock:
            fault = "none"
            if self._rng.random() < self.rate:
                fault = self._rng.choice(FAULTS[1:])
            self.counts[fault] += 1
            return fault, self._rng.randrange(0, 64 * 1024)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        fault, at = self._draw()
        if fault == "drop":
            client.close()
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
        except OSError:
            client.close()
            return
        both = (client, upstream)
        up_limit = at if fault == "cut request" else None
        down_limit = at if fault in ("truncate", "stall") else None
        threading.Thread(
            target=self._pump, args=(client, upstream, up_limit, None, both), daemon=True
        ).start()
        self._pump(upstream, client, down_limit, fault, both)

    def _pump(
        self,
        src: socket.socket,
        dst: socket.socket,
        limit: int | None,
        fault: str | None,
        both: tuple[socket.socket, socket.socket],
    ) -> None:
        sent = 0
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if limit is not None and sent + len(data) > limit:
                    dst.sendall(data[: limit - sent])
                    if fault == "stall":
                        time.sleep(self.stall)
                    break
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass
        for s in both:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
