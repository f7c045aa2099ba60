"""A mixture version (`taskpack mix`): its training split is a seeded draw from its sources by
weight (`draws`), each id prefixed by its source's label (`gsm8k/train-00001`; `~2` marks a
task's second time where a size larger than the sources was asked for); its manifest's
`source.mixture` lists the sources (ref, digest, split, weight, environment, evaluation-only).

Iterating the split is the deterministic order. `sampler` keeps drawing from the split's tasks
by weight, forever (each source's tasks in a seeded order of their own, cycled): the stream a
trainer samples from, resumable at any position without replaying it.

    split = taskpack.load("math-mix@1", split="train")
    for position, task in sampler(split, start=1000):
        ...
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from taskpack.errors import TaskpackError

if TYPE_CHECKING:
    from taskpack.records import Task
    from taskpack.storage.taskset import Split, TaskSet

CHUNK = 4096  # draws made at once


def sources(ts: TaskSet) -> list[dict[str, Any]]:
    """The mixture's sources, as its manifest records them; an error for a plain task set."""
    found = ts.manifest.mixture()
    if not found:
        raise TaskpackError(f"{ts.manifest.ref} is not a mixture (made by `taskpack mix`)")
    unpinned = ts.manifest.unpinned()
    if unpinned:
        import warnings

        warnings.warn(unpinned, stacklevel=2)
    return found


def _shares(weights: Sequence[float]) -> Any:
    """Weights as shares summing to 1, scaled by the largest first, so weights near the
    largest float do not overflow their sum."""
    import numpy as np

    w = np.asarray(weights, float)
    top = w.max(initial=0.0)
    if not (np.isfinite(w).all() and (w >= 0).all() and top > 0):
        raise TaskpackError(f"mixture weights {list(weights)}: finite, 0 or more, one above 0")
    w = w / top
    return w / w.sum()


def draws(
    sizes: Sequence[int], weights: Sequence[float], seed: int, size: int | None = None
) -> list[tuple[int, int, int]]:
    """The mixed order: (source, task position in it, times it came before) per place. Each
    place's source is drawn by weight; a source gives its tasks in a seeded order of its own.
    Without `size`, drawing stops when a source runs out (no task twice, every source in its
    proportion); with it, `size` places are drawn, a source that runs out starting over."""
    import numpy as np

    p = _shares(weights)
    orders = [np.random.default_rng([seed, i]).permutation(n) for i, n in enumerate(sizes)]
    rng = np.random.default_rng(seed)
    used = [0] * len(sizes)
    out: list[tuple[int, int, int]] = []
    while size is None or len(out) < size:
        for source in rng.choice(len(sizes), size=CHUNK, p=p).tolist():
            count = used[source]
            if size is None and count >= sizes[source]:
                return out
            out.append((source, int(orders[source][count % sizes[source]]), count // sizes[source]))
            used[source] += 1
            if len(out) == size:
                break
    return out


def sampler(
    split: Split,
    *,
    seed: int = 0,
    start: int = 0,
    entries: Sequence[Mapping[str, Any]] = (),
    num_workers: int = 1,
    worker: int = 0,
) -> Iterator[tuple[int, Task]]:
    """(position, task) from `start` on, forever: each position's source drawn by weight
    (evaluation-only sources never), then that source's next task in its own seeded order,
    cycled. `entries`: the mixture's sources (see `sources`), read from the split's set when
    it was opened by `taskpack.load` or `TaskSet.split`.

    One stream whatever the world size: worker `k` of `n` takes positions `start + k`,
    `start + k + n`, ...; at a step boundary (every worker has drawn as many), the next `start`
    is the last position drawn by any worker plus one, and samplers of any number of workers
    resume there with nothing repeated or skipped."""
    import numpy as np

    from taskpack.storage.views import check_worker

    check_worker(worker, num_workers)

    mixed = [e for e in entries if not e.get("evaluation_only")]
    if not mixed:
        raise TaskpackError("sampler: a mixture's sources are needed (curation.mixture.sources)")
    labels = [str(e["label"]) for e in mixed]
    weights = _shares([float(e["weight"]) for e in mixed])
    members: list[list[int]] = [[] for _ in labels]
    where = {label: i for i, label in enumerate(labels)}
    for position, task_id in enumerate(split.ids()):
        i = where.get(task_id.split("/", 1)[0])
        if i is not None:
            members[i].append(position)
    empty = [labels[i] for i, m in enumerate(members) if not m]
    if empty:
        raise TaskpackError(f"sampler: no task of source(s) {', '.join(empty)} in {split.name!r}")
    orders = [
        np.random.default_rng([seed, i]).permutation(np.array(m)) for i, m in enumerate(members)
    ]
    draws = np.random.default_rng(seed)
    used = np.zeros(len(labels), np.int64)
    position = 0
    while True:  # draws a chunk at a time; a resumed stream draws the same chunks
        chunk = draws.choice(len(labels), size=CHUNK, p=weights)
        if position + CHUNK <= start:
            used += np.bincount(chunk, minlength=len(labels))
            position += CHUNK
            continue
        for source in chunk.tolist():
            order = orders[source]
            index = int(order[used[source] % len(order)])
            used[source] += 1
            if position >= start and (position - start) % num_workers == worker:
                yield position, split[index]
            position += 1
