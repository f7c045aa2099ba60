"""Merge task sets converted part by part into one, so that an import too large for one machine
runs as independent conversions (any engine may schedule them: Dask, Ray, a batch queue) and
ends as the task set a single import of the same rows would have written: same rows, same
order, same split digests (the version digest also pins the files' sizes, which differ).
Each part's pass rates come along. Rows are copied as stored, a row group at a time, once each
part's rows are checked against its digests.

    parts = [import_sources(f"part{k}", {"train": [uri]}, "gsm8k", lines={"train": span})...]
    taskpack.merge(["part0", "part1"], "gsm8k.taskset", name="gsm8k", version="1.0.0")
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from taskpack.errors import TaskpackError
from taskpack.storage.taskset import open_folder
from taskpack.storage.writer import TaskSetWriter

if TYPE_CHECKING:
    from taskpack.model import Manifest


def merge(
    parts: Sequence[str | os.PathLike[str]],
    target: str | os.PathLike[str],
    *,
    digests: Sequence[str] | None = None,
    **meta: Any,
) -> Manifest:
    """Write at `target` the task set whose every split is that split of each part, in the
    order of `parts` (a part may lack a split). Each part's rows are checked against its
    digests first; ids must stay unique within each split. `digests`: each part's version
    digest, as the process that wrote it returned it (a sharded import's driver does): a part
    must then have that digest, and its rows' stored digests chain to it, without each row
    hashed again. `meta` takes TaskSetWriter's options (name, version, description, license,
    source, overwrite)."""
    if not parts:
        raise TaskpackError("merge: no parts given")
    sets = [open_folder(p) for p in parts]
    if digests is not None:
        if len(digests) != len(sets):
            raise TaskpackError(f"merge: {len(sets)} parts, {len(digests)} digests")
        for ts, digest in zip(sets, digests, strict=True):
            if ts.manifest.digest != digest:
                raise TaskpackError(f"{ts.where}: digest {ts.manifest.digest}, not {digest}")
    names = list(dict.fromkeys(n for ts in sets for n in ts.splits))
    meta.setdefault("source", sets[0].manifest.source)
    with TaskSetWriter(target, **meta) as writer:
        for name in names:
            with writer.split(name) as split:
                for ts in sets:
                    if name in ts.splits:
                        split.add_stored(ts, name, rows_checked=digests is not None)
            # each part's pass rates of its own tasks (ids are unique across the parts)
            writer.annotate(
                name, [r for ts in sets if name in ts.splits for r in ts.annotations(name)]
            )
    assert writer.manifest is not None
    return writer.manifest
