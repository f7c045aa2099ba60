"""`taskpack.load`: an environment's start, from the warm copy of a split when the cache holds
one (`storage.warm`: the standard library alone, no pyarrow), else through the registry and
the cache, checked (`registry.client.load`), which leaves that copy for the next start."""

from __future__ import annotations

import os
from functools import partial

from taskpack.storage.warm import open_warm

TYPE_CHECKING = False  # as in taskpack/__init__.py: typing stays unimported at a warm start
if TYPE_CHECKING:
    from typing import Any

    from taskpack.registry.cache import Cache
    from taskpack.storage.taskset import Split
    from taskpack.storage.warm import WarmSplit


def load(
    ref: str,
    split: str | None = None,
    *,
    registry: Any = None,
    lockfile: str | os.PathLike[str] | None = None,
    cache: Cache | None = None,
    offline: bool | None = None,
) -> Split | WarmSplit:
    """One split of a published version: `len`, `[i]`, `get(id)`, iteration, and everything
    else a `Split` has. An exact version (`NAME@X.Y.Z`) read before on this machine through the
    default cache answers from its decoded copy; a range, a tag, a digest, a lockfile or
    another cache goes through the registry, checked. `split` may be left out only for a set of
    one split."""
    if split is None:
        split = _only_split(ref, registry, lockfile, cache, offline)
    if lockfile is None and cache is None and isinstance(ref, str):
        warm = open_warm(ref, split, registry, partial(_checked, ref, split, registry, offline))
        if warm is not None:
            return warm
    return _checked(ref, split, registry, offline, lockfile, cache)


def _only_split(
    ref: str,
    registry: Any,
    lockfile: str | os.PathLike[str] | None,
    cache: Cache | None,
    offline: bool | None,
) -> str:
    """The one split of the version `ref` names; a TaskpackError naming them when it has more."""
    from taskpack.errors import TaskpackError
    from taskpack.registry.client import resolve

    ts = resolve(ref, registry=registry, lockfile=lockfile, cache=cache, offline=offline)
    if len(ts.splits) == 1:
        return ts.splits[0]
    raise TaskpackError(
        f"{ts.manifest.ref} has splits {', '.join(ts.splits)}: name one "
        f"(taskpack.load({ref!r}, split={ts.splits[0]!r}))"
    )


def _checked(
    ref: str,
    split: str,
    registry: Any,
    offline: bool | None,
    lockfile: str | os.PathLike[str] | None = None,
    cache: Cache | None = None,
) -> Split:
    """The split through the registry and the cache, checked (a module's function: a warm
    split that holds it pickles, as a DataLoader's spawned workers need)."""
    from taskpack.registry.client import load as through_registry

    return through_registry(
        ref, split, registry=registry, lockfile=lockfile, cache=cache, offline=offline
    )
