"""One task from a taskpack server (`taskpack serve`), with the standard library alone: for a
worker that needs task i at episode start and should not pay for pyarrow or pydantic.

    from taskpack.fetch import task, file
    t = task("http://10.0.0.5:8000", "train", 7, digest="sha256:...")   # the pinned version
    f = t["files"][0]
    code = file("http://10.0.0.5:8000", f["sha256"], f["size"])

Nothing the server says is taken on trust. The task comes as the content its digest covers
(its canonical JSON: every field, files by sha256); the split's list of task digests is
fetched once per machine and kept in the cache (`<cache>/fetch/`, named by the version digest)
once it chains to the split digest, and the split digests to the version digest; the task's
digest must then be the list's entry at its row. With `digest`, the version must be that one
(a lockfile's, or `NAME@sha256:...`): the only answer a server could forge is then refused
too. A file's bytes must hash to the sha256 the task names.

HTTP is spoken over a socket here: `http.client` imports the `email` and `ssl` packages, which
cost a fresh process more than the rest of an episode start (bench/episode.py); https:// goes
through it.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from urllib.parse import urlsplit

from taskpack.base.digests import chains_to, content_digest, version_digest
from taskpack.base.routes import url
from taskpack.base.settings import cache_root

TYPE_CHECKING = False  # as in taskpack/__init__.py: typing stays unimported
if TYPE_CHECKING:
    from typing import Any

TIMEOUT = 60.0  # seconds one call (`task`, `file`) may take in all, however the server trickles
MAX_ANSWER = 64 << 20  # bytes of a JSON answer (the version, one task) read at most
MAX_FILE = 1 << 30  # bytes of a file whose size the caller does not give


class FetchError(Exception):
    """The server could not be reached, refused the request, or sent what does not check."""


class _Deadline:
    """One bound on the time of a whole call, however many reads it takes (a server that
    sends a byte every 2 s keeps each read alive, never the call)."""

    def __init__(self, seconds: float) -> None:
        import time

        self._clock = time.monotonic
        self.end = self._clock() + seconds

    def left(self, what: str) -> float:
        left = self.end - self._clock()
        if left <= 0:
            raise FetchError(f"{what}: no complete answer within {TIMEOUT:g} s")
        return left


def _get(server: str, path: str, limit: int, deadline: _Deadline) -> bytes:
    """The body of GET `path`: at most `limit` bytes (a longer answer is refused before it is
    read when the server says its length, else as soon as it passes the bound), by
    `deadline`; no redirect is followed."""
    url = urlsplit(server)
    if url.scheme == "https":
        import http.client

        conn = http.client.HTTPSConnection(url.netloc, timeout=deadline.left(server))
        try:
            conn.request("GET", url.path.rstrip("/") + path)
            response = conn.getresponse()
            length = response.getheader("Content-Length")
            if length is not None and (not length.isdigit() or int(length) > limit):
                raise FetchError(f"{server}{path}: an answer of {length} bytes (at most {limit})")
            status, body = response.status, response.read(limit + 1)
            deadline.left(f"{server}{path}")
        except (OSError, http.client.HTTPException) as e:
            raise FetchError(f"{server}: cannot reach it ({e})") from None
        finally:
            conn.close()
        if len(body) > limit:
            raise FetchError(f"{server}{path}: an answer of more than {limit} bytes")
    elif url.scheme == "http" and url.hostname:
        try:
            port = url.port or 80
        except ValueError:
            raise FetchError(f"{server}: not a port") from None
        where = url.path.rstrip("/") + path
        status, body = _plain_get(url.hostname, port, where, limit, deadline)
    else:
        raise FetchError(f"{server}: expected http://HOST:PORT or https://...")
    if status != 200:
        try:
            reason = json.loads(body)["error"]
        except (ValueError, KeyError, TypeError):
            reason = body[:200].decode("utf-8", "replace")
        raise FetchError(f"{server}{path}: HTTP {status}: {str(reason)[:200]}")
    return body


_HEAD_MAX = 64 << 10  # bytes of status line and headers


def _plain_get(
    host: str, port: int, path: str, limit: int, deadline: _Deadline
) -> tuple[int, bytes]:
    """GET over HTTP/1.1 on one connection; the body by its Content-Length (taskpack's server
    always sends one) or, failing that, to the connection's end; never more than `limit`
    bytes of body, read into one buffer of that size at most."""
    where = f"http://{host}:{port}{path}"
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept-Encoding: identity\r\n"
        "Connection: close\r\n\r\n"
    ).encode("latin-1")
    try:
        with socket.create_connection((host, port), timeout=deadline.left(where)) as conn:
            conn.sendall(request)
            data = bytearray()
            while b"\r\n\r\n" not in data:
                conn.settimeout(deadline.left(where))
                chunk = conn.recv(1 << 16)
                if not chunk or len(data) > _HEAD_MAX:
                    raise FetchError(f"{where}: not an HTTP answer")
                data += chunk
            head, _, first = bytes(data).partition(b"\r\n\r\n")
            status, fields = _head(head, where)
            length = fields.get(b"content-length")
            chunked = fields.get(b"transfer-encoding", b"").strip().lower() == b"chunked"
            if length is not None:
                if not length.strip().isdigit() or int(length) > limit:
                    raise FetchError(f"{where}: an answer of {length.decode()} bytes")
                want = int(length)
            else:  # to the end: chunked framing takes a little more than the body
                want = limit + (limit >> 4) + 4096 if chunked else limit + 1
            body = bytearray(first)
            while len(body) < want:
                conn.settimeout(deadline.left(where))
                chunk = conn.recv(min(1 << 20, want - len(body)))
                if not chunk:
                    break
                body += chunk
    except TimeoutError:
        raise FetchError(f"{where}: no complete answer within {TIMEOUT:g} s") from None
    except OSError as e:
        raise FetchError(f"{where}: cannot reach it ({e})") from None
    if len(body) > limit and not chunked:  # checked before any copy of it is made
        raise FetchError(f"{where}: an answer of more than {limit} bytes")
    whole = _unchunk(bytes(body)) if chunked else bytes(body)
    if whole is None or (length is not None and len(whole) != int(length)):
        raise FetchError(f"{where}: the answer was cut short")
    if len(whole) > limit:
        raise FetchError(f"{where}: an answer of more than {limit} bytes")
    return status, whole


def _head(head: bytes, where: str) -> tuple[int, dict[bytes, bytes]]:
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split(b" ", 2)[1])
    except (IndexError, ValueError):
        raise FetchError(f"{where}: not an HTTP answer") from None
    fields = dict(line.lower().split(b":", 1) for line in lines[1:] if b":" in line)
    return status, {k.strip(): v.strip() for k, v in fields.items()}


def _unchunk(data: bytes) -> bytes | None:
    """A chunked body's bytes (a proxy in between may send one so), None if cut short."""
    body, at = bytearray(), 0
    while True:
        end = data.find(b"\r\n", at)
        if end < 0:
            return None
        try:
            size = int(data[at:end].split(b";")[0], 16)
        except ValueError:
            return None
        if size == 0:
            return bytes(body)
        body += data[end + 2 : end + 2 + size]
        at = end + 2 + size + 2
        if at > len(data):
            return None


def _json(server: str, path: str, deadline: _Deadline) -> Any:
    try:
        return json.loads(_get(server, path, MAX_ANSWER, deadline))
    except ValueError:
        raise FetchError(f"{server}{path}: not JSON") from None


def _version(server: str, pinned: str | None, deadline: _Deadline) -> dict[str, Any]:
    """The served version, its digest chained from its splits' (and `pinned`, if given)."""
    top = _json(server, url("version"), deadline)
    try:
        splits = {name: info["digest"] for name, info in top["splits"].items()}
        rows = {name: int(info["rows"]) for name, info in top["splits"].items()}
        chained = version_digest(top) == top["digest"]
    except (KeyError, TypeError, ValueError, AttributeError):
        raise FetchError(f"{server}: not a taskpack server's version") from None
    if not chained:
        raise FetchError(f"{server}: the version digest does not cover what it lists")
    if pinned is not None and top["digest"] != pinned:
        raise FetchError(f"{server}: serves {top['digest']}, not the pinned {pinned}")
    return {"digest": top["digest"], "splits": splits, "rows": rows}


def _kept(version: str, split: str) -> str:
    """Where this machine keeps a split's checked task digests: named by the version digest."""
    name = hashlib.sha256(f"{version} {split}".encode()).hexdigest()
    return os.path.join(cache_root(), "fetch", name[:2], name)


def _entry(path: str, row: int) -> bytes | None:
    """Entry `row` of a kept list of task digests (None: no such row): 32 bytes read, not the
    list, which is 32 MB for a million tasks."""
    if row < 0:
        return None
    with open(path, "rb") as f:
        f.seek(row * 32)
        found = f.read(32)
    return found if len(found) == 32 else None


def _digests(server: str, top: dict[str, Any], split: str, deadline: _Deadline) -> str:
    """Where the split's task digests (32 bytes each) are kept, fetched and checked against
    its digest if this machine does not hold them yet: exactly 32 bytes a row."""
    path = _kept(top["digest"], split)
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with _OneAtATime(f"{path}.lock"):  # a node's processes starting at once fetch it once
        if os.path.exists(path):
            return path
        size = 32 * top["rows"][split]
        packed = _get(server, url("digests", split=split), size, deadline)
        digests = ["sha256:" + packed[i : i + 32].hex() for i in range(0, len(packed), 32)]
        if len(packed) != size or not chains_to(digests, top["splits"][split]):
            raise FetchError(f"{server}: the task digests of split {split!r} do not chain to it")
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(packed)
        os.replace(tmp, path)
    return path


class _OneAtATime:
    """An exclusive lock on a file (`flock`, released when its descriptor closes, so also when
    the process dies); none where the platform has no `fcntl`. The holder's own deadline bounds
    the wait. Not `taskpack.base.fs.file_lock`: that one is the `filelock` package, and this module
    runs on the standard library alone."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            import fcntl
        except ImportError:
            return
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def task(
    server: str,
    split: str,
    index: int | None = None,
    *,
    id: str | None = None,
    digest: str | None = None,
) -> dict[str, Any]:
    """Task `index` (or the task with id `id`) of `split`, as the content its digest covers,
    checked from the task up to the version (`digest`, when pinned)."""
    if (index is None) == (id is None):
        raise FetchError("give an index or an id")
    deadline = _Deadline(TIMEOUT)
    # A pinned version whose digests this machine holds needs no more than the task itself.
    kept = _kept(digest, split) if digest is not None else None
    if kept is None or not os.path.exists(kept):
        top = _version(server, digest, deadline)
        if split not in top["splits"]:
            names = ", ".join(top["splits"])
            raise FetchError(f"{server}: no split {split!r} (splits: {names})")
        kept = _digests(server, top, split, deadline)
    if index is not None:
        where = url("task", split=split, index=int(index))
    else:
        where = url("task_by_id", split=split, id=str(id))
    answer = _json(server, where + "?canonical=1", deadline)
    try:
        row, content = answer["index"], answer["canonical"]
        entry = _entry(kept, row) if type(row) is int else None
        checked = entry is not None and content_digest(content) == "sha256:" + entry.hex()
    except (KeyError, TypeError, ValueError, AttributeError):
        raise FetchError(f"{server}: not a task in the answer to {where}") from None
    if entry is None:
        raise FetchError(f"{server}: row {row!r} is not in split {split!r}")
    if not checked:
        raise FetchError(f"{server}: task at row {row} of {split!r} is not the one published")
    if (index is not None and row != index) or (id is not None and content.get("id") != id):
        raise FetchError(f"{server}: answered another task than the one asked for")
    return dict(content)


def file(server: str, sha256: str, size: int | None = None) -> bytes:
    """A task file's bytes, by the sha256 its task names (and checked against it); `size`,
    the task's size of it, bounds what is read (else `MAX_FILE`)."""
    path = url("file", sha256=sha256)
    data = _get(server, path, MAX_FILE if size is None else size, _Deadline(TIMEOUT))
    if hashlib.sha256(data).hexdigest() != sha256:
        raise FetchError(f"{server}: file {sha256} has other bytes")
    return data
