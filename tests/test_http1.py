"""The HTTP/1.1 server under `taskpack serve` (taskpack/http1.py), spoken to byte for byte:
pipelined requests answered in order, each bound refused with its status before the rest is
read, a refusal closing the connection, and a client that does not take what it is sent held
to one answer's worth, then dropped."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import taskpack
from taskpack import http1
from taskpack.http1 import MAX_BODY, MAX_HEAD
from taskpack.serve import Api, App, Catalog, allowed_hosts, background

from .conftest import make_task


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    path = tmp_path_factory.mktemp("http1") / "ts"
    taskpack.write(path, {"train": [make_task(i) for i in range(20)]}, name="h1")
    app = App(api=Api(Catalog(taskpack.open(path))), hosts=allowed_hosts("127.0.0.1", 1))
    with background(app) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        yield host, int(port)


BIG = 256 << 10  # the prompt of task "big": an answer kept in memory, far over a write buffer


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[tuple[str, int], App, str]]:
    """A server of one task with a big prompt and a 24 MiB file: its address, its app, and the
    file's path in the API."""
    path = tmp_path_factory.mktemp("http1-big") / "ts"
    data = os.urandom(24 << 20)
    task = {"id": "big", "prompt": "x" * BIG, "files": [{"path": "big.bin", "data": data}]}
    taskpack.write(path, {"train": [task]}, name="big")
    app = App(api=Api(Catalog(taskpack.open(path))), hosts=allowed_hosts("127.0.0.1", 1))
    with background(app) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        yield (host, int(port)), app, f"/api/v1/files/{hashlib.sha256(data).hexdigest()}"


def _get(path: str, *extra: str) -> bytes:
    return "\r\n".join([f"GET {path} HTTP/1.1", "Host: 127.0.0.1", *extra, "", ""]).encode()


def _answers(sock: socket.socket, count: int) -> list[tuple[int, dict[str, str], bytes]]:
    """`count` answers read off `sock`: status, headers, body (by its Content-Length)."""
    got, found = b"", list[tuple[int, dict[str, str], bytes]]()
    while len(found) < count:
        head_end = got.find(b"\r\n\r\n")
        if head_end >= 0:
            lines = got[:head_end].decode("latin-1").split("\r\n")
            pairs = (line.split(": ", 1) for line in lines[1:])
            fields = {name.lower(): value for name, value in pairs}
            end = head_end + 4 + int(fields["content-length"])
            if len(got) >= end:
                found.append((int(lines[0].split()[1]), fields, got[head_end + 4 : end]))
                got = got[end:]
                continue
        piece = sock.recv(65536)
        assert piece, f"closed after {len(found)} answers"
        got += piece
    return found


def _answered(sock: socket.socket) -> bool:
    sock.settimeout(0.05)
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))
    except TimeoutError:
        return False
    finally:
        sock.settimeout(30)


def _closed(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_pipelined_requests_are_answered_in_order(address: tuple[str, int]) -> None:
    """Work on one (a first read renders it on a thread) holds the ones behind it back."""
    with socket.create_connection(address, timeout=30) as sock:
        order = [3, 0, 3, 17, 0]
        sock.sendall(b"".join(_get(f"/api/v1/splits/train/tasks/{i}") for i in order))
        answers = _answers(sock, len(order))
        assert [json.loads(body)["task"]["id"] for _, _, body in answers] == [
            f"t{i}" for i in order
        ]
        for status, fields, _ in answers:
            assert status == 200 and fields["content-type"] == "application/json"
            assert "default-src 'none'" in fields["content-security-policy"]
            assert fields["date"].endswith(" GMT") and "connection" not in fields


def test_head_answers_the_length_without_the_body(address: tuple[str, int]) -> None:
    """A HEAD's answer is its head alone: the next answer starts right after it."""
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(_get("/api/v1"))
        ((_, _, body),) = _answers(sock, 1)
        sock.sendall(_get("/api/v1").replace(b"GET", b"HEAD", 1) + _get("/healthz"))
        got = b""
        while got.count(b"\r\n\r\n") < 2 or not got.endswith(b"ok\n"):
            got += sock.recv(65536)
        head, rest = got.split(b"\r\n\r\n", 1)
        assert f"content-length: {len(body)}".encode() in head.lower()
        assert rest.startswith(b"HTTP/1.1 200 OK\r\n")


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"NOT HTTP AT ALL\r\n\r\n", 400),
        (_get("/api/v1", "Host: other.example"), 400),  # a second Host
        (_get("/api/v1", f"Content-Length: {MAX_BODY + 1}"), 413),  # refused unread
        (_get("/api/v1", "Content-Length: lots"), 400),
        (_get("/api/v1", "Upgrade: websocket", "Connection: upgrade"), 400),
        (b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 400),
        (_get("/api/v1", "X-Big: " + "a" * MAX_HEAD), 431),
    ],
)
def test_a_refused_request_is_answered_then_closed(
    address: tuple[str, int], request_bytes: bytes, status: int
) -> None:
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(request_bytes + _get("/api/v1"))  # a request behind it is not answered
        ((got, fields, body),) = _answers(sock, 1)
        assert got == status, body
        assert fields["connection"] == "close" and "error" in json.loads(body)
        assert _closed(sock)


def test_requests_before_a_refused_one_are_answered_first(address: tuple[str, int]) -> None:
    """Garbage pipelined behind a request still worked on (a first read renders it on a
    thread) and one behind that: both are answered, in order, then the refusal, then the
    connection is closed."""
    with socket.create_connection(address, timeout=30) as sock:
        first, second = "/api/v1/splits/train/tasks/11", "/api/v1/splits/train/tasks/12"
        sock.sendall(_get(first) + _get(second) + b"NOT HTTP AT ALL\r\n\r\n" + _get(first))
        answers = _answers(sock, 3)
        assert [status for status, _, _ in answers] == [200, 200, 400]
        assert [json.loads(body)["task"]["id"] for _, _, body in answers[:2]] == ["t11", "t12"]
        assert answers[2][1]["connection"] == "close" and _closed(sock)


def test_a_head_sent_in_pieces_is_refused_once_past_its_bound(address: tuple[str, int]) -> None:
    """A header never finished: refused when the bytes held pass MAX_HEAD, not at its end."""
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(b"GET /api/v1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        sent = 0
        while not _answered(sock):  # stop sending once it has answered: its close resets
            sock.sendall(b"a" * 4096)
            sent += 4096
            assert sent < 2 * MAX_HEAD
        assert sent > MAX_HEAD - 4096
        ((status, _, _),) = _answers(sock, 1)
        assert status == 431 and _closed(sock)


def test_a_body_past_its_bound_is_refused_as_it_comes(address: tuple[str, int]) -> None:
    """A chunked body says no length: refused when it passes MAX_BODY."""
    with socket.create_connection(address, timeout=30) as sock:
        head = b"POST /ors/create_session HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        sock.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n")
        piece = b"%x\r\n%s\r\n" % (8192, b"a" * 8192)
        with pytest.raises(OSError):  # reset once the server has closed
            for _ in range(MAX_BODY // 8192 + 4):
                sock.sendall(piece)
                time.sleep(0.01)
            _answers(sock, 2)
    with socket.create_connection(address, timeout=30) as sock:  # read before it resets
        sock.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n" + piece * (MAX_BODY // 8192 + 1))
        ((status, _, body),) = _answers(sock, 1)
        assert status == 413 and str(MAX_BODY) in json.loads(body)["error"]


def test_expect_continue_is_answered_before_the_body(address: tuple[str, int]) -> None:
    """curl sends `Expect: 100-continue` with a large body and waits for the go-ahead."""
    body = json.dumps({"env_name": "h1", "task_spec": {}}).encode()
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(
            b"POST /ors/create_session HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body)
        )
        sock.settimeout(10)
        assert sock.recv(4096) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        assert sock.recv(65536).startswith(b"HTTP/1.1 ")


def test_http_1_0_and_connection_close_end_the_connection(address: tuple[str, int]) -> None:
    for request in (
        b"GET /api/v1 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n",
        _get("/api/v1", "Connection: close"),
    ):
        with socket.create_connection(address, timeout=30) as sock:
            sock.sendall(request)
            ((status, fields, _),) = _answers(sock, 1)
            assert status == 200 and fields["connection"] == "close"
            assert _closed(sock)


def test_percent_escapes_in_the_path_are_decoded_once(address: tuple[str, int]) -> None:
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(_get("/api/v1/splits/train/by-id/t%31") + _get("/api/v1/splits/tr%2561in"))
        (first, _, body), (second, _, _) = _answers(sock, 2)
        assert first == 200 and json.loads(body)["task"]["id"] == "t1"
        assert second == 404  # `tr%61in`, not `train`


def test_a_worker_serves_until_stopped_and_the_port_is_free_after(tmp_path: Path) -> None:
    """`taskpack serve --workers 2`: both answer on the one port; SIGTERM stops them all."""
    import subprocess
    import sys

    import httpx

    path = tmp_path / "ts"
    taskpack.write(path, {"train": [make_task(0)]}, name="w")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "taskpack", "serve", str(path), "--port", str(port)]
    proc = subprocess.Popen([*command, "--workers", "2"], stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        workers = subprocess.run(
            ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
        ).stdout.split()
        assert len(workers) >= 2
    finally:
        proc.terminate()
        assert proc.wait(timeout=20) in (0, 1)
    deadline = time.monotonic() + 10  # none left behind (multiprocessing's resource tracker,
    while time.monotonic() < deadline and any(_alive(p) for p in workers):  # a child too, ends
        time.sleep(0.05)  # once it sees its parent gone)
    assert not any(_alive(p) for p in workers)
    with socket.socket() as again:
        again.bind(("127.0.0.1", port))


def _alive(pid: str) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


def test_a_client_that_reads_nothing_is_answered_no_further_than_it_takes(
    big: tuple[tuple[str, int], App, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 requests pipelined for a 256 KiB answer (250 MiB) by a client that reads none:
    answers stop once the transport is past its high-water mark (what the kernel's socket
    buffers take comes first), and all come, in order, once it reads."""
    address, app, _ = big
    answered = 0
    ready = app.ready

    def counted(*args: str) -> http1.Response | None:
        nonlocal answered
        answered += 1
        return ready(*args)

    monkeypatch.setattr(app, "ready", counted)
    count = 1000
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(_get("/api/v1/splits/train/tasks/0") * count)
        time.sleep(1.0)
        assert answered < 100  # each kernel buffer holds a few MiB: some 10 to 40 answers
        answers = _answers(sock, count)
    assert answered == count
    assert all(status == 200 and len(body) > BIG for status, _, body in answers)


@pytest.mark.slow
def test_a_client_that_stops_taking_an_answer_is_dropped(
    big: tuple[tuple[str, int], App, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It takes none of its answers for IDLE seconds: the server lets go of the connection,
    what it still owes unsent (a closing connection would wait for it to read, for good)."""
    monkeypatch.setattr(http1, "IDLE", 1.0)
    address, _, _ = big
    before = _open_fds()
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(_get("/api/v1/splits/train/tasks/0") * 100)
        time.sleep(0.5)
        assert _open_fds() == before + 2  # this end and the server's
        time.sleep(3.5)  # IDLE, and the once-a-second tick's lag, twice over
        assert _open_fds() == before + 1  # the server's is gone, the client read nothing
        got = 0
        with contextlib.suppress(ConnectionResetError):
            while piece := sock.recv(1 << 20):
                got += len(piece)
    assert got < 100 * BIG  # what the kernel had taken, not every answer


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.slow
def test_a_slow_reader_of_a_big_file_is_not_cut(
    big: tuple[tuple[str, int], App, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client taking a 24 MiB file a little at a time, for far longer than IDLE, gets all
    of it and the answer behind it: its time runs out only while it takes nothing."""
    monkeypatch.setattr(http1, "IDLE", 1.0)
    address, _, files = big
    with socket.create_connection(address, timeout=30) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        sock.sendall(_get(files) + _get("/healthz"))
        started, got = time.monotonic(), bytearray()
        while not got.endswith(b"ok\n"):
            piece = sock.recv(1 << 16)
            assert piece, f"cut after {len(got)} bytes"
            got += piece
            time.sleep(0.01)
        assert time.monotonic() - started > 3 * http1.IDLE
    head, rest = bytes(got).split(b"\r\n\r\n", 1)
    assert b"content-length: %d" % (24 << 20) in head.lower()
    body, second = rest[: 24 << 20], rest[24 << 20 :]
    assert hashlib.sha256(body).hexdigest() == files.rsplit("/", 1)[1]
    assert second.startswith(b"HTTP/1.1 200 OK\r\n")
