"""A lying HTTP server on 127.0.0.1 for client tests: each request path is answered with the
raw bytes a function of the path yields (status line and headers included), so an answer can
claim any length, never end, trickle, or redirect anywhere. It records the paths asked."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

Answer = Callable[[str], Iterator[bytes]]


def reply(body: bytes, status: str = "200 OK", headers: str = "", length: bool = True) -> bytes:
    """One whole HTTP answer."""
    size = f"Content-Length: {len(body)}\r\n" if length else ""
    return f"HTTP/1.1 {status}\r\n{size}{headers}Connection: close\r\n\r\n".encode() + body


def endless(head: bytes, piece: bytes = b"x" * (1 << 16), pause: float = 0.0) -> Iterator[bytes]:
    """`head`, then `piece` forever (every `pause` seconds)."""
    yield head
    while True:
        yield piece
        if pause:
            time.sleep(pause)


class Hostile:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.paths: list[str] = []
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._stop = threading.Event()
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self._sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn = self._sock.accept()[0]
            except OSError:
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                head = b""
                while b"\r\n\r\n" not in head:
                    more = conn.recv(65536)
                    if not more:
                        return
                    head += more
                path = head.split(b" ", 2)[1].decode("latin-1")
                self.paths.append(path)
                for piece in self.answer(path):
                    if self._stop.is_set():
                        return
                    conn.sendall(piece)
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self._sock.close()

    def __enter__(self) -> Hostile:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
