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

import pytest

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
