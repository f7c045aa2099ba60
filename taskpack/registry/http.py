"""A registry served over HTTP (`taskpack serve --mirror`), read with the standard library.

The protocol is the `Registry` interface's reads, one route each, below `/registry/v1`:

    GET names                                  ["gsm8k", ...]
    GET sets/NAME/versions                     ["1.0.0", ...]
    GET sets/NAME/versions/VERSION             the manifest's bytes (404: no such version)
    GET sets/NAME/tags                         {"latest": "1.0.0", ...}
    GET sets/NAME/versions/VERSION/objects/SHA an object's bytes (a split file or large file)

Nothing it answers is trusted more than any registry's: manifests are checked by
`Registry.manifest`, objects by the cache's hash check. Writes (publish, tags) are refused: a
mirror serves what its upstream holds.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from taskpack.errors import TaskpackError
from taskpack.nesting import parse_json
from taskpack.objects import Progress
from taskpack.registry.base import Registry
from taskpack.registry.location import Location
from taskpack.registry.store import bounded, network_timeout

if TYPE_CHECKING:
    from taskpack.model import Manifest
    from taskpack.taskset import TaskSet

PREFIX = "/registry/v1"
_CHUNK = 1 << 20


def route(*parts: str) -> str:
    """The protocol path of `parts`, each one escaped (a name may hold any character)."""
    return PREFIX + "".join("/" + quote(p, safe="") for p in parts)


class HttpRegistry(Registry):
    def __init__(self, location: Location) -> None:
        self.location = location

    def _get(self, parts: tuple[str, ...], sink: Callable[[bytes], None] | None = None) -> Any:
        """The body at `parts` (None on 404); streamed to `sink` when given."""
        url = self.location.base + route(*parts)
        what = f"registry {self.url}: GET {route(*parts)}"

        def call(tick: Callable[[int], None]) -> bytes | None:
            request = urllib.request.Request(url, headers={"Accept": "*/*"})
            try:
                with urllib.request.urlopen(request, timeout=network_timeout()) as response:
                    chunks = []
                    while chunk := response.read(_CHUNK):
                        tick(len(chunk))
                        if sink is not None:
                            sink(chunk)
                        else:
                            chunks.append(chunk)
                    return b"".join(chunks)
            except urllib.error.HTTPError as e:
                if e.code == 404:
                    return None
                raise TaskpackError(f"{what}: HTTP {e.code}") from None
            except (urllib.error.URLError, OSError) as e:
                reason = getattr(e, "reason", e)
                raise TaskpackError(f"{what}: cannot reach it ({reason})") from None

        return bounded(what, call)

    def _json(self, *parts: str) -> Any:
        body = self._get(parts)
        if body is None:
            return None
        try:
            return parse_json(body)
        except ValueError as e:
            raise TaskpackError(f"registry {self.url}: {route(*parts)}: not JSON ({e})") from None

    def names(self) -> list[str]:
        found = self._json("names") or []
        return sorted(n for n in found if isinstance(n, str))

    def versions(self, name: str) -> list[str]:
        from taskpack.registry.refs import is_version, version_key

        found = self._json("sets", name, "versions") or []
        return sorted((v for v in found if isinstance(v, str) and is_version(v)), key=version_key)

    def read_manifest(self, name: str, version: str) -> bytes | None:
        body: bytes | None = self._get(("sets", name, "versions", version))
        return body

    def tags(self, name: str) -> dict[str, str]:
        found = self._json("sets", name, "tags") or {}
        if not isinstance(found, dict):
            return {}
        return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}

    def set_tag(self, name: str, tag: str, version: str, *, only_if_newer: bool = False) -> None:
        raise TaskpackError(f"registry {self.url} is a read-only mirror: tag its upstream")

    def publish(
        self, ts: TaskSet, *, tags: tuple[str, ...] = (), progress: Progress | None = None
    ) -> bool:
        raise TaskpackError(f"registry {self.url} is a read-only mirror: publish to its upstream")

    def fetch(
        self, manifest: Manifest, sha: str, dest: Path, progress: Progress | None = None
    ) -> None:
        parts = ("sets", manifest.name, "versions", manifest.version, "objects", sha)
        with dest.open("wb") as out:

            def sink(chunk: bytes) -> None:
                out.write(chunk)
                if progress:
                    progress(len(chunk))

            if self._get(parts, sink) is None:
                raise TaskpackError(f"registry {self.url}: {manifest.ref} has no object {sha}")
