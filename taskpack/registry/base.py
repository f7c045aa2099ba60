"""The registry interface: publish immutable versions, resolve refs, move tags, fetch objects.

Backends implement the primitives (list versions, read a manifest, create one, fetch an
object, swap a tag); resolution and tag rules live here once, so every backend resolves
`name@1.2` the same way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING

from taskpack.base.objects import Progress, Sink
from taskpack.errors import TaskpackError, describe_error, unknown
from taskpack.registry.location import Location
from taskpack.registry.refs import (
    Ref,
    best_match,
    is_release,
    is_version,
    parse_ref,
    version_key,
)

if TYPE_CHECKING:
    from taskpack.model import Manifest
    from taskpack.storage.taskset import TaskSet  # annotations only: no Parquet code imported here


class VersionExists(TaskpackError):
    """The version is already published with different content; versions are immutable."""


class Registry(ABC):
    location: Location

    @property
    def url(self) -> str:
        return self.location.url

    # --- primitives -------------------------------------------------------------------

    @abstractmethod
    def names(self) -> list[str]: ...

    @abstractmethod
    def versions(self, name: str) -> list[str]: ...

    @abstractmethod
    def read_manifest(self, name: str, version: str) -> bytes | None:
        """The bytes stored as `name@version`'s manifest, or None when there are none."""

    def manifest(self, name: str, version: str) -> Manifest | None:
        """The manifest of `name@version`, checked: it must say it is `name@version` (a
        manifest stored under one key cannot stand in for another version), its paths must
        stay inside the version, and its digest must be the one its split digests give."""
        data = self.read_manifest(name, version)
        if data is None:
            return None
        where = f"{self.url}: manifest of {name}@{version}"
        from pydantic import ValidationError

        from taskpack.base.nesting import check_depth
        from taskpack.model import Manifest

        try:
            check_depth(data)
            m = Manifest.model_validate_json(data)
        except ValidationError as e:
            raise TaskpackError(f"{where} is invalid: {describe_error(e)}") from None
        except ValueError as e:
            raise TaskpackError(f"{where} is invalid: {e}") from None
        if (m.name, m.version) != (name, version):
            raise TaskpackError(f"{where} says it is {m.name}@{m.version}; refused")
        if m.expected_digest() != m.digest:
            raise TaskpackError(f"{where}: digest {m.digest} does not cover what it lists; refused")
        return m

    @abstractmethod
    def tags(self, name: str) -> dict[str, str]:
        """Tag -> version."""

    @abstractmethod
    def set_tag(self, name: str, tag: str, version: str, *, only_if_newer: bool = False) -> None:
        """Point `tag` at `version` by compare-and-swap; with `only_if_newer`, never move it to
        a lower version than the one it names (how `latest` follows the highest release)."""

    @abstractmethod
    def publish(
        self,
        ts: TaskSet,
        *,
        tags: tuple[str, ...] = (),
        progress: Progress | None = None,
        ready: Callable[[], None] | None = None,
    ) -> bool:
        """Publish `ts` as the immutable version its manifest names; True if it was new, False
        if the same content was already there. Different content raises VersionExists.

        `ready` is called once the objects are stored and before the version becomes visible;
        an error it raises stops the publish there (the caller's checks run beside the upload:
        content-addressed objects are harmless until a manifest names them)."""

    @abstractmethod
    def download(
        self, manifest: Manifest, sha: str, out: Sink, progress: Progress | None = None
    ) -> None:
        """Write the object with bytes hash `sha` (a split file or a large task file) to `out`,
        as it streams (the caller hashes it on the way)."""

    def tail(self, manifest: Manifest, sha: str, size: int) -> bytes | None:
        """The last `size` bytes of object `sha`, where the backend can fetch a range (None
        where it cannot): a Parquet file's footer, so its rows can be read as it downloads."""
        return None

    # --- shared rules -----------------------------------------------------------------

    def listing(self) -> dict[str, str | None]:
        """Task-set name -> its highest version (None when it has none yet)."""
        return {name: next(reversed(self.versions(name)), None) for name in self.names()}

    def version_tags(self, name: str) -> dict[str, list[str]]:
        """Every version of `name`, lowest first, with the tags that point at it."""
        versions = self.versions(name)
        if not versions:
            raise TaskpackError(f"{self.url}: no task set named {name!r}")
        out: dict[str, list[str]] = {v: [] for v in versions}
        for tag, version in sorted(self.tags(name).items()):
            if version in out:
                out[version].append(tag)
        return out

    def resolve(self, ref: Ref | str) -> Manifest:
        """The manifest `ref` names now."""
        ref = parse_ref(ref) if isinstance(ref, str) else ref
        version = self._resolve_version(ref)
        manifest = self.manifest(ref.name, version) if version else None
        if manifest is None:
            known = ", ".join(self.versions(ref.name)) or "none"
            raise TaskpackError(
                f"{self.url}: no version of {ref.name!r} matches {ref.spec!r} (versions: {known})"
            )
        if ref.is_digest and manifest.digest != ref.spec:
            raise TaskpackError(f"{self.url}: {ref} resolved to content {manifest.digest}")
        return manifest

    def _resolve_version(self, ref: Ref) -> str | None:
        if is_version(ref.spec):
            return ref.spec
        versions = self.versions(ref.name)
        if not versions:
            raise unknown("task set", ref.name, self.names(), self.url)
        if ref.is_digest:
            for version in sorted(versions, key=version_key, reverse=True):
                found = self.manifest(ref.name, version)
                if found is not None and found.digest == ref.spec:
                    return version
            return None
        if ref.is_partial:
            return best_match(versions, ref.spec)
        tagged = self.tags(ref.name).get(ref.spec)
        if tagged is None and ref.spec == "latest":
            return best_match(versions, "")
        if tagged is None:
            tags = sorted(self.tags(ref.name))
            where = f"{self.url}: {ref.name}"
            raise unknown("version or tag", ref.spec, [*versions, *tags], where)
        return tagged

    def move_tags(self, m: Manifest, tags: tuple[str, ...]) -> None:
        """After a publish: `latest` follows the highest release, user tags point here."""
        if is_release(m.version):
            self.set_tag(m.name, "latest", m.version, only_if_newer=True)
        for tag in tags:
            self.set_tag(m.name, tag, m.version)

    def check_same(self, existing: Manifest, new: Manifest) -> bool:
        """False when identical content is already published; VersionExists when it differs."""
        if existing.digest != new.digest:
            raise VersionExists(
                f"{self.url}: {new.name}@{new.version} already exists with different content "
                f"({existing.digest}); publish a new version instead"
            )
        return False
