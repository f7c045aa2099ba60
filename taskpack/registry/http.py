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
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from taskpack.base import routes
from taskpack.base.nesting import parse_json
from taskpack.base.objects import Progress, Sink
from taskpack.errors import TaskpackError
from taskpack.registry.base import Registry
from taskpack.registry.location import Location
from taskpack.registry.store import READ_BYTES, bounded, network_timeout

if TYPE_CHECKING:
    from taskpack.model import Manifest
    from taskpack.storage.taskset import TaskSet

MAX_LISTING = 16 << 20  # bytes of a listing (names, versions, tags) read at most
MAX_MANIFEST = 64 << 20  # bytes of a manifest read at most


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Redirects within the registry's own origin only: a mirror that sends a client
    elsewhere (another host, another scheme) is refused, never followed."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        old, new = urlsplit(req.full_url), urlsplit(urljoin(req.full_url, newurl))
        if (old.scheme, old.netloc) != (new.scheme, new.netloc):
            raise urllib.error.HTTPError(
                req.full_url, code, f"redirected to another origin ({new.scheme}://{new.netloc})",
                headers, fp,
            )  # fmt: skip
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_SameOrigin)


class HttpRegistry(Registry):
    def __init__(self, location: Location) -> None:
        self.location = location

    def _get(
        self,
        limit: int,
        route: str,
        sink: Callable[[bytes], None] | None = None,
        /,
        **params: str,
    ) -> Any:
        """The body of `route` (None on 404), at most `limit` bytes (more is an error, found
        before it is read where the server says its length); streamed to `sink` when given."""
        path = routes.url(route, **params)
        what = f"registry {self.url}: GET {path}"

        def call(tick: Callable[[int], None]) -> bytes | None:
            request = urllib.request.Request(self.location.base + path, headers={"Accept": "*/*"})
            try:
                with _OPENER.open(request, timeout=network_timeout()) as response:
                    length = response.headers.get("Content-Length")
                    if length is not None and (not length.isdigit() or int(length) > limit):
                        raise TaskpackError(f"{what}: {length} bytes, more than {limit} expected")
                    chunks, got = [], 0
                    while chunk := response.read(min(READ_BYTES, limit + 1 - got)):
                        got += len(chunk)
                        if got > limit:
                            raise TaskpackError(f"{what}: more than the {limit} bytes expected")
                        tick(len(chunk))
                        if sink is not None:
                            sink(chunk)
                        else:
                            chunks.append(chunk)
                    return b"".join(chunks)
            except urllib.error.HTTPError as e:
                if e.code == 404:
                    return None
                raise TaskpackError(f"{what}: HTTP {e.code} {e.msg}") from None
            except (urllib.error.URLError, OSError, ValueError) as e:
                reason = getattr(e, "reason", e)
                raise TaskpackError(f"{what}: cannot reach it ({reason})") from None

        return bounded(what, call)

    def _json(self, route: str, /, **params: str) -> Any:
        body = self._get(MAX_LISTING, route, None, **params)
        if body is None:
            return None
        try:
            return parse_json(body)
        except ValueError as e:
            where = routes.url(route, **params)
            raise TaskpackError(f"registry {self.url}: {where}: not JSON ({e})") from None

    def names(self) -> list[str]:
        found = self._json("registry_names") or []
        return sorted(n for n in found if isinstance(n, str))

    def versions(self, name: str) -> list[str]:
        from taskpack.registry.refs import is_version, version_key

        found = self._json("registry_versions", name=name) or []
        return sorted((v for v in found if isinstance(v, str) and is_version(v)), key=version_key)

    def read_manifest(self, name: str, version: str) -> bytes | None:
        body: bytes | None = self._get(
            MAX_MANIFEST, "registry_manifest", name=name, version=version
        )
        return body

    def tags(self, name: str) -> dict[str, str]:
        found = self._json("registry_tags", name=name) or {}
        if not isinstance(found, dict):
            return {}
        return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}

    def set_tag(self, name: str, tag: str, version: str, *, only_if_newer: bool = False) -> None:
        raise TaskpackError(f"registry {self.url} is a read-only mirror: tag its upstream")

    def publish(
        self,
        ts: TaskSet,
        *,
        tags: tuple[str, ...] = (),
        progress: Progress | None = None,
        ready: Callable[[], None] | None = None,
    ) -> bool:
        raise TaskpackError(f"registry {self.url} is a read-only mirror: publish to its upstream")

    def download(
        self, manifest: Manifest, sha: str, out: Sink, progress: Progress | None = None
    ) -> None:
        def sink(chunk: bytes) -> None:
            out.write(chunk)
            if progress:
                progress(len(chunk))

        found = self._get(
            manifest.most_bytes(sha),
            "registry_object",
            sink,
            name=manifest.name,
            version=manifest.version,
            sha256=sha,
        )
        if found is None:
            raise TaskpackError(f"registry {self.url}: {manifest.ref} has no object {sha}")
