"""`taskpack serve`: one pinned version over HTTP (a JSON API and a read-only HTML view), or,
with `--mirror REGISTRY`, a pull-through mirror of a registry (`registry/mirror.py`).

JSON API (every response carries the version digest, in the body and in `X-Taskpack-Digest`):

    GET /api/v1                                  name, version, digest, splits and counts
    GET /api/v1/splits/SPLIT                     count and split digest
    GET /api/v1/splits/SPLIT/ids?offset=&limit=  a page of ids (limit <= 1000)
    GET /api/v1/splits/SPLIT/digests             every task digest, 32 bytes each, in order
    GET /api/v1/splits/SPLIT/tasks/INDEX         task by position
    GET /api/v1/splits/SPLIT/by-id/ID            task by id
    GET /api/v1/files/SHA256                     a task file's bytes, hash-checked, streamed
    GET /openapi.json                            this API, as OpenAPI 3.1

A task is its JSON without null fields (`?nulls=1` keeps them); `?canonical=1` gives exactly the
content its digest covers (`taskpack.fetch` checks it with the standard library alone). HTML:
`/` (splits), `/view/SPLIT?page=&q=&where=`, `/view/SPLIT/ID`: plain HTML, no scripts, every
value escaped, under a Content-Security-Policy that allows none. A mirror answers the registry
protocol below `/registry/v1` (`registry/http.py`). Requests whose `Host` is not this server's
name are refused (421), which DNS rebinding needs; a bad request gets a 4xx and `{"error": ...}`.

`App` is ASGI; `taskpack serve` runs it on uvicorn (`serve/server.py`: why, and what it
bounds). Kept answers are sent at once; a task request reads Parquet on a thread; what grows
with the data (ORS task lists, the split pages, diffs) is computed on the lane of processes
(`serve/lane.py`), bounded in time, in flight and in memory, and stopped when its client leaves.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import ipaddress
import json
import mimetypes
import os
import re
import tempfile
import threading
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from functools import cached_property, partial
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from taskpack.base import routes
from taskpack.base.routes import Route
from taskpack.errors import TaskpackError
from taskpack.registry.mirror import Mirror, NotFound
from taskpack.serve import jobs, lane, server, viewer
from taskpack.serve.catalog import Shelf, count_pull
from taskpack.serve.episodes import CLIENT, TOOL, OrsError, Sessions
from taskpack.serve.jobs import task_json
from taskpack.serve.lane import checked_ref
from taskpack.serve.ors import FIXED, Listing, Ors
from taskpack.serve.server import BODY_TOO_LARGE, IDLE, MAX_BODY, MAX_RSS
from taskpack.serve.server import address as address  # the names `taskpack serve` and tests use
from taskpack.serve.server import background as background
from taskpack.storage.taskset import Split, TaskSet

CHUNK = 1 << 20  # bytes of a file sent at a time
PACE = 256 << 20  # bytes a second a worker sends of files: streams leave task requests the CPU
PAGE = 50
MAX_IDS = 1000
CACHE_BYTES = 128 << 20  # rendered API answers kept, whole
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
# Files are served with a type a browser never runs: images as images, text as plain text.
_IMAGES = {"image/png", "image/jpeg", "image/gif", "image/webp"}

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(slots=True)  # an answer kept is read on every hit: no __dict__ to reach through
class Response:
    status: int
    content_type: str
    body: bytes = b""
    path: Path | None = None  # a file sent from disk instead of `body`
    cacheable: bool = False  # the same request always gets these bytes
    headers: list[tuple[bytes, bytes]] | None = None  # as sent, made once when kept


class HttpError(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class Catalog:
    """The served version: its splits opened once per thread (a split's row-group cache is
    not shared between threads, and no request waits on a lock another holds), and an index
    of file hashes built on first need."""

    def __init__(self, ts: TaskSet, registry: str | None = None, cache: str | None = None) -> None:
        self.ts = ts
        self.registry = registry  # where its other versions are found (None: the default one)
        self.cache = cache  # the cache it was read through (None: the default one)
        self.digest = ts.manifest.digest
        self._mine = threading.local()
        self._files: dict[str, tuple[str, int]] | None = None
        self._files_lock = threading.Lock()
        self._ids: dict[str, list[str]] = {}
        self._ids_lock = threading.Lock()

    @cached_property
    def opened(self) -> lane.ServedVersion:
        """What a lane worker opens: this version (its folder, or its exact `NAME@VERSION`)
        and, by version or digest, its siblings in the same registry."""
        m, objects = self.ts.manifest, self.ts.objects
        folder = getattr(objects, "root", None)
        if folder is not None:
            target = str(Path(folder).absolute())
            return lane.ServedVersion(target, self.registry, m.name, m.digest, self.about)
        # a published version: from the registry and through the cache it was read from
        location, cache = getattr(objects, "location", None), getattr(objects, "cache", None)
        registry = location.url if location is not None else self.registry
        root = str(cache.root) if cache is not None else None
        return lane.ServedVersion(
            f"{m.name}@{m.version}", registry, m.name, m.digest, self.about, root
        )

    @cached_property
    def about(self) -> viewer.About:
        """The set as every page names it, with the versions of it the registry holds (none
        when it has none, or cannot be read: the pages still work)."""
        from taskpack.registry.client import versions

        m = self.ts.manifest
        try:
            found = tuple(versions(m.name, registry=self.registry))
        except (TaskpackError, OSError):
            found = ()
        return viewer.About(m.name, m.version, m.description, m.license, found)

    def version(self, ref: str) -> TaskSet:
        """Another version of the served set, by version or digest, from its registry."""
        from taskpack.registry.client import resolve
        from taskpack.registry.refs import Ref

        if checked_ref(ref) == "this" or ref in (self.ts.manifest.version, self.digest):
            return self.ts
        try:
            return resolve(Ref(self.ts.manifest.name, ref), registry=self.registry)
        except TaskpackError as e:
            raise HttpError(HTTPStatus.NOT_FOUND, str(e)) from None

    def split(self, name: str) -> Split:
        if name not in self.ts.manifest.splits:
            raise HttpError(HTTPStatus.NOT_FOUND, f"no split {name!r} (splits: {self.ts.splits})")
        opened: dict[str, Split] = self._mine.__dict__.setdefault("splits", {})
        if name not in opened:
            opened[name] = self.ts.split(name)
        return opened[name]

    def ids(self, name: str) -> list[str]:
        """Split `name`'s ids in order, read once: a page of them is a slice, not a read of
        the whole id column."""
        split = self.split(name)
        with self._ids_lock:
            if name not in self._ids:
                self._ids[name] = split.ids()
            return self._ids[name]

    def file(self, sha: str) -> tuple[Path | None, bytes]:
        """A file of any task by content hash: a large file's path in the version's objects
        (hash-checked by the object source), or an inline file's bytes from the row holding it
        (found through the files' hash column)."""
        if any(sha in s.blobs for s in self.ts.manifest.splits.values()):
            return self.ts.object(sha), b""
        where = self._file_index().get(sha)
        if where is None:
            raise HttpError(HTTPStatus.NOT_FOUND, f"no task file {sha}")
        name, row = where
        task = self.split(name)[row]
        data = next(f for f in task.files if f.sha256 == sha).read_bytes()
        if hashlib.sha256(data).hexdigest() != sha:
            raise HttpError(HTTPStatus.INTERNAL_SERVER_ERROR, f"file {sha} failed its hash check")
        return None, data

    def _file_index(self) -> dict[str, tuple[str, int]]:
        with self._files_lock:
            if self._files is None:
                found: dict[str, tuple[str, int]] = {}
                for name in self.ts.splits:
                    column = self.split(name).columns(["files.list.element.sha256"])["files"]
                    for row, files in enumerate(column.to_pylist()):
                        for f in files or ():
                            found.setdefault(f["sha256"], (name, row))
                self._files = found
            return self._files


def _int(query: dict[str, list[str]], key: str, default: int, low: int, high: int) -> int:
    try:
        value = int(query.get(key, [str(default)])[0])
    except ValueError:
        raise HttpError(HTTPStatus.BAD_REQUEST, f"{key}: expected an integer") from None
    if not low <= value <= high:
        raise HttpError(HTTPStatus.BAD_REQUEST, f"{key}: expected {low}..{high}")
    return value


def _flag(query: dict[str, list[str]], key: str) -> bool:
    return query.get(key, ["0"])[0].lower() in ("1", "true", "yes")


def file_type(path: str) -> str:
    """The Content-Type a task file is served with: images as images, text as plain text
    (HTML, SVG and scripts included, so nothing in a task runs in the viewer's origin), the
    rest as bytes."""
    kind = mimetypes.guess_type(path)[0] or ""
    if kind in _IMAGES:
        return kind
    texty = kind.startswith("text/") or kind in ("application/json", "application/xml")
    if texty or kind.endswith(("+xml", "+json", "javascript")):
        return "text/plain; charset=utf-8"
    suffix = Path(path).suffix.lower()
    if suffix in (".py", ".sh", ".md", ".toml", ".yaml", ".yml", ".patch", ".diff", ".cfg"):
        return "text/plain; charset=utf-8"
    return "application/octet-stream"


class Api:
    """The JSON API and the HTML view of one version: one handler per route of
    `taskpack.base.routes` (named after it), each a plain function of the request's parameters."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def environments(self) -> dict[str, Callable[[], Catalog]]:
        """The ORS environment this is: the served set, by its name."""
        return {self.catalog.ts.manifest.name: lambda: self.catalog}

    def json(self, status: int, body: dict[str, Any], cacheable: bool = False) -> Response:
        body = {**body, "digest": self.catalog.digest}
        data = json.dumps(body, ensure_ascii=False).encode()
        return Response(status, "application/json", data, cacheable=cacheable)

    def page(self, title: str, body: str, status: int = HTTPStatus.OK) -> Response:
        page = viewer.page(title, body, self.catalog.digest, self.catalog.about)
        return Response(status, "text/html; charset=utf-8", page)

    def error_page(self, status: int, message: str, params: Mapping[str, str]) -> Response:
        """An error on a page, as a page: what went wrong, what to try, the way back."""
        m = self.catalog.ts.manifest
        back = [("/", f"{m.name}@{m.version}: its splits")]
        split = params.get("split")
        if split in m.splits:
            back.insert(0, (f"/view/{quote(split, safe='')}", f"split {split}"))
        if status == HTTPStatus.NOT_FOUND:
            hint = "It is not in this version: the splits and their tasks are listed from home."
        elif "old" in params:
            known = ", ".join(self.catalog.about.versions) or "none here"
            hint = f"A diff takes two versions of this set or 'this'; versions: {known}."
        else:
            hint = "Check the address; the pages link to every task they list."
        title = f"{status} {HTTPStatus(status).phrase}"
        return self.page(title, viewer.error_body(message, hint, back), status)

    def r_version(self, query: Query) -> Response:
        """The manifest: all a client needs to check the version digest (`taskpack.fetch`)."""
        manifest = self.catalog.ts.manifest.model_dump(mode="json")
        return self.json(HTTPStatus.OK, manifest, cacheable=True)

    def r_openapi(self, query: Query) -> Response:
        m = self.catalog.ts.manifest
        spec = routes.openapi(f"taskpack: {m.name}@{m.version}", m.version)
        return self.json(HTTPStatus.OK, spec, cacheable=True)

    def r_file(self, query: Query, sha256: str) -> Response:
        if len(sha256) != 64 or any(ch not in "0123456789abcdef" for ch in sha256):
            raise HttpError(HTTPStatus.BAD_REQUEST, "expected a sha256 in lowercase hex")
        path, data = self.catalog.file(sha256)
        kind = file_type(query.get("name", [""])[0])  # the type only, never a path read
        return Response(HTTPStatus.OK, kind, data, path=path, cacheable=path is None)

    def r_split(self, query: Query, split: str) -> Response:
        found = self.catalog.split(split)
        body = {"split": split, "rows": len(found), "split_digest": found.digest}
        return self.json(HTTPStatus.OK, body, cacheable=True)

    def r_ids(self, query: Query, split: str) -> Response:
        found = self.catalog.split(split)
        offset = _int(query, "offset", 0, 0, len(found))
        limit = _int(query, "limit", 100, 1, MAX_IDS)
        ids = self.catalog.ids(split)[offset : offset + limit]
        body = {"split": split, "offset": offset, "total": len(found), "ids": ids}
        return self.json(HTTPStatus.OK, body, cacheable=True)

    def r_digests(self, query: Query, split: str) -> Response:
        digests = self.catalog.split(split).columns(["digest"])["digest"].to_pylist()
        packed = b"".join(bytes.fromhex(d.removeprefix("sha256:")) for d in digests)
        return Response(HTTPStatus.OK, "application/octet-stream", packed, cacheable=True)

    def r_task(self, query: Query, split: str, index: str) -> Response:
        found = self.catalog.split(split)
        return self._task(query, split, found, self._index(index, len(found)))

    def r_task_by_id(self, query: Query, split: str, id: str) -> Response:
        found = self.catalog.split(split)
        return self._task(query, split, found, self._position(found, split, id))

    def _task(self, query: Query, name: str, split: Split, index: int) -> Response:
        task = split[index]
        if _flag(query, "canonical"):
            body = {"split": name, "index": index, "canonical": task.canonical()}
        else:
            body = {"split": name, "index": index, "task": task_json(task, _flag(query, "nulls"))}
        return self.json(HTTPStatus.OK, body, cacheable=True)

    @staticmethod
    def _position(split: Split, name: str, tid: str) -> int:
        found = split.position(tid)
        if found is None:
            raise HttpError(HTTPStatus.NOT_FOUND, f"split {name!r} has no task {tid!r}")
        return found

    @staticmethod
    def _index(text: str, rows: int) -> int:
        try:
            index = int(text)
        except ValueError:
            raise HttpError(HTTPStatus.BAD_REQUEST, "index: expected an integer") from None
        if not 0 <= index < rows:
            raise HttpError(HTTPStatus.NOT_FOUND, f"index {index} out of range (0..{rows - 1})")
        return index

    def r_harbor_registry(self, query: Query) -> Response:
        """The served set as a Harbor registry.json (a `DatasetSpec` per split, its tasks by
        the paths `export --to harbor` gives them), for `harbor dataset list --registry-url`."""
        from taskpack.converters import folder_name
        from taskpack.converters.formats.harbor import registry_entry

        m = self.catalog.ts.manifest
        specs = []
        for name in m.splits:
            taken: set[str] = set()
            folders = [folder_name(tid, taken) for tid in self.catalog.ids(name)]
            specs.append(registry_entry((m.name, m.version, m.description), name, folders))
        data = json.dumps(specs, ensure_ascii=False).encode()
        return Response(HTTPStatus.OK, "application/json", data, cacheable=True)

    # --- HTML -------------------------------------------------------------------------------

    def r_home(self, query: Query) -> Response:
        """The served version's splits (each a link to its page) and lineage; with `at`,
        another version's, and a link to what changed from it to the one served."""
        from taskpack.base.provenance import step_lines
        from taskpack.storage.ratings import leaderboard

        at = query.get("at", [""])[0]
        ts = self.catalog.version(at) if at else self.catalog.ts
        m = ts.manifest
        served = ts is self.catalog.ts
        rows = "".join(
            "<tr><td>"
            + (viewer.link("/view/" + quote(n, safe=""), n) if served else html.escape(n))
            + f"</td><td>{s.rows}</td><td><code>{html.escape(s.digest)}</code></td></tr>"
            for n, s in m.splits.items()
        )
        changes = (
            ""
            if served
            else (
                f"<p>{viewer.link(viewer.diff_href(m.version, 'this'), 'what changed since')}"
                f" to the version served</p>"
            )
        )
        results = {split: leaderboard(ts.annotations(split)) for split in m.annotations}
        body = (
            f"{changes}<table><thead><tr><th>split</th><th>tasks</th><th>digest</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>"
            f"<h2>Results</h2>{viewer.results_table(results)}"
            f"<h2>Lineage</h2>{viewer.pre(chr(10).join(step_lines(m.source)))}"
        )
        return self.page(f"{m.name}@{m.version}", body)

    def r_view_split(self, query: Query, split: str) -> Ask:
        """A page of a split's tasks (searched, filtered, sorted: work that grows with the
        split, on the lane)."""
        self.catalog.split(split)  # a 404 for a split not served, before any work
        shown = {k: v[0] for k, v in sorted(query.items()) if k != "col"}
        if "col" in query:
            shown["cols"] = ",".join(query["col"])
        served = self.catalog.opened
        key = ("split", served.digest, split, tuple(shown.items()))
        return Ask(key, jobs.split_page, (served, split, shown), "text/html; charset=utf-8")

    def r_view_task(self, query: Query, split: str, id: str) -> Response:
        at = query.get("at", [""])[0]
        ts = self.catalog.version(at) if at else self.catalog.ts
        if ts is self.catalog.ts:
            at, found = "", self.catalog.split(split)
        elif split in ts.manifest.splits:
            found = ts.split(split)
        else:
            raise HttpError(HTTPStatus.NOT_FOUND, f"version {at} has no split {split!r}")
        index = self._position(found, split, id)
        task = found[index]
        rated = [r for r in ts.annotations(split) if r["id"] == task.id]
        body = viewer.task_page(split, found, task, index, at, rated)
        return self.page(f"{split} / {task.id}" + (f" at {at}" if at else ""), body)

    def r_diff_page(self, query: Query, old: str, new: str) -> Ask:
        return self._diff(old, new, "text/html; charset=utf-8", 0)

    def r_diff_json(self, query: Query, old: str, new: str) -> Ask:
        return self._diff(old, new, "application/json", 1)

    def _diff(self, old: str, new: str, kind: str, index: int) -> Ask:
        """A diff of two versions: seconds of Python for large ones, on the lane."""
        old, new = checked_ref(old), checked_ref(new)
        served = self.catalog.opened
        return Ask(("diff", served.digest, old, new), jobs.diff, (served, old, new), kind, index)


Query = dict[str, list[str]]


class Registered:
    """The registry protocol's reads, answered by a mirror; and its sets as ORS environments,
    each at its latest version, read through the mirror's own cache."""

    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror
        self._latest: dict[str, Catalog] = {}  # each set's latest, by name: one per set
        # versions by digest, the last asked for last: those asked for by number, and each
        # latest as it was first opened
        self._open: dict[str, Catalog] = {}
        self._lock = threading.Lock()

    def environments(self) -> dict[str, Callable[[], Catalog]]:
        return {name: partial(self._latest_of, name) for name in self.mirror.names()}

    def version_api(self, name: str, version: str) -> Api:
        """`name@version`'s own server (its pages and JSON), for a catalog's requests below
        `/sets/NAME/versions/V/`."""
        from taskpack.registry.client import resolve

        m = self.mirror
        if version not in m.versions(name):
            raise NotFound(f"no version {name}@{version} in {m.location.url}")
        ts = resolve(f"{name}@{version}", registry=m.location, cache=m.cache)
        return Api(self._opened(ts))

    def _latest_of(self, name: str) -> Catalog:
        """A set's latest version as its environment (asked on every request): kept by name,
        so that a release replaces the one before rather than joining it."""
        from taskpack.registry.client import resolve

        m = self.mirror
        ts = resolve(name, registry=m.location, cache=m.cache)
        with self._lock:
            kept = self._latest.get(name)
        if kept is None or kept.digest != ts.manifest.digest:
            kept = self._opened(ts)
            with self._lock:
                self._latest[name] = kept
        return kept

    def _opened(self, ts: TaskSet) -> Catalog:
        """`ts` open, as it was when last asked for while among the last `_OPEN` versions (or
        as a set's latest): one Catalog per version, however it is named."""
        digest = ts.manifest.digest
        with self._lock:
            kept = self._open.get(digest) or next(
                (c for c in self._latest.values() if c.digest == digest), None
            )
        if kept is None:
            kept = Catalog(ts, self.mirror.location.url)
        with self._lock:
            kept = self._open.pop(digest, kept)  # another request's, if it opened it first
            self._open[digest] = kept
            while len(self._open) > _OPEN:
                self._open.pop(next(iter(self._open)))
        return kept

    # The registry protocol's reads, as the route table names them (`routes.REGISTRY`).

    def r_names(self) -> Response:
        return _listed(self.mirror.names())

    def r_versions(self, name: str) -> Response:
        return _listed(self.mirror.versions(name))

    def r_tags(self, name: str) -> Response:
        return _listed(self.mirror.tags(name))

    def r_manifest(self, name: str, version: str) -> Response:
        body = self.mirror.manifest_bytes(name, version)
        count_pull(self.mirror, name, version)  # a client resolving the version: a pull
        return Response(HTTPStatus.OK, "application/json", body)  # not kept: each one counts

    def r_object(self, name: str, version: str, sha256: str) -> Response:
        path = self.mirror.object(name, version, sha256)
        return Response(HTTPStatus.OK, "application/octet-stream", path=path)


_OPEN = 16  # versions by number a mirror's server keeps open for their pages, besides the latest


def _rooted(response: Response, root: str) -> Response:
    """A version's page or JSON as a catalog serves it below `root`: its links to the
    version's own paths (`/view/...`, `/diff/...`, `/api/v1/files/...`, home) moved below
    `root`, the style sheet's left where it is."""
    if not response.content_type.startswith(("text/html", "application/json")):
        return response
    data = response.path.read_bytes() if response.path is not None else response.body
    moved = re.sub(
        rb'(href="|action="|"href": ")/(?!assets/)', rb"\g<1>" + root.encode() + b"/", data
    )
    return Response(response.status, response.content_type, moved)


def _listed(value: Any) -> Response:
    return Response(HTTPStatus.OK, "application/json", json.dumps(value).encode())


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def allowed_hosts(host: str, port: int, extra: tuple[str, ...] = ()) -> frozenset[str] | None:
    """The `Host` header values this server answers (None: any, when it listens on every
    address and none was named): its own address and port, and loopback names when it
    listens on loopback, so a DNS-rebound page in a browser cannot talk to it."""
    if host in ("0.0.0.0", "::", "") and not extra:
        return None
    names = {host, *extra}
    if _loopback(host):
        names |= {"localhost", "127.0.0.1", "[::1]", "::1"}
    shown = {f"[{n}]" if ":" in n and not n.startswith("[") else n for n in names}
    return frozenset({*shown, *(f"{n}:{port}" for n in shown)})


class App:
    """The ASGI application `taskpack serve` runs (any ASGI server runs it): the Host check,
    the cache of rendered answers, a thread lane for task requests and the lane of processes
    (`serve/lane.py`) for work that grows with the data."""

    def __init__(
        self,
        api: Api | None = None,
        registered: Registered | None = None,
        hosts: frozenset[str] | None = None,
        deadline: float = lane.DEADLINE,
        sessions: Path | None = None,
        tool_name: str = TOOL,
    ) -> None:
        """`sessions`: the folder ORS episodes are kept in, shared by a server's worker
        processes; by default one of this application's own, removed when it closes.
        `tool_name`: what ORS episodes call their one tool."""
        self.api = api
        self.registered = registered
        self.hosts = hosts
        self.digest = api.catalog.digest if api is not None else ""
        self.fast = ThreadPoolExecutor(8, thread_name_prefix="taskpack-serve")
        self.lane = lane.Lane(deadline)
        self._paced = 0.0  # the loop time the files sent so far may take until, at PACE
        # Kept first in, first out: a hit reads its entry and reorders nothing.
        self._cache: dict[str, Response] = {}
        self._cache_bytes = 0
        served = routes.SERVED if api is not None else ()
        mirrored = (*routes.REGISTRY, *routes.CATALOG) if registered is not None else ()
        self.routes = (*served, *mirrored, *routes.COMMON, *routes.ORS)
        served_sets = api or registered
        self._own = None if sessions is not None else tempfile.TemporaryDirectory(prefix="tp-")
        kept = Sessions(sessions if sessions is not None else Path(self._own.name))  # type: ignore[union-attr]
        self.ors = Ors(served_sets.environments if served_sets else dict, kept, tool_name)
        # Each route's handler, found once from the table (a route naming none fails here)
        sides: dict[str, object] = {
            "api": api,
            "ors": self.ors,
            "registry": registered,
            "catalog": Shelf(registered.mirror) if registered is not None else None,
            "app": self,
        }
        self.handlers = {r.name: getattr(sides[r.side], f"r_{r.handler}") for r in self.routes}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"]
        query = scope["query_string"].decode("latin-1")
        key = _keyed(path, query)
        fields = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        fields[CLIENT] = (scope.get("client") or ("",))[0]  # who asks: ORS sessions are theirs
        if self.hosts is not None and fields.get("host", "").lower() not in self.hosts:
            host = fields.get("host", "")
            response = self.error(HTTPStatus.MISDIRECTED_REQUEST, f"not served for host {host!r}")
        elif method not in ("GET", "HEAD", "POST"):
            response = self.error(HTTPStatus.METHOD_NOT_ALLOWED, "GET, HEAD and POST are served")
        elif key in self._cache and method != "POST" and not _has_body(fields):
            response = self._cache[key]
        else:
            shut = scope.get("extensions", {}).get(server.SHUT)
            await self._work(method, path, query, fields, receive, send, shut)
            return
        await self._send(response, send, method)

    async def _work(
        self, method: str, path: str, query: str, fields: dict[str, str], receive: Receive,
        send: Send, shut: asyncio.Event | None = None,
    ) -> None:  # fmt: skip
        """A request no kept answer serves: its body read (bounded in size and time), its
        answer built while the client is watched (one that leaves stops the work) and sent."""
        found = routes.match(path, self.routes, method)
        body: bytes | HttpError
        try:
            body = await asyncio.wait_for(_body(receive, fields.get("content-length")), IDLE)
        except asyncio.TimeoutError:
            body = HttpError(HTTPStatus.REQUEST_TIMEOUT, f"the body took over {IDLE:.0f} s")
        except HttpError as e:
            body = e
        gone = asyncio.ensure_future(_disconnect(receive))
        try:
            if isinstance(body, HttpError):  # unread or half read: the connection ends
                response = self._failure(body, found)
                response.headers = [*self.headers(response), (b"connection", b"close")]
            elif body and (kept := self._cache.get(_keyed(path, query, body))) is not None:
                response = kept  # an ORS verb asked before
            else:
                asked = self.work(found, path, query, method, body, fields, shut)
                answer = asyncio.ensure_future(asked)
                await asyncio.wait((answer, gone), return_when=asyncio.FIRST_COMPLETED)
                if not answer.done():
                    answer.cancel()  # the client left: a lane job nobody else awaits stops
                    return
                response = answer.result()
            await self._send(response, send, method, gone)
        finally:
            gone.cancel()

    async def work(
        self,
        found: tuple[Route, dict[str, str]] | None,
        path: str,
        query_string: str,
        method: str = "GET",
        body: bytes = b"",
        headers: Mapping[str, str] | None = None,
        shut: asyncio.Event | None = None,
    ) -> Response:
        """The answer to a request: built on the thread lane, or on the process lane when it
        grows with the data. Never raises: an error is a JSON 4xx or 5xx (an ORS verb's in
        ORS's shape) or an error page. `shut`: set when the client shuts its side, which
        TCP cannot tell from leaving: work on the process lane then stops (503)."""
        within: tuple[Api, str] | None = None  # a version's pages in a catalog: its Api, root
        try:
            if found is None and self.registered is not None:
                found, within = self._in_version(path, method)
            if found is None:
                raise HttpError(HTTPStatus.NOT_FOUND, f"no such path {path!r}")
            route, params = found
            query = parse_qs(query_string)
            api = within[0] if within else None
            asked = partial(self._answer, route, params, query, body, headers, api)
            answer = await asyncio.get_running_loop().run_in_executor(self.fast, asked)
            if (route.lane == "process") != isinstance(answer, (Ask, Listing)):
                raise RuntimeError(f"{route.name}: answered off its lane ({route.lane})")
            if isinstance(answer, Listing):
                answer = _listing(answer)
            if isinstance(answer, Ask):
                files = await _unless(shut, self.lane.get(answer.key, answer.job, *answer.args))
                response = Response(HTTPStatus.OK, answer.kind, path=files[answer.index])
            elif isinstance(answer, tuple):  # a pinned version's answers never change...
                # ...kept by path and body: not when a header names the environment
                fixed = self.api is not None and route.handler in FIXED and "env" in params
                response = Response(*answer, cacheable=fixed)
            else:
                response = answer
            if within is not None:
                response = _rooted(response, within[1])
        except Exception as e:  # noqa: BLE001 - every failure is an answer, never a crash
            response = self._failure(e, found)
        if response.cacheable and response.path is None:
            self._keep(_keyed(path, query_string, body), response)
        return response

    def _keep(self, key: str, response: Response) -> None:
        response.headers = self.headers(response)  # made once, here: the bound counts them
        self._cache[key] = response
        self._cache_bytes += _held(key, response)
        while self._cache_bytes > CACHE_BYTES and self._cache:
            old_key = next(iter(self._cache))
            self._cache_bytes -= _held(old_key, self._cache.pop(old_key))

    def _in_version(
        self, path: str, method: str
    ) -> tuple[tuple[Route, dict[str, str]] | None, tuple[Api, str] | None]:
        """A request below `/sets/NAME/versions/V/` of a catalog: the route of one version's
        server it asks for, and that version's Api and root; (None, None) for any other."""
        assert self.registered is not None
        parts = path.split("/", 5)
        if len(parts) < 5 or parts[:2] != ["", "sets"] or parts[3] != "versions":
            return None, None
        name, version, rest = parts[2], parts[4], "/" + (parts[5] if len(parts) > 5 else "")
        found = routes.match(rest, routes.SERVED, method)
        if found is None:
            return None, None
        try:
            api = self.registered.version_api(name, version)
        except NotFound as e:
            raise HttpError(HTTPStatus.NOT_FOUND, str(e)) from None
        return found, (api, f"/sets/{quote(name, safe='')}/versions/{quote(version, safe='')}")

    def _answer(
        self,
        route: Route,
        params: dict[str, str],
        query: Query,
        body: bytes,
        headers: Mapping[str, str] | None,
        api: Api | None = None,
    ) -> Response | Ask | Listing | tuple[int, str, bytes]:
        """The route's handler called as its side takes requests (`api`: the version a
        catalog's request is below, instead of the served one)."""
        handler = self.handlers[route.name] if api is None else getattr(api, f"r_{route.handler}")
        if route.side == "api":
            return handler(query, **params)  # type: ignore[no-any-return]
        if route.side == "ors":
            return handler(params, body, headers or {})  # type: ignore[no-any-return]
        given = (query,) if route.side == "catalog" else ()
        try:
            return handler(*given, **params)  # type: ignore[no-any-return]
        except NotFound as e:
            raise HttpError(HTTPStatus.NOT_FOUND, str(e)) from None
        except TaskpackError as e:  # upstream answered what its checks refuse: not the client's
            raise HttpError(HTTPStatus.BAD_GATEWAY, str(e)) from None

    def r_style(self) -> Response:
        return Response(HTTPStatus.OK, "text/css; charset=utf-8", viewer.STYLE, cacheable=True)

    def r_health(self) -> Response:
        return Response(HTTPStatus.OK, "text/plain; charset=utf-8", b"ok\n")

    def _failure(self, e: Exception, found: tuple[Route, dict[str, str]] | None) -> Response:
        """The error's answer: ORS's shape for an ORS verb, an error page for a page's route,
        else JSON."""
        if isinstance(e, (HttpError, OrsError)):
            status, message = int(e.status), str(e)
        elif isinstance(e, (lane.Busy, lane.Stopped)):
            status, message = HTTPStatus.SERVICE_UNAVAILABLE, str(e)
        elif isinstance(e, (TaskpackError, ValueError, KeyError, IndexError)):
            status, message = HTTPStatus.BAD_REQUEST, str(e)
        else:
            status, message = HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(e).__name__}: {e}"
        route = found[0] if found is not None else None
        if route is not None and route.side == "ors":
            detail = e.detail if isinstance(e, OrsError) else message
            data = json.dumps({"detail": detail}, ensure_ascii=False).encode()
            return Response(status, "application/json", data)
        if route is not None and route.kind.startswith("text/html") and self.api is not None:
            assert found is not None
            return self.api.error_page(status, message, found[1])
        return self.error(status, message)

    def error(self, status: int, message: str) -> Response:
        body: dict[str, Any] = {"error": message}
        if self.digest:
            body["digest"] = self.digest
        return Response(status, "application/json", json.dumps(body, ensure_ascii=False).encode())

    def headers(self, response: Response) -> list[tuple[bytes, bytes]]:
        """The response's headers, its length included."""
        size = response.path.stat().st_size if response.path is not None else len(response.body)
        found = [
            (b"content-type", response.content_type.encode()),
            (b"content-length", str(size).encode()),
            (b"content-security-policy", CSP.encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"),
        ]
        if self.digest:
            found.append((b"x-taskpack-digest", self.digest.encode()))
        if response.status == HTTPStatus.SERVICE_UNAVAILABLE:
            found.append((b"retry-after", b"5"))
        return found

    async def _send(
        self, response: Response, send: Send, method: str, gone: asyncio.Future[None] | None = None
    ) -> None:
        """The answer; a file a piece at a time, as fast as the client takes it (uvicorn waits
        for a piece to leave before the next is read), until the client leaves."""
        headers = response.headers or self.headers(response)
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        if method == "HEAD":
            await send({"type": "http.response.body", "body": b""})
        elif response.path is None:
            await send({"type": "http.response.body", "body": response.body})
        else:
            with response.path.open("rb") as f:
                while gone is None or not gone.done():
                    piece = f.read(CHUNK)
                    more = len(piece) == CHUNK
                    await self._pace(len(piece))
                    await send({"type": "http.response.body", "body": piece, "more_body": more})
                    if not more:
                        return

    async def _pace(self, size: int) -> None:
        """Wait for this piece's turn: the worker's files go out at PACE bytes a second at
        most, however many clients take them (8 clients of a whole split, unpaced, took the
        CPU a task request needs: its p50 went from 2 ms to 100 ms)."""
        now = asyncio.get_running_loop().time()
        start = max(now, self._paced)
        self._paced = start + size / PACE
        if start > now:
            await asyncio.sleep(start - now)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                server.heartbeat()  # the watchdog's proof that this loop runs
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def close(self) -> None:
        """Stop the lane's workers: a server worker exits only once its children have."""
        self.lane.close()
        if self._own is not None:
            self._own.cleanup()


@dataclass(frozen=True)
class Ask:
    """An answer for the lane: file `index` of what `job(work, *args)` writes, sent as
    `kind`; `key` names the question (answers are kept by it)."""

    key: tuple[Any, ...]
    job: lane.Job
    args: tuple[Any, ...]
    kind: str
    index: int = 0


def _listing(listing: Listing) -> Ask:
    s = listing.served
    key = ("ors", s.digest, listing.split, listing.start, listing.stop, listing.env)
    args = (s, listing.split, listing.start, listing.stop, listing.env)
    return Ask(key, jobs.ors_tasks, args, "application/json")


def _held(key: str, response: Response) -> int:
    """Bytes a kept answer holds: its key, body and headers."""
    return len(key) + len(response.body) + sum(len(k) + len(v) for k, v in response.headers or ())


async def _unless(
    shut: asyncio.Event | None, asked: Awaitable[tuple[Path, ...]]
) -> tuple[Path, ...]:
    """What `asked` answers, unless `shut` is set first: then it is cancelled (a lane job no
    one else waits for stops) and the request ends with 503."""
    answer = asyncio.ensure_future(asked)
    if shut is None:
        return await answer
    ended = asyncio.ensure_future(shut.wait())
    try:
        await asyncio.wait((answer, ended), return_when=asyncio.FIRST_COMPLETED)
    finally:
        ended.cancel()
    if not answer.done():
        answer.cancel()
        raise lane.Stopped("stopped: the client shut its side of the connection")
    return answer.result()


def _keyed(path: str, query: str, body: bytes = b"") -> str:
    """What an answer is kept by: its path and query, and a POST's body (ORS's verbs)."""
    return path + "?" + query + ("\n" + body.decode("latin-1") if body else "")


def _has_body(fields: Mapping[str, str]) -> bool:
    """Whether a request says it has a body (which is read and bounded before any answer)."""
    return fields.get("content-length", "0").strip() != "0" or "transfer-encoding" in fields


async def _disconnect(receive: Receive) -> None:
    """Returns when the client has left (its request's body read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _body(receive: Receive, length: str | None) -> bytes:
    """A request's body, refused past MAX_BODY before it is read when its length says so,
    else as soon as it passes the bound."""
    try:
        declared = int(length.strip()) if length is not None else 0
    except ValueError:
        raise HttpError(HTTPStatus.BAD_REQUEST, "Content-Length: expected a number") from None
    if declared > MAX_BODY:
        raise HttpError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, BODY_TOO_LARGE)
    got = bytearray()
    while True:
        message = await receive()
        got += message.get("body", b"")
        if len(got) > MAX_BODY:
            raise HttpError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, BODY_TOO_LARGE)
        if not message.get("more_body"):
            return bytes(got)


# --- running -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """What each worker process builds its application from (they are spawned, not forked):
    handed to them in the environment, as JSON."""

    target: str | None = None  # a task-set folder or NAME@VERSION
    registry: str | None = None
    mirror: str | None = None  # an upstream registry, for a mirror
    cache: str | None = None  # a mirror's cache lives below it, in mirrors/<upstream>/
    ttl: float = 10.0
    hosts: tuple[str, ...] | None = None  # None: any Host
    deadline: float = lane.DEADLINE  # seconds an answer of the lane may take
    max_rss: int = MAX_RSS  # MiB a worker may hold before it is replaced
    sessions: str | None = None  # the folder of ORS episodes, shared by the workers
    tool_name: str = TOOL  # what ORS episodes call their one tool

    def app(self) -> App:
        hosts = frozenset(self.hosts) if self.hosts is not None else None
        kept = Path(self.sessions) if self.sessions is not None else None
        shared: dict[str, Any] = {
            "hosts": hosts,
            "deadline": self.deadline,
            "sessions": kept,
            "tool_name": self.tool_name,
        }
        if self.mirror is not None:
            from taskpack.registry import Location
            from taskpack.registry.mirror import mirror_cache

            root = Path(self.cache) if self.cache else None
            cache = mirror_cache(Location.parse(self.mirror).url, root)
            mirror = Mirror(self.mirror, cache, self.ttl)
            return App(registered=Registered(mirror), **shared)
        assert self.target is not None
        from taskpack.registry.client import open as open_target

        ts = open_target(self.target, registry=self.registry)
        return App(api=Api(Catalog(ts, self.registry)), **shared)


_CONFIG = "TASKPACK_SERVE_CONFIG"


def run(config: Config, host: str, port: int, workers: int) -> None:
    """Serve until interrupted, on `workers` processes that each build the application from
    `config` (`worker_app`), replaced when one dies; they share one folder of sessions."""
    with tempfile.TemporaryDirectory(prefix="taskpack-sessions-") as sessions:
        if config.sessions is None:
            config = replace(config, sessions=sessions)
        os.environ[_CONFIG] = json.dumps(asdict(config))
        server.run(f"{__name__}:worker_app", host, port, workers)


def worker_app() -> App:
    """In a worker: the application `run` configured, and the watchdog of its memory."""
    fields = json.loads(os.environ[_CONFIG])
    if fields["hosts"] is not None:
        fields["hosts"] = tuple(fields["hosts"])
    config = Config(**fields)
    server.watch(config.max_rss)
    return config.app()
