"""The HTTP/1.1 server under `taskpack serve` (uvicorn, with the bounds of
taskpack/serve/server.py), spoken to byte for byte: pipelined requests answered in order, each
bound refused with its status before the rest is read, a refusal closing the connection, a
client that does not take what it is sent held to one answer's worth, then dropped; and the
cases the hand-written server it replaced got wrong."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import taskpack
from taskpack.serve import server
from taskpack.serve.app import Api, App, Catalog, allowed_hosts, background
from taskpack.serve.server import MAX_BODY, MAX_HEAD

from .conftest import make_task


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    path = tmp_path_factory.mktemp("protocol") / "ts"
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
    path = tmp_path_factory.mktemp("protocol-big") / "ts"
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
        assert status == 413 and str(MAX_BODY) in json.loads(body)["detail"]  # ORS's shape


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
    send = app._send

    async def counted(*args: Any) -> None:
        nonlocal answered
        answered += 1
        await send(*args)

    monkeypatch.setattr(app, "_send", counted)
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
    monkeypatch.setattr(server, "IDLE", 1.0)
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
    monkeypatch.setattr(server, "IDLE", 1.0)
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
        assert time.monotonic() - started > 3 * server.IDLE
    head, rest = bytes(got).split(b"\r\n\r\n", 1)
    assert b"content-length: %d" % (24 << 20) in head.lower()
    body, second = rest[: 24 << 20], rest[24 << 20 :]
    assert hashlib.sha256(body).hexdigest() == files.rsplit("/", 1)[1]
    assert second.startswith(b"HTTP/1.1 200 OK\r\n")


# --- where the hand-written server broke (issue 56) ------------------------------------------


def _post(path: str, body: bytes, *extra: str) -> bytes:
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}", *extra]
    return "\r\n".join([*head, "", ""]).encode() + body


SPLIT = json.dumps({"split": "train"}).encode()


def test_a_thousand_pipelined_requests_written_mid_head_are_all_answered(
    address: tuple[str, int],
) -> None:
    """Writes of 1,000 bytes, each ending inside a request's head: every answer, in order."""
    wanted = [i % 20 for i in range(1000)]
    requests = b"".join(_get(f"/api/v1/splits/train/tasks/{i}") for i in wanted)
    with socket.create_connection(address, timeout=30) as sock:
        for start in range(0, len(requests), 1000):
            sock.sendall(requests[start : start + 1000])
        answers = _answers(sock, 1000)
    assert [json.loads(body)["task"]["id"] for _, _, body in answers] == [f"t{i}" for i in wanted]


def test_a_large_post_then_a_get_split_across_writes_are_both_answered(
    address: tuple[str, int],
) -> None:
    """A 40 KiB body, then half a GET: no false 431 (the body is not a head)."""
    post = _post("/ors/h1/num_tasks", SPLIT + b" " * (40 << 10))
    get = _get("/api/v1/splits/train/tasks/5")
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(post + get[:20])
        time.sleep(0.2)
        sock.sendall(get[20:])
        (first, _, counted), (second, _, task) = _answers(sock, 2)
    assert (first, second) == (200, 200)
    assert json.loads(counted)["num_tasks"] == 20 and json.loads(task)["task"]["id"] == "t5"


def test_expect_continue_behind_an_answer_being_sent_comes_after_it(
    big: tuple[tuple[str, int], App, str],
) -> None:
    """A 24 MiB answer being sent, a POST with `Expect: 100-continue` behind it: the go-ahead
    comes after the file's last byte, never inside it."""
    address, _, files = big
    post = _post("/ors/big/num_tasks", SPLIT, "Expect: 100-continue")
    head, body = post[: -len(SPLIT)], SPLIT
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(_get(files) + head)
        got = bytearray()
        while b"HTTP/1.1 100 Continue\r\n\r\n" not in got:
            piece = sock.recv(1 << 20)
            assert piece, "closed before the go-ahead"
            got += piece
        first_end = got.index(b"\r\n\r\n") + 4 + (24 << 20)
        assert got.index(b"HTTP/1.1 100 Continue") == first_end
        sock.sendall(body)
        rest = bytes(got[first_end + len(b"HTTP/1.1 100 Continue\r\n\r\n") :])
        while rest.count(b"}") < 1:
            rest += sock.recv(65536)
    assert rest.startswith(b"HTTP/1.1 200") and b'"num_tasks": 1' in rest


def test_a_client_that_half_closes_after_its_request_is_answered(
    address: tuple[str, int],
) -> None:
    """Its request sent, it shuts its side: answered all the same, cached or not."""
    for path in (
        "/api/v1/splits/train/by-id/t13?nulls=1",
        "/api/v1/splits/train/by-id/t13?nulls=1",
    ):
        with socket.create_connection(address, timeout=30) as sock:
            sock.sendall(_get(path))
            sock.shutdown(socket.SHUT_WR)
            ((status, _, body),) = _answers(sock, 1)
            assert status == 200 and json.loads(body)["task"]["id"] == "t13"


def test_a_body_of_many_one_byte_chunks_is_read_whole(address: tuple[str, int]) -> None:
    body = SPLIT + b" " * (60 << 10)
    chunked = b"".join(b"1\r\n" + body[i : i + 1] + b"\r\n" for i in range(len(body)))
    head = (
        b"POST /ors/h1/num_tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(head + chunked + b"0\r\n\r\n")
        ((status, _, answer),) = _answers(sock, 1)
    assert status == 200 and json.loads(answer)["num_tasks"] == 20


def test_a_content_length_with_whitespace_around_it_is_read(address: tuple[str, int]) -> None:
    """RFC 9110 allows whitespace around a field's value: `Content-Length:  18 ` is 18."""
    assert len(SPLIT) == 18
    request = b"POST /ors/h1/num_tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length:  18 \r\n\r\n"
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(request + SPLIT)
        ((status, _, answer),) = _answers(sock, 1)
    assert status == 200 and json.loads(answer)["num_tasks"] == 20


def test_an_upgrade_is_ignored_and_the_request_answered(address: tuple[str, int]) -> None:
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(_get("/api/v1", "Upgrade: websocket", "Connection: upgrade"))
        ((status, fields, _),) = _answers(sock, 1)
    assert status == 200 and "upgrade" not in fields


# --- the bounds that replace the old server's own ---------------------------------------------


def test_a_head_never_finished_is_dropped_after_idle(
    address: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slowloris: a byte of its head now and then, never the end: dropped IDLE seconds
    after the head began, however steadily it trickles."""
    monkeypatch.setattr(server, "IDLE", 1.0)
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(b"GET /api/v1 HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        with contextlib.suppress(OSError):
            while time.monotonic() - started < 5:
                sock.sendall(b"X")
                time.sleep(0.2)
        assert _closed(sock) and time.monotonic() - started < 5


def test_a_silent_connection_is_closed_after_idle(tmp_path: Path) -> None:
    path = tmp_path / "ts"
    taskpack.write(path, {"train": [make_task(0)]}, name="quiet")
    with background(App(api=Api(Catalog(taskpack.open(path)))), timeout_keep_alive=1) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            started = time.monotonic()
            assert _closed(sock) and time.monotonic() - started < 5


def test_a_body_not_sent_in_time_is_refused(
    address: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from taskpack.serve import app as served

    monkeypatch.setattr(served, "IDLE", 1.0)
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(_post("/ors/h1/num_tasks", SPLIT)[:-5])  # 5 bytes short, for good
        ((status, fields, body),) = _answers(sock, 1)
        assert status == 408 and "body" in json.loads(body)["detail"]
        assert fields["connection"] == "close" and _closed(sock)


def test_connections_past_the_limit_are_refused_with_503(tmp_path: Path) -> None:
    path = tmp_path / "ts"
    taskpack.write(path, {"train": [make_task(0)]}, name="full")
    with background(App(api=Api(Catalog(taskpack.open(path)))), limit_concurrency=4) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        held = [socket.create_connection((host, int(port)), timeout=30) for _ in range(4)]
        try:
            with socket.create_connection((host, int(port)), timeout=30) as sock:
                sock.sendall(_get("/healthz"))
                ((status, _, _),) = _answers(sock, 1)
            assert status == 503
        finally:
            for sock in held:
                sock.close()
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(_get("/healthz"))
            assert _answers(sock, 1)[0][0] == 200


def test_a_worker_over_its_memory_bound_stops_itself() -> None:
    """The watchdog of `--max-rss`: past it, the worker is killed (and its supervisor starts
    another: test_a_killed_worker_is_replaced)."""
    import subprocess
    import sys

    code = (
        "import time\nfrom taskpack.serve import server\n"
        "with open('/proc/self/statm') as f:\n"
        "    now = int(f.read().split()[1]) * 4096 >> 20\n"
        "server.watch(now + 64, interval=0.05)\n"
        "held = bytearray(256 << 20)\n"
        "time.sleep(20)\n"
    )
    ended = subprocess.run([sys.executable, "-c", code], timeout=60)
    assert ended.returncode == -9


def test_a_worker_whose_event_loop_hangs_stops_itself() -> None:
    """uvicorn's supervisor pings a thread of the worker's own, which answers while the event
    loop is stuck (a deadlock once did it): the watchdog sees the loop's heartbeat stop."""
    import subprocess
    import sys

    code = (
        "import asyncio, time\nfrom taskpack.serve import server\n"
        "server.watch(1 << 20, interval=0.05, stuck=1.0)\n"
        "async def main():\n"
        "    server.heartbeat()\n"
        "    await asyncio.sleep(2)  # beating\n"
        "    print('beat', flush=True)\n"
        "    time.sleep(30)  # the loop stuck\n"
        "asyncio.run(main())\n"
    )
    ended = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert ended.returncode == -9 and ended.stdout == "beat\n"


@pytest.mark.slow
def test_a_killed_worker_is_replaced(tmp_path: Path) -> None:
    """`--workers 2`, one SIGKILLed (the OOM killer's stand-in): requests go on being
    answered, and within seconds two workers serve again."""
    import signal
    import subprocess
    import sys

    path = tmp_path / "ts"
    taskpack.write(path, {"train": [make_task(i) for i in range(5)]}, name="w")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "taskpack", "serve", str(path), "--port", str(port)]
    proc = subprocess.Popen([*command, "--workers", "2"], stderr=subprocess.PIPE, text=True)

    def workers() -> list[str]:
        found = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True)
        mine = [
            p for p in found.stdout.split() if "taskpack" in _cmdline(p) or "spawn" in _cmdline(p)
        ]
        return [p for p in mine if "resource_tracker" not in _cmdline(p)]

    url = f"http://127.0.0.1:{port}/api/v1/splits/train/tasks/3"
    try:
        deadline = time.monotonic() + 60
        while len(workers()) < 2 or not _answers_ok(url):
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        before = workers()
        os.kill(int(before[0]), signal.SIGKILL)
        answered = [_answers_ok(url) for _ in range(20)]
        assert all(answered)  # the other worker answers meanwhile
        deadline = time.monotonic() + 30
        while len(workers()) < 2 or before[0] in workers():
            assert time.monotonic() < deadline, f"not replaced: {workers()}"
            time.sleep(0.1)
        assert _answers_ok(url)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except FileNotFoundError:
        return ""


def _answers_ok(url: str) -> bool:
    import httpx

    try:
        return httpx.get(url, timeout=10).json()["task"]["id"] == "t3"
    except httpx.TransportError:
        return False


@pytest.mark.slow
def test_a_slow_reader_pipelining_64_mib_moves_memory_by_less_and_others_are_served(
    tmp_path: Path,
) -> None:
    """Pipelined requests from a client that reads slowly: the server parses at most
    MAX_PIPELINE ahead of its answers and stops reading, so what the client can push stays in
    the kernel's buffers; the worker's memory moves by far less than 64 MiB (it grew 40x what
    was sent before), another client is answered meanwhile, and the slow one is dropped once
    it has taken nothing for IDLE seconds."""
    import urllib.request

    def rss_mib() -> float:
        with open("/proc/self/status") as f:
            return int(next(x for x in f if x.startswith("VmRSS")).split()[1]) / 1024

    path = tmp_path / "ts"
    taskpack.write(path, {"train": [make_task(i) for i in range(20)]}, name="h1")
    with background(App(api=Api(Catalog(taskpack.open(path))))) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        request = _get("/api/v1/splits/train/tasks/0")
        chunk = request * (65536 // len(request))
        before, peak, sent, served = rss_mib(), 0.0, 0, 0
        with socket.create_connection((host, int(port))) as sock:
            sock.settimeout(0.2)
            deadline = time.monotonic() + 3 * server.IDLE
            while sent < (64 << 20) and time.monotonic() < deadline:
                try:
                    sent += sock.send(chunk)
                    sock.recv(4096)
                except TimeoutError:
                    pass
                except OSError:
                    break  # dropped: it took nothing for IDLE seconds
                peak = max(peak, rss_mib())
                if served < 5:
                    with urllib.request.urlopen(url + "/api/v1/splits/train/tasks/1") as r:
                        served += r.status == 200
    assert served == 5
    assert peak - before < 64, (before, peak, sent)
