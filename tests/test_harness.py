"""The test harness's own promises: a server the tests start is the one that answers."""

from __future__ import annotations

import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .services import free_port, wait_http


class _Refuses(BaseHTTPRequestHandler):
    """What SeaweedFS answers an unsigned request."""

    def do_GET(self) -> None:
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _server(port: int, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )


def test_another_servers_answers_on_the_port_do_not_pass_for_the_started_ones(
    tmp_path: Path,
) -> None:
    """The port was taken between its choice and the start: the start fails, saying so, where
    the first 403 used to count as the server being up (and the tests after it saw 403s)."""
    other = ThreadingHTTPServer(("127.0.0.1", 0), _Refuses)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    port = other.server_address[1]
    log = tmp_path / "server.log"
    proc = _server(port, log)
    try:
        with pytest.raises(RuntimeError, match="exited early") as raised:
            wait_http(f"http://127.0.0.1:{port}/", proc, log, timeout=30)
        assert "Address already in use" in str(raised.value)
    finally:
        proc.kill()
        proc.wait()
        other.shutdown()


def test_a_server_on_its_own_port_is_up_once_it_answers(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    proc = _server(port, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/", proc, log, timeout=30)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
