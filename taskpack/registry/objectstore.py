"""A registry over a key-value store (a local folder or an S3 prefix).

Publishing uploads the objects the store lacks (or holds with other bytes), then creates the
manifest with a create-only write: until that last write the version does not exist, and of two
racing publishers exactly one creates it. Re-running an interrupted publish finds the objects
present and finishes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from taskpack.base.objects import Progress, Sink, object_key, require_bytes
from taskpack.errors import TaskpackError
from taskpack.registry.base import Registry
from taskpack.registry.location import Location
from taskpack.registry.refs import is_version, tag_version, version_key
from taskpack.registry.store import PreconditionFailed, Store

if TYPE_CHECKING:
    from taskpack.model import Manifest

if TYPE_CHECKING:
    from taskpack.storage.taskset import TaskSet  # annotations only: no Parquet code imported here

_CAS_ATTEMPTS = 50


class ObjectStoreRegistry(Registry):
    def __init__(self, store: Store, location: Location) -> None:
        self.store = store
        self.location = location

    def names(self) -> list[str]:
        return sorted({key.split("/", 1)[0] for key in self.store.list("sets")})

    def versions(self, name: str) -> list[str]:
        keys = self.store.list(f"sets/{name}/versions")
        found = (k.removesuffix(".json") for k in keys if k.endswith(".json"))
        return sorted((v for v in found if is_version(v)), key=version_key)  # strays passed over

    def read_manifest(self, name: str, version: str) -> bytes | None:
        if not is_version(version):
            return None
        found = self.store.read(f"sets/{name}/versions/{version}.json")
        return None if found is None else found[0]

    def tags(self, name: str) -> dict[str, str]:
        """Tag -> version; an entry that is not a tag naming a version is passed over."""
        out = {}
        for key in self.store.list(f"sets/{name}/tags"):
            found = self.store.read(f"sets/{name}/tags/{key}") if key.endswith(".json") else None
            version = tag_version(found[0]) if found is not None else None
            if version is not None:
                out[key.removesuffix(".json")] = version
        return out

    def set_tag(self, name: str, tag: str, version: str, *, only_if_newer: bool = False) -> None:
        key = f"sets/{name}/tags/{tag}.json"
        body = json.dumps({"version": version}).encode()
        for _ in range(_CAS_ATTEMPTS):
            current = self.store.read(key)
            try:
                if current is None:
                    self.store.write(key, body, create_only=True)
                    return
                old = tag_version(current[0])  # a hostile tag is overwritten, never parsed on
                if old is None:
                    self.store.write(key, body, if_match=current[1])
                    return
                if old == version or (only_if_newer and version_key(old) > version_key(version)):
                    return
                self.store.write(key, body, if_match=current[1])
                return
            except PreconditionFailed:
                continue  # someone moved the tag between our read and write: read again
        raise TaskpackError(f"{self.url}: tag {name}@{tag} kept changing; gave up after retries")

    def publish(
        self,
        ts: TaskSet,
        *,
        tags: tuple[str, ...] = (),
        progress: Progress | None = None,
        ready: Callable[[], None] | None = None,
    ) -> bool:
        m = ts.manifest
        key = f"sets/{m.name}/versions/{m.version}.json"
        existing = self.manifest(m.name, m.version)
        if existing is not None:
            created = self.check_same(existing, m)
        else:
            for sha, path in ts.fetched().items():
                # A key already there is trusted only if its bytes are right: a wrong object
                # left by anyone would otherwise make this version unreadable for good.
                if self.store.sha256(object_key(sha)) != sha:
                    self.store.upload(object_key(sha), path, sha, progress)
                    continue
                # Not sent, so hashed here: the rows checked beside the upload are this file's.
                require_bytes(path, sha)
                if progress:
                    progress(path.stat().st_size)
            if ready is not None:
                ready()
            try:
                self.store.write(key, m.model_dump_json(indent=2).encode(), create_only=True)
                created = True
            except PreconditionFailed:
                winner = self.manifest(m.name, m.version)
                if winner is None:
                    raise
                created = self.check_same(winner, m)
        self.move_tags(m, tags)
        return created

    def download(
        self, manifest: Manifest, sha: str, out: Sink, progress: Progress | None = None
    ) -> None:
        self.store.download(object_key(sha), out, progress)

    def tail(self, manifest: Manifest, sha: str, size: int) -> bytes | None:
        return self.store.tail(object_key(sha), size)
