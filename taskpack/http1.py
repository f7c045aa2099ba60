"""The HTTP/1.1 server `taskpack serve` runs on: uvloop's event loop and httptools' parser
(llhttp, Node.js's), and here only what a server must decide for itself.

Why its own and not granian or uvicorn: on 2 cores shared with the load generator, this server
answering fixed bytes answers 1.1 to 1.25x the requests/s of nginx serving the same bytes from
disk, and 0.75 to 1.02x serving 20,000 kept tasks at random; granian answering fixed bytes gave
0.7 to 0.9x, uvicorn 0.4x (bench/serve.py, bench/RESULTS.md). What makes it fast is what a
request answered from the application's cache skips: no scope object, no queue, no coroutine,
no thread; the answer's status line and headers are made once and kept with it.

What it bounds, so that no client holds more than its share: a request's head (MAX_HEAD, else
431, refused before the rest is read), its body (MAX_BODY, else 413, refused from its
Content-Length before it is read), the time a client has to send a request (IDLE seconds from
when it has been sent everything and nothing is left to answer: a half-sent request and an
idle keep-alive connection are both closed), the time it has to take what it is sent (IDLE
seconds in which it takes none of it, and the connection is dropped), what is written to it
and not yet taken (no request is answered while the transport holds more than its high-water
mark: a client pipelining requests it never reads holds one answer, not every answer),
pipelined requests waiting on one connection (reading stops past QUEUED), and a file in memory
(sent CHUNK at a time, as fast as the client takes it).
Workers are processes (spawned: the parent has opened Parquet files and holds threads), each
with its own listening socket on the one port (SO_REUSEPORT: the kernel spreads connections).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import math
import multiprocessing
import os
import signal
import socket
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from multiprocessing.connection import wait
from pathlib import Path
from typing import Protocol, cast
from urllib.parse import unquote

import httptools

from taskpack.errors import TaskpackError

MAX_HEAD = 32 << 10  # bytes a request's line and headers may take
MAX_BODY = 64 << 10  # bytes a request's body may take
IDLE = 10.0  # seconds a client has to send a request once the connection has nothing to answer
QUEUED = 16  # pipelined requests waiting on one connection before it is read no further
CHUNK = 64 << 10  # bytes per piece of a file sent
BACKLOG = 2048  # connections the kernel queues before they are accepted
_NEVER = math.inf
HEAD_TOO_LARGE = f"a request line and headers over {MAX_HEAD} bytes"
BODY_TOO_LARGE = f"a body over {MAX_BODY} bytes"


@dataclass(slots=True)  # an answer kept is read on every hit: no __dict__ to reach through
class Response:
    status: int
    content_type: str
    body: bytes = b""
    path: Path | None = None  # a file sent from disk instead of `body`
    cacheable: bool = False  # the same request always gets these bytes
    head: bytes | None = None  # the status line and headers as sent (`head_of`), made once


class HttpError(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class Application(Protocol):
    """What the server asks of the application behind it."""

    def ready(self, method: str, path: str, query: str, host: str) -> Response | None:
        """The answer when it needs no work (a refusal, or one kept), else None."""

    def work(
        self, path: str, query: str, method: str, body: bytes, headers: Mapping[str, str]
    ) -> Awaitable[Response]:
        """The answer to a request `ready` had none for; never raises."""

    def headers(self, response: Response) -> list[tuple[str, str]]:
        """The answer's headers, its length aside."""

    def error(self, status: int, message: str) -> Response:
        """The answer to a request the server refuses itself."""

    def close(self) -> None:
        """Let go of what the application holds: the server is stopping."""


def refused_length(length: str | None) -> bool:
    """A request's Content-Length that is no number or over MAX_BODY: refused unread."""
    return length is not None and (not length.isdigit() or int(length) > MAX_BODY)


@dataclass(slots=True)
class _Request:
    method: str
    url: bytes
    fields: dict[str, str]
    body: bytes
    keep_alive: bool
    refusal: Response | None = None  # no request: the error this connection ends with


class _Server:
    """A worker's connections, and the once-a-second tick that keeps the Date header and
    closes the connections whose client is past its time."""

    def __init__(self, app: Application, loop: asyncio.AbstractEventLoop) -> None:
        self.app = app
        self.loop = loop
        self.connections: set[_Connection] = set()
        self.parent = os.getppid()
        self.now = 0.0
        self.date = b""
        self._timer: asyncio.TimerHandle | None = None

    def tick(self, orphaned: Callable[[], None] | None = None) -> None:
        self.now = self.loop.time()
        self.date = f"date: {formatdate(usegmt=True)}\r\n".encode()
        for late in [c for c in self.connections if c.late(self.now)]:
            late.close(drop=True)
        if orphaned is not None and os.getppid() != self.parent:
            orphaned()  # the parent is gone without stopping this worker
        self._timer = self.loop.call_later(1.0, self.tick, orphaned)

    def connection(self) -> _Connection:
        return _Connection(self)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for c in list(self.connections):
            c.close()


class _Connection(asyncio.Protocol):
    """One client's connection: its requests parsed as they arrive, answered in order."""

    def __init__(self, server: _Server) -> None:
        self.server = server
        self.app = server.app
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.waiting: deque[_Request] = deque()
        self.busy = False  # an answer is being made or a file sent
        self.closed = False
        self.reading = True
        self.deadline = server.now + IDLE  # _NEVER while the server owes an answer
        self.drained = asyncio.Event()  # set while the transport is under its high-water mark
        self.drained.set()
        self._written = 0  # bytes handed to the transport
        self._taken = -1  # of those, the ones gone from it at the last look (-1: none owed)
        self._taking = 0.0  # when that count last moved
        self._url = b""
        self._fields: dict[str, str] = {}
        self._body = b""
        self._head = 0  # bytes of the head parsed so far
        self._in_head = False
        self._seen = 0  # bytes received while the head is incomplete (httptools holds a part)
        self._refusal: HttpError | None = None

    # --- asyncio ----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is one, not a subclass
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)
        self.drained.set()

    def pause_writing(self) -> None:
        self.drained.clear()

    def resume_writing(self) -> None:
        self.drained.set()
        self._next()  # the requests held back while the client was behind

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            refusal = self._refusal or HttpError(HTTPStatus.BAD_REQUEST, "not an HTTP/1.1 request")
            self._refuse(refusal.status, str(refusal))
            return
        if self._in_head:
            self._seen += len(data)
            if self._seen > MAX_HEAD:
                self._refuse(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, HEAD_TOO_LARGE)

    # --- httptools' callbacks ---------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url, self._fields, self._body = b"", {}, b""
        self._head = self._seen = 0
        self._in_head = True

    def on_url(self, url: bytes) -> None:
        self._url += url
        self._head += len(url)  # llhttp bounds nothing itself: on_header checks the sum

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head += len(name) + len(value) + 4
        if self._head > MAX_HEAD:
            self._refusing(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, HEAD_TOO_LARGE)
        key = name.decode("latin-1").lower()
        if key == "host" and key in self._fields:
            self._refusing(HTTPStatus.BAD_REQUEST, "more than one Host header")
        self._fields[key] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self._in_head = False
        if self._head > MAX_HEAD:  # a long line with few headers
            self._refusing(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, HEAD_TOO_LARGE)
        if self.parser.should_upgrade():  # refused before it is answered
            self._refusing(HTTPStatus.BAD_REQUEST, "protocol upgrades are not served")
        if refused_length(self._fields.get("content-length")):
            self._refusing(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, BODY_TOO_LARGE)
        if self._fields.get("expect", "").lower() == "100-continue" and self.transport:
            self._write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        self._body += body
        if len(self._body) > MAX_BODY:
            self._refusing(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, BODY_TOO_LARGE)

    def on_message_complete(self) -> None:
        self.deadline = _NEVER  # the request is in: the rest is the server's to do
        method = self.parser.get_method().decode("latin-1")
        keep = self.parser.should_keep_alive()
        request = _Request(method, self._url, self._fields, self._body, keep)
        if not self.busy and not self.waiting and self.drained.is_set():
            self._answer(request)  # as most are: no queue
            return
        self.waiting.append(request)
        if len(self.waiting) > QUEUED and self.transport is not None:
            self.transport.pause_reading()
            self.reading = False

    def _refusing(self, status: HTTPStatus, message: str) -> None:
        """Stop the parse (httptools raises it on as a parser error) with this answer."""
        self._refusal = HttpError(status, message)
        raise self._refusal

    # --- answering --------------------------------------------------------------------------

    def _next(self) -> None:
        """Answer the waiting requests in order, until one needs work or the client is behind
        in taking the answers; once none wait, reading goes on."""
        while self.waiting and not self.busy and not self.closed and self.drained.is_set():
            self._answer(self.waiting.popleft())
        if not self.waiting and not self.reading and not self.closed and self.transport:
            self.transport.resume_reading()
            self.reading = True

    def _answer(self, request: _Request) -> None:
        """At once when the application has the answer ready, else on a task of its own
        (the connection busy until it is sent)."""
        if self.closed:
            return
        if request.refusal is not None:
            self._send(request.refusal, request)
            return
        host = request.fields.get("host", "")
        target = request.url
        if not target.startswith(b"/"):
            # An absolute-form request (`GET http://other.host/...`) names its host in the
            # request line, which then stands for the Host header (RFC 9112).
            try:
                url = httptools.parse_url(target)
            except httptools.HttpParserInvalidURLError:
                self.waiting.clear()  # they came after it
                self._refuse(HTTPStatus.BAD_REQUEST, "not a URL")
                return
            host = (url.host or b"").decode("latin-1") + (f":{url.port}" if url.port else "")
            target = (url.path or b"/") + (b"?" + url.query if url.query else b"")
        raw, _, query = target.decode("latin-1").partition("?")
        path = unquote(raw) if "%" in raw else raw
        response = self.app.ready(request.method, path, query, host)
        if response is not None:
            self._send(response, request)
        else:
            self.busy = True
            self.deadline = _NEVER
            self.server.loop.create_task(self._work(request, path, query))

    async def _work(self, request: _Request, path: str, query: str) -> None:
        try:
            body, fields = request.body, request.fields
            response = await self.app.work(path, query, request.method, body, fields)
            if self.closed:
                return
            if response.path is not None and request.method != "HEAD":
                await self._send_file(response, request)
            else:
                self._send(response, request)
        except OSError:  # the file went away under a send begun: the length can't be kept
            self.close()
        finally:
            self.busy = False
        self._next()

    def _send(self, response: Response, request: _Request) -> None:
        head = response.head
        if head is None:
            size = response.path.stat().st_size if response.path is not None else None
            head = head_of(response, self.app.headers(response), size)
            if response.path is None:
                response.head = head
        body = response.body if request.method != "HEAD" else b""
        self._write(b"".join((head, self.server.date, _ending(request), body)))
        self._sent(request)

    async def _send_file(self, response: Response, request: _Request) -> None:
        assert response.path is not None and self.transport is not None
        loop = self.server.loop
        with response.path.open("rb") as f:
            head = head_of(response, self.app.headers(response), os.fstat(f.fileno()).st_size)
            self._write(b"".join((head, self.server.date, _ending(request))))
            while not self.closed:
                piece = await loop.run_in_executor(None, f.read, CHUNK)
                if not piece:
                    break
                self._write(piece)
                await self.drained.wait()
        self._sent(request)

    def _sent(self, request: _Request) -> None:
        self.deadline = self.server.now + IDLE  # the client's turn
        if not request.keep_alive:
            self.close()

    def _refuse(self, status: HTTPStatus, message: str) -> None:
        """End the connection with an error, answered after the requests that came before
        what it refuses (one may still be worked on): what follows is not read."""
        if self.reading and self.transport is not None:
            self.transport.pause_reading()
            self.reading = False
        error = self.app.error(status, message)
        self.waiting.append(_Request("GET", b"", {}, b"", keep_alive=False, refusal=error))
        self._next()

    def _write(self, data: bytes) -> None:
        assert self.transport is not None
        self._written += len(data)
        self.transport.write(data)

    def late(self, now: float) -> bool:
        """Whether the client is past its time: it has taken none of what it is owed for IDLE
        seconds, or, owed nothing, sent no request by its deadline. Asked once a second, it
        also moves that deadline on while bytes are owed: it starts once the client has taken
        the last one, however long a big answer took it."""
        owed = self.transport.get_write_buffer_size() if self.transport is not None else 0
        if not owed:
            self._taken = -1
            return self.deadline < now
        taken = self._written - owed
        if taken != self._taken:  # it took some since the last look, or now owes the first
            self._taken, self._taking = taken, now
        if self.deadline != _NEVER:
            self.deadline = max(self.deadline, now + IDLE)
        return self._taking + IDLE < now

    def close(self, *, drop: bool = False) -> None:
        """`drop`: at once, what is still owed not sent (a closing transport sends it first, and
        a client that does not read would hold the connection and its buffer for good)."""
        if not self.closed and self.transport is not None:
            self.closed = True
            (self.transport.abort if drop else self.transport.close)()
        self.drained.set()


def head_of(response: Response, headers: list[tuple[str, str]], size: int | None = None) -> bytes:
    """The answer's status line and `headers`, its content length (`size`, else its body's)
    last; the Date line and the blank line follow when it is sent."""
    status = HTTPStatus(response.status)
    lines = [f"HTTP/1.1 {status.value} {status.phrase}"]
    lines += [f"{name}: {value}" for name, value in headers]
    lines.append(f"content-length: {len(response.body) if size is None else size}")
    if any("\r" in line or "\n" in line for line in lines):
        raise ValueError(f"a header holds a line break: {lines!r}")
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


def _ending(request: _Request) -> bytes:
    return b"\r\n" if request.keep_alive else b"connection: close\r\n\r\n"


# --- running ---------------------------------------------------------------------------------


def address(host: str, port: int) -> tuple[str, int]:
    """The address to serve on, `port` 0 made a free port, or one error line saying why
    there is none: tried by binding it here, then released for the workers to bind."""
    with _bound(host, port, shared=False) as sock:
        return str(sock.getsockname()[0]), int(sock.getsockname()[1])


@contextlib.contextmanager
def _bound(host: str, port: int, shared: bool) -> Iterator[socket.socket]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        reason = e.strerror
        raise TaskpackError(f"--host {host!r}: not an address of this machine ({reason})") from None
    family, kind, proto, _, found = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            sock.bind(found)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                taken = f"port {port} on {host} is in use (--port 0 takes a free one)"
                raise TaskpackError(taken) from None
            raise TaskpackError(f"cannot listen on {host}:{port}: {e.strerror}") from None
        yield sock


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's (the `serve` extra installs it: 1.15x the requests/s), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _raise_file_limit() -> None:
    """Open files up to the hard limit: each idle client holds one."""
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def run(factory: Callable[[], Application], host: str, port: int, workers: int) -> None:
    """Serve until interrupted (SIGINT or SIGTERM), on `workers` processes that each build
    the application with `factory` (picklable: they are spawned) and listen on the port.
    A worker that ends on its own ends the others: the error names its exit code."""
    _raise_file_limit()
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_worker, args=(factory, host, port), name=f"taskpack-serve-{i}")
        for i in range(workers)
    ]
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        for p in processes:
            p.start()
        wait([p.sentinel for p in processes])
        ended = next(p for p in processes if not p.is_alive())
        raise TaskpackError(f"server worker {ended.name} ended (exit code {ended.exitcode})")
    finally:
        signal.signal(signal.SIGTERM, previous)
        for p in processes:
            if p.is_alive():
                p.terminate()
        for p in processes:
            p.join(10)
            if p.is_alive():
                p.kill()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _worker(factory: Callable[[], Application], host: str, port: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops its workers with SIGTERM
    loop = _new_loop()
    app = factory()
    server = _Server(app, loop)
    with _bound(host, port, shared=True) as sock:
        sock.listen(BACKLOG)
        loop.add_signal_handler(signal.SIGTERM, loop.stop)
        listening = loop.run_until_complete(loop.create_server(server.connection, sock=sock))
        server.tick(orphaned=loop.stop)
        try:
            loop.run_forever()
        finally:
            listening.close()
            server.close()
            app.close()


@contextlib.contextmanager
def background(app: Application, host: str = "127.0.0.1") -> Iterator[str]:
    """`app` served on a free port from a thread of this process (for tests and notebooks):
    yields its base URL; stopped at the end of the block."""
    loop = _new_loop()
    server = _Server(app, loop)
    started = threading.Event()
    with _bound(host, 0, shared=False) as sock:
        sock.listen(BACKLOG)

        def serve() -> None:
            listening = loop.run_until_complete(loop.create_server(server.connection, sock=sock))
            server.tick()
            loop.call_soon(started.set)
            try:
                loop.run_forever()
            finally:
                listening.close()
                server.close()
                loop.run_until_complete(loop.shutdown_default_executor())
                loop.close()

        thread = threading.Thread(target=serve, name="taskpack-serve", daemon=True)
        thread.start()
        started.wait(10)
        ip, port = sock.getsockname()[:2]
        try:
            yield f"http://{ip if ':' not in ip else f'[{ip}]'}:{port}"
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            app.close()
