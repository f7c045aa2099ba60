"""A warm episode start: a split a load has already checked, read again with the standard
library alone, no pyarrow.

The first `taskpack.load(NAME@X.Y.Z, split=S)` that reads a split through the cache (its objects
hash-checked, its rows chained to its digest) writes beside the cache's objects a decoded copy of
the split, once per machine: the rows as JSON lines, byte offsets of each (8 bytes a row), the
ids as a JSON list, and the stamp of each of those files (size, inode, change and modify times)
taken after writing. An index entry, named by the registry, the version and the split, points
to the copy and to the cache's manifest of the version, which must still name the copy's split
digest: the task digests the copy was made from still chain to the version. A later load of
that exact version and split finds the entry, sees the manifest and the stamps unchanged, and
reads a task as one `pread` and one `json.loads`; anything else (a range or tag, a lockfile,
another cache, a stamp that moved, a missing entry) goes the checked way, which writes the copy
anew. So the trust is the cache's own: what was hash-checked once is believed while its stamp
holds (`registry.cache`).

    <cache>/warm/data/<split digest hex>/rows, offsets, ids, stamps
    <cache>/warm/index/<registry, quoted>/<name>/<version>/<split>.json
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

from taskpack.base.settings import cache_root, default_registry
from taskpack.records import NAME, SEMVER, stored_task

FILES = ("rows", "offsets", "ids")
_OWN = {"_rows", "_folder", "_full_split", "_opened", "_offsets", "_fd", "_index"}
ReadBlob = Callable[[str, int], bytes]

TYPE_CHECKING = False  # as in taskpack/__init__.py: typing stays unimported at a warm start
if TYPE_CHECKING:
    from typing import Any, Protocol

    import pyarrow as pa

    from taskpack.model import Task
else:
    Protocol = object


class Split(Protocol):
    """What this module reads of a checked split (`taskset.Split`, which sits above it)."""

    @property
    def name(self) -> str: ...
    @property
    def digest(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def _fetch(self) -> ReadBlob | None: ...

    def __len__(self) -> int: ...
    def row_groups(self) -> Iterator[pa.Table]: ...
    def columns(self, names: list[str] | None = None) -> pa.Table: ...


def registry_key(registry: Any) -> str:
    """The registry a load names, as a key: a URL as written, a folder by its absolute path
    (`file:` + path). Two spellings of one registry are two keys: a miss, never a mix-up."""
    url = getattr(registry, "url", None)  # a `Location`
    if isinstance(url, str):
        return url
    text = os.fspath(registry) if registry else default_registry()
    if "://" in text:
        return text
    return "file:" + os.path.abspath(os.path.expanduser(text))


def _entry(root: str, registry: Any, name: str, version: str, split: str) -> Path:
    where = quote(registry_key(registry), safe="")
    return Path(root, "warm", "index", where, name, version, f"{split}.json")


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_ino, st.st_ctime_ns, st.st_mtime_ns]


def open_warm(ref: str, split: str, registry: Any, full: Callable[[], Split]) -> WarmSplit | None:
    """The split from its decoded copy when `ref` is an exact version whose copy is in the
    cache, unchanged since written; else None. `full` gives the checked split, for whatever
    the copy does not answer (views, file bytes kept out of the rows, Arrow)."""
    import re

    name, _, version = ref.partition("@")
    if not re.match(NAME, name) or not re.match(SEMVER, version):
        return None
    meta = _valid(_entry(cache_root(), registry, name, version, split))
    return None if meta is None else WarmSplit(split, meta, Path(meta["folder"]), full)


def _valid(entry: Path) -> dict[str, Any] | None:
    """The entry, if it still chains: the cache's manifest of the version (checked when
    fetched) is the one the entry names, naming the copy's split digest, and the copy is
    whole, its files there with the stamps it recorded."""
    try:
        meta: dict[str, Any] = json.loads(entry.read_bytes())
        manifest = json.loads(Path(meta["manifest"]).read_bytes())
        named = manifest["splits"][meta["split"]]["digest"]
        if manifest["digest"] != meta["manifest_digest"] or named != meta["digest"]:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return meta if _whole(Path(meta["folder"])) else None


def _whole(folder: Path) -> bool:
    try:
        recorded = json.loads((folder / "stamps").read_bytes())
        return bool([_stamp(folder / f) for f in FILES] == recorded)
    except (OSError, ValueError):
        return False


class ById:
    """`get(id)` and `position(id)` of a split, from its `ids()` and `[i]`: the id -> row
    index built on first use (for the checked split, `taskset.Split`, and the warm one)."""

    _index: dict[str, int] | None = None

    def ids(self) -> list[str]:
        raise NotImplementedError

    def __getitem__(self, i: int) -> Any:
        raise NotImplementedError

    def position(self, task_id: str) -> int | None:
        """The row of the task with id `task_id`, or None (the ids are read once)."""
        if self._index is None:
            self._index = {tid: row for row, tid in enumerate(self.ids())}
        return self._index.get(task_id)

    def get(self, task_id: str, default: Task | None = None) -> Task | None:
        """The task with id `task_id`, or `default` (None) as `dict.get` gives it: a caller
        who needs the task writes `split[task_id]`, which names close ids when there is none."""
        row = self.position(task_id)
        return default if row is None else self[row]

    def by_id(self, task_id: str) -> Task:
        """`split[task_id]`: the task with that id; a KeyError naming close ids if none."""
        row = self.position(task_id)
        if row is None:
            from taskpack.errors import nearest

            close = nearest(task_id, self.ids())
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            name = getattr(self, "name", "")
            raise KeyError(f"no task {task_id!r} in split {name!r}{hint}")
        return self[row]  # type: ignore[no-any-return]


class WarmSplit(ById):
    """A split read from its decoded copy: `len`, `[i]` (and slices), `get(id)`, iteration and
    `ids()` with the standard library; any other attribute is the checked split's (`full`),
    opened on first use."""

    def __init__(
        self, name: str, meta: dict[str, Any], folder: Path, full: Callable[[], Split]
    ) -> None:
        self.name = name
        self.digest: str = meta["digest"]
        self.version: int = meta["version"]
        self._rows: int = meta["rows"]
        self._folder = folder
        self._full_split: Callable[[], Split] = full
        self._opened: Split | None = None
        self._offsets: bytes | None = None
        self._fd: int | None = None

    def __len__(self) -> int:
        return self._rows

    def _full(self) -> Split:
        if self._opened is None:
            self._opened = self._full_split()
        return self._opened

    def __getattr__(self, attribute: str) -> Any:
        # not this object's own (unpickling and copying look for those before they are set)
        if attribute.startswith("__") or attribute in _OWN:
            raise AttributeError(attribute)
        return getattr(self._full(), attribute)

    def _fetch(self, sha: str, size: int) -> bytes:
        """Out-of-line file bytes: the checked split's, hash-checked as read."""
        fetch = self._full()._fetch
        assert fetch is not None  # a registry's split reads its blobs through the cache
        return fetch(sha, size)

    def _line(self, i: int) -> bytes:
        if self._offsets is None:
            self._offsets = (self._folder / "offsets").read_bytes()
            self._fd = os.open(self._folder / "rows", os.O_RDONLY)
        start = int.from_bytes(self._offsets[8 * i : 8 * i + 8], "little")
        end = int.from_bytes(self._offsets[8 * i + 8 : 8 * i + 16], "little")
        assert self._fd is not None
        return os.pread(self._fd, end - start, start)

    def _task(self, line: bytes) -> Task:
        row = json.loads(line)
        for f in row["files"]:
            if isinstance(f.get("data"), str):  # inline bytes, as base64 in JSON
                import base64

                f["data"] = base64.b64decode(f["data"])
        # a stored task is read as the model's readers see it (as `rows.task_from_row` casts)
        return stored_task(row, self._fetch)  # type: ignore[return-value]

    def __getitem__(self, i: int | slice | str) -> Any:
        if isinstance(i, str):
            return self.by_id(i)
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._rows))]
        if not -self._rows <= i < self._rows:
            raise IndexError(f"task {i} out of range: split {self.name!r} has {self._rows} tasks")
        return self._task(self._line(i % self._rows))

    def __iter__(self) -> Iterator[Task]:
        with (self._folder / "rows").open("rb") as lines:
            for line in lines:
                yield self._task(line)

    def ids(self) -> list[str]:
        ids: list[str] = json.loads((self._folder / "ids").read_bytes())
        return ids

    def __getstate__(self) -> dict[str, Any]:
        """What a copy in another process needs: not this one's open file or read offsets."""
        lean = dict(vars(self))
        lean.update(_opened=None, _offsets=None, _fd=None, _index=None)
        return lean

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)

    def __del__(self) -> None:
        if getattr(self, "_fd", None) is not None:
            os.close(self._fd)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"<split {self.name!r}: {self._rows} tasks, {self.digest}, read warm>"


def save_warm(ref: str, split: Split, registry: Any, manifest: Path, manifest_digest: str) -> None:
    """Write `split`'s decoded copy and its index entry, once per machine: a load that finds
    another process writing it goes on without. Only a split whose rows chain to its digest,
    read through the cache, is written; the entry names the cache's manifest of the version
    (`manifest`, of digest `manifest_digest`), which a warm start reads again."""
    import re

    from taskpack.base.digests import chains_to
    from taskpack.base.fs import file_lock, write_atomic
    from taskpack.errors import TaskpackError
    from taskpack.storage.rows import json_columns

    name, _, version = ref.partition("@")
    if not re.match(NAME, name) or not re.match(SEMVER, version) or split.version < 2:
        return  # only an exact version is found again (a range or tag may move)
    root = cache_root()
    entry = _entry(root, registry, name, version, split.name)
    if _valid(entry) is not None:
        return
    folder = Path(root, "warm", "data", split.digest.removeprefix("sha256:"))
    lock = Path(root, "locks", f"warm-{folder.name}.lock")
    try:
        with file_lock(lock, wait=False):
            if not _whole(folder):  # missing, or its stamps moved: written anew
                # checked by the writer alone: the loads that find it busy read nothing more
                digests = split.columns(["digest"])["digest"].to_pylist()
                if not chains_to(digests, split.digest):
                    raise TaskpackError(
                        f"split {split.name!r}: its rows do not chain to its digest"
                    )
                _write_copy(folder, split, json_columns(split.version))
                if not _copy_chains(folder, split.digest):  # the copy's own bytes, read back
                    raise TaskpackError(
                        f"split {split.name!r}: its decoded copy does not chain to its digest"
                    )
                stamps = [_stamp(folder / f) for f in FILES]
                write_atomic(folder / "stamps", json.dumps(stamps).encode())
            meta = {
                "folder": str(folder),
                "manifest": str(manifest),
                "manifest_digest": manifest_digest,
                "split": split.name,
                "digest": split.digest,
                "version": split.version,
                "rows": len(split),
            }
            write_atomic(entry, json.dumps(meta).encode())
    except BlockingIOError:
        return  # another process writes it


def _copy_chains(folder: Path, digest: str) -> bool:
    """Whether the copy's rows, each a task again (its inline bytes hashed against the sha256
    its digest covers), chain to the split digest `digest`: what a rewritten copy, stamps and
    all, cannot forge while the digest comes from a checked manifest."""
    import hashlib

    from taskpack.base.digests import chains_to

    digests, ids, ends = [], [], [0]
    try:
        with (folder / "rows").open("rb") as lines:
            for line in lines:
                ends.append(ends[-1] + len(line))
                row = json.loads(line)
                ids.append(row["id"])
                for f in row["files"]:
                    if isinstance(f.get("data"), str):
                        import base64

                        data = base64.b64decode(f["data"])
                        if hashlib.sha256(data).hexdigest() != f.get("sha256"):
                            return False
                        f["data"] = data
                digests.append(stored_task(row).digest)
        listed = json.loads((folder / "ids").read_bytes())
        offsets = (folder / "offsets").read_bytes()
    except (OSError, ValueError, KeyError, TypeError):
        return False
    placed = b"".join(o.to_bytes(8, "little") for o in ends)
    return listed == ids and offsets == placed and chains_to(digests, digest)


def verify_warm(ref: str, registry: Any, splits: dict[str, str]) -> list[str]:
    """`validate NAME@X.Y.Z`: each split's warm copy in this machine's cache (if any) checked
    against the split digest of the version's checked manifest (`splits`: split -> digest); a
    copy that does not chain is dropped, its index entry and files, and named."""
    import shutil

    name, _, version = ref.partition("@")
    problems = []
    for split, digest in splits.items():
        entry = _entry(cache_root(), registry, name, version, split)
        try:
            meta = json.loads(entry.read_bytes())
        except (OSError, ValueError):
            continue
        folder = Path(str(meta.get("folder", "")))
        if meta.get("digest") == digest and _copy_chains(folder, digest):
            continue
        entry.unlink(missing_ok=True)
        if folder.name == digest.removeprefix("sha256:") or folder.name == str(
            meta.get("digest", "")
        ).removeprefix("sha256:"):
            shutil.rmtree(folder, ignore_errors=True)
        problems.append(
            f"split {split!r}: this machine's warm copy does not chain to the split digest "
            f"{digest}: dropped (the next load writes it anew from checked rows)"
        )
    return problems


def _write_copy(folder: Path, split: Split, json_columns: tuple[str, ...]) -> None:
    """The copy, a row group at a time, each line spliced from the stored columns: the JSON
    columns are JSON text already (checked when the split was), so they go in as they are, and
    only ids, solutions and files (inline bytes as base64) are encoded here."""
    import base64
    import shutil
    import tempfile

    def files(held: list[dict[str, Any]] | None) -> str:
        for f in held or []:
            if isinstance(f.get("data"), bytes):
                f["data"] = base64.b64encode(f["data"]).decode("ascii")
        return json.dumps(held or [], ensure_ascii=False, separators=(",", ":"))

    def text(value: str | None) -> str:
        return json.dumps(value, ensure_ascii=False)

    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        offsets, ids, at = [0], [], 0
        with (scratch / "rows").open("wb") as out:
            for table in split.row_groups():
                names = ["id", "solution", "files", *json_columns]
                columns = [table.column(n).to_pylist() for n in names]
                for values in zip(*columns, strict=True):
                    row_id, solution, held, *raw = values
                    parts = [f'"id":{text(row_id)}', f'"solution":{text(solution)}']
                    parts.append(f'"files":{files(held)}')
                    parts += [
                        f'"{n}":{"null" if v is None else v}'
                        for n, v in zip(json_columns, raw, strict=True)
                    ]
                    line = ("{" + ",".join(parts) + "}\n").encode()
                    out.write(line)
                    at += len(line)
                    offsets.append(at)
                    ids.append(row_id)
        (scratch / "offsets").write_bytes(b"".join(o.to_bytes(8, "little") for o in offsets))
        (scratch / "ids").write_bytes(json.dumps(ids).encode())
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(scratch, folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
