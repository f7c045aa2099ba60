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


class _RefusingIndex(_Refuses):
    """A package index that lists a wheel and refuses its download, as a rate-limiting mirror
    does."""

    def do_GET(self) -> None:
        if self.path.rstrip("/") != f"/simple/{_PACKAGE}":
            return super().do_GET()
        wheel = f"{_PACKAGE.replace('-', '_')}-1.0-py3-none-any.whl"
        body = f'<html><body><a href="/files/{wheel}">{wheel}</a></body></html>'.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


_PACKAGE = "taskpack-harness-probe"


def test_a_framework_venv_the_index_refuses_names_the_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package index's 403 while a framework's venv is made reads as the index's, with
    the refused URL, not as a failure of the test that first needed the venv."""
    from .conformance import frameworks

    index = ThreadingHTTPServer(("127.0.0.1", 0), _RefusingIndex)
    threading.Thread(target=index.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{index.server_address[1]}"
    monkeypatch.setenv("TASKPACK_FRAMEWORK_VENVS", str(tmp_path / "venvs"))
    spec = frameworks.Framework(
        frameworks.FRAMEWORKS["hub0"].python,
        (f"{_PACKAGE}==1.0",),
        pip_flags=("--index-url", f"{url}/simple", "--retries", "0"),
    )
    monkeypatch.setitem(frameworks.FRAMEWORKS, "refused", spec)
    try:
        with pytest.raises(RuntimeError, match="could not install refused") as raised:
            frameworks.ensure("refused")
    finally:
        index.shutdown()
    said = str(raised.value)
    assert "HTTP error 403" in said and f"{url}/files/" in said, said
