"""Versioned registries of task sets: a local folder (the default), S3, or the Hugging Face Hub.

`open_registry(url)` picks the backend from the URL:

    /some/folder, file:///some/folder    a local registry folder
    s3://bucket/prefix                   an S3 bucket (boto3's credential chain)
    hf://owner                           Hub dataset repos owner/<name>, a version per tag
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

from taskpack.registry.base import Registry, VersionExists
from taskpack.registry.refs import Ref, parse_ref

__all__ = [
    "Ref",
    "Registry",
    "VersionExists",
    "canonical_url",
    "default_registry_url",
    "open_registry",
    "parse_ref",
]


def default_registry_url() -> str:
    """`TASKPACK_REGISTRY`, else a folder in the user's data directory."""
    env = os.environ.get("TASKPACK_REGISTRY")
    if env:
        return env
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return str(Path(base) / "taskpack" / "registry")


def canonical_url(url: str | None = None) -> str:
    """The registry's URL in one spelling (local paths absolute, as file:// URIs), so the
    cache files one registry's manifests in one place whatever the working directory."""
    url = url or default_registry_url()
    parsed = urlparse(url)
    if parsed.scheme in ("s3", "hf"):
        return url.rstrip("/")
    path = Path(parsed.path) if parsed.scheme == "file" else Path(url)
    return path.expanduser().resolve().as_uri()


def open_registry(url: str | None = None) -> Registry:
    url = canonical_url(url)
    parsed = urlparse(url)
    if parsed.scheme == "s3":
        from taskpack.registry.objectstore import ObjectStoreRegistry
        from taskpack.registry.s3 import S3Store

        return ObjectStoreRegistry(S3Store(parsed.netloc, parsed.path))
    if parsed.scheme == "hf":
        from taskpack.registry.hub import HubRegistry

        return HubRegistry(parsed.netloc + parsed.path)
    from taskpack.registry.objectstore import ObjectStoreRegistry
    from taskpack.registry.store import LocalStore

    return ObjectStoreRegistry(LocalStore(Path(parsed.path)))
