"""No hangs and no leaks: a server that never answers fails the command in bounded time, and
a server that echoes request headers back (a token among them) never gets them printed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

pytestmark = pytest.mark.slow  # network faults waited out against deadlines

TOKEN = "hf_secretTOKENvalue1234567890"


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and never says a word."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    sock.close()


class Echo(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _echo(self) -> None:
        body = ("error, your request was:\n" + str(self.headers)).encode()
        self.send_response(500)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Echo", str(self.headers.get("Authorization")))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_HEAD = do_PUT = _echo


@pytest.fixture
def echo_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def taskpack(args: list[str], env: dict[str, str], limit: float) -> tuple[int, str, float]:
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", "from taskpack.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=limit,
        env={**os.environ, **env},
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start


BACKENDS = {
    "hub": lambda url: ("hf://someone", {"HF_ENDPOINT": url, "HF_TOKEN": TOKEN}),
    "s3": lambda url: (
        "s3://bucket/prefix",
        {
            "AWS_ENDPOINT_URL_S3": url,
            "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
            "AWS_SECRET_ACCESS_KEY": TOKEN,
            "AWS_DEFAULT_REGION": "us-east-1",
        },
    ),
}


COMMANDS = [["ls"], ["pull", "gsm8k@1.0.0"], ["info", "gsm8k@1"], ["publish", "{folder}", "-q"]]


def _command(command: list[str], tmp_path: Path) -> list[str]:
    """The command, with `{folder}` a small task set written for it."""
    if "{folder}" not in command:
        return command
    import taskpack as tp

    tp.write(tmp_path / "ts", {"test": [{"id": "a", "prompt": "q"}]}, name="gsm8k")
    return [str(tmp_path / "ts") if a == "{folder}" else a for a in command]


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("command", COMMANDS)
def test_a_server_that_never_answers_fails_in_bounded_time(
    silent_server: str, backend: str, command: list[str], tmp_path: Path
) -> None:
    command = _command(command, tmp_path)
    registry, env = BACKENDS[backend](silent_server)
    env["TASKPACK_NETWORK_TIMEOUT"] = "1"
    code, output, took = taskpack([*command, "--registry", registry], env, limit=120)
    assert code == 1 and "Traceback" not in output, output
    assert output.strip().count("\n") == 0 and registry in output, output
    assert took < 60


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("command", COMMANDS)
def test_an_echoing_server_never_gets_secrets_printed(
    echo_server: str, backend: str, command: list[str], tmp_path: Path
) -> None:
    command = _command(command, tmp_path)
    registry, env = BACKENDS[backend](echo_server)
    env["TASKPACK_NETWORK_TIMEOUT"] = "5"
    code, output, _ = taskpack([*command, "--registry", registry], env, limit=120)
    assert code == 1 and "Traceback" not in output, output
    assert TOKEN not in output and "Authorization" not in output and "request was" not in output


@pytest.fixture
def trickling_server() -> Iterator[str]:
    """Answers every request with a valid HTTP response, one byte every 0.3 s: each read
    comes well within any per-read timeout, the whole never does."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    stop = threading.Event()
    body = b'{"versions": []}' * 20
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (
            len(body),
            body,
        )
    )

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                for i in range(len(answer)):
                    if stop.is_set():
                        return
                    conn.sendall(answer[i : i + 1])
                    time.sleep(0.3)
            except OSError:
                return

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn = sock.accept()[0]
            except OSError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    thread.join()
    sock.close()


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("command", [["ls"], ["pull", "gsm8k@1.0.0"]])
def test_a_trickling_server_fails_the_operation_within_twice_its_deadline(
    trickling_server: str, backend: str, command: list[str]
) -> None:
    """TASKPACK_NETWORK_TIMEOUT bounds each whole request, not each read: a response that
    would take over 2 minutes at its pace ends the command in one line after about 3 s."""
    registry, env = BACKENDS[backend](trickling_server)
    env["TASKPACK_NETWORK_TIMEOUT"] = "3"
    code, output, took = taskpack([*command, "--registry", registry], env, limit=120)
    assert code == 1 and "Traceback" not in output, output
    assert output.strip().count("\n") == 0 and "TASKPACK_NETWORK_TIMEOUT" in output, output
    assert took < 2 * 3 + 4, took  # twice the deadline, and the interpreter's start


class Redirector(BaseHTTPRequestHandler):
    """The Hub's side: every file redirects to `target`; its listing names a next page there."""

    target: ClassVar[str] = ""
    seen: ClassVar[list[str | None]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Authorization"))
        if self.path.startswith("/api/datasets"):
            body = b'[{"id": "someone/a"}]'
            self.send_response(200)
            self.send_header("Link", f'<{self.target}/api/datasets?page=2>; rel="next"')
        else:
            body = b""
            self.send_response(302)
            self.send_header("Location", f"{self.target}/file")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Recorder(Redirector):
    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Authorization"))
        body = b"the file"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_the_token_goes_only_to_the_configured_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """A redirect to another host is followed without the token; a listing's `Link: next` to
    another host is refused, and that host never hears from us."""
    from taskpack.errors import TaskpackError
    from taskpack.registry import open_registry

    hub_seen: list[str | None] = []
    other_seen: list[str | None] = []
    other = ThreadingHTTPServer(("127.0.0.1", 0), type("R", (Recorder,), {"seen": other_seen}))
    threading.Thread(target=other.serve_forever, daemon=True).start()
    target = f"http://localhost:{other.server_address[1]}"  # another origin: name and port
    hub = ThreadingHTTPServer(
        ("127.0.0.1", 0), type("H", (Redirector,), {"seen": hub_seen, "target": target})
    )
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{hub.server_address[1]}")
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        registry = open_registry("hf://someone")
        assert registry._get("a", "x.json", "main") == b"the file"  # type: ignore[attr-defined]
        assert f"Bearer {TOKEN}" in hub_seen
        assert other_seen and all(seen is None for seen in other_seen)
        asked = len(other_seen)
        with pytest.raises(TaskpackError, match="next page is on another host; refused"):
            registry.names()
        assert len(other_seen) == asked  # the listing's next page was never asked for
    finally:
        hub.shutdown()
        other.shutdown()
