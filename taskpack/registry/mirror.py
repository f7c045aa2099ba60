"""A pull-through mirror of a registry (`taskpack serve --mirror REGISTRY`): what it answers
over the HTTP registry protocol (`registry/http.py`), each thing fetched from upstream once.

Manifests and objects are immutable: a manifest is fetched and checked once, then kept in the
mirror's cache by version; an object is downloaded once, hash-checked, into the cache (under
the cache's file lock, so concurrent requests for it wait for the one download) and streamed
from there. Listings and tags can move: each is fetched at most once per `ttl` seconds, however
many clients ask in that time, and a request that arrives while it is being fetched waits for
that fetch. So what reaches upstream does not grow with the number of nodes behind the mirror:
one node's requests, once. Clients check everything again, as from any registry.

What a client sends is checked by the grammar publish uses (a name, a semantic version, a
sha256 the manifest lists) before it reaches a path or the upstream, and the mirror's cache is
its own (`<cache>/mirrors/<upstream>/` by default), never the user's: a client can ask only
for what the upstream holds, and nothing outside that cache is read, written or removed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from taskpack.base.objects import default_cache_dir
from taskpack.errors import TaskpackError
from taskpack.registry import Location, open_registry
from taskpack.registry.cache import Cache, registry_dirname
from taskpack.registry.refs import is_name, is_version

if TYPE_CHECKING:
    from taskpack.model import Manifest

T = TypeVar("T")


class NotFound(TaskpackError):
    """What the client asked for is not upstream (a 404)."""


def mirror_cache(upstream: str, root: Path | None = None) -> Cache:
    """The mirror's own cache, one per upstream: below `root` (default: the user's cache
    folder), in `mirrors/<upstream>/`, which no client cache ever uses."""
    return Cache((root or default_cache_dir()) / "mirrors" / registry_dirname(upstream))


def _checked(name: str, version: str | None = None) -> None:
    if not is_name(name):
        raise NotFound(f"{name!r} is not a task-set name")
    if version is not None and not is_version(version):
        raise NotFound(f"{version!r} is not a version")


class Mirror:
    def __init__(self, upstream: str | Location, cache: Cache | None = None, ttl: float = 10.0):
        self.location = Location.parse(upstream)
        if self.location.scheme == "file" and not (self.location.path or Path()).is_dir():
            raise TaskpackError(f"{self.location.url}: no registry folder there")
        self.registry = open_registry(self.location)
        self.cache = cache or mirror_cache(self.location.url)
        self.ttl = ttl
        self._fresh: dict[tuple[str, ...], tuple[float, Any]] = {}
        self._locks: dict[tuple[str, ...], threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, key: tuple[str, ...]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def recent(self, key: tuple[str, ...], fetch: Callable[[], T]) -> T:
        """`fetch()`'s answer, asked upstream at most once per `ttl` (single flight)."""
        found = self._fresh.get(key)
        if found is not None and time.monotonic() - found[0] < self.ttl:
            return found[1]  # type: ignore[no-any-return]
        with self._lock(key):
            found = self._fresh.get(key)
            if found is not None and time.monotonic() - found[0] < self.ttl:
                return found[1]  # type: ignore[no-any-return]
            value = fetch()
            self._fresh[key] = (time.monotonic(), value)
            return value

    def names(self) -> list[str]:
        return self.recent(("names",), self.registry.names)

    def versions(self, name: str) -> list[str]:
        _checked(name)
        return self.recent(("versions", name), lambda: self.registry.versions(name))

    def tags(self, name: str) -> dict[str, str]:
        _checked(name)
        return self.recent(("tags", name), lambda: self.registry.tags(name))

    def manifest(self, name: str, version: str) -> Manifest:
        """`name@version`'s manifest, checked, from upstream once."""
        _checked(name, version)
        url = self.location.url
        found = self.cache.manifest(url, name, version)
        if found is not None:
            return found
        with self._lock(("manifest", name, version)):
            found = self.cache.manifest(url, name, version)
            if found is None:
                found = self.registry.manifest(name, version)
                if found is None:
                    raise NotFound(f"no version {name}@{version} in {url}")
                self.cache.save_manifest(url, found)
            return found

    def manifest_bytes(self, name: str, version: str) -> bytes:
        return self.manifest(name, version).model_dump_json(indent=2).encode()

    def object(self, name: str, version: str, sha: str) -> Path:
        """The object `sha` of `name@version`, downloaded once and hash-checked, in the cache."""
        manifest = self.manifest(name, version)
        if sha not in manifest.objects():
            raise NotFound(f"{manifest.ref} has no object {sha}")
        return self.cache.ensure(
            sha, lambda out: self.registry.download(manifest, sha, out), manifest.most_bytes(sha)
        )
