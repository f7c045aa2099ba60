"""Task-set references, `name[@ref]`, and how a ref picks one version.

name | name@latest     the `latest` tag, else the highest release
name@1 | name@1.2      the highest release with that prefix
name@1.2.3             exactly that version (pre-releases only by exact name)
name@sha256:<hex>      the version whose content digest this is
name@<tag>             a movable tag
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from taskpack.errors import TaskpackError
from taskpack.records import DIGEST, NAME, SEMVER, full_match

_PARTIAL = re.compile(r"(0|[1-9]\d*)(\.(0|[1-9]\d*))?")


@dataclass(frozen=True)
class Ref:
    name: str
    spec: str = "latest"

    def __str__(self) -> str:
        return f"{self.name}@{self.spec}"

    @property
    def exact(self) -> bool:
        """An exact version or a digest: the only refs that never change meaning."""
        return is_version(self.spec) or is_digest(self.spec)

    @property
    def is_digest(self) -> bool:
        return is_digest(self.spec)

    @property
    def is_partial(self) -> bool:
        return bool(_PARTIAL.fullmatch(self.spec))


def parse_ref(text: str) -> Ref:
    name, at, spec = text.partition("@")
    if at and not spec:
        raise TaskpackError(f"{text!r}: nothing after '@' (NAME@1, NAME@1.2.3, NAME@latest)")
    if not is_name(name):
        raise TaskpackError(f"invalid task-set reference {text!r}: expected NAME[@VERSION|TAG]")
    return Ref(name, spec or "latest")


def is_name(text: str) -> bool:
    """A task-set (or split) name as publish takes it: safe as one path segment anywhere."""
    return full_match(NAME, text)


def is_version(text: str) -> bool:
    return full_match(SEMVER, text)


def is_digest(text: str) -> bool:
    """`sha256:` and 64 lowercase hex digits: a version's content digest."""
    return full_match(DIGEST, text)


def tag_version(data: bytes) -> str | None:
    """The version a stored tag (`{"version": ...}`) names; None for anything else, so a stray
    or hostile tag (`../../x`) never becomes a key to read."""
    from taskpack.base.nesting import parse_json

    try:
        version = parse_json(data).get("version")
    except (ValueError, AttributeError):
        return None
    return version if isinstance(version, str) and is_version(version) else None


def version_key(version: str) -> tuple[int, int, int, int, str]:
    """Sort key: by number, a release above its pre-releases (build metadata ignored)."""
    core, _, pre = version.split("+", 1)[0].partition("-")
    major, minor, patch = (int(x) for x in core.split("."))
    return major, minor, patch, 0 if pre else 1, pre


def is_release(version: str) -> bool:
    """Not a pre-release: only releases move `latest` or match `name@1`."""
    return "-" not in version.split("+", 1)[0]


def best_match(versions: list[str], spec: str) -> str | None:
    """The highest release matching a partial spec (`1`, `1.2`) or any release (`''`)."""
    prefix = spec.split(".") if spec else []
    releases = [
        v
        for v in versions
        if is_release(v) and v.split("+", 1)[0].split(".")[: len(prefix)] == prefix
    ]
    return max(releases, key=version_key, default=None)
