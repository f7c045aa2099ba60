"""Reading and publishing through a registry: resolve a ref once, then read by hash from the cache.

`load("gsm8k@1.0.0", split="train")` on a machine that has pulled that version before touches
no network (the manifest and split are in the cache, named by version and by hash) and imports
neither boto3 nor datasets. Offline (`TASKPACK_OFFLINE=1`) only exact versions and digests are
served, from the cache, and anything else fails loudly rather than picking another version.

Nothing from a registry is believed before it is checked: a manifest must be the version its
key names and its digest the root of its split digests (`Registry.manifest`); every object is
hash-checked (downloads, and a local registry's files read in place, once per file); a split's
rows must chain to its digest before the split is read, once per split per machine; and a
version reached by content digest or lockfile has every split checked before it is accepted.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from taskpack.base.nesting import parse_json
from taskpack.base.objects import MANIFEST, Progress, WrongBytes, object_key
from taskpack.base.settings import switch
from taskpack.errors import TaskpackError
from taskpack.registry import Location, Registry, open_registry
from taskpack.registry.cache import Cache
from taskpack.registry.refs import Ref, is_version, parse_ref
from taskpack.storage.taskset import Split, TaskSet, open_folder

if TYPE_CHECKING:
    from taskpack.model import Manifest, SplitInfo
    from taskpack.registry.growing import Growing

RegistryArg = str | os.PathLike[str] | Location | None
_FOOTER_BYTES = 1 << 16  # what Parquet reads first of a file's end (its footer_read_size)
_PARQUET_MIN = 12  # its magic at both ends and the footer's length: a shorter file is none


def _offline(flag: bool | None) -> bool:
    if flag is not None:
        return flag
    return switch("TASKPACK_OFFLINE")


class RegistryObjects:
    """A published version's objects: from the cache, filled from the registry on first need,
    or, for a local registry folder, its own files read in place (hash-checked once)."""

    rows_checked = True  # `split_files` checks a split's rows before it hands out its files

    def __init__(
        self,
        manifest: Manifest,
        location: Location,
        cache: Cache,
        offline: bool,
        registry: Registry | None = None,
    ) -> None:
        self.manifest = manifest
        self.location = location
        self.cache = cache
        self.offline = offline
        self.where = f"{manifest.ref} in {location.url}"
        self._registry = registry
        self._objects = manifest.objects()

    @property
    def registry(self) -> Registry:
        # Built on first need: a cache hit never constructs a backend (nor imports boto3).
        if self._registry is None:
            self._registry = open_registry(self.location)
        return self._registry

    def split_files(
        self, name: str, info: SplitInfo, progress: Progress | None = None
    ) -> list[Path]:
        self._check_rows(name, info, progress)
        return [self._file(part.sha256, progress) for part in info.files()]

    def path(self, sha: str, progress: Progress | None = None, most: int | None = None) -> Path:
        if sha not in self._objects:
            raise TaskpackError(f"{self.where}: no object {sha}")
        return self._file(sha, progress, most)

    def _file(self, sha: str, progress: Progress | None, most: int | None = None) -> Path:
        if self.location.path is not None:  # a local registry folder: read it in place
            local = self.location.path / object_key(sha)
            if local.is_file():
                if not self.cache.holds(local, sha):
                    raise TaskpackError(f"{self.where}: {local} does not hash to {sha}")
                return local
        if self.offline:
            found = self.cache.verified(sha)
            if found is None:
                raise TaskpackError(f"offline: object {sha} of {self.where} is not in the cache")
            return found
        listed = self.manifest.most_bytes(sha)
        return self.cache.ensure(
            sha,
            lambda out: self.registry.download(self.manifest, sha, out, progress),
            listed if most is None else min(most, listed),
        )

    def _check_rows(self, name: str, info: SplitInfo, progress: Progress | None) -> None:
        """The split's rows chain to the digest the manifest gives it: checked once per machine
        (the bytes are fixed by the files' hashes, so the answer is too). A split of several
        files is fetched whole for it: a file's rows prove nothing without the others'."""
        files = hashlib.sha256(" ".join(p.sha256 for p in info.files()).encode()).hexdigest()
        # `inline` names the check's scope: rows checked before inline bytes were hashed too
        # (facts learnt as `rows-...`) are checked again.
        digest = info.digest.removeprefix("sha256:")
        fact = f"rows-inline-{files}-{digest}-v{self.manifest.format_version}"
        if self.cache.known(fact):
            return
        from taskpack.base.fs import file_lock
        from taskpack.storage.rows import check_split

        # One process checks while the others wait: 64 workers starting on a cold machine must
        # not each read the whole split.
        with file_lock(self.cache.root / "locks" / f"{fact}.lock"):
            if self.cache.known(fact):
                return
            problems = self._checked_as_it_comes(name, info, progress)
            if problems is None:
                paths = [self._file(part.sha256, progress) for part in info.files()]
                problems = check_split(paths, name, info, self.manifest.format_version, limit=3)
            if problems:
                raise TaskpackError(f"{self.where}: refused: " + "; ".join(problems))
            self.cache.learn(fact)

    def _checked_as_it_comes(
        self, name: str, info: SplitInfo, progress: Progress | None
    ) -> list[str] | None:
        """A one-file split not yet here, fetched with its rows checked as its bytes arrive
        (the footer fetched first); the problems, or None where the check must follow the
        download: the file is already here or local, the backend has no ranges, or what the
        check read is not what was kept (see `growing`)."""
        from taskpack.storage.rows import check_split

        parts = info.files()
        if len(parts) != 1 or parts[0].bytes < _PARQUET_MIN or self.location.path is not None:
            return None
        sha = parts[0].sha256
        if self.offline or self.cache.verified(sha) is not None:
            return None
        tail = self.registry.tail(self.manifest, sha, min(_FOOTER_BYTES, parts[0].bytes))
        if tail is None:
            return None
        seen: list[tuple[Growing, list[str]]] = []

        def read(growing: Growing) -> None:
            with growing.reader() as source:
                problems = check_split([source], name, info, self.manifest.format_version, 3)
            seen.append((growing, problems))

        self.cache.ensure(
            sha,
            lambda out: self.registry.download(self.manifest, sha, out, progress),
            parts[0].bytes,
            (parts[0].bytes, tail, read),
        )
        if not seen or not seen[0][0].faithful():
            return None
        return seen[0][1]

    def check_all(self) -> None:
        """Every split's rows checked (and so fetched): what a digest reference or lockfile
        entry needs before it accepts the version."""
        for name, info in self.manifest.splits.items():
            self.split_files(name, info)


def read_lockfile(path: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    try:
        data = parse_json(Path(path).read_text(encoding="utf-8"))
        return dict(data["sets"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise TaskpackError(f"{path}: not a taskpack lockfile ({e})") from None


def _locked(ref: Ref, lockfile: str | os.PathLike[str] | None) -> tuple[Ref, str | None]:
    """The ref pinned by the lockfile (exact version) and the digest it must have."""
    lockfile = lockfile or os.environ.get("TASKPACK_LOCKFILE")
    if not lockfile:
        return ref, None
    entries = read_lockfile(lockfile)
    entry = entries.get(str(ref)) or next(
        (
            e
            for e in entries.values()
            if e["name"] == ref.name and ref.spec in ("latest", e["version"])
        ),
        None,
    )
    if entry is None:
        raise TaskpackError(f"{lockfile}: no entry for {ref}")
    return Ref(ref.name, entry["version"]), entry["digest"]


def resolve(
    ref: str | Ref,
    *,
    registry: RegistryArg = None,
    lockfile: str | os.PathLike[str] | None = None,
    cache: Cache | None = None,
    offline: bool | None = None,
) -> TaskSet:
    """The version `ref` names, from the cache when it is pinned, else from the registry."""
    where = Location.parse(registry)
    cache = cache or Cache()
    offline = _offline(offline)
    ref = parse_ref(ref) if isinstance(ref, str) else ref
    ref, locked_digest = _locked(ref, lockfile)
    manifest = _cached(cache, where, ref)
    if manifest is None and offline:
        hint = "" if ref.exact else " (offline, only exact versions or digests can be served)"
        raise TaskpackError(f"offline: {ref} is not in the cache at {cache.root}{hint}")
    if manifest is not None:
        return _checked(manifest, ref, where, cache, offline, locked_digest, None)
    if not ref.exact:  # a tag or a range: the registry is asked every time
        return _fetched(ref, where, cache, offline, locked_digest)
    # One process of a machine fetches an exact version's manifest; the others starting with
    # it wait and read what it cached (64 workers on a cold machine: one registry request and
    # one manifest validation, not 64).
    from taskpack.base.fs import file_lock

    key = hashlib.sha256(f"{where.url} {ref}".encode()).hexdigest()
    with file_lock(cache.root / "locks" / f"manifest-{key}.lock"):
        manifest = _cached(cache, where, ref)
        if manifest is not None:
            return _checked(manifest, ref, where, cache, offline, locked_digest, None)
        return _fetched(ref, where, cache, offline, locked_digest)


def _cached(cache: Cache, where: Location, ref: Ref) -> Manifest | None:
    if is_version(ref.spec):
        return cache.manifest(where.url, ref.name, ref.spec)
    if ref.is_digest:
        return cache.manifest_by_digest(where.url, ref.name, ref.spec)
    return None


def _fetched(
    ref: Ref, where: Location, cache: Cache, offline: bool, locked_digest: str | None
) -> TaskSet:
    """The version from the registry, cached once it passed every check."""
    reg = _to_read(where)
    ts = _checked(reg.resolve(ref), ref, where, cache, offline, locked_digest, reg)
    cache.save_manifest(where.url, ts.manifest)
    return ts


def _checked(
    manifest: Manifest,
    ref: Ref,
    where: Location,
    cache: Cache,
    offline: bool,
    locked_digest: str | None,
    reg: Registry | None,
) -> TaskSet:
    if locked_digest is not None and manifest.digest != locked_digest:
        raise TaskpackError(
            f"{ref}: content {manifest.digest} differs from the lockfile's {locked_digest}"
        )
    objects = RegistryObjects(manifest, where, cache, offline, reg)
    if locked_digest is not None or ref.is_digest:
        objects.check_all()
    return TaskSet(manifest, objects)


def open(
    target: str | os.PathLike[str],
    *,
    registry: RegistryArg = None,
    lockfile: str | os.PathLike[str] | None = None,
    offline: bool | None = None,
) -> TaskSet:
    """A task set: the folder at `target` when there is one, else the published version
    `target` names (`NAME`, `NAME@1.2`, `NAME@1.2.3`, `NAME@sha256:...`, `NAME@TAG`)."""
    path = Path(target)
    if path.is_dir():
        return open_folder(path)
    text = os.fspath(target)
    if path.is_file():
        raise TaskpackError(
            f"{text} is a file, not a task-set folder; to read it as tasks: taskpack convert "
            f"{text} --from FORMAT -o FOLDER (`taskpack formats` lists the formats)"
        )
    if "/" in text or os.sep in text or text.endswith(".taskset"):
        raise TaskpackError(f"{text}: no such task-set folder" + _near_folder(path))
    try:
        return resolve(text, registry=registry, lockfile=lockfile, offline=offline)
    except TaskpackError as e:
        near = _near_folder(path) if "@" not in text else ""
        if not near:
            raise
        raise TaskpackError(f"{e}{near}") from None


def _near_folder(path: Path) -> str:
    """ "; did you mean the folder X?" when a task-set folder beside `path` is named like it
    (a typo in a local name is then not sent to the registry as a set's name)."""
    import difflib

    parent = path.parent
    try:
        folders = [p.name for p in parent.iterdir() if (p / MANIFEST).is_file()]
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, folders, n=1, cutoff=0.75)
    return f"; did you mean the folder {parent / close[0]}?" if close else ""


def load(
    ref: str,
    split: str = "train",
    *,
    registry: RegistryArg = None,
    lockfile: str | os.PathLike[str] | None = None,
    cache: Cache | None = None,
    offline: bool | None = None,
) -> Split:
    """One split of a published version: `len`, `[i]`, `get(id)`, iteration, materialize.
    An exact version read through the default cache leaves its decoded copy there, which the
    next start reads without pyarrow (`storage.warm`, `taskpack.load`)."""
    ts = resolve(ref, registry=registry, lockfile=lockfile, cache=cache, offline=offline)
    chosen = ts.split(split)
    if cache is None and lockfile is None and isinstance(ts.objects, RegistryObjects):
        from taskpack.storage.warm import save_warm

        m = ts.manifest
        kept = Cache().manifest_path(Location.parse(registry).url, m.name, m.version)
        save_warm(str(ref), chosen, registry, kept, m.digest)
    return chosen


def publish(
    source: str | os.PathLike[str] | TaskSet,
    *,
    registry: RegistryArg = None,
    source_registry: RegistryArg = None,
    tags: tuple[str, ...] = (),
    quiet: bool = True,
    full_check: bool = False,
) -> tuple[Manifest, bool]:
    """Publish a task set as an immutable version; (manifest, whether it was new).

    `source` is a task-set folder, an open TaskSet, or `NAME@VERSION` in `source_registry`
    (default: the default registry): a published version is then mirrored, same manifest and
    digest, into `registry`. Every object's bytes are hashed as they are sent and must be the
    manifest's (the backend refuses them before they land), and every split is opened as a
    reader would (row counts, columns, ids, JSON, paths, modes, digests), so a version that
    could not be read back is never published (it would be immutable). `full_check`
    re-validates every task too (as `taskpack validate` does), before anything is sent.
    """
    from concurrent.futures import ThreadPoolExecutor

    from taskpack.base.progress import progress
    from taskpack.storage.integrity import verify, verify_readable

    ts = source if isinstance(source, TaskSet) else open(source, registry=source_registry)
    dest = open_registry(registry)
    m = ts.manifest
    total = sum(s.bytes for s in m.splits.values())
    if full_check:
        _refuse(ts, verify(ts, limit=5))
    with ThreadPoolExecutor(1, thread_name_prefix="taskpack-check") as pool:
        # The rows are checked while the objects upload (both take about as long); the
        # version's manifest is written only once they hold.
        readable = pool.submit(lambda: [] if full_check else verify_readable(ts, again=False))
        bar = progress(f"publish {m.ref}", total, quiet=quiet)
        try:
            created = dest.publish(
                ts, tags=tags, progress=bar, ready=lambda: _refuse(ts, readable.result())
            )
        except WrongBytes as e:
            raise _invalid(ts, [str(e)]) from None
        finally:
            if bar:
                bar.close()
    return m, created


def _refuse(ts: TaskSet, problems: list[str]) -> None:
    if problems:
        raise _invalid(ts, problems)


def _invalid(ts: TaskSet, problems: list[str]) -> TaskpackError:
    return TaskpackError(f"{ts.where}: not published, invalid: " + "; ".join(problems))


def pull(
    ref: str,
    splits: tuple[str, ...] = (),
    *,
    registry: RegistryArg = None,
    files: bool = False,
    lockfile: str | os.PathLike[str] | None = None,
    cache: Cache | None = None,
    quiet: bool = True,
) -> TaskSet:
    """Bring splits (all by default) and, with `files`, their large files into the cache."""
    from taskpack.base.progress import progress

    ts = resolve(ref, registry=registry, lockfile=lockfile, cache=cache)
    m = ts.manifest
    for name in splits or tuple(ts.splits):
        info = ts.info(name)
        bar = progress(f"pull {m.ref} {name}", info.bytes, quiet=quiet)
        ts.fetched([name], blobs=files, progress=bar)
        ts.annotations(name)  # checked against their digest, as the rows were
        if bar:
            bar.close()
    return ts


def write_lockfile(
    refs: list[str], path: str | os.PathLike[str], *, registry: RegistryArg = None
) -> dict[str, dict[str, str]]:
    """Resolve each ref now, check every split of the version it names, and record name,
    version and digest, so later loads need no resolving."""
    where = Location.parse(registry)
    entries = {}
    for text in refs:
        ref = parse_ref(text)
        ts = resolve(ref, registry=where)
        assert isinstance(ts.objects, RegistryObjects)
        ts.objects.check_all()
        m = ts.manifest
        entries[str(ref)] = {"name": m.name, "version": m.version, "digest": m.digest}
    body = {"registry": where.url, "sets": entries}
    Path(path).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    return entries


def listing(registry: RegistryArg = None) -> dict[str, str | None]:
    """Task-set name -> highest version, of every task set in the registry."""
    return _to_read(Location.parse(registry)).listing()


def versions(name: str, registry: RegistryArg = None) -> dict[str, list[str]]:
    """Every version of `name`, lowest first, with the tags pointing at it."""
    return _to_read(Location.parse(registry)).version_tags(name)


def _to_read(where: Location) -> Registry:
    """The registry at `where`, to read from: a local registry folder that is not there is an
    error (a mistyped `--registry` path), never an empty registry; publishing creates one."""
    if where.path is not None and not where.path.is_dir():
        raise TaskpackError(f"{where.url}: no registry folder there (publishing creates one)")
    return open_registry(where)
