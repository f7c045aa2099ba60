"""A TCP proxy on 127.0.0.1 that counts what passes through it: HTTP requests sent upstream (by
their request lines) and bytes returned. Put between a registry server and its clients, it
shows how much reaches the upstream registry."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time

_REQUEST = re.compile(rb"(?:^|\r\n)(?:GET|HEAD|PUT|POST|DELETE|PATCH) (/[^ ]*)")


class CountingProxy:
    def __init__(self, target_port: int, hold: tuple[str, float] | None = None) -> None:
        """`hold` = (text, seconds): a request whose path holds the text is passed on only
        after that long (so that clients starting at once all reach it)."""
        self.target_port = target_port
        self.hold = hold
        self.requests = 0
        self.paths: list[str] = []  # each request's path, in the order they passed
        self.bytes_down = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self) -> None:
        with self._lock:
            self.requests = self.bytes_down = 0
            self.paths = []

    def close(self) -> None:
        self._server.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            pair = (client, upstream)
            threading.Thread(
                target=self._pump, args=(client, upstream, True, pair), daemon=True
            ).start()
            threading.Thread(
                target=self._pump, args=(upstream, client, False, pair), daemon=True
            ).start()

    def _pump(
        self, src: socket.socket, dst: socket.socket, up: bool, pair: tuple[socket.socket, ...]
    ) -> None:
        try:
            while data := src.recv(65536):
                found: list[str] = []
                with self._lock:
                    if up:  # a request line may not start a read; count those that do or follow
                        found = [p.decode("latin-1") for p in _REQUEST.findall(data)]
                        self.requests += len(found)
                        self.paths += found
                    else:
                        self.bytes_down += len(data)
                if self.hold and any(self.hold[0] in p for p in found):
                    time.sleep(self.hold[1])
                dst.sendall(data)
        except OSError:
            pass
        for s in pair:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
