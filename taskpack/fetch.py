"""One task from a taskpack server (`taskpack serve`), with the standard library alone: for a
worker that needs task i at episode start and should not pay for pyarrow or pydantic.

    from taskpack.fetch import task, file
    t = task("http://10.0.0.5:8000", "train", 7, digest="sha256:...")   # the pinned version
    code = file("http://10.0.0.5:8000", t["files"][0]["sha256"])

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
from urllib.parse import quote, urlsplit

from taskpack.digests import chains_to, content_digest, version_digest

TYPE_CHECKING = False  # as in taskpack/__init__.py: typing stays unimported
if TYPE_CHECKING:
    from typing import Any

TIMEOUT = 60.0


class FetchError(Exception):
    """The server could not be reached, refused the request, or sent what does not check."""


def _get(server: str, path: str) -> bytes:
    url = urlsplit(server)
    if url.scheme == "https":
        import http.client

        conn = http.client.HTTPSConnection(url.netloc, timeout=TIMEOUT)
        try:
            conn.request("GET", url.path.rstrip("/") + path)
            response = conn.getresponse()
            status, body = response.status, response.read()
        finally:
            conn.close()
    elif url.scheme == "http" and url.hostname:
        status, body = _plain_get(url.hostname, url.port or 80, url.path.rstrip("/") + path)
    else:
        raise FetchError(f"{server}: expected http://HOST:PORT or https://...")
    if status != 200:
        try:
            reason = json.loads(body)["error"]
        except (ValueError, KeyError, TypeError):
            reason = body[:200].decode("utf-8", "replace")
        raise FetchError(f"{server}{path}: HTTP {status}: {reason}")
    return body


def _plain_get(host: str, port: int, path: str) -> tuple[int, bytes]:
    """GET over HTTP/1.1 on one connection; the body by its Content-Length (taskpack's server
    always sends one) or, failing that, to the connection's end."""
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept-Encoding: identity\r\n"
        "Connection: close\r\n\r\n"
    ).encode("latin-1")
    try:
        with socket.create_connection((host, port), timeout=TIMEOUT) as conn:
            conn.sendall(request)
            data = bytearray()
            while chunk := conn.recv(1 << 20):
                data += chunk
    except OSError as e:
        raise FetchError(f"http://{host}:{port}: cannot reach it ({e})") from None
    head, sep, body = bytes(data).partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split(b" ", 2)[1])
    except (IndexError, ValueError):
        raise FetchError(f"http://{host}:{port}{path}: not an HTTP answer") from None
    fields = dict(line.lower().split(b":", 1) for line in lines[1:] if b":" in line)
    length = fields.get(b"content-length")
    chunked = fields.get(b"transfer-encoding", b"").strip().lower() == b"chunked"
    whole = _unchunk(body) if chunked else body
    if not sep or whole is None or (length is not None and len(whole) != int(length)):
        raise FetchError(f"http://{host}:{port}{path}: the answer was cut short")
    return status, whole


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


def _cache_dir() -> str:
    base = os.environ.get("TASKPACK_CACHE")
    if not base:
        home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(home, "taskpack")
    return os.path.join(base, "fetch")


def _version(server: str, pinned: str | None) -> dict[str, Any]:
    """The served version, its digest chained from its splits' (and `pinned`, if given)."""
    top = json.loads(_get(server, "/api/v1"))
    splits = {name: info["digest"] for name, info in top["splits"].items()}
    if version_digest(splits, top["format_version"]) != top["digest"]:
        raise FetchError(f"{server}: the version digest is not its splits' digest")
    if pinned is not None and top["digest"] != pinned:
        raise FetchError(f"{server}: serves {top['digest']}, not the pinned {pinned}")
    return dict(top)


def _kept(version: str, split: str) -> str:
    """Where this machine keeps a split's checked task digests: named by the version digest."""
    name = hashlib.sha256(f"{version} {split}".encode()).hexdigest()
    return os.path.join(_cache_dir(), name[:2], name)


def _entry(path: str, row: int) -> bytes | None:
    """Entry `row` of a kept list of task digests (None: no such row): 32 bytes read, not the
    list, which is 32 MB for a million tasks."""
    if row < 0:
        return None
    with open(path, "rb") as f:
        f.seek(row * 32)
        found = f.read(32)
    return found if len(found) == 32 else None


def _digests(server: str, version: str, split: str, split_digest: str) -> str:
    """Where the split's task digests (32 bytes each) are kept, fetched and checked against
    its digest if this machine does not hold them yet."""
    path = _kept(version, split)
    if os.path.exists(path):
        return path
    packed = _get(server, f"/api/v1/splits/{quote(split, safe='')}/digests")
    digests = ["sha256:" + packed[i : i + 32].hex() for i in range(0, len(packed), 32)]
    if len(packed) % 32 or not chains_to(digests, split_digest):
        raise FetchError(f"{server}: the task digests of split {split!r} do not chain to it")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(packed)
    os.replace(tmp, path)
    return path


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
    # A pinned version whose digests this machine holds needs no more than the task itself.
    kept = _kept(digest, split) if digest is not None else None
    if kept is None or not os.path.exists(kept):
        top = _version(server, digest)
        if split not in top["splits"]:
            names = ", ".join(top["splits"])
            raise FetchError(f"{server}: no split {split!r} (splits: {names})")
        kept = _digests(server, top["digest"], split, top["splits"][split]["digest"])
    where = f"/api/v1/splits/{quote(split, safe='')}"
    if index is not None:
        where += f"/tasks/{int(index)}?canonical=1"
    else:
        where += f"/by-id/{quote(str(id), safe='')}?canonical=1"
    answer = json.loads(_get(server, where))
    row, content = answer["index"], answer["canonical"]
    entry = _entry(kept, row) if isinstance(row, int) else None
    if entry is None:
        raise FetchError(f"{server}: row {row} is not in split {split!r}")
    if content_digest(content) != "sha256:" + entry.hex():
        raise FetchError(f"{server}: task at row {row} of {split!r} is not the one published")
    if (index is not None and row != index) or (id is not None and content.get("id") != id):
        raise FetchError(f"{server}: answered another task than the one asked for")
    return dict(content)


def file(server: str, sha256: str) -> bytes:
    """A task file's bytes, by the sha256 its task names (and checked against it)."""
    data = _get(server, f"/api/v1/files/{quote(sha256, safe='')}")
    if hashlib.sha256(data).hexdigest() != sha256:
        raise FetchError(f"{server}: file {sha256} has other bytes")
    return data
