"""Pull at episode start: resolve a ref once, then read by digest from the local cache.

`load("gsm8k@1.0.0", split="train")` on a machine that has pulled that version before touches
no network (the manifest and split are in the cache, named by version and by hash) and imports
neither boto3 nor datasets. Offline (`TASKPACK_OFFLINE=1`) only exact versions and digests are
served, from the cache, and anything else fails loudly rather than picking another version.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from taskpack.errors import TaskpackError
from taskpack.model import Manifest, SplitInfo
from taskpack.registry import Registry, canonical_url, open_registry
from taskpack.registry.cache import Cache
from taskpack.registry.refs import Ref, is_version, parse_ref
from taskpack.registry.store import Progress
from taskpack.taskset import Split, TaskSet


def _offline(flag: bool | None) -> bool:
    if flag is not None:
        return flag
    return os.environ.get("TASKPACK_OFFLINE", "").lower() in ("1", "true", "yes")


@dataclass
class Version:
    """One resolved version in a registry, read through the cache; `split(name)` like a TaskSet."""

    manifest: Manifest
    url: str
    cache: Cache
    offline: bool
    _registry: Registry | None = field(default=None, repr=False)

    @property
    def registry(self) -> Registry:
        # Built on first need: a cache hit never constructs a backend (nor imports boto3).
        if self._registry is None:
            self._registry = open_registry(self.url)
        return self._registry

    @property
    def splits(self) -> list[str]:
        return list(self.manifest.splits)

    def object(self, sha: str, progress: Progress | None = None) -> Path:
        if self.url.startswith("file:"):  # a local registry folder: read it in place
            local = self.registry.local_object(self.manifest, sha)
            if local is not None:
                return local
        if self.offline:
            found = self.cache.verified(sha)
            if found is None:
                raise TaskpackError(
                    f"offline: object {sha} of {self.manifest.name}@{self.manifest.version} "
                    "is not in the cache"
                )
            return found
        return self.cache.ensure(
            sha, lambda dest: self.registry.fetch(self.manifest, sha, dest, progress)
        )

    def info(self, name: str) -> SplitInfo:
        info = self.manifest.splits.get(name)
        if info is None:
            m = self.manifest
            raise TaskpackError(
                f"{m.name}@{m.version} has no split {name!r} (splits: {self.splits})"
            )
        return info

    def split(self, name: str) -> Split:
        info = self.info(name)
        return Split(
            name,
            info,
            self.object(info.sha256),
            lambda sha: self.object(sha).read_bytes(),
            self.manifest.format_version,
        )


def read_lockfile(path: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
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
    registry: str | None = None,
    lockfile: str | os.PathLike[str] | None = None,
    cache: Cache | None = None,
    offline: bool | None = None,
) -> Version:
    """The version `ref` names, from the cache when it is pinned, else from the registry."""
    url = canonical_url(registry)
    cache = cache or Cache()
    offline = _offline(offline)
    ref = parse_ref(ref) if isinstance(ref, str) else ref
    ref, locked_digest = _locked(ref, lockfile)
    manifest = None
    if is_version(ref.spec):
        manifest = cache.manifest(url, ref.name, ref.spec)
    elif ref.is_digest:
        manifest = cache.manifest_by_digest(url, ref.name, ref.spec)
    if manifest is not None:
        handle = Version(manifest, url, cache, offline)
    elif offline:
        hint = "" if ref.exact else " (offline, only exact versions or digests can be served)"
        raise TaskpackError(f"offline: {ref} is not in the cache at {cache.root}{hint}")
    else:
        reg = open_registry(url)
        manifest = reg.resolve(ref)
        cache.save_manifest(url, manifest)
        handle = Version(manifest, url, cache, offline, reg)
    if locked_digest is not None and handle.manifest.digest != locked_digest:
        raise TaskpackError(
            f"{ref}: content {handle.manifest.digest} differs from the lockfile's {locked_digest}"
        )
    return handle


def load(
    ref: str,
    split: str = "train",
    *,
    registry: str | None = None,
    lockfile: str | os.PathLike[str] | None = None,
    cache: Cache | None = None,
    offline: bool | None = None,
) -> Split:
    """One split of a published version: `len`, `[i]`, `get(id)`, iteration, materialize."""
    version = resolve(ref, registry=registry, lockfile=lockfile, cache=cache, offline=offline)
    return version.split(split)


def publish(
    path: str | os.PathLike[str],
    *,
    registry: str | None = None,
    tags: tuple[str, ...] = (),
    quiet: bool = True,
    full_check: bool = False,
) -> tuple[Manifest, bool]:
    """Publish the task set at `path`; (manifest, whether it was new).

    Every object's bytes are checked against the manifest's hashes first, and every split is
    opened as a reader would (row counts, columns, ids, JSON, paths, modes, digests), so a
    version that could not be read back is never published (it would be immutable).
    `full_check` re-validates every task too (as `taskpack validate` does).
    """
    from taskpack.progress import progress
    from taskpack.taskset import open as open_taskset
    from taskpack.verify import verify, verify_objects, verify_readable

    ts: TaskSet = open_taskset(path)
    problems = verify(ts, limit=5) if full_check else verify_objects(ts) or verify_readable(ts)
    if problems:
        raise TaskpackError(f"{path}: not published, invalid: " + "; ".join(problems))
    m = ts.manifest
    total = sum(s.bytes for s in m.splits.values())
    bar = progress(f"publish {m.name}@{m.version}", total, quiet=quiet)
    created = open_registry(registry).publish(ts, tags=tags, progress=bar)
    if bar:
        bar.close()
    return m, created


def pull(
    ref: str,
    splits: tuple[str, ...] = (),
    *,
    registry: str | None = None,
    files: bool = False,
    lockfile: str | os.PathLike[str] | None = None,
    cache: Cache | None = None,
    quiet: bool = True,
) -> Version:
    """Bring splits (all by default) and, with `files`, their large task files into the cache."""
    from taskpack.progress import progress

    version = resolve(ref, registry=registry, lockfile=lockfile, cache=cache)
    m = version.manifest
    for name in splits or tuple(version.splits):
        info = version.info(name)
        wanted = [info.sha256, *(info.blobs if files else [])]
        bar = progress(f"pull {m.name}@{m.version} {name}", info.bytes, quiet=quiet)
        for sha in wanted:
            version.object(sha, bar)
        if bar:
            bar.close()
    return version


def write_lockfile(
    refs: list[str], path: str | os.PathLike[str], *, registry: str | None = None
) -> dict[str, dict[str, str]]:
    """Resolve each ref now and record name, version and digest, so loads need no resolving."""
    url = canonical_url(registry)
    reg = open_registry(url)
    entries = {}
    for text in refs:
        ref = parse_ref(text)
        m = reg.resolve(ref)
        entries[str(ref)] = {"name": m.name, "version": m.version, "digest": m.digest}
    body = {"registry": url, "sets": entries}
    Path(path).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    return entries
