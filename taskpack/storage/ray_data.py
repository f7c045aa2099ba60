"""Ray Data over a split or view (`split.to_ray()`): imported only when asked, so the
episode-start path never loads Ray.

Rows are as stored (JSON columns as JSON text, files with their bytes when inline), like
`to_arrow()`; each is checked on the Ray worker that reads it: its content hashed again must
give its stored digest, and the stored digests chain to the split digest (checked here, from
the digest column alone, before the dataset is made). A split's Parquet files are read by
Ray's own reader, so they must be where every node can read them (a task-set folder or
taskpack cache on a shared filesystem, or a one-node cluster); a view's rows are taken here
and handed to Ray.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from taskpack.base.digests import chains_to
from taskpack.errors import TaskpackError
from taskpack.storage.rows import batch_problems

if TYPE_CHECKING:
    from pathlib import Path


class Stored(Protocol):
    """What a split gives this module (`taskset.Split`, which sits above it)."""

    @property
    def name(self) -> str: ...
    @property
    def digest(self) -> str: ...
    @property
    def version(self) -> int: ...

    def parquet_paths(self) -> list[Path]: ...
    def columns(self, names: list[str] | None = None) -> pa.Table: ...


def ray_dataset(split: Stored, rows: pa.Table | None = None) -> Any:
    """The dataset of the split's rows (`rows`: a view's, already taken), each checked."""
    import ray.data

    if rows is None:
        if not chains_to(split.columns(["digest"])["digest"].to_pylist(), split.digest):
            raise TaskpackError(f"split {split.name!r}: its rows do not chain to its digest")
        dataset = ray.data.read_parquet([str(p) for p in split.parquet_paths()])
    else:
        dataset = ray.data.from_arrow(rows)
    check = partial(_checked, where=f"split {split.name!r}", version=split.version)
    return dataset.map_batches(check, batch_format="pyarrow", zero_copy_batch=True)


def _checked(batch: pa.Table, where: str, version: int) -> pa.Table:
    problems = batch_problems(batch, where, version)
    if problems:
        raise TaskpackError(f"refused: {problems[0]}")
    return batch
