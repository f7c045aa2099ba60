"""Torch datasets over a split or view (`split.to_torch()`): imported only when asked, so the
episode-start path never loads torch.

Items are tasks as plain data (`Task.model_dump(mode="json")`: lists, dicts, strings, with
file bytes as base64), which cross DataLoader worker processes as any batch does; pass
`collate_fn=list` to get a batch as a list of tasks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

import torch.utils.data

if TYPE_CHECKING:
    from taskpack.model import Task


class TaskSequence(Protocol):
    """A split or view (`views.Rows`, which sits above this module and imports it)."""

    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> Task: ...
    def __iter__(self) -> Iterator[Task]: ...
    def shard(self, num_shards: int, index: int, *, contiguous: bool = True) -> TaskSequence: ...


class TaskDataset(torch.utils.data.Dataset):  # type: ignore[misc]  # torch is untyped here
    """Map-style: `len` and `[i]`, so a DataLoader's sampler picks the order."""

    def __init__(self, rows: TaskSequence) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.rows[i].model_dump(mode="json")


class TaskStream(torch.utils.data.IterableDataset):  # type: ignore[misc]  # torch is untyped here
    """Iterable: in a DataLoader with N workers, worker k streams every N-th task."""

    def __init__(self, rows: TaskSequence) -> None:
        self.rows = rows

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = torch.utils.data.get_worker_info()
        share = (
            self.rows
            if info is None
            else self.rows.shard(info.num_workers, info.id, contiguous=False)
        )
        for task in share:
            yield task.model_dump(mode="json")


def torch_dataset(rows: TaskSequence, *, iterable: bool) -> TaskDataset | TaskStream:
    return TaskStream(rows) if iterable else TaskDataset(rows)
