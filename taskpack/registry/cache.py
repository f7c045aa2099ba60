"""The local cache: content-addressed objects and the verified manifests that name them.

    <cache>/objects/sha256/<ab>/<hash>          split files and large files, by bytes hash
    <cache>/checked/<key>                       what was hash-checked, and the file it was then
    <cache>/manifests/<registry>/<name>/<version>.json
    <cache>/locks/<hash>.lock

A download goes to a temporary file, is hash-checked, then renamed into place, under a file lock
so that N processes on one machine fetch each object once. A file once hashed (a cached object,
or an object of a local registry folder read in place) is trusted while its stamp matches: the
hash checked, with the file's size, inode, ctime and mtime. `cp -p` and `rsync -t` can set an
mtime but not a ctime, so a file written since is hashed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from taskpack.base.fs import file_lock, sweep, temp_beside, write_atomic
from taskpack.base.objects import HashedFile, Sink, default_cache_dir, file_sha256, sha256_relpath
from taskpack.errors import TaskpackError
from taskpack.records import stored_manifest
from taskpack.registry.refs import is_name, is_version

if TYPE_CHECKING:
    from taskpack.model import Manifest
    from taskpack.registry.growing import Growing


def registry_dirname(url: str) -> str:
    """A readable folder name for a registry URL: `s3://b/p` -> `s3-b-p`, plus a short hash
    so that two URLs differing only in punctuation never share a folder."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", url).strip("-")[:80] or "registry"
    return f"{readable}-{hashlib.sha256(url.encode()).hexdigest()[:8]}"


def _alongside(
    download: Callable[[Sink], None], growing: Growing, read: Callable[[Growing], None]
) -> None:
    """`download` into `growing` while `read` reads it on a thread; either's error raised."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="taskpack-check") as pool:
        reading = pool.submit(read, growing)
        try:
            download(growing)
        finally:
            growing.end()
        reading.result()


def _fingerprint(path: Path, sha: str) -> str:
    st = path.stat()
    return f"{sha} {st.st_size} {st.st_ino} {st.st_ctime_ns} {st.st_mtime_ns}"


class Cache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or default_cache_dir()

    def object_path(self, sha: str) -> Path:
        return self.root / "objects" / sha256_relpath(sha)

    def _stamp(self, path: Path) -> Path:
        key = hashlib.sha256(os.fsencode(path.absolute())).hexdigest()
        return self.root / "checked" / key[:2] / key

    def holds(self, path: Path, sha: str) -> bool:
        """Whether the file at `path` holds the bytes `sha`: hashed once, then trusted while
        its stamp (the hash, size, inode, ctime, mtime) still matches."""
        stamp = self._stamp(path)
        try:
            seen = _fingerprint(path, sha)
        except FileNotFoundError:
            return False
        try:
            if stamp.read_text() == seen:
                return True
        except FileNotFoundError:
            pass
        if file_sha256(path) != sha:
            stamp.unlink(missing_ok=True)
            return False
        self._remember(path, sha, seen)
        return True

    def _remember(self, path: Path, sha: str, seen: str | None = None) -> None:
        """Stamp `path` as holding `sha` as it is now (its fingerprint, `seen` when taken
        before the file was hashed)."""
        write_atomic(self._stamp(path), (seen or _fingerprint(path, sha)).encode())

    def verified(self, sha: str) -> Path | None:
        """The cached object if present and sound. Nothing is removed here: outside the lock,
        another process may be renaming a fresh copy into place this very moment; a corrupt
        one is replaced, under the lock, by the download that follows."""
        path = self.object_path(sha)
        return path if self.holds(path, sha) else None

    def ensure(
        self,
        sha: str,
        download: Callable[[Sink], None],
        limit: int,
        beside: tuple[int, bytes, Callable[[Growing], None]] | None = None,
    ) -> Path:
        """The object `sha`, downloaded once per machine however many processes ask, hashed
        as it is written, never more than `limit` bytes, and renamed into place only when it
        is right. `beside` = (size, tail,
        read): `read` runs on a thread during the download, on the file as it grows (see
        `growing`); its errors are raised here."""
        found = self.verified(sha)
        if found is not None:
            return found
        with file_lock(self.root / "locks" / f"{sha}.lock"):
            found = self.verified(sha)  # another process may have fetched it while we waited
            if found is not None:
                return found
            path = self.object_path(sha)
            path.parent.mkdir(parents=True, exist_ok=True)
            sweep(path)
            tmp = temp_beside(path)
            try:
                with tmp.open("wb", buffering=-1 if beside is None else 0) as f:
                    sink = HashedFile(f, limit)
                    if beside is None:
                        download(sink)
                    else:
                        from taskpack.registry.growing import Growing

                        _alongside(download, Growing(sink, tmp, beside[0], beside[1]), beside[2])
                actual = sink.hexdigest()
                if actual != sha:
                    raise TaskpackError(f"object {sha}: downloaded bytes hash to {actual}")
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
            self._remember(path, sha)
            return path

    # --- facts checked once per machine ----------------------------------------------------

    def _fact(self, name: str) -> Path:
        return self.root / "checked" / "facts" / name

    def known(self, name: str) -> bool:
        """Whether the fact `name` (e.g. "split object X chains to digest Y") was checked here."""
        return self._fact(name).exists()

    def learn(self, name: str) -> None:
        write_atomic(self._fact(name), b"")

    # --- manifests --------------------------------------------------------------------

    def _manifest_dir(self, registry_url: str, name: str) -> Path:
        if not is_name(name):  # never a path: whoever calls, the name is one folder's
            raise TaskpackError(f"{name!r} is not a task-set name")
        return self.root / "manifests" / registry_dirname(registry_url) / name

    def manifest_path(self, registry_url: str, name: str, version: str) -> Path:
        """Where the cache keeps a version's manifest once checked."""
        if not is_version(version):
            raise TaskpackError(f"{version!r} is not a version")
        return self._manifest_dir(registry_url, name) / f"{version}.json"

    def manifest(self, registry_url: str, name: str, version: str) -> Manifest | None:
        return self._read_manifest(self.manifest_path(registry_url, name, version))

    def _read_manifest(self, path: Path) -> Manifest | None:
        """A cached manifest; a corrupt one is set aside (and so fetched again), never served:
        renamed to `<version>.json.bad` beside it, inside the cache, for a human to look at."""
        try:
            return cast("Manifest", stored_manifest(path.read_bytes()))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, AttributeError):
            with contextlib.suppress(OSError):
                os.replace(path, path.with_name(path.name + ".bad"))
            return None

    def manifest_by_digest(self, registry_url: str, name: str, digest: str) -> Manifest | None:
        folder = self._manifest_dir(registry_url, name)
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            m = self._read_manifest(path)
            if m is not None and m.digest == digest:
                return m
        return None

    def save_manifest(self, registry_url: str, manifest: Manifest) -> None:
        path = self.manifest_path(registry_url, manifest.name, manifest.version)
        write_atomic(path, manifest.model_dump_json(indent=2).encode())
