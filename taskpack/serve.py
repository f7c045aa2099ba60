"""`taskpack serve REF`: one pinned version over HTTP, for sandboxes that cannot share a cache
or hold registry credentials, and a read-only HTML view to look at tasks.

JSON API (every response carries the version digest, in the body and in `X-Taskpack-Digest`):

    GET /api/v1                                  name, version, digest, splits and counts
    GET /api/v1/splits/SPLIT                     count and split digest
    GET /api/v1/splits/SPLIT/ids?offset=&limit=  a page of ids (limit <= 1000)
    GET /api/v1/splits/SPLIT/tasks/INDEX         task by position
    GET /api/v1/splits/SPLIT/by-id/ID            task by id
    GET /api/v1/files/SHA256                     a task file's bytes, hash-checked
    GET /openapi.json                            this API, as OpenAPI 3.1

HTML: `/` (splits), `/view/SPLIT?page=&q=&where=` (a page of tasks, filtered), and
`/view/SPLIT/ID` (one task: prompt, reward, files by role, metadata). Plain HTML, no scripts.
A bad request gets a 4xx and `{"error": ...}`, never a traceback.
"""

from __future__ import annotations

import hashlib
import html
import json
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from taskpack import records
from taskpack.errors import TaskpackError
from taskpack.model import Task
from taskpack.nesting import parse_json
from taskpack.taskset import Split, TaskSet

PAGE = 50
MAX_IDS = 1000


class HttpError(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class Catalog:
    """The served version: its splits opened once, each behind a lock (a split's row-group
    cache is not shared between threads), and an index of file hashes built on first need."""

    def __init__(self, ts: TaskSet) -> None:
        self.ts = ts
        self.digest = ts.manifest.digest
        self._splits: dict[str, Split] = {}
        self._locks = {name: threading.Lock() for name in ts.splits}
        self._files: dict[str, tuple[str, int]] | None = None
        self._files_lock = threading.Lock()

    def split(self, name: str) -> Split:
        if name not in self._locks:
            raise HttpError(HTTPStatus.NOT_FOUND, f"no split {name!r} (splits: {self.ts.splits})")
        with self._locks[name]:
            if name not in self._splits:
                self._splits[name] = self.ts.split(name)
            return self._splits[name]

    def read(self, name: str, read: Callable[[Split], Any]) -> Any:
        split = self.split(name)
        with self._locks[name]:
            return read(split)

    def file(self, sha: str) -> bytes:
        """A file of any task by content hash: a large file from the version's objects, an
        inline one from the row that holds it (found through the files' hash column)."""
        if any(sha in s.blobs for s in self.ts.manifest.splits.values()):
            data = self.ts.read_blob(sha)
        else:
            where = self._file_index().get(sha)
            if where is None:
                raise HttpError(HTTPStatus.NOT_FOUND, f"no task file {sha}")
            name, row = where
            task = self.read(name, lambda s: s[row])
            data = next(f for f in task.files if f.sha256 == sha).read_bytes()
        if hashlib.sha256(data).hexdigest() != sha:
            raise HttpError(HTTPStatus.INTERNAL_SERVER_ERROR, f"file {sha} failed its hash check")
        return data

    def _file_index(self) -> dict[str, tuple[str, int]]:
        with self._files_lock:
            if self._files is None:
                found: dict[str, tuple[str, int]] = {}
                for name in self.ts.splits:
                    column = self.read(
                        name, lambda s: s.columns(["files.list.element.sha256"]).column("files")
                    )
                    for row, files in enumerate(column.to_pylist()):
                        for f in files or ():
                            found.setdefault(f["sha256"], (name, row))
                self._files = found
            return self._files


def task_json(task: Task) -> dict[str, Any]:
    """The task as JSON, files by hash with the link that serves their bytes."""
    body = task.model_dump(mode="json", exclude={"files"})
    body["files"] = [
        {**f.model_dump(mode="json", exclude={"data"}), "href": f"/api/v1/files/{f.sha256}"}
        for f in task.files
    ]
    return body


def _int(query: dict[str, list[str]], key: str, default: int, low: int, high: int) -> int:
    try:
        value = int(query.get(key, [str(default)])[0])
    except ValueError:
        raise HttpError(HTTPStatus.BAD_REQUEST, f"{key}: expected an integer") from None
    if not low <= value <= high:
        raise HttpError(HTTPStatus.BAD_REQUEST, f"{key}: expected {low}..{high}")
    return value


class Handler(BaseHTTPRequestHandler):
    catalog: Catalog
    protocol_version = "HTTP/1.1"  # keep-alive: a client reuses its connection
    server_version = "taskpack"
    disable_nagle_algorithm = True  # headers and body leave at once, not 40 ms apart

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a load test would otherwise print a line per request."""

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/") if p]
        query = parse_qs(url.query)
        try:
            if parts[:2] == ["api", "v1"]:
                result = self._api(parts[2:], query)
                if isinstance(result, bytes):  # a file's bytes
                    self._send(HTTPStatus.OK, "application/octet-stream", result)
                else:
                    self._json(HTTPStatus.OK, result)
            elif parts == ["openapi.json"]:
                self._json(HTTPStatus.OK, openapi(self.catalog))
            elif not parts or parts[0] == "view":
                self._send(HTTPStatus.OK, "text/html; charset=utf-8", self._page(parts[1:], query))
            else:
                raise HttpError(HTTPStatus.NOT_FOUND, f"no such path {url.path!r}")
        except HttpError as e:
            self._json(e.status, {"error": str(e)})
        except (TaskpackError, ValueError, KeyError, IndexError) as e:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(e)})

    def _api(self, parts: list[str], query: dict[str, list[str]]) -> dict[str, Any] | bytes:
        c = self.catalog
        m = c.ts.manifest
        if not parts:
            splits = {n: {"rows": s.rows, "digest": s.digest} for n, s in m.splits.items()}
            return {"name": m.name, "version": m.version, "splits": splits}
        if parts[0] == "files" and len(parts) == 2:
            sha = parts[1]
            if len(sha) != 64 or any(ch not in "0123456789abcdef" for ch in sha):
                raise HttpError(HTTPStatus.BAD_REQUEST, "expected a sha256 in lowercase hex")
            return c.file(sha)
        if parts[0] != "splits" or len(parts) < 2:
            raise HttpError(HTTPStatus.NOT_FOUND, f"no such path /api/v1/{'/'.join(parts)}")
        name, rest = parts[1], parts[2:]
        split = c.split(name)
        if not rest:
            return {"split": name, "rows": len(split), "split_digest": split.digest}
        if rest == ["ids"]:
            offset = _int(query, "offset", 0, 0, len(split))
            limit = _int(query, "limit", 100, 1, MAX_IDS)
            ids = c.read(name, lambda s: s.ids()[offset : offset + limit])
            return {"split": name, "offset": offset, "total": len(split), "ids": ids}
        if len(rest) == 2 and rest[0] == "tasks":
            try:
                index = int(rest[1])
            except ValueError:
                raise HttpError(HTTPStatus.BAD_REQUEST, "index: expected an integer") from None
            if not 0 <= index < len(split):
                raise HttpError(
                    HTTPStatus.NOT_FOUND, f"index {index} out of range (0..{len(split) - 1})"
                )
            task = c.read(name, lambda s: s[index])
            return {"split": name, "index": index, "task": task_json(task)}
        if len(rest) == 2 and rest[0] == "by-id":
            task = c.read(name, lambda s: s.get(rest[1]))
            if task is None:
                raise HttpError(HTTPStatus.NOT_FOUND, f"split {name!r} has no task {rest[1]!r}")
            return {"split": name, "task": task_json(task)}
        raise HttpError(HTTPStatus.NOT_FOUND, f"no such path /api/v1/{'/'.join(parts)}")

    def _json(self, status: HTTPStatus, body: dict[str, Any]) -> None:
        body = {**body, "digest": self.catalog.digest}
        self._send(status, "application/json", json.dumps(body, ensure_ascii=False).encode())

    def _send(self, status: HTTPStatus, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Taskpack-Digest", self.catalog.digest)
        self.end_headers()
        self.wfile.write(data)

    # --- HTML -------------------------------------------------------------------------------

    def _page(self, parts: list[str], query: dict[str, list[str]]) -> bytes:
        c = self.catalog
        m = c.ts.manifest
        if not parts:
            items = "".join(
                f'<li><a href="/view/{quote(n)}">{html.escape(n)}</a> ({s.rows} tasks)</li>'
                for n, s in m.splits.items()
            )
            return _html(f"{m.name}@{m.version}", f"<ul>{items}</ul>", c.digest)
        name = parts[0]
        if len(parts) == 2:
            task = c.read(name, lambda s: s.get(parts[1]))
            if task is None:
                raise HttpError(HTTPStatus.NOT_FOUND, f"split {name!r} has no task {parts[1]!r}")
            return _html(f"{name} / {task.id}", _task_html(task), c.digest)
        return _html(name, self._list_html(name, query), c.digest)

    def _list_html(self, name: str, query: dict[str, list[str]]) -> str:
        split = self.catalog.split(name)
        q = query.get("q", [""])[0]
        where = query.get("where", [""])[0]
        ids = self.catalog.read(name, lambda s: s.ids())
        if where:
            key, sep, value = where.partition("=")
            if not sep:
                raise HttpError(HTTPStatus.BAD_REQUEST, "where: expected KEY=VALUE")
            try:
                wanted = parse_json(value)
            except ValueError:
                wanted = value
            ids = self.catalog.read(name, lambda s: s.filter(**{key: wanted}).ids())
        if q:
            ids = [i for i in ids if q.lower() in i.lower()]
        pages = max(1, -(-len(ids) // PAGE))
        page = _int(query, "page", 1, 1, pages)
        shown = ids[(page - 1) * PAGE : page * PAGE]
        rows = "".join(
            f'<li><a href="/view/{quote(name)}/{quote(i, safe="")}">{html.escape(i)}</a></li>'
            for i in shown
        )
        form = (
            f'<form method="get"><input name="q" value="{html.escape(q)}" placeholder="id has">'
            f' <input name="where" value="{html.escape(where)}" placeholder="difficulty=easy">'
            ' <button type="submit">filter</button></form>'
        )
        args = f"q={quote(q)}&where={quote(where)}"
        nav = " ".join(
            f'<a href="?page={p}&{args}">{label}</a>'
            for p, label in ((page - 1, "previous"), (page + 1, "next"))
            if 1 <= p <= pages
        )
        count = f"<p>{len(ids)} of {len(split)} tasks, page {page} of {pages}</p>"
        return f"{form}{count}<ol start={(page - 1) * PAGE + 1}>{rows}</ol><p>{nav}</p>"


def _html(title: str, body: str, digest: str) -> bytes:
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "pre{background:#f4f4f4;padding:.5em;white-space:pre-wrap}</style></head><body>"
        f'<p><a href="/">home</a></p><h1>{html.escape(title)}</h1>{body}'
        f"<footer><p>version digest <code>{html.escape(digest)}</code></p></footer></body></html>"
    ).encode()


def _pre(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    return f"<pre>{html.escape(text)}</pre>"


def _task_html(task: Task) -> str:
    parts = ["<h2>prompt</h2>"]
    for item in task.prompt:
        if isinstance(item, records.Message):
            parts.append(f"<h3>{html.escape(item.role)}</h3>{_pre(item.text)}")
        else:
            parts.append(f"<h3>{html.escape(item.type)}</h3>{_pre(item.model_dump(mode='json'))}")
    if task.answer is not None:
        parts.append(f"<h2>answer</h2>{_pre(task.answer)}")
    if task.reward is not None:
        parts.append(f"<h2>reward</h2>{_pre(task.reward.model_dump(mode='json'))}")
    roles = sorted({f.role for f in task.files})
    for role in roles:
        links = "".join(
            f'<li><a href="/api/v1/files/{f.sha256}">{html.escape(f.path)}</a>'
            f" ({f.size} bytes, mode {f.mode:o})</li>"
            for f in task.files
            if f.role == role
        )
        parts.append(f"<h2>files: {html.escape(role)}</h2><ul>{links}</ul>")
    if task.metadata:
        parts.append(f"<h2>metadata</h2>{_pre(task.metadata)}")
    return "".join(parts)


def openapi(catalog: Catalog) -> dict[str, Any]:
    """The JSON API as OpenAPI 3.1, so any client generator or viewer can read it."""
    m = catalog.ts.manifest

    def op(summary: str, params: list[str], ok: str = "application/json") -> dict[str, Any]:
        return {
            "get": {
                "summary": summary,
                "parameters": [
                    {
                        "name": p,
                        "in": "query" if p in ("offset", "limit") else "path",
                        "required": p not in ("offset", "limit"),
                        "schema": {
                            "type": "integer" if p in ("index", "offset", "limit") else "string"
                        },
                    }
                    for p in params
                ],
                "responses": {
                    "200": {"description": "OK", "content": {ok: {}}},
                    "400": {"description": "malformed request: {error}"},
                    "404": {"description": "no such split, index, id or file: {error}"},
                },
            }
        }

    return {
        "openapi": "3.1.0",
        "info": {"title": f"taskpack: {m.name}@{m.version}", "version": m.version},
        "paths": {
            "/api/v1": op("name, version, digest, splits", []),
            "/api/v1/splits/{split}": op("count and split digest", ["split"]),
            "/api/v1/splits/{split}/ids": op("a page of task ids", ["split", "offset", "limit"]),
            "/api/v1/splits/{split}/tasks/{index}": op("a task by position", ["split", "index"]),
            "/api/v1/splits/{split}/by-id/{id}": op("a task by id", ["split", "id"]),
            "/api/v1/files/{sha256}": op(
                "a task file's bytes, hash-checked", ["sha256"], "application/octet-stream"
            ),
        },
    }


def make_server(ts: TaskSet, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    """A server for `ts` (not yet serving: call `serve_forever()`)."""
    handler = type("BoundHandler", (Handler,), {"catalog": Catalog(ts)})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
