"""Versioned registries of task sets: a local folder (the default), S3, or the Hugging Face Hub.

`open_registry(location)` picks the backend from a `Location` (see `location.py` for the
spellings accepted).
"""

from __future__ import annotations

import os

from taskpack.base.settings import default_registry
from taskpack.registry.base import Registry, VersionExists
from taskpack.registry.location import Location
from taskpack.registry.refs import Ref, parse_ref

__all__ = [
    "Location",
    "Ref",
    "Registry",
    "VersionExists",
    "default_registry",
    "open_registry",
    "parse_ref",
]


def open_registry(location: str | os.PathLike[str] | Location | None = None) -> Registry:
    where = Location.parse(location)
    if where.scheme == "s3":
        from taskpack.registry.objectstore import ObjectStoreRegistry
        from taskpack.registry.s3 import S3Store

        return ObjectStoreRegistry(S3Store(where), where)
    if where.scheme == "hf":
        from taskpack.registry.hub import HubRegistry

        return HubRegistry(where)
    if where.scheme in ("http", "https"):
        from taskpack.registry.http import HttpRegistry

        return HttpRegistry(where)
    from taskpack.registry.objectstore import ObjectStoreRegistry
    from taskpack.registry.store import LocalStore

    assert where.path is not None
    return ObjectStoreRegistry(LocalStore(where.path), where)
