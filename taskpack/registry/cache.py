"""The local cache: content-addressed objects and the immutable manifests that name them.

    <cache>/objects/sha256/<ab>/<hash>          split files and large task files, by bytes hash
    <cache>/objects/sha256/<ab>/<hash>.ok       "size mtime" when the hash was last checked
    <cache>/manifests/<registry>/<name>/<version>.json
    <cache>/locks/<hash>.lock

A download goes to a temporary file, is hash-checked, then renamed into place, under a file lock
so that N processes on one machine fetch each object once. An object whose size or mtime no
longer matches its `.ok` stamp is hashed again, and fetched again if it fails.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path

from taskpack._fs import file_lock, write_atomic
from taskpack.errors import TaskpackError
from taskpack.model import Manifest, stored_manifest
from taskpack.taskset import file_sha256, sha256_relpath


def default_cache_dir() -> Path:
    env = os.environ.get("TASKPACK_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "taskpack"


def registry_dirname(url: str) -> str:
    """A readable folder name for a registry URL: `s3://b/p` -> `s3-b-p`."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", url).strip("-") or "registry"


class Cache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or default_cache_dir()

    def object_path(self, sha: str) -> Path:
        return self.root / "objects" / sha256_relpath(sha)

    def _stamp(self, path: Path) -> str:
        st = path.stat()
        return f"{st.st_size} {st.st_mtime_ns}"

    def verified(self, sha: str) -> Path | None:
        """The cached object if present and sound; a corrupt one is removed."""
        path = self.object_path(sha)
        ok = path.with_name(sha + ".ok")
        try:
            if ok.read_text() == self._stamp(path):
                return path
        except FileNotFoundError:
            if not path.exists():
                return None
        if path.exists() and file_sha256(path) == sha:
            ok.write_text(self._stamp(path))
            return path
        path.unlink(missing_ok=True)
        ok.unlink(missing_ok=True)
        return None

    def ensure(self, sha: str, download: Callable[[Path], None]) -> Path:
        """The object `sha`, downloaded once per machine however many processes ask."""
        found = self.verified(sha)
        if found is not None:
            return found
        with file_lock(self.root / "locks" / f"{sha}.lock"):
            found = self.verified(sha)  # another process may have fetched it while we waited
            if found is not None:
                return found
            path = self.object_path(sha)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{sha}.{uuid.uuid4().hex}")
            try:
                download(tmp)
                actual = file_sha256(tmp)
                if actual != sha:
                    raise TaskpackError(f"object {sha}: downloaded bytes hash to {actual}")
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
            path.with_name(sha + ".ok").write_text(self._stamp(path))
            return path

    # --- manifests --------------------------------------------------------------------

    def _manifest_dir(self, registry_url: str, name: str) -> Path:
        return self.root / "manifests" / registry_dirname(registry_url) / name

    def manifest(self, registry_url: str, name: str, version: str) -> Manifest | None:
        return self._read_manifest(self._manifest_dir(registry_url, name) / f"{version}.json")

    def _read_manifest(self, path: Path) -> Manifest | None:
        """A cached manifest; a corrupt one is removed (and so fetched again), never served."""
        try:
            return stored_manifest(path.read_bytes())
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, AttributeError):
            path.unlink(missing_ok=True)
            return None

    def manifest_by_digest(self, registry_url: str, name: str, digest: str) -> Manifest | None:
        folder = self._manifest_dir(registry_url, name)
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            m = self._read_manifest(path)
            if m is not None and m.digest == digest:
                return m
        return None

    def save_manifest(self, registry_url: str, manifest: Manifest) -> None:
        folder = self._manifest_dir(registry_url, manifest.name)
        write_atomic(
            folder / f"{manifest.version}.json", manifest.model_dump_json(indent=2).encode()
        )
