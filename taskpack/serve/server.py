"""The HTTP server `taskpack serve` runs on: uvicorn (httptools' parser, uvloop's loop), its
workers kept by uvicorn's own supervisor, which replaces a worker that dies or stops answering.
Why uvicorn and not granian (docs/internals.md): on the protocol cases a task server meets,
granian (hyper) answered no client that half-closes after its request and spent 4.7 s on a body
of 65,536 one-byte chunks; uvicorn answered both at once, and it is what the peers' task
servers (ors-sdk's, OpenEnv's) run on.

What uvicorn leaves to its user is set here, each bound once:

- a request's head: at most MAX_HEAD bytes (else 431, before the rest is read, and after the
  answers to the requests before it), and complete
  within IDLE seconds of its first byte (else the connection is closed: slowloris);
- a connection: a request begun within IDLE seconds of connecting or of the last answer;
- the Host an absolute-form request names is its URL's authority, as RFC 9112 says (uvicorn
  keeps the header: the application's Host check would read another name);
- a client that takes nothing of what it is sent for IDLE seconds is dropped (uvicorn would
  wait on it for ever);
- connections per worker: MAX_CONNECTIONS (beyond, 503), and BACKLOG waiting to be accepted;
- a worker's memory: past `max_rss` MiB it stops itself and the supervisor starts another
  (a watchdog thread, which also ends a worker whose event loop has hung, or whose parent is
  gone).

A request's body (MAX_BODY, 413) and its deadline are the application's (`serve/app.py`);
pipelined requests are read one at a time (uvicorn stops reading while one is answered).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import resource
import signal
import socket
import threading
import time
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import httptools
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.supervisors import Multiprocess

MAX_HEAD = 32 << 10  # bytes a request's line and headers may take (SLICE more at most)
SLICE = 4 << 10  # bytes fed to the parser at a time
SHUT = "taskpack.shut"  # the scope extension set when the client shuts its side (`eof_received`)
MAX_BODY = 64 << 10  # bytes a request's body may take
IDLE = 10.0  # seconds: to begin a request, to finish its head or body, to take an answer's bytes
MAX_PIPELINE = 8  # requests parsed ahead of their answers; past them, bytes wait unparsed
TRICKLE = 1024  # a read this small in the middle of a request...
TRICKLE_PAUSE = 0.01  # ...stops reading this long, so the kernel gathers what follows
MAX_CONNECTIONS = 2048  # open connections (and requests in progress) per worker; then 503
BACKLOG = 2048  # connections the kernel queues before they are accepted
MAX_RSS = 2048  # MiB a worker may hold before it is replaced (`taskpack serve --max-rss`)
HEAD_TOO_LARGE = f"a request line and headers over {MAX_HEAD} bytes"
BODY_TOO_LARGE = f"a body over {MAX_BODY} bytes"


class Bounded(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 connection with the bounds above. The parsing, framing, pipelining
    and `Expect: 100-continue` are uvicorn's own; a refusal (a head too large, no Host or two,
    bytes that are not HTTP) is `{"error": ...}` and ends the connection, written after the
    answers to the requests before it (uvicorn writes its 400 at once, and drops them)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head = 0  # bytes of the current request's head so far
        self._slice = 0  # bytes of the slice being parsed
        self._eof = False  # the client has shut its side
        self._shut = asyncio.Event()
        self._refusal: bytes | None = None  # what ends this connection, once written
        self._head_timer: asyncio.TimerHandle | None = None
        self._stall_timer: asyncio.TimerHandle | None = None
        self._held = bytearray()  # bytes read past MAX_PIPELINE unanswered requests
        self._in_message = False  # between a request's first byte and its last

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # uvicorn arms its idle timer only after an answer: a silent new connection too
        self.timeout_keep_alive_task = self.loop.call_later(
            self.timeout_keep_alive, self.timeout_keep_alive_handler
        )

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._head_timer, self._stall_timer):
            if timer is not None:
                timer.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """`data` fed a SLICE at a time: the bytes of a head still unfinished after a slice
        are counted (the slice a head begins in counted whole: at most SLICE over), which
        httptools, holding an unfinished header for us, does not bound. A worker's memory
        does not grow with what a client sends: past MAX_PIPELINE requests waiting for their
        answers the rest waits unparsed and reading stops (uvicorn reads again after every
        answer, so a slow reader's pipeline grew without bound); a request arriving a few
        bytes at a time is read a few times a second (TRICKLE), not once per byte."""
        if self._held:
            self._held += data
            self.flow.pause_reading()
            return
        self._feed(memoryview(data))
        if self._in_message and len(data) < TRICKLE and not self._held:
            self.flow.pause_reading()
            self.loop.call_later(TRICKLE_PAUSE, self._read_again)

    def _read_again(self) -> None:
        if not self._held and not self.transport.is_closing():
            self.flow.resume_reading()

    def _feed(self, view: memoryview) -> None:
        self._unset_keepalive_if_required()
        for start in range(0, len(view), SLICE):
            if self._refusal is not None:
                return
            if len(self.pipeline) >= MAX_PIPELINE:
                self._held += view[start:]
                self.flow.pause_reading()
                return
            piece = view[start : start + SLICE]
            self._slice = len(piece)
            try:
                self.parser.feed_data(piece)
            except httptools.HttpParserUpgrade:
                return  # an Upgrade is ignored (RFC 9110 7.8): the request is answered as it is
            except httptools.HttpParserError:
                self._refuse(HTTPStatus.BAD_REQUEST, "not an HTTP/1.1 request")
                return
            if self._head_timer is not None:  # a head unfinished
                self._head += len(piece)
                if self._head > MAX_HEAD:
                    self._refuse(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, HEAD_TOO_LARGE)

    def on_message_begin(self) -> None:
        self._in_message = True
        super().on_message_begin()
        self._head = 0
        self._head_timer = self.loop.call_later(IDLE, self._drop)

    def on_headers_complete(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        if self._refusal is not None:
            return
        if self._head + self._slice > MAX_HEAD:  # the head ends in this slice, past its bound
            self._refuse(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, HEAD_TOO_LARGE)
            return
        hosts = [v for k, v in self.headers if k == b"host"]
        if b"://" in self.url[:16]:  # absolute-form: its authority is the Host (RFC 9112 3.2.2)
            found = httptools.parse_url(self.url)
            hosts = [(found.host or b"") + (b":%d" % found.port if found.port else b"")]
            self.headers[:] = [(k, v) for k, v in self.headers if k != b"host"]
            self.headers.append((b"host", hosts[0]))
        if len(hosts) != 1 or self.parser.get_method() == b"CONNECT":
            self._refuse(HTTPStatus.BAD_REQUEST, "a request names one Host, and no CONNECT")
            return
        self.scope.setdefault("extensions", {})[SHUT] = self._shut
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if self._refusal is None:
            super().on_body(body)

    def on_message_complete(self) -> None:
        self._in_message = False
        if self._refusal is None:
            super().on_message_complete()

    def eof_received(self) -> bool:  # type: ignore[override]  # asyncio.Protocol allows it
        """The client shut its side (RFC 9112 allows it once its request is sent): what it
        asked is still answered, then the connection closed (uvicorn closes at once). TCP
        cannot tell this from a client that left: the application hears of it (`SHUT`), and
        stops work that grows with the data."""
        self._eof = True
        self._shut.set()
        return self._answering()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # reads again, and starts the next request waiting
        if self._held and len(self.pipeline) < MAX_PIPELINE and not self.transport.is_closing():
            held, self._held = bytes(self._held), bytearray()
            self._feed(memoryview(held))
        if self._held:
            self.flow.pause_reading()
        self._end_if_refused()
        if self._eof and not self._answering() and not self.transport.is_closing():
            self.transport.close()

    def _answering(self) -> bool:
        return bool(self.pipeline) or (self.cycle is not None and not self.cycle.response_complete)

    def _refuse(self, status: HTTPStatus, message: str) -> None:
        """Read no more; answer `status` once the requests before this one are answered."""
        body = json.dumps({"error": message}).encode()
        self._refusal = (
            b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (status, status.phrase.encode(), len(body), body)
        )
        self.transport.pause_reading()
        self._end_if_refused()

    def _end_if_refused(self) -> None:
        if self._refusal is not None and not self._answering() and not self.transport.is_closing():
            self.transport.write(self._refusal)
            self.transport.close()

    def pause_writing(self) -> None:
        super().pause_writing()
        self._stall_timer = self.loop.call_later(IDLE, self._drop)

    def resume_writing(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
        super().resume_writing()

    def _drop(self) -> None:
        self.transport.abort()


def config(app: Any, host: str, port: int, **options: Any) -> uvicorn.Config:
    """The uvicorn configuration every `taskpack serve` runs with (`options`: the tests' own
    bounds, for one)."""
    settings: dict[str, Any] = {
        "http": Bounded,
        "loop": "uvloop" if _has("uvloop") else "asyncio",
        "lifespan": "on",
        "ws": "none",
        "log_level": "warning",
        "access_log": False,
        "server_header": False,
        "limit_concurrency": MAX_CONNECTIONS,
        "backlog": BACKLOG,
        "timeout_keep_alive": int(IDLE),
        "timeout_graceful_shutdown": 5,
        **options,
    }
    return uvicorn.Config(app, host=host, port=port, **settings)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def address(host: str, port: int) -> tuple[str, int]:
    """The address to serve on, `port` 0 made a free port, or one error line saying why
    there is none: tried by binding it here, then released for the server to bind."""
    from taskpack.errors import TaskpackError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        reason = e.strerror
        raise TaskpackError(f"--host {host!r}: not an address of this machine ({reason})") from None
    family, kind, proto, _, found = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(found)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                taken = f"port {port} on {host} is in use (--port 0 takes a free one)"
                raise TaskpackError(taken) from None
            raise TaskpackError(f"cannot listen on {host}:{port}: {e.strerror}") from None
        return str(sock.getsockname()[0]), int(sock.getsockname()[1])


def run(factory: str, host: str, port: int, workers: int) -> None:
    """Serve until interrupted: `workers` processes, each building the application from the
    import path `factory` (a function of no arguments), kept by uvicorn's supervisor."""
    _raise_file_limit()
    settings = config(factory, host, port, factory=True, workers=workers)
    sock = settings.bind_socket()
    Multiprocess(settings, sockets=[sock]).run()


STUCK = 30.0  # seconds a worker's event loop may go without running before it is replaced
_BEAT = [0.0]  # when the event loop last ran `heartbeat` (time.monotonic(); 0: not yet)


def heartbeat() -> None:
    """In a worker's event loop, once a second: it runs (`watch` reads it)."""
    _BEAT[0] = time.monotonic()
    asyncio.get_running_loop().call_later(1.0, heartbeat)


def watch(max_rss: int, interval: float = 0.5, stuck: float = STUCK) -> None:
    """In a worker: stop it (SIGKILL, so that no request holds it) once it holds more than
    `max_rss` MiB, its event loop has not run for `stuck` seconds (uvicorn's supervisor pings
    a thread of its own, which answers while the loop hangs), or its parent is gone. The
    supervisor starts a replacement."""
    parent = os.getppid()
    page = os.sysconf("SC_PAGE_SIZE")

    def check() -> None:
        while True:
            with open("/proc/self/statm") as f:
                rss = int(f.read().split()[1]) * page >> 20
            hung = _BEAT[0] and time.monotonic() - _BEAT[0] > stuck
            if rss > max_rss or hung or os.getppid() != parent:
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(interval)

    if os.path.exists("/proc/self/statm"):
        threading.Thread(target=check, daemon=True, name="taskpack-watch").start()


def _raise_file_limit() -> None:
    """Connections are files: the soft limit raised to the hard one (often 1,024 -> 1M)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


@contextlib.contextmanager
def background(app: Any, host: str = "127.0.0.1", **options: Any) -> Iterator[str]:
    """`app` served on a free port from a thread of this process, for as long as the block
    runs: the URL. For tests and notebooks; `taskpack serve` runs `run`."""
    server = uvicorn.Server(config(app, host, 0, **options))
    sock = server.config.bind_socket()
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        port = sock.getsockname()[1]
        yield f"http://{'[' + host + ']' if ':' in host else host}:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
