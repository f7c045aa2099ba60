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


class TaskDataset(torch.utils.data.Dataset):  # type: ignore[misc]  # torch is untyped here
    """Map-style: `len` and `[i]`, so a DataLoader's sampler picks the order."""

    def __init__(self, rows: TaskSequence) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.rows[i].model_dump(mode="json")


class Resumable(Protocol):
    """A rank's share of one global stream of tasks (`views.Sampler`, above this module)."""

    drawn: int

    def __iter__(self) -> Iterator[Task]: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: Any) -> None: ...


class TaskStream(torch.utils.data.IterableDataset):  # type: ignore[misc]  # torch is untyped here
    """Iterable: this rank's share of one global order of the split (`views.Sampler`'s rule:
    the order is the seed's and the epoch's, whatever the world size). The DataLoader's
    workers take its batches in turn (worker k the k-th of every `num_workers`), so the
    DataLoader yields the share in its order however many workers it has, and a resume point
    is a count of tasks taken: `state_dict(taken)` at a step boundary, loaded into the streams
    of any world size (`load_state_dict`), goes on with the next task of the global order."""

    def __init__(self, sampler: Resumable, batch_size: int) -> None:
        self.sampler = sampler
        self.batch_size = batch_size

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = torch.utils.data.get_worker_info()
        workers, me = (1, 0) if info is None else (info.num_workers, info.id)
        for i, task in enumerate(self.sampler):
            if (i // self.batch_size) % workers == me:
                yield task.model_dump(mode="json")

    def state_dict(self, taken: int) -> dict[str, Any]:
        """Where the global order stands once this rank has taken `taken` tasks since the
        stream (re)started, every rank as many (a step boundary)."""
        self.sampler.drawn = taken
        return self.sampler.state_dict()

    def load_state_dict(self, state: Any) -> None:
        """Start at the place a state of any world size says (refused for another split or
        seed)."""
        self.sampler.load_state_dict(state)
